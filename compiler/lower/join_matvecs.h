// Joins a layer's q/k and v projections that pack-weights could not
// concatenate (a V of another weight type than Q and K: a Q4_K_M layer with
// a Q6_K V) into one launch of a codegen::Family::kMatVecJoin kernel. Both
// read the layer's input and write disjoint rows of the qkv scratch, so a
// block of either needs nothing from the other; one launch spares the
// boundary between them, and the smaller one's blocks fill the larger's
// tail. Where the target cannot run their schedules in one launch, they
// stay two (beside_launches.h runs them side by side).
#ifndef KILN_COMPILER_LOWER_JOIN_MATVECS_H_
#define KILN_COMPILER_LOWER_JOIN_MATVECS_H_

#include <cstdint>
#include <vector>

#include "compiler/codegen/kernel_spec.h"
#include "compiler/lower/lowering_context.h"

namespace kiln::compiler {

// A matvec launch not yet added to its plan.
struct MatVecLaunch {
  codegen::KernelSpec spec;
  std::vector<LaunchArg> args;
  runtime::Expr tokens;
  ReadBytes read;
};

// Whether one launch can run both on `target`: their join passes
// codegen::ValidateKernelSpec (matvecs on one block size, register cap,
// k_split and token count, whose shared memory fits one block).
bool CanJoin(const codegen::KernelSpec& a, const codegen::KernelSpec& b, const codegen::Target& target);

// The join of a then b: parts {a, b}, a's arguments then b's, the bytes of
// both. Requires CanJoin.
MatVecLaunch Join(MatVecLaunch a, MatVecLaunch b);

}  // namespace kiln::compiler

#endif  // KILN_COMPILER_LOWER_JOIN_MATVECS_H_
