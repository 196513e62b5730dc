#include "runtime/commands/perf_common.h"

#include <unistd.h>

#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"

ABSL_FLAG(bool, json, false, "print JSON instead of tables");
ABSL_FLAG(int64_t, steps, 128, "decode steps measured (bench: timed per depth; profile: profiled)");
ABSL_FLAG(int64_t, reps, 3, "prefill repetitions (bench: the median counts; profile: chunks profiled)");

namespace kiln::runtime {

const std::vector<absl::string_view> kPerfFlags = {"json", "steps", "reps"};

std::string DescribeKernels(const SectionChoice& choice) {
  return choice.jit ? absl::StrCat("PTX ", choice.target, " (JIT)") : absl::StrCat("cubin ", choice.target);
}

void PerfProgress(absl::string_view command, absl::string_view what) {
  if (!isatty(2)) return;
  std::fprintf(stderr, "kiln: %s: %s\n", std::string(command).c_str(), std::string(what).c_str());
}

absl::Status ExplainContext(const absl::Status& s, absl::string_view what_sets_it) {
  if (!absl::IsResourceExhausted(s)) return s;
  return absl::ResourceExhaustedError(
      absl::StrCat(s.message(), " (the context follows from ", std::string(what_sets_it), "; measure less)"));
}

}  // namespace kiln::runtime
