// The compiler's pass list, in one place (docs/architecture.md "Compilation, step by step").
#ifndef KILN_COMPILER_PIPELINES_H_
#define KILN_COMPILER_PIPELINES_H_

#include <cstdint>

#include "passes/pipeline.h"

namespace kiln::compiler {

struct PipelineBuildOptions {
  // G of pack-weights' interleave_rows / swiglu. Small, so the gate/up
  // matvec keeps the table's rows per block (codegen needs rows_per_block a
  // multiple of 2G; 64 rows of a staged format overflow shared memory).
  int64_t gate_up_group = 2;
};

// Appends the IR passes, in order, to `pipeline`: canonicalize,
// pack-weights, fuse, select-schedules, plan-buffers. (lower-to-kernels,
// codegen and the bundle writer follow them in `kilnc compile -o`.)
void BuildPipeline(passes::Pipeline& pipeline, const PipelineBuildOptions& options = {});

// The passes whose output lower-to-kernels takes (one `kernel` per launch,
// buffers planned): a bundle cannot be made with either disabled. The others
// may be (an unpacked or unscheduled bundle, for comparisons).
inline constexpr const char* kPassesLoweringNeeds[] = {"fuse", "plan-buffers"};

}  // namespace kiln::compiler

#endif  // KILN_COMPILER_PIPELINES_H_
