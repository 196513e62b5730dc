// plan-buffers: gives every activation of prefill and decode a place in one
// activation arena, by liveness, with sizes as expressions of T.
//
// Does, in every function but `load`:
//   * wraps each compute op still outside a kernel in a kernel of its own
//     (so every launch is a `kernel`; fuse normally leaves none);
//   * places each kernel result at a 256-byte aligned `offset` (a string
//     "a*T + b"; a multi-result kernel lists them, comma-separated). Two
//     values share bytes only if their live ranges are disjoint, for every
//     T >= 1. Function arguments are IO and globals are states: neither is
//     in the arena. A reshape result is a view of its operand (its storage
//     lives as long as either). A kernel with `inplace = i` writes result 0
//     over operand i when that operand's storage dies there and has its
//     size; otherwise the pass drops the `inplace` attribute;
//   * puts `arena() {bytes = "a*T + b", kernels = N}` first in the body.
// Summary() (D/index.tsv): arena_bytes (max over functions), kv_bytes (the
// states typed with C, an expression of C), state_bytes (other states),
// kernels_per_token (kernels in decode).
// Expects: a verified module, activations at most linear in T (no P, C).
// Guarantees: deterministic; running it again changes nothing.
// Leaves alone: `load`, kernel regions (their values live in registers).
//
// Decode of the tiny Q8_0 model (the residual stream stays at 3072):
//   %l0.resid_ffn = kernel(%l0.ffn_act, %l0.resid_attn) {anchor = 0, inplace = 1, ...} : f32[1, 256]
// becomes
//   arena() {bytes = "4096", kernels = 15}                    (first op of @decode)
//   %l0.resid_ffn = kernel(%l0.ffn_act, %l0.resid_attn) {anchor = 0, inplace = 1, offset = "3072", ...}
#ifndef KILN_PASSES_PLAN_BUFFERS_H_
#define KILN_PASSES_PLAN_BUFFERS_H_

#include "passes/pass.h"

namespace kiln::passes {

class PlanBuffersPass : public Pass {
 public:
  std::string_view name() const override { return "plan-buffers"; }
  absl::StatusOr<bool> Run(ir::Module& module, const PassContext& context) override;
  std::vector<std::pair<std::string, std::string>> Summary() const override { return summary_; }

 private:
  std::vector<std::pair<std::string, std::string>> summary_;
};

}  // namespace kiln::passes

#endif  // KILN_PASSES_PLAN_BUFFERS_H_
