// kiln's own kernels, hand-written PTX that the executor JIT-compiles at
// load (no bundle carries them): the decode graph's step advance and the
// hold before a profiled plan.
#ifndef KILN_RUNTIME_STEP_KERNELS_H_
#define KILN_RUNTIME_STEP_KERNELS_H_

#include <cstdint>

#include "absl/types/span.h"

namespace kiln::runtime {

// PTX ISA 7.0 for sm_75 JITs on every GPU kiln supports
// (spec/cuda-driver-api.md §2).
// kiln_advance_step, appended to the captured decode graph: the next step's
// token is this step's argmax and its position is one further, so a greedy
// decode loop replays the graph with no host writes at all; and the step's
// (position, argmax) goes straight into pinned host memory, ring slot
// position mod 2 (no copy on the stream between two steps):
//   p = position[0]; tokens[0] = sampled[0]; position[0] = p + 1;
//   ring[p & 1] = {p, sampled[0]};
// kiln_hold(ns) spins for `ns` nanoseconds of the GPU's %globaltimer, so the
// host can queue a whole profiled plan before the GPU starts it.
absl::Span<const uint8_t> StepKernelsPtx();

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_STEP_KERNELS_H_
