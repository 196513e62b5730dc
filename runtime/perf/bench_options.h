// What `kiln bench` and `kiln profile` measure, checked before any GPU work:
// the lists given on the command line and the context they need.
#ifndef KILN_RUNTIME_PERF_BENCH_OPTIONS_H_
#define KILN_RUNTIME_PERF_BENCH_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::runtime {

struct BenchOptions {
  std::vector<int64_t> prompt_lengths = {512, 3700};  // prefill speed; the first also times the first token
  std::vector<int64_t> depths = {0, 4096, 16384};     // decode speed at these context depths
  int64_t steps = 128;         // decode steps timed at each depth
  int64_t warmup = 4;          // greedy steps before timing (the first writes token and position)
  int64_t profile_steps = 16;  // decode steps run eagerly per depth for the kernel time
  int64_t reps = 3;            // prefill repetitions (the median counts)
  bool decode_ahead = true;    // queue each decode step before waiting for the last (Executor::DecodeGreedy)
};

// "512,3700" -> {512, 3700}: positive (or, with `allow_zero`, non-negative)
// integers separated by commas or spaces. InvalidArgument naming `flag`.
absl::StatusOr<std::vector<int64_t>> ParseLengthList(const std::string& text, const std::string& flag,
                                                     bool allow_zero);

// Everything positive, lists non-empty.
absl::Status CheckBenchOptions(const BenchOptions& o);

// The context every measurement fits in: the longest prompt, and the
// deepest depth plus its warm-up and timed steps.
int64_t RequiredContext(const BenchOptions& o);

// The context to run with: `requested` (--ctx-size; 0 = RequiredContext),
// which must hold RequiredContext and not exceed the model's
// `context_length`. The errors say which measurement needs how much.
// `flags` names what the user can lower in the error ("--depths,
// --prompt-lengths, --steps" for kiln bench).
absl::StatusOr<int64_t> ChooseBenchContext(const BenchOptions& o, int64_t requested, int64_t context_length,
                                           absl::string_view flags = "--depths, --prompt-lengths, --steps");

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_PERF_BENCH_OPTIONS_H_
