// The bytes a step reads from GPU memory, from the manifest's per-kernel
// figures (Kernel.bytes_read and bytes_read_per_position, docs/bundle.md):
// what `kiln bench` and `kiln profile` divide by time to get GB/s.
#ifndef KILN_RUNTIME_PERF_READ_BYTES_H_
#define KILN_RUNTIME_PERF_READ_BYTES_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/manifest.pb.h"

namespace kiln::runtime {

struct ReadBytes {
  uint64_t weights = 0;  // weights (an embedding table: one row per token)
  uint64_t kv = 0;       // KV cache
  uint64_t total() const { return weights + kv; }
};

// One launch of `k` in a step of `tokens` tokens at `position` with context
// `context`: bytes_read, plus bytes_read_per_position (evaluated at T, P, C)
// for each of the position + tokens positions attended to.
absl::StatusOr<ReadBytes> LaunchReadBytes(const Kernel& k, int64_t tokens, int64_t position, int64_t context);

// Each launch of `plan` (a plan of `m`), the same way, in order.
absl::StatusOr<std::vector<ReadBytes>> PlanLaunchReadBytes(const Manifest& m, const Plan& plan, int64_t tokens,
                                                           int64_t position, int64_t context);

// Every launch of `plan`, summed.
absl::StatusOr<ReadBytes> PlanReadBytes(const Manifest& m, const Plan& plan, int64_t tokens, int64_t position,
                                        int64_t context);

// True when some kernel states what it reads (bundles from before kilnc
// filled the figures state nothing: GB/s is then unknown).
bool HasReadBytes(const Manifest& m);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_PERF_READ_BYTES_H_
