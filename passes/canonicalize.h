// canonicalize: small clean-ups that keep later passes' patterns simple.
//
// Does, to a fixpoint, in every function and kernel region:
//   * merges duplicate weights (same GGUF binding and type) into the first;
//   * folds reshape(reshape(x)) into reshape(x) and drops no-op reshapes
//     (result type = operand type);
//   * merges identical pure ops (same op, operands, attributes and result
//     types: CSE), keeping the first;
//   * removes dead pure ops (every result unused).
// Expects: a verified module. Guarantees: the same results for every
// function, deterministic output (program order decides what is kept).
// Leaves alone: ops with effects (kv_store, store) or regions, ops that read
// a state (a write may come between two reads), zero-result ops (arena),
// function arguments and unused globals (weights stay bound).
//
//   %a = reshape(%x) : f32[T, 8, 16]            %y = silu(%x) : f32[T, 128]
//   %b = reshape(%a) : f32[T, 128]      ==>     return(%y, %y)
//   %y = silu(%b) : f32[T, 128]
//   %z = silu(%b) : f32[T, 128]
//   return(%y, %z)
#ifndef KILN_PASSES_CANONICALIZE_H_
#define KILN_PASSES_CANONICALIZE_H_

#include "passes/pass.h"

namespace kiln::passes {

class CanonicalizePass : public Pass {
 public:
  std::string_view name() const override { return "canonicalize"; }
  absl::StatusOr<bool> Run(ir::Module& module, const PassContext& context) override;
};

}  // namespace kiln::passes

#endif  // KILN_PASSES_CANONICALIZE_H_
