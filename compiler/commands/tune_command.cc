// kilnc tune: times schedule candidates of a model's kernels on the GPU in
// a worker process, caches the results, and exports the winners as a
// schedule table (docs/tuning.md). kilnc tune-worker is that worker.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "compiler/commands/command_line.h"
#include "compiler/commands/commands.h"
#include "compiler/pipelines.h"
#include "compiler/tune/candidates.h"
#include "compiler/tune/tuner.h"
#include "compiler/tune/worker.h"
#include "compiler/tune/worker_process.h"
#include "models/qwen3_config.h"
#include "models/qwen3_graph.h"
#include "schedules/graph_candidates.h"
#include "schedules/schedules.h"
#include "schedules/tuning.h"
#include "support/read_file.h"
#include "support/status_macros.h"
#include "support/write_file.h"
#include "support/output_path.h"

ABSL_DECLARE_FLAG(std::string, target);
ABSL_FLAG(std::string, families, "matvec,attention_decode",
          "kernel families to tune (matvec, attention_decode; 'attention' = attention_decode)");
ABSL_FLAG(absl::Duration, budget, absl::InfiniteDuration(),
          "stop starting candidates after this long (e.g. 5m); what finished is kept and exported");
ABSL_FLAG(std::string, cache, "kilnc-tune.tsv",
          "results cache: appended as candidates finish, read to resume (without -m: a,b,... reads several)");
ABSL_FLAG(std::string, export, "", "write the winners as a schedule table (.txtpb) to this file");
ABSL_FLAG(std::string, candidates, "",
          "write each shape's --top fastest schedules as tables to this folder, for choosing inside the decode graph");
ABSL_FLAG(int, top, 6, "schedules per shape for --candidates");
ABSL_FLAG(std::string, dtypes, "", "--candidates: only shapes of these weight (or KV) dtypes, a,b,... (default all)");
ABSL_FLAG(std::string, base, "",
          "table whose entries follow the tuned ones, and that --candidates copies (default: the built-in one)");
ABSL_FLAG(std::string, gpu, "",
          "export (or --candidates) the results of this GPU (default: the only one in the caches)");
ABSL_FLAG(absl::Duration, candidate_timeout, absl::Seconds(30),
          "a candidate without a result after this long is a timeout (the worker is restarted)");
ABSL_FLAG(std::string, spaces, "", "search spaces (a SearchSpaces text proto) instead of the built-in ones");
ABSL_FLAG(int, limit, 0, "try at most N candidates per shape (0: the whole search space)");
ABSL_FLAG(int, samples, 15, "timed batches per candidate; the median counts");
ABSL_FLAG(int, rotate_mib, 512, "MiB of weight copies cycled while timing (more than the L2)");
ABSL_FLAG(int, attention_position, 4095, "context position at which decode attention is timed");
ABSL_FLAG(bool, verbose, false, "print one line per candidate");
// Test hooks (not in --help's text): synthetic faulting/hanging candidates,
// and a worker that pretends to be a GPU (CPU tests of the isolation path).
ABSL_FLAG(bool, inject_test_candidates, false, "test hook: add a faulting and a hanging candidate");
ABSL_FLAG(bool, fake_device, false, "test hook: the worker fakes a GPU");

namespace kiln::compiler {
namespace {

constexpr char kTuneUsage[] = R"(usage: kilnc tune -m X.gguf [--target sm_90] [flags]
       kilnc tune --export sm_90.txtpb [--cache F[,G...]]      (export only)
       kilnc tune --candidates DIR [--top 6] [--dtypes a,b] [--cache F[,G...]]

Times schedule candidates for the kernels the model's decode plan launches
(one per family, weight type and shape) on the GPU, in a worker process: a
candidate that faults, hangs or computes wrong results is recorded and the
search goes on. Results go to the cache as they finish; a rerun skips them.

