// The measurements behind `kiln bench` and `kiln profile`, each run on a
// ready Executor: time to first token, prefill speed, and decode at a
// context depth, both through the normal path (the decode graph) and eagerly
// with every launch timed.
#ifndef KILN_RUNTIME_PERF_MEASURE_H_
#define KILN_RUNTIME_PERF_MEASURE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/executor.h"
#include "runtime/manifest.pb.h"
#include "runtime/perf/bench_report.h"

namespace kiln::runtime {

// A fixed pseudo-random prompt of `n` ids in [0, n_vocab): speed does not
// depend on which tokens, and a fixed sequence makes runs comparable.
std::vector<int32_t> BenchTokens(int64_t n, int64_t n_vocab);

// Seconds since this process started (Linux: /proc/self/stat against
// CLOCK_BOOTTIME, 10 ms resolution); NotFound where /proc does not say.
absl::StatusOr<double> ProcessAgeSeconds();

// Rewinds to 0, prefills `prompt` and reads the device's argmax: the wall
// time in ms of one request's first token.
absl::StatusOr<double> TimeToFirstToken(Executor& ex, absl::Span<const int32_t> prompt);

// The median over `reps` of TimeToFirstToken for a `tokens`-token prompt.
absl::StatusOr<PrefillResult> MeasurePrefill(Executor& ex, int64_t tokens, int64_t reps);

struct DecodeRun {
  DecodeResult result;
  std::vector<std::vector<double>> launch_us;  // per profiled step, per decode-plan launch
  int64_t profile_position = 0;                // position of the first profiled step
};

// Prefills `depth` tokens, decodes `warmup` greedy steps, then times `steps`
// greedy steps through the decode graph (wall and host counters per token),
// with Executor::DecodeGreedy when `ahead`, else one Decode at a time.
// Then rewinds to where the timed steps began and runs `profile_steps` of
// them eagerly with every launch timed, for the kernel time per token.
// Bytes per token are the manifest's at the timed steps' middle position.
// Needs depth + warmup + steps <= the executor's context.
absl::StatusOr<DecodeRun> RunDecode(Executor& ex, const Manifest& m, int64_t depth, int64_t warmup, int64_t steps,
                                    int64_t profile_steps, bool ahead);

// Profiles `reps` prefill chunks of `tokens` tokens at position 0.
absl::StatusOr<std::vector<std::vector<double>>> ProfilePrefillChunks(Executor& ex, int64_t tokens, int64_t reps);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_PERF_MEASURE_H_
