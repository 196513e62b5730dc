#include "compiler/tune/tuner.h"

#include <unistd.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compiler/codegen/codegen.h"
#include "compiler/tune/worker_process.h"
#include "support/parallel_for.h"
#include "support/progress.h"
#include "support/status_macros.h"

namespace kiln::tune {
namespace {

using schedules::TuneRecord;
using schedules::TuneStatus;

// What the parent made of a candidate before any GPU sees it.
struct Compiled {
  std::string image;
  bool cubin = false;
  TuneStatus status = TuneStatus::kOk;  // kRejected / kError: not run
  std::string detail;
};

Compiled Compile(const Candidate& c, const codegen::Target& target, bool have_ptxas) {
  Compiled out;
  std::string ptx;
  if (!c.identity_ptx.empty()) {
    ptx = NamedPtx(c.identity_ptx, c.spec.name);
  } else {
    absl::StatusOr<std::string> p = CandidatePtx(c, target);
    if (!p.ok()) return {"", false, TuneStatus::kError, std::string(p.status().message())};
    ptx = *std::move(p);
  }
  if (!have_ptxas) {  // the worker's driver JIT-compiles the PTX
    out.image = std::move(ptx);
    return out;
  }
  codegen::PtxasReport report;
  absl::StatusOr<std::string> cubin = codegen::RunPtxas(ptx, target, &report);
  if (!cubin.ok()) return {"", false, TuneStatus::kRejected, absl::StrCat("ptxas: ", cubin.status().message())};
  if (const codegen::PtxasKernelInfo* k = report.Find(c.spec.name)) {
    if (k->spill_stores > 0 || k->spill_loads > 0 || k->stack_frame > 0)
      return {"", false, TuneStatus::kRejected,
              absl::StrFormat("ptxas: %d bytes spill stores, %d bytes spill loads, %d bytes stack (%d regs)",
                              k->spill_stores, k->spill_loads, k->stack_frame, k->registers)};
  }
  out.image = *std::move(cubin);
  out.cubin = true;
  return out;
}

// The record of a candidate, less its outcome.
TuneRecord RecordFor(const Candidate& c, const TuneUnit& u, const schedules::DeviceProvenance& device,
                     const TuneOptions& o) {
  TuneRecord r;
  r.device = device;
  r.target = o.target;
  r.key = u.key;
  r.schedule = c.schedule;
  r.variant = c.variant;
  r.code = c.code;
  r.date = o.date;
  return r;
}

std::string Describe(const TuneRecord& r) {
  if (r.status == TuneStatus::kOk) return absl::StrFormat("%.2f us, %.0f GB/s", r.us, r.gbps);
  return absl::StrCat(std::string(schedules::TuneStatusName(r.status)), ": ", r.detail);
}

class Search {
 public:
  Search(const std::vector<TuneUnit>& units, schedules::TuneCache& cache, const TuneOptions& o, std::FILE* log)
      : units_(units),
        cache_(cache),
        o_(o),
        log_(log),
        progress_(absl::StrCat("tune ", o.target), log == stderr && ::isatty(2)),
        progress_enabled_(log == stderr && ::isatty(2)) {}

