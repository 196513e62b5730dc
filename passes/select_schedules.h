// select-schedules: gives every fused kernel its schedule for
// PassContext.target, from the tables of schedules/ (first matching entry
// for family + weight dtype + rows x cols), as a `schedule` dict that says
// what will be generated: the lookup key (family, weight, rows, cols), every
// field of the family's schedule message (kernel_spec.h MatVecSchedule, ...;
// schedule.proto's `families` option keeps a field to the families it names),
// target and source ("heuristic", "tuned", or "fallback" when the target or
// entry is missing: kilnc warns on those).
// Fits the entry to the kernel: a swiglu epilogue of group G needs whole
// gate/up pairs per block, so matvec rows_per_block and gemm tile_m are
// rounded up to a multiple of 2G.
// Expects: kernels from fuse (`family`, `anchor`). Guarantees: each such
// kernel has a `schedule`. Leaves alone: kernels already scheduled, kernels
// without `family`, everything outside kernels.
//
//   %q = kernel(%x) {anchor = 1, family = "matvec"} : f32[1, 512] { ... }
// becomes
//   %q = kernel(%x) {anchor = 1, family = "matvec", schedule = {cols = 256,
//       family = "matvec", k_split = 1, max_tokens = 1, row_groups = 1, rows = 512,
//       rows_per_block = 4, source = "heuristic", target = "sm_90", threads = 256,
//       unroll = 2, vector_bytes = 16, weight = "q8_0_planar"}} : f32[1, 512] { ... }
#ifndef KILN_PASSES_SELECT_SCHEDULES_H_
#define KILN_PASSES_SELECT_SCHEDULES_H_

#include "passes/pass.h"

namespace kiln::passes {

class SelectSchedulesPass : public Pass {
 public:
  std::string_view name() const override { return "select-schedules"; }
  absl::StatusOr<bool> Run(ir::Module& module, const PassContext& context) override;
};

}  // namespace kiln::passes

#endif  // KILN_PASSES_SELECT_SCHEDULES_H_