  -m, --model F              the GGUF whose shapes to tune
  --target sm_90             GPU target (schedule tables)
  --families a,b             matvec,attention_decode (default: both)
  --budget 5m                stop starting candidates after this long
  --cache F                  results cache (default kilnc-tune.tsv); without -m,
                             F,G,... reads several
  --export F                 write the winners as a schedule table to F
  --candidates DIR           write each shape's --top fastest schedules, one table
                             each (the base with that entry replaced), and
                             index.tsv, to DIR: timed inside the decode graph by
                             tools/gpu_graph_select.sh (docs/tuning.md)
  --top N                    schedules per shape for --candidates (default 6)
  --dtypes a,b               --candidates: only these weight (KV) dtypes
  --base F                   the table --export appends and --candidates copies
                             (default: the built-in one of --target)
  --gpu NAME                 export (--candidates) this GPU's results (caches
                             with several GPUs)
  --candidate-timeout 30s    per-candidate limit (load, check, time)
  --limit N                  at most N candidates per shape
  --spaces F                 search spaces from F (default: built-in schedules/spaces.txtpb)
  --samples N                timed batches per candidate (median; default 15)
  --rotate-mib N             weight copies cycled while timing (default 512)
  --attention-position N     decode attention timed at this position (4095)
  --verbose                  a line per candidate
)";

constexpr char kWorkerUsage[] = R"(usage: kilnc tune-worker   (started by kilnc tune)

Reads candidates on fd 3, writes results on fd 4 (docs/tuning.md).
)";

std::string Today() { return absl::FormatTime("%Y-%m-%d", absl::Now(), absl::UTCTimeZone()); }

absl::StatusOr<std::vector<std::string>> Families() {
  std::vector<std::string> out;
  for (absl::string_view f : absl::StrSplit(absl::GetFlag(FLAGS_families), ',', absl::SkipEmpty())) {
    std::string name = f == "attention" ? "attention_decode" : std::string(f);
    const std::vector<std::string>& ok = tune::TunableFamilies();
    if (std::find(ok.begin(), ok.end(), name) == ok.end())
      return UsageError(absl::StrCat("--families: cannot tune '", name, "' (tunable: ", absl::StrJoin(ok, ", "), ")"));
    out.push_back(name);
  }
  if (out.empty()) return UsageError("--families is empty");
  return out;
}

absl::StatusOr<std::string> SelfPath() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return absl::InternalError("cannot find kilnc's own path (/proc/self/exe)");
  return std::string(buf, static_cast<size_t>(n));
}

absl::StatusOr<schedules::ScheduleTable> BaseTable(const std::string& target) {
  const std::string path = absl::GetFlag(FLAGS_base);
  schedules::ScheduleTable table;
  if (!path.empty()) {
    ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
    RETURN_IF_ERROR(schedules::ParseTextProto(text, path, &table));
    return table;
  }
  for (const schedules::EmbeddedTable& t : schedules::EmbeddedTables()) {
    RETURN_IF_ERROR(schedules::ParseTextProto(t.text, t.file, &table));
    if (table.target() == target) return table;
    table.Clear();
  }
  table.set_target(target);  // no shipped table: tuned entries only (others fall back to heuristics)
  return table;
}

