// kArgmax: out[r] = the lowest index of the largest logit of row r (NaNs are
// never the maximum; a row with no finite maximum gives 0). One block per
// row; per-thread scan, then warp shuffles and shared memory.
#include <limits>

#include "compiler/codegen/emitters.h"
#include "compiler/codegen/kernel_plans.h"

namespace kiln::codegen {

using llvm::Value;

namespace {

// (v, i) beats (bv, bi) if v > bv, or v == bv and i < bi.
Value* Better(KernelBuilder& kb, Value* v, Value* i, Value* bv, Value* bi) {
  auto& b = kb.b();
  return b.CreateOr(b.CreateFCmpOGT(v, bv), b.CreateAnd(b.CreateFCmpOEQ(v, bv), b.CreateICmpSLT(i, bi)));
}

}  // namespace

absl::Status EmitArgmax(KernelBuilder& kb) {
  const KernelSpec& spec = kb.spec();
  auto& b = kb.b();
  const int NT = spec.elementwise.threads, NW = NT / kWarp;
  Value* smem = kb.StaticShared(int64_t{8} * NW);
  kb.GridDependencyWait();
  Value* cols = kb.Param("cols");
  Value* row = kb.Ctaid(0);
  Value* base = kb.Gep(kb.Param("logits"),
                       b.CreateShl(b.CreateMul(b.CreateZExt(row, kb.I64()), b.CreateSExt(cols, kb.I64())), kb.I64c(2)));
  Value* tid = kb.Tid();
  const float kNegInf = -std::numeric_limits<float>::infinity();
  const int32_t kNone = std::numeric_limits<int32_t>::max();
  Value* best = kb.Var(kb.F32(), kb.F32c(kNegInf), "best");
  Value* idx = kb.Var(kb.I32(), kb.I32c(kNone), "idx");
  kb.For(tid, cols, kb.I32c(NT), [&](Value* i) {
    Value* v = kb.Load(kb.F32(), kb.Gep(base, b.CreateShl(b.CreateZExt(i, kb.I64()), kb.I64c(2))), 4);
    // Indices grow within a thread, so a strict > keeps the lowest.
    Value* better = b.CreateFCmpOGT(v, kb.Get(best));
    kb.Set(best, b.CreateSelect(better, v, kb.Get(best)));
    kb.Set(idx, b.CreateSelect(better, i, kb.Get(idx)));
  });
  Value* bv = kb.Get(best);
  Value* bi = kb.Get(idx);
  for (int m = 16; m >= 1; m /= 2) {
    Value* ov = kb.ShflXor(bv, m);
    Value* oi = kb.ShflXor(bi, m);
    Value* take = Better(kb, ov, oi, bv, bi);
    bv = b.CreateSelect(take, ov, bv);
    bi = b.CreateSelect(take, oi, bi);
  }
  Value* lane = b.CreateAnd(tid, kb.I32c(31));
  Value* warp = b.CreateLShr(tid, kb.I32c(5));
  kb.If(b.CreateICmpEQ(lane, kb.I32c(0)), [&] {
    kb.Store(bv, kb.Gep(smem, b.CreateShl(warp, kb.I32c(2))), 4);
    kb.Store(bi, kb.Gep(smem, b.CreateAdd(kb.I32c(4 * NW), b.CreateShl(warp, kb.I32c(2)))), 4);
  });
  kb.Barrier();
  kb.If(b.CreateICmpEQ(tid, kb.I32c(0)), [&] {
    Value* v = kb.Load(kb.F32(), kb.Gep(smem, int64_t{0}), 4);
    Value* i = kb.Load(kb.I32(), kb.Gep(smem, int64_t{4} * NW), 4);
    for (int w = 1; w < NW; ++w) {
      Value* ov = kb.Load(kb.F32(), kb.Gep(smem, int64_t{4} * w), 4);
      Value* oi = kb.Load(kb.I32(), kb.Gep(smem, int64_t{4} * (NW + w)), 4);
      Value* take = Better(kb, ov, oi, v, i);
      v = b.CreateSelect(take, ov, v);
      i = b.CreateSelect(take, oi, i);
    }
    i = b.CreateSelect(b.CreateICmpEQ(i, kb.I32c(kNone)), kb.I32c(0), i);
    kb.Store(i, kb.Gep(kb.Param("out"), b.CreateShl(b.CreateZExt(row, kb.I64()), kb.I64c(2))), 4);
  });
  kb.GridDependencyLaunchDependents();
  kb.Finish();
  return absl::OkStatus();
}

}  // namespace kiln::codegen