  absl::StatusOr<TuneReport> Run() {
    start_ = absl::Now();
    ASSIGN_OR_RETURN(target_, codegen::Target::FromName(o_.target));
    schedules::SearchSpaces spaces;
    if (o_.spaces.has_value()) {
      spaces = *o_.spaces;
    } else {
      ASSIGN_OR_RETURN(spaces, schedules::BuiltinSpaces());
    }
    RETURN_IF_ERROR(StartWorker());
    // Every candidate first, so the totals are known.
    std::vector<std::vector<Candidate>> all;
    for (size_t i = 0; i < units_.size(); ++i) {
      UnitReport ur;
      ur.key = units_[i].key;
      ur.launches = units_[i].launches;
      ASSIGN_OR_RETURN(std::vector<Candidate> cs, EnumerateCandidates(units_[i], static_cast<int>(i), spaces, target_,
                                                                      o_.limit_per_shape, &ur.abi_rejected));
      if (o_.inject_test_candidates && i == 0) {
        // Among the real ones, so the search must carry on after each.
        std::vector<Candidate> synth = SyntheticCandidates(units_[i], static_cast<int>(i));
        cs.insert(cs.begin() + std::min<size_t>(1, cs.size()), synth[0]);
        cs.insert(cs.begin() + std::min<size_t>(3, cs.size()), synth[1]);
      }
      ur.candidates = static_cast<int>(cs.size());
      if (!cs.empty()) ur.current = RecordFor(cs.front(), units_[i], report_.device, o_);
      report_.units.push_back(ur);
      report_.total += ur.candidates;
      all.push_back(std::move(cs));
    }
    // Each candidate's code identity, so the cache holds only what this
    // kilnc compiles the same way (on every core: LLVM only, no ptxas). The
    // PTX is kept for the candidates the cache lacks: measured below, each
    // is renamed (NamedPtx) and assembled, not emitted again.
    std::vector<Candidate*> flat;
    for (std::vector<Candidate>& cs : all)
      for (Candidate& c : cs) flat.push_back(&c);
    const int threads = o_.compile_threads > 0 ? o_.compile_threads : DefaultThreads();
    std::fprintf(log_, "tune: emitting the PTX of %zu candidates on %d threads for their code identities\n",
                 flat.size(), threads);
    ParallelFor(static_cast<int64_t>(flat.size()), threads,
                [&](int64_t b, int64_t e) {
                  for (int64_t k = b; k < e; ++k) {
                    Candidate& c = *flat[size_t(k)];
                    absl::StatusOr<CandidateIdentity> id = IdentifyCandidate(c, target_);
                    // No PTX: the compile step below records why; its code stays "-".
                    c.code = id.ok() ? std::move(id->code) : "-";
                    if (id.ok()) c.identity_ptx = std::move(id->ptx);
                  }
                });
    for (size_t i = 0; i < all.size(); ++i)
      for (const Candidate& c : all[i]) report_.codes[schedules::ShapeKey(units_[i].key)].insert(c.code);
    for (size_t i = 0; i < all.size(); ++i)
      for (Candidate& c : all[i])
        if (const TuneRecord* r = cache_.Find(RecordFor(c, units_[i], report_.device, o_))) {
          ++report_.cached;
          Count(report_.units[i], *r, c);
          std::string().swap(c.identity_ptx);  // never compiled
        }
    Progress();
    for (size_t i = 0; i < all.size() && !report_.budget_exhausted; ++i) {
      RETURN_IF_ERROR(RunUnit(i, all[i]));
      for (Candidate& c : all[i]) std::string().swap(c.identity_ptx);
    }
    for (size_t i = 0; i < all.size(); ++i) {
      UnitReport& ur = report_.units[i];
      ur.not_run = ur.candidates - ur.ok - ur.wrong - ur.faults - ur.timeouts - ur.rejected - ur.errors;
    }
    worker_.reset();
    Progress();
    progress_.Finish();
    return report_;
  }

 private:
  bool OverBudget() const { return o_.budget != absl::InfiniteDuration() && absl::Now() - start_ > o_.budget; }

  absl::Status StartWorker() {
    worker_.reset();
    ASSIGN_OR_RETURN(worker_, WorkerProcess::Spawn(o_.worker_argv));
    absl::StatusOr<Message> hello = worker_->Receive(absl::Seconds(120));
    if (!hello.ok() || hello->Get(kFieldKind) != kKindHello || hello->Has(kFieldError)) {
      const std::string why = hello.ok() ? hello->Get(kFieldError) : std::string(hello.status().message());
      worker_.reset();
      return absl::FailedPreconditionError(absl::StrCat("the tuning worker could not start: ", why));
    }
    // A cubin for one SM does not load on another (the fake device has none).
    if (hello->Has(kFieldSm) && hello->Get(kFieldSm) != target_.Name())
      return absl::FailedPreconditionError(absl::StrCat("the GPU (", hello->Get(kFieldGpu), ") is ",
                                                        hello->Get(kFieldSm), ": tune it with --target ",
                                                        hello->Get(kFieldSm)));
    schedules::DeviceProvenance d{hello->Get(kFieldGpu), static_cast<int>(hello->GetInt(kFieldSmCount)),
                                  hello->Get(kFieldDriver)};
    if (!report_.device.gpu.empty() && d.gpu != report_.device.gpu)
      return absl::InternalError(absl::StrCat("the restarted worker sees a different GPU (", d.gpu, ")"));
    report_.device = d;
    return absl::OkStatus();
  }