// `codes`: the shapes just searched and their candidates' codes (empty for
// an export alone: each schedule's newest record counts).
absl::Status Export(absl::Span<const schedules::TuneRecord> records, const std::string& target,
                    const std::string& path, std::map<std::string, std::set<std::string>> codes = {}) {
  ASSIGN_OR_RETURN(schedules::ScheduleTable base, BaseTable(target));
  schedules::ExportOptions eo;
  eo.target = target;
  eo.gpu = absl::GetFlag(FLAGS_gpu);
  eo.current_codes = std::move(codes);
  ASSIGN_OR_RETURN(schedules::ExportedTable table, schedules::ExportTable(records, base, eo));
  RETURN_IF_ERROR(WriteFileAtomically(path, schedules::FormatTable(table)));
  // The report above lists this run's candidates; the export picks from
  // every result the cache holds, earlier runs' (other spaces) included.
  std::fprintf(stderr,
               "tune: wrote %s: %d tuned entries for %s on %s (each shape's best of %zu cached results), then %d "
               "from the base table\n",
               path.c_str(), table.tuned_entries, target.c_str(), table.table.provenance().gpu().c_str(),
               records.size(), table.table.entries_size() - table.tuned_entries);
  if (table.not_current > 0)
    std::fprintf(stderr, "tune: left out %d results of the searched shapes that another kilnc's code measured\n",
                 table.not_current);
  if (table.superseded > 0)
    std::fprintf(stderr,
                 "tune: %d schedules have results of several codes (several kilncs); the newest of each counts. "
                 "An export alone cannot tell which code this kilnc compiles: search again first after a kilnc "
                 "change\n",
                 table.superseded);
  return absl::OkStatus();
}

// --candidates' folder: absent or empty (tools/gpu_graph_select.sh times
// every table in it: an earlier run's must not mix with these), and --top.
// Checked before a search, so a long one does not end in the error.
absl::Status CheckCandidatesFlags(const std::string& dir) {
  if (absl::GetFlag(FLAGS_top) < 1)
    return absl::InvalidArgumentError(absl::StrCat("--top ", absl::GetFlag(FLAGS_top), " must be at least 1"));
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    if (ec) return absl::InvalidArgumentError(absl::StrCat("--candidates ", dir, ": ", ec.message()));
    return absl::OkStatus();
  }
  if (!std::filesystem::is_directory(dir, ec))
    return absl::InvalidArgumentError(absl::StrCat("--candidates ", dir, ": a file, not a folder"));
  const bool empty = std::filesystem::is_empty(dir, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("--candidates ", dir, ": ", ec.message()));
  if (!empty)
    return absl::InvalidArgumentError(
        absl::StrCat("--candidates ", dir, ": not an empty folder (an earlier run's tables would be timed with these)"));
  return absl::OkStatus();
}

// Writes the candidate tables and index.tsv to --candidates (made if
// missing). `records`: every cache's; `codes`: the shapes a search just ran
// and their candidates' codes (empty for no search: every shape the records
// hold, each schedule's newest record).
absl::Status WriteCandidates(absl::Span<const schedules::TuneRecord> records, const std::string& target,
                             const std::string& dir, std::map<std::string, std::set<std::string>> codes = {}) {
  RETURN_IF_ERROR(CheckCandidatesFlags(dir));
  ASSIGN_OR_RETURN(schedules::ScheduleTable base, BaseTable(target));
  schedules::CandidateOptions co;
  co.target = target;
  co.gpu = absl::GetFlag(FLAGS_gpu);
  co.top = absl::GetFlag(FLAGS_top);
  ASSIGN_OR_RETURN(std::vector<std::string> families, Families());
  co.families = {families.begin(), families.end()};
  co.dtypes = absl::StrSplit(absl::GetFlag(FLAGS_dtypes), ',', absl::SkipEmpty());
  for (const auto& [shape, c] : codes) co.shapes.insert(shape);
  co.current_codes = std::move(codes);
  ASSIGN_OR_RETURN(schedules::CandidateSet set, schedules::GraphCandidates(records, base, co));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("--candidates: cannot make ", dir, ": ", ec.message()));
  for (const schedules::CandidateTable& t : set.tables)
    RETURN_IF_ERROR(WriteFileAtomically(absl::StrCat(dir, "/", t.name, ".txtpb"), schedules::FormatCandidateTable(t)));
  RETURN_IF_ERROR(WriteFileAtomically(absl::StrCat(dir, "/index.tsv"), schedules::FormatCandidateIndex(set.tables)));
  std::fprintf(stderr, "tune: wrote %zu candidate tables and index.tsv to %s (up to %d schedules a shape)\n",
               set.tables.size(), dir.c_str(), co.top);
  if (set.unparsed > 0)
    std::fprintf(stderr,
                 "tune: warning: left out %d schedules whose newest result is correct but which no longer parse "
                 "(a field since removed from schedule.proto)\n",
                 set.unparsed);
  if (set.not_current > 0)
    std::fprintf(stderr, "tune: left out %d results of the searched shapes that another kilnc's code measured\n",
                 set.not_current);
  return absl::OkStatus();
}

