// lower-to-kernels: the last step before code generation. Turns a module
// that went through the pass pipeline (every launch a `kernel` with a
// `family`, activations placed by plan-buffers) into the bundle's manifest —
// buffers, GGUF bindings, launch plans for load/prefill/decode — plus one
// codegen::KernelSpec per distinct kernel (layers share kernels).
#ifndef KILN_COMPILER_LOWER_LOWER_TO_KERNELS_H_
#define KILN_COMPILER_LOWER_LOWER_TO_KERNELS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/codegen/kernel_abi.h"
#include "compiler/codegen/kernel_spec.h"
#include "ir/ir.h"
#include "models/gguf/gguf_file.h"
#include "models/qwen3_config.h"
#include "models/tokenizer/vocab.h"
#include "runtime/manifest.pb.h"

namespace kiln::compiler {

struct LowerOptions {
  codegen::Target target;
  int64_t max_prefill_tokens = 512;  // prefill chunk size (T of the prefill plan)
  // Programmatic dependent launch where the target has it (sm_90); false:
  // no griddepcontrol, every kernel starts after the previous one ends.
  bool programmatic_launch = true;
  // Independent neighbours of the decode plan run side by side
  // (beside_launches.h); false: one after another on one stream.
  bool concurrent_launches = true;
  // A layer's q/k and v projections of different weight types run as one
  // launch where the target can run their schedules so (join_matvecs.h);
  // false: apart (bench/RESULTS.md, 2026-12-05: 0.002-0.003 ms a token
  // slower on the 8B Q4_K_M, H200).
  bool join_matvecs = true;
};

struct LoweredModel {
  runtime::Manifest manifest;                 // all but the sections
  std::vector<codegen::KernelSpec> kernels;   // indexed like manifest.kernels
};

// Errors: Unimplemented naming the op line for IR the lowering has no
// kernel for; Internal for a module the pipeline should not have produced.
absl::StatusOr<LoweredModel> LowerToKernels(const ir::Module& module, const gguf::GgufFile& file,
                                            const models::Qwen3Config& config,
                                            const tokenizer::Vocab& vocab, const LowerOptions& options);

}  // namespace kiln::compiler

#endif  // KILN_COMPILER_LOWER_LOWER_TO_KERNELS_H_
