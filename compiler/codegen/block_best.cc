#include "compiler/codegen/block_best.h"

namespace kiln::codegen {

using llvm::Value;

Value* BetterPair(KernelBuilder& kb, Value* v, Value* i, Value* bv, Value* bi) {
  auto& b = kb.b();
  return b.CreateOr(b.CreateFCmpOGT(v, bv), b.CreateAnd(b.CreateFCmpOEQ(v, bv), b.CreateICmpSLT(i, bi)));
}

void BlockBest(KernelBuilder& kb, Value* smem, int warps, Value* bv, Value* bi,
               const std::function<void(Value*, Value*)>& use) {
  auto& b = kb.b();
  for (int m = 16; m >= 1; m /= 2) {
    Value* ov = kb.ShflXor(bv, m);
    Value* oi = kb.ShflXor(bi, m);
    Value* take = BetterPair(kb, ov, oi, bv, bi);
    bv = b.CreateSelect(take, ov, bv);
    bi = b.CreateSelect(take, oi, bi);
  }
  Value* tid = kb.Tid();
  Value* lane = b.CreateAnd(tid, kb.I32c(31));
  Value* warp = b.CreateLShr(tid, kb.I32c(5));
  kb.If(b.CreateICmpEQ(lane, kb.I32c(0)), [&] {
    kb.Store(bv, kb.Gep(smem, b.CreateShl(warp, kb.I32c(2))), 4);
    kb.Store(bi, kb.Gep(smem, b.CreateAdd(kb.I32c(4 * warps), b.CreateShl(warp, kb.I32c(2)))), 4);
  });
  kb.Barrier();
  kb.If(b.CreateICmpEQ(tid, kb.I32c(0)), [&] {
    Value* v = kb.Load(kb.F32(), kb.Gep(smem, int64_t{0}), 4);
    Value* i = kb.Load(kb.I32(), kb.Gep(smem, int64_t{4} * warps), 4);
    for (int w = 1; w < warps; ++w) {
      Value* ov = kb.Load(kb.F32(), kb.Gep(smem, int64_t{4} * w), 4);
      Value* oi = kb.Load(kb.I32(), kb.Gep(smem, int64_t{4} * (warps + w)), 4);
      Value* take = BetterPair(kb, ov, oi, v, i);
      v = b.CreateSelect(take, ov, v);
      i = b.CreateSelect(take, oi, i);
    }
    use(v, i);
  });
}

}  // namespace kiln::codegen