  absl::Status RunUnit(size_t u, const std::vector<Candidate>& cs) {
    const TuneUnit& unit = units_[u];
    std::vector<const Candidate*> pending;
    for (const Candidate& c : cs)
      if (cache_.Find(RecordFor(c, unit, report_.device, o_)) == nullptr) pending.push_back(&c);
    if (pending.empty()) return LogUnit(u);
    if (OverBudget()) {
      report_.budget_exhausted = true;
      return absl::OkStatus();
    }
    // Compile the unit's candidates on every core (the GPU waits anyway).
    std::vector<Compiled> compiled(pending.size());
    const bool have_ptxas = codegen::FindPtxas().has_value();
    ParallelFor(static_cast<int64_t>(pending.size()), o_.compile_threads > 0 ? o_.compile_threads : DefaultThreads(),
                [&](int64_t b, int64_t e) {
                  for (int64_t k = b; k < e; ++k) compiled[size_t(k)] = Compile(*pending[size_t(k)], target_, have_ptxas);
                });
    for (size_t k = 0; k < pending.size(); ++k) {
      if (OverBudget()) {
        report_.budget_exhausted = true;
        break;
      }
      const Candidate& c = *pending[k];
      TuneRecord r = RecordFor(c, unit, report_.device, o_);
      if (compiled[k].status != TuneStatus::kOk) {
        r.status = compiled[k].status;
        r.detail = compiled[k].detail;
      } else {
        RETURN_IF_ERROR(Measure(c, compiled[k], &r));
      }
      RETURN_IF_ERROR(cache_.Append(r));
      ++report_.measured;
      Count(report_.units[u], r, c);
      if (o_.verbose)
        std::fprintf(log_, "tune: %s %s %lldx%lld [%s]%s: %s\n", r.key.family.c_str(), r.key.weight_dtype.c_str(),
                     static_cast<long long>(r.key.rows), static_cast<long long>(r.key.cols), r.schedule.c_str(),
                     r.variant.empty() ? "" : absl::StrCat(" ", r.variant).c_str(), Describe(r).c_str());
      Progress();
    }
    return LogUnit(u);
  }

  // Runs one compiled candidate in the worker; restarts the worker after a
  // fault, a timeout or its death.
  absl::Status Measure(const Candidate& c, const Compiled& compiled, TuneRecord* r) {
    if (worker_ == nullptr) {
      RETURN_IF_ERROR(StartWorker());
      ++report_.worker_restarts;
    }
    Message m;
    m.Set(kFieldKind, kKindRun);
    EncodeSpec(c.spec, &m);
    m.Set(kFieldTarget, target_.Name());
    m.Set(kFieldImage, compiled.image);
    m.Set(kFieldImageKind, compiled.cubin ? "cubin" : "ptx");
    m.Set(kFieldVariant, c.variant);
    m.SetInt(kFieldSeed, static_cast<int64_t>(std::hash<std::string>()(RecordKey(*r)) & 0x7FFFFFFFFFFFull));
    m.SetInt(kFieldSamples, o_.samples);
    m.SetInt(kFieldRotateBytes, o_.rotate_bytes);
    m.SetInt(kFieldPosition, o_.attention_position);
    const absl::Status sent = worker_->Send(m);
    absl::StatusOr<Message> reply =
        sent.ok() ? worker_->Receive(o_.candidate_timeout) : absl::StatusOr<Message>(sent);
    if (reply.ok()) {
      absl::StatusOr<TuneStatus> st = schedules::ParseTuneStatus(reply->Get(kFieldStatus));
      r->status = st.ok() ? *st : TuneStatus::kError;
      r->us = reply->GetDouble(kFieldUs);
      r->gbps = reply->GetDouble(kFieldGbps);
      r->rel_err = reply->GetDouble(kFieldRelErr);
      r->detail = reply->Get(kFieldDetail);
      if (r->status == TuneStatus::kFault) {
        ++report_.faults;
        worker_.reset();  // it exits by itself; the next candidate gets a fresh one
      }
      return absl::OkStatus();
    }
    if (absl::IsDeadlineExceeded(reply.status())) {
      r->status = TuneStatus::kTimeout;
      r->detail = absl::StrCat("no result within ", absl::FormatDuration(o_.candidate_timeout),
                               "; the worker was killed");
      ++report_.timeouts;
    } else {
      r->status = TuneStatus::kError;
      r->detail = absl::StrCat("the worker died (", worker_->ExitDescription(), "): ", reply.status().message());
    }
    worker_.reset();  // SIGKILL and reap
    return absl::OkStatus();
  }

