// A block's best (value, index) pair, kArgmax's rule: (v, i) beats (bv, bi)
// if v > bv, or v == bv and i < bi, so a NaN never wins and ties go to the
// lower index whatever the order of arrival. Used by kArgmax and by a
// matvec that also takes the argmax of its row (KernelSpec.argmax).
#ifndef KILN_COMPILER_CODEGEN_BLOCK_BEST_H_
#define KILN_COMPILER_CODEGEN_BLOCK_BEST_H_

#include <functional>

#include "compiler/codegen/kernel_builder.h"

namespace kiln::codegen {

// i1: (v, i) beats (bv, bi).
llvm::Value* BetterPair(KernelBuilder& kb, llvm::Value* v, llvm::Value* i, llvm::Value* bv, llvm::Value* bi);

// Reduces every thread's (value f32, index i32) over the block (shuffles,
// then `smem`: 8 bytes per warp) and calls `use` with the best pair in
// thread 0. Every thread of the block must call it. Ends with thread 0
// still reading `smem`: a barrier must come before it is written again.
void BlockBest(KernelBuilder& kb, llvm::Value* smem, int warps, llvm::Value* bv, llvm::Value* bi,
               const std::function<void(llvm::Value*, llvm::Value*)>& use);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_BLOCK_BEST_H_
