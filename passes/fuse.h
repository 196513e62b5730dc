// fuse: groups the ops of every function but `load` into `kernel` regions,
// one per GPU kernel of compiler/codegen/kernel_spec.h, each with attributes
// `family` (the Family's name), `anchor` (index of the anchor op in the
// region) and, on residual-add kernels, `inplace = 1` (the result aliases
// operand 1, the residual, which has no later use).
//   matvec (rows static) / gemm (rows T): [rms_norm prologue, cloned into each
//     kernel when several matmuls share it] matmul [epilogue: add of the
//     residual | swiglu | silu(extra) * acc: the gate result is operand 1,
//     kernel_spec.h Epilogue::kSiluMulWith]
//   qk_norm_rope_store: kv_store with its producers (slice, reshape, per-head
//     rms_norm, rope) from the qkv (or q, k, v) matmul results, plus the q
//     chain of the attention that reads the cache; yields the rotated q
//   attention_decode (q rows static): the attention, and in front of it the
//     whole qk_norm_rope_store group when one feeds it (one kernel)
//   attention_prefill; embed; argmax.
// Expects: verified IR as pack-weights leaves it (or unpacked). Guarantees:
// in Qwen3 prefill/decode every op but reshape and return ends in a kernel
// (≤ 5 per decode layer when Q/K/V and gate/up are packed); results and
// effects are unchanged; a second run changes nothing (kernels are never
// entered). Leaves alone: `load`, existing kernels, ops no pattern covers
// (lower-to-kernels rejects those), groups whose values escape or whose move
// would reorder effects on a state.
//
//   %h = rms_norm(%x, @blk.0.ffn_norm) {eps = 1e-06} : f32[1, 256]
//   %d = matmul(%a, @blk.0.ffn_down) : f32[1, 256]
//   %r = add(%x, %d) : f32[1, 256]
// becomes (the rms_norm goes into the kernels of the matmuls reading %h)
//   %r = kernel(%a, %x) {anchor = 0, family = "matvec", inplace = 1} : f32[1, 256] {
//   ^(%a.1: f32[1, 768], %x.1: f32[1, 256]):
//     %d = matmul(%a.1, @blk.0.ffn_down) : f32[1, 256]
//     %r.1 = add(%x.1, %d) : f32[1, 256]
//     yield(%r.1)
//   }
#ifndef KILN_PASSES_FUSE_H_
#define KILN_PASSES_FUSE_H_

#include "passes/pass.h"

namespace kiln::passes {

class FusePass : public Pass {
 public:
  std::string_view name() const override { return "fuse"; }
  absl::StatusOr<bool> Run(ir::Module& module, const PassContext& context) override;
};

}  // namespace kiln::passes

#endif  // KILN_PASSES_FUSE_H_
