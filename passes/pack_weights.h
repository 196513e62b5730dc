// pack-weights: moves weight layout work into `load`, so prefill and decode
// read weights in the layouts their kernels want (docs/architecture.md,
// "Compilation, step by step").
//
// Does, per layer prefix P (weights @P.attn_q, @P.ffn_gate, ...):
//   * Q/K/V matmuls of one input -> one matmul on state @P.attn_qkv (load:
//     concat_rows(q, k, v)) and three `slice`s of its result;
//   * gate/up matmuls + silu + mul -> one matmul on state @P.ffn_gate_up
//     (load: interleave_rows {group = G}) and `swiglu {group = G}`;
//   * every q8_0 matrix a matmul reads (packed ones and the LM head
//     included) -> q8_0_split in load into states @<name>.qs (i8) and
//     @<name>.d (f16), read by the 3-operand matmul; every q6_k one the
//     same through q6_k_split (@<name>.qs q6_kd: the 208 bytes of each
//     block before its d, so rows stay 16-byte aligned; @<name>.d f16). A
//     packed matrix is split straight from the concatenation (no q8_0 or
//     q6_k copy is kept).
// Packs only parts of one dtype and width: where attn_v's differs (Q4_K_M's
// Q6_K attn_v next to a Q4_K attn_q), Q and K go to state @P.attn_qk
// (two slices) and V keeps its matmul. The embedding table keeps
// its blocks (embed gathers rows); a tied LM head reads its own split copy.
// Expects: a verified module with a `load` function; unfused matmuls.
// Guarantees: bit-identical results (same dot products, same silu*up).
// Leaves alone: a module whose `load` already does anything (so a second
// run changes nothing); weights (they stay bound: load reads them).
//
//   %q = matmul(%h, @blk.0.attn_q) : f32[T, 2048]     %qkv = matmul(%h, @blk.0.attn_qkv.qs, @blk.0.attn_qkv.d)
//   %k = matmul(%h, @blk.0.attn_k) : f32[T, 1024] ==> %q = slice(%qkv) {size = 2048, start = 0}
//   %v = matmul(%h, @blk.0.attn_v) : f32[T, 1024]     %k = slice(%qkv) {size = 1024, start = 2048} ...
#ifndef KILN_PASSES_PACK_WEIGHTS_H_
#define KILN_PASSES_PACK_WEIGHTS_H_

#include <cstdint>

#include "passes/pass.h"

namespace kiln::passes {

struct PackWeightsOptions {
  int64_t group = 32;  // G: rows per gate/up group (interleave_rows, swiglu)
};

class PackWeightsPass : public Pass {
 public:
  explicit PackWeightsPass(PackWeightsOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "pack-weights"; }
  absl::StatusOr<bool> Run(ir::Module& module, const PassContext& context) override;

 private:
  PackWeightsOptions options_;
};

}  // namespace kiln::passes

#endif  // KILN_PASSES_PACK_WEIGHTS_H_
