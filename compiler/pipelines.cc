// The pass list, top to bottom (docs/architecture.md "Compilation, step by step").
#include "compiler/pipelines.h"

#include "passes/canonicalize.h"
#include "passes/fuse.h"
#include "passes/pack_weights.h"
#include "passes/plan_buffers.h"
#include "passes/select_schedules.h"

namespace kiln::compiler {

void BuildPipeline(passes::Pipeline& pipeline, const PipelineBuildOptions& options) {
  // Clean-ups: dead ops, reshape chains, duplicate weights and ops.
  pipeline.AddPass<passes::CanonicalizePass>();
  // Layout work into `load`: Q/K/V concatenated, gate/up interleaved, Q8_0 split.
  pipeline.AddPass<passes::PackWeightsPass>(passes::PackWeightsOptions{.group = options.gate_up_group});
  // One `kernel` per GPU launch: anchor plus prologue/epilogue ops.
  pipeline.AddPass<passes::FusePass>();
  // A schedule per kernel from schedules/ tables for the target.
  pipeline.AddPass<passes::SelectSchedulesPass>();
  // One activation arena by liveness, sizes as expressions of T.
  pipeline.AddPass<passes::PlanBuffersPass>();
}

}  // namespace kiln::compiler