// The caches --cache names (a,b,...: several, for an export alone), each
// read as a search resumes it; their records, in order.
absl::StatusOr<std::vector<schedules::TuneRecord>> ReadCaches(const std::vector<std::string>& paths) {
  std::vector<schedules::TuneRecord> records;
  int64_t newest_seq = 0;
  for (const std::string& path : paths) {
    // A search starts a missing cache; to read one, it must be there.
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return absl::NotFoundError(absl::StrCat("no cache ", path));
    std::vector<std::string> warnings;
    ASSIGN_OR_RETURN(schedules::TuneCache cache, schedules::TuneCache::Open(path, &warnings));
    for (const std::string& w : warnings) std::fprintf(stderr, "tune: warning: %s\n", w.c_str());
    if (cache.records().empty()) std::fprintf(stderr, "tune: warning: %s holds no result\n", path.c_str());
    // A later cache's records count as newer (the newest of a schedule
    // measured by several kilncs counts): they follow the highest seq so
    // far (a cache replaces a record in place, so its last need not be it).
    const int64_t offset = newest_seq;
    for (schedules::TuneRecord r : cache.records()) {
      r.seq += offset;
      newest_seq = std::max(newest_seq, r.seq);
      records.push_back(std::move(r));
    }
  }
  return records;
}

void PrintReport(const tune::TuneReport& r) {
  std::printf("%-17s %-12s %-13s %5s %5s %10s %8s %10s %8s %7s  %s\n", "family", "dtype", "rows x cols", "/step",
              "cands", "current us", "GB/s", "best us", "GB/s", "speedup", "best schedule");
  for (const tune::UnitReport& u : r.units) {
    const std::string shape = absl::StrCat(u.key.rows, "x", u.key.cols);
    auto us = [](const schedules::TuneRecord& t) { return t.us > 0 ? absl::StrFormat("%.2f", t.us) : "-"; };
    auto gbps = [](const schedules::TuneRecord& t) { return t.us > 0 ? absl::StrFormat("%.0f", t.gbps) : "-"; };
    const std::string speedup =
        u.current.us > 0 && u.best.us > 0 ? absl::StrFormat("%.2fx", u.current.us / u.best.us) : "-";
    std::printf("%-17s %-12s %-13s %5d %5d %10s %8s %10s %8s %7s  %s\n", u.key.family.c_str(),
                u.key.weight_dtype.c_str(), shape.c_str(), u.launches, u.candidates, us(u.current).c_str(),
                gbps(u.current).c_str(), us(u.best).c_str(), gbps(u.best).c_str(), speedup.c_str(),
                u.best.us > 0 ? u.best.schedule.c_str() : "(no correct candidate)");
  }
  std::printf("%d candidates: %d from the cache, %d measured now, %d faults, %d timeouts, %d worker restarts%s\n",
              r.total, r.cached, r.measured, r.faults, r.timeouts, r.worker_restarts,
              r.budget_exhausted ? "; the budget ran out" : "");
}

