// The pass pipeline: verify, run, verify again, dump and time (pipeline.h).
#include "passes/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "support/status_macros.h"
#include "support/write_file.h"

namespace kiln::passes {
namespace {

// "001-canonicalize.kir"; index 0 is the input.
std::string DumpName(int index, const std::string& pass) {
  return absl::StrFormat("%03d-%s.kir", index, pass);
}

// D/index.tsv: one row per dump (the input, then every pass that was
// reached), the summary keys of all passes as extra columns in first-seen
// order. Only `seconds` differs between two runs on the same input.
std::string IndexTsv(int64_t input_ops, const std::vector<PassRecord>& records) {
  std::vector<std::string> keys;
  for (const PassRecord& r : records)
    for (const auto& [k, v] : r.summary)
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  std::string out = "index\tpass\tchanged\tseconds\top_count";
  for (const std::string& k : keys) absl::StrAppend(&out, "\t", k);
  absl::StrAppend(&out, "\n000\tinput\t-\t0.000000\t", input_ops);
  for (size_t i = 0; i < keys.size(); ++i) out += "\t";
  out += "\n";
  for (const PassRecord& r : records) {
    absl::StrAppend(&out, absl::StrFormat("%03d", r.index), "\t", r.pass, "\t",
                    !r.ran ? "disabled" : (r.changed ? "yes" : "no"), "\t",
                    absl::StrFormat("%.6f", r.seconds), "\t", r.op_count);
    for (const std::string& k : keys) {
      std::string value;
      for (const auto& [rk, rv] : r.summary)
        if (rk == k) value = rv;
      absl::StrAppend(&out, "\t", value);
    }
    out += "\n";
  }
  return out;
}

void PrintTiming(const std::vector<PassRecord>& records, std::ostream& log) {
  size_t width = 5;
  for (const PassRecord& r : records) width = std::max(width, r.pass.size());
  double total = 0;
  log << absl::StrFormat("%-*s  %-8s  %10s  %8s\n", width, "pass", "changed", "seconds", "ops");
  for (const PassRecord& r : records) {
    total += r.seconds;
    log << absl::StrFormat("%-*s  %-8s  %10.6f  %8d\n", width, r.pass,
                           !r.ran ? "disabled" : (r.changed ? "yes" : "no"), r.seconds, r.op_count);
  }
  log << absl::StrFormat("%-*s  %-8s  %10.6f\n", width, "total", "", total);
}

}  // namespace

int64_t CountOps(const ir::Module& module) {
  int64_t n = 0;
  for (const auto& f : module.functions()) ir::WalkOps(f->body(), [&](const ir::Op*) { ++n; });
  return n;
}

std::vector<std::string> Pipeline::PassNames() const {
  std::vector<std::string> names;
  for (const auto& p : passes_) names.emplace_back(p->name());
  return names;
}

absl::Status Pipeline::CheckOptions(const PipelineOptions& options) const {
  const std::vector<std::string> names = PassNames();
  auto known = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  const std::string valid = absl::StrJoin(names, ", ");
  if (!options.stop_after.empty() && !known(options.stop_after))
    return absl::InvalidArgumentError(
        absl::StrCat("--stop-after: no pass named '", options.stop_after, "' (passes: ", valid, ")"));
  for (const std::string& d : options.disabled)
    if (!known(d))
      return absl::InvalidArgumentError(
          absl::StrCat("--disable-passes: no pass named '", d, "' (passes: ", valid, ")"));
  return absl::OkStatus();
}

absl::Status Pipeline::Run(ir::Module& module, const PassContext& context, const PipelineOptions& options) {
  records_.clear();
  std::ostream& log = options.log != nullptr ? *options.log : std::cerr;
  RETURN_IF_ERROR(CheckOptions(options));

  if (absl::Status s = ir::Verify(module); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat("the input module does not verify: ", s.message()));
  const std::filesystem::path dir = options.dump_dir;
  if (!options.dump_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      return absl::InvalidArgumentError(
          absl::StrCat("cannot create dump directory ", options.dump_dir, ": ", ec.message()));
    RETURN_IF_ERROR(WriteFileAtomically((dir / DumpName(0, "input")).string(), ir::PrintModule(module)));
  }
  const int64_t input_ops = CountOps(module);

  absl::Status result;
  for (size_t i = 0; i < passes_.size(); ++i) {
    Pass& pass = *passes_[i];
    PassRecord record;
    record.index = static_cast<int>(i) + 1;
    record.pass = std::string(pass.name());
    if (!options.disabled.contains(record.pass)) {
      record.ran = true;
      const auto start = std::chrono::steady_clock::now();
      absl::StatusOr<bool> changed = pass.Run(module, context);
      record.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!changed.ok()) {
        result = absl::Status(changed.status().code(),
                              absl::StrCat("pass '", record.pass, "': ", changed.status().message()));
        break;
      }
      record.changed = *changed;
      if (record.changed) {
        // The broken module is still dumped below, to show what went wrong.
        if (absl::Status s = ir::Verify(module); !s.ok())
          result = absl::InternalError(
              absl::StrCat("the module does not verify after pass '", record.pass, "': ", s.message()));
      }
      record.summary = pass.Summary();
    }
    record.op_count = CountOps(module);
    if (!options.dump_dir.empty() && record.ran)
      RETURN_IF_ERROR(WriteFileAtomically((dir / DumpName(record.index, record.pass)).string(), ir::PrintModule(module)));
    if (options.print_after_all && record.ran)
      log << "// ----- IR after " << record.pass << (record.changed ? "" : " (unchanged)") << " -----\n"
          << ir::PrintModule(module) << "\n";
    records_.push_back(std::move(record));
    if (!result.ok() || records_.back().pass == options.stop_after) break;
  }
  if (!options.dump_dir.empty())
    RETURN_IF_ERROR(WriteFileAtomically((dir / "index.tsv").string(), IndexTsv(input_ops, records_)));
  if (options.time_passes) PrintTiming(records_, log);
  return result;
}

}  // namespace kiln::passes
