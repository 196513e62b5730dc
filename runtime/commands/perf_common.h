// What `kiln bench` and `kiln profile` share: their common flags, progress
// lines, and how the kernel image in use is named.
#ifndef KILN_RUNTIME_COMMANDS_PERF_COMMON_H_
#define KILN_RUNTIME_COMMANDS_PERF_COMMON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "runtime/preflight.h"

ABSL_DECLARE_FLAG(bool, json);
ABSL_DECLARE_FLAG(int64_t, steps);
ABSL_DECLARE_FLAG(int64_t, reps);

namespace kiln::runtime {

// The flags bench and profile share: json, steps, reps.
extern const std::vector<absl::string_view> kPerfFlags;

// "cubin sm_90" or "PTX sm_90 (JIT)".
std::string DescribeKernels(const SectionChoice& choice);

// "kiln: <command>: <what>" on stderr, only on a terminal.
void PerfProgress(absl::string_view command, absl::string_view what);

// Executor::Create's out-of-memory message suggests --ctx-size; for these
// commands the context follows from what they measure, so say that too.
absl::Status ExplainContext(const absl::Status& s, absl::string_view what_sets_it);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_COMMANDS_PERF_COMMON_H_
