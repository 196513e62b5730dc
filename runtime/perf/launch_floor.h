// The launch floor of a step: the time its launches would take if each one
// were a perfect memory-bound kernel, reading exactly the bytes it reads at
// full speed and starting only when the previous one has ended. Measured
// with the bandwidth probe's read kernel replayed as a CUDA graph of the
// step's launches, so the gap between a step and the probe's bandwidth
// splits into what one kernel per launch costs at best (the ramp and drain
// of every launch, nothing to do with the kernels' code) and what the
// kernels lose on top of that. Where the GPU has programmatic launch
// (sm_90) the reads launch as kiln's kernels do there: each lets the next
// one's blocks arrive at once, and those wait for it to end before reading.
// (kiln's matvecs also load their first weights before that wait, so they
// can beat the floor by a little.)
#ifndef KILN_RUNTIME_PERF_LAUNCH_FLOOR_H_
#define KILN_RUNTIME_PERF_LAUNCH_FLOOR_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/cuda/driver.h"
#include "runtime/perf/bandwidth_probe.h"

namespace kiln::runtime {

struct LaunchFloor {
  int launches = 0;
  bool programmatic = false;  // launched with programmatic dependent launch
  uint64_t bytes = 0;    // read by all launches together
  double median_ms = 0;  // of one replay of the launch sequence
};

// For each launch sequence of `sequences` (the bytes each launch reads, in
// order): places its reads one after another in `ring` (PrepareReadBuffer's,
// the probe's buffer), wrapping at its end, so no launch finds another's
// bytes in the L2; reads of 0 bytes stay (a launch with nothing to read
// still costs a launch). Replays the sequence `warmup` + `reps` times as one
// graph; the median counts (options' timing fields; the sizing ones
// counted when the ring was prepared). The read kernel is loaded once for
// all sequences. FailedPrecondition when a launch reads more than the ring
// holds.
absl::StatusOr<std::vector<LaunchFloor>> MeasureLaunchFloors(const cuda::Context& ctx, const ReadBuffer& ring,
                                                             const std::vector<std::vector<uint64_t>>& sequences,
                                                             const ProbeOptions& options = {});

// Where each read starts in a ring of `ring_bytes`: back to back from 0, 16-byte
// aligned, a read that would run past the end starts at 0 instead.
// InvalidArgument when a read is larger than the ring.
absl::StatusOr<std::vector<uint64_t>> RingOffsets(const std::vector<uint64_t>& launch_bytes, uint64_t ring_bytes);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_PERF_LAUNCH_FLOOR_H_