// The search's numbers in range, checked before anything is read.
absl::Status CheckSearchFlags() {
  if (absl::GetFlag(FLAGS_budget) < absl::ZeroDuration())
    return absl::InvalidArgumentError(
        absl::StrCat("--budget ", absl::FormatDuration(absl::GetFlag(FLAGS_budget)), " must not be negative"));
  if (absl::GetFlag(FLAGS_candidate_timeout) <= absl::ZeroDuration())
    return absl::InvalidArgumentError(absl::StrCat("--candidate-timeout ",
                                                   absl::FormatDuration(absl::GetFlag(FLAGS_candidate_timeout)),
                                                   " must be positive"));
  if (absl::GetFlag(FLAGS_limit) < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("--limit ", absl::GetFlag(FLAGS_limit), " must not be negative (0: the whole space)"));
  if (absl::GetFlag(FLAGS_samples) < 1)
    return absl::InvalidArgumentError(absl::StrCat("--samples ", absl::GetFlag(FLAGS_samples), " must be at least 1"));
  if (absl::GetFlag(FLAGS_rotate_mib) < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("--rotate-mib ", absl::GetFlag(FLAGS_rotate_mib), " must not be negative"));
  if (absl::GetFlag(FLAGS_attention_position) < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("--attention-position ", absl::GetFlag(FLAGS_attention_position), " must not be negative"));
  return absl::OkStatus();
}

absl::Status Tune(const std::vector<std::string>& positional) {
  RETURN_IF_ERROR(CheckPositionals(positional, ModelPositionals()));
  const std::string target = absl::GetFlag(FLAGS_target);
  RETURN_IF_ERROR(CheckTargetFlag(target));
  RETURN_IF_ERROR(CheckSearchFlags());
  const std::string export_path = absl::GetFlag(FLAGS_export);
  const std::string candidates_dir = absl::GetFlag(FLAGS_candidates);
  const std::vector<std::string> caches = absl::StrSplit(absl::GetFlag(FLAGS_cache), ',', absl::SkipEmpty());
  if (caches.empty()) return UsageError("--cache is empty");
  RETURN_IF_ERROR(Families().status());
  std::vector<std::string> inputs = {absl::GetFlag(FLAGS_base), absl::GetFlag(FLAGS_spaces),
                                     absl::GetFlag(FLAGS_model), positional.empty() ? "" : positional.front()};
  inputs.insert(inputs.end(), caches.begin(), caches.end());
  RETURN_IF_ERROR(CheckOutputPath("--export", export_path, inputs));
  if (candidates_dir.empty() && (absl::GetFlag(FLAGS_top) != 6 || !absl::GetFlag(FLAGS_dtypes).empty()))
    return UsageError("--top and --dtypes choose what --candidates writes: give --candidates DIR");
  // Before any output is written or any search starts.
  if (!candidates_dir.empty()) RETURN_IF_ERROR(CheckCandidatesFlags(candidates_dir));
  const bool have_model = !absl::GetFlag(FLAGS_model).empty() || !positional.empty();
  if (!have_model) {
    if (export_path.empty() && candidates_dir.empty())
      return UsageError("nothing to do: give -m X.gguf, --export F or --candidates DIR");
    ASSIGN_OR_RETURN(const std::vector<schedules::TuneRecord> records, ReadCaches(caches));
    if (!export_path.empty()) RETURN_IF_ERROR(Export(records, target, export_path));
    if (!candidates_dir.empty()) RETURN_IF_ERROR(WriteCandidates(records, target, candidates_dir));
    return absl::OkStatus();
  }
  if (caches.size() > 1) return UsageError("a search appends to one --cache, not a list");
  std::vector<std::string> warnings;
  ASSIGN_OR_RETURN(schedules::TuneCache cache, schedules::TuneCache::Open(caches.front(), &warnings));
  for (const std::string& w : warnings) std::fprintf(stderr, "tune: warning: %s\n", w.c_str());

  ASSIGN_OR_RETURN(std::unique_ptr<gguf::GgufFile> file, OpenModel(positional));
  ASSIGN_OR_RETURN(models::Qwen3Config config, models::ReadQwen3Config(*file));
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> module, models::BuildQwen3Module(*file, config));
  passes::Pipeline pipeline;
  BuildPipeline(pipeline);
  passes::PassContext context;
  context.target = target;
  RETURN_IF_ERROR(pipeline.Run(*module, context, {}));
  tune::CollectOptions co;
  co.target = target;
  ASSIGN_OR_RETURN(co.families, Families());
  ASSIGN_OR_RETURN(std::vector<tune::TuneUnit> units, tune::CollectUnits(*module, *file, co));
  if (units.empty()) return absl::InvalidArgumentError("the model's decode plan has no kernel of these families");

  tune::TuneOptions o;
  o.target = target;
  o.budget = absl::GetFlag(FLAGS_budget);
  o.candidate_timeout = absl::GetFlag(FLAGS_candidate_timeout);
  o.limit_per_shape = absl::GetFlag(FLAGS_limit);
  o.samples = absl::GetFlag(FLAGS_samples);
  o.rotate_bytes = int64_t{absl::GetFlag(FLAGS_rotate_mib)} << 20;
  o.attention_position = absl::GetFlag(FLAGS_attention_position);
  o.inject_test_candidates = absl::GetFlag(FLAGS_inject_test_candidates);
  o.verbose = absl::GetFlag(FLAGS_verbose);
  if (const std::string path = absl::GetFlag(FLAGS_spaces); !path.empty()) {
    ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
    schedules::SearchSpaces spaces;
    RETURN_IF_ERROR(schedules::ParseTextProto(text, path, &spaces));
    RETURN_IF_ERROR(schedules::CheckSpaces(spaces, path));
    o.spaces = std::move(spaces);
  }
  o.date = Today();
  ASSIGN_OR_RETURN(std::string self, SelfPath());
  o.worker_argv = {self, "tune-worker"};
  if (absl::GetFlag(FLAGS_fake_device)) o.worker_argv.push_back("--fake_device");
  std::fprintf(stderr, "tune: %s: %zu shapes (%s) for %s; cache %s\n", file->name().c_str(), units.size(),
               absl::StrJoin(co.families, ", ").c_str(), target.c_str(), cache.path().c_str());
  // A dead worker's pipe must be an error on write, not a signal.
  ::signal(SIGPIPE, SIG_IGN);
  ASSIGN_OR_RETURN(tune::TuneReport report, tune::RunTuning(units, cache, o, stderr));
  PrintReport(report);
  if (!export_path.empty()) RETURN_IF_ERROR(Export(cache.records(), target, export_path, report.codes));
  if (!candidates_dir.empty()) RETURN_IF_ERROR(WriteCandidates(cache.records(), target, candidates_dir, report.codes));
  return absl::OkStatus();
}

}  // namespace