  void Count(UnitReport& ur, const TuneRecord& r, const Candidate& c) {
    switch (r.status) {
      case TuneStatus::kOk: ++ur.ok; break;
      case TuneStatus::kWrong: ++ur.wrong; break;
      case TuneStatus::kFault: ++ur.faults; break;
      case TuneStatus::kTimeout: ++ur.timeouts; break;
      case TuneStatus::kRejected: ++ur.rejected; break;
      case TuneStatus::kError: ++ur.errors; break;
    }
    if (c.variant.empty() && r.schedule == ur.current.schedule) ur.current = r;
    if (r.status == TuneStatus::kOk && c.variant.empty() && (ur.best.us == 0 || r.us < ur.best.us)) {
      ur.best = r;
      double& best = best_gbps_[r.key.family];
      best = std::max(best, r.gbps);
    }
  }

  void Progress() {
    int done = 0, faults = 0, timeouts = 0;
    for (const UnitReport& u : report_.units) {
      done += u.ok + u.wrong + u.faults + u.timeouts + u.rejected + u.errors;
      faults += u.faults;
      timeouts += u.timeouts;
    }
    std::vector<std::string> best;
    for (const auto& [family, gbps] : best_gbps_) best.push_back(absl::StrFormat("%s %.0f GB/s", family, gbps));
    progress_.UpdateMessage(absl::StrFormat("%d/%d candidates, %d faults, %d timeouts%s%s", done, report_.total,
                                            faults, timeouts, best.empty() ? "" : "; best ",
                                            absl::StrJoin(best, ", ")));
  }

  absl::Status LogUnit(size_t u) {
    const UnitReport& ur = report_.units[u];
    std::string line = absl::StrFormat("tune: %s %s %dx%d (%d/step): %d ok", ur.key.family, ur.key.weight_dtype,
                                       ur.key.rows, ur.key.cols, ur.launches, ur.ok);
    for (auto [n, what] : {std::pair{ur.wrong, "wrong"}, {ur.faults, "faults"}, {ur.timeouts, "timeouts"},
                           {ur.rejected, "rejected"}, {ur.errors, "errors"}})
      if (n > 0) absl::StrAppend(&line, ", ", n, " ", what);
    if (ur.best.us > 0) absl::StrAppend(&line, "; best [", ur.best.schedule, "] ", Describe(ur.best));
    if (ur.current.us > 0) absl::StrAppend(&line, "; current ", Describe(ur.current));
    std::fprintf(log_, "%s%s\n", progress_enabled_ ? "\r\x1b[K" : "", line.c_str());
    return absl::OkStatus();
  }

  const std::vector<TuneUnit>& units_;
  schedules::TuneCache& cache_;
  const TuneOptions& o_;
  std::FILE* log_;
  ProgressLine progress_;
  bool progress_enabled_ = false;
  codegen::Target target_;
  absl::Time start_;
  std::unique_ptr<WorkerProcess> worker_;
  TuneReport report_;
  std::map<std::string, double> best_gbps_;
};

}  // namespace

absl::StatusOr<TuneReport> RunTuning(const std::vector<TuneUnit>& units, schedules::TuneCache& cache,
                                     const TuneOptions& options, std::FILE* log) {
  Search search(units, cache, options, log);
  return search.Run();
}

}  // namespace kiln::tune