int RunTune(const std::vector<std::string>& args) {
  ParsedArgs parsed = ParseArgs("tune", args, kTuneUsage, {"model", "target", "families", "budget", "cache", "export", "candidates", "top", "dtypes", "base", "gpu", "candidate_timeout", "spaces", "limit", "samples", "rotate_mib", "attention_position", "verbose", "inject_test_candidates", "fake_device"});
  if (parsed.exit_code) return *parsed.exit_code;
  if (absl::Status s = Tune(parsed.positional); !s.ok()) return Fail("tune", s);
  return 0;
}

int RunTuneWorker(const std::vector<std::string>& args) {
  ParsedArgs parsed = ParseArgs("tune-worker", args, kWorkerUsage, {"fake_device"});
  if (parsed.exit_code) return *parsed.exit_code;
  if (absl::Status s = CheckPositionals(parsed.positional, 0); !s.ok()) return Fail("tune-worker", s);
  if (fcntl(tune::kWorkerInFd, F_GETFD) == -1 || fcntl(tune::kWorkerOutFd, F_GETFD) == -1)
    return Fail("tune-worker", UsageError(absl::StrCat("kilnc tune starts this worker and talks to it over file "
                                                       "descriptors ", tune::kWorkerInFd, " and ", tune::kWorkerOutFd,
                                                       ", which are not open here")));
  return tune::RunWorker(tune::kWorkerInFd, tune::kWorkerOutFd, absl::GetFlag(FLAGS_fake_device));
}

}  // namespace kiln::compiler
