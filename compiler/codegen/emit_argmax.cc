// kArgmax: out[r] = the lowest index of the largest logit of row r (NaNs are
// never the maximum; a row with no finite maximum gives 0). Block (r, b)
// scans columns [b*chunk, (b+1)*chunk) of row r, chunk = ceil(cols/blocks)
// (kernel_plans.h ArgmaxPlan): per-thread scan, then warp shuffles and
// shared memory. With one block it writes out[r]; otherwise thread 0 writes
// the block's (value, index) to `partial` and counts the block in
// counter[r] with an acq_rel atomic (the "last block done" pattern,
// spec/nvptx-llvm19.md §8, as in emit_attention_decode.cc), and the last block to arrive resets the
// counter and merges the records with ld.volatile reads. Ties between
// blocks go to the lower index, so the result does not depend on the order
// of arrival.
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

// Reduces every thread's (value, index) over the block and calls `use` with
// the best pair in thread 0. `smem`: 8 bytes per warp. Ends with thread 0
// still reading `smem`: a barrier must come before it is written again.
void BlockBest(KernelBuilder& kb, Value* smem, int warps, Value* bv, Value* bi,
               const std::function<void(Value*, Value*)>& use) {
  auto& b = kb.b();
  for (int m = 16; m >= 1; m /= 2) {
    Value* ov = kb.ShflXor(bv, m);
    Value* oi = kb.ShflXor(bi, m);
    Value* take = Better(kb, ov, oi, bv, bi);
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
      Value* take = Better(kb, ov, oi, v, i);
      v = b.CreateSelect(take, ov, v);
      i = b.CreateSelect(take, oi, i);
    }
    use(v, i);
  });
}

}  // namespace

absl::Status EmitArgmax(KernelBuilder& kb) {
  const KernelSpec& spec = kb.spec();
  auto& b = kb.b();
  const ArgmaxPlan plan = PlanArgmax(spec);
  const int NT = plan.threads, NW = plan.warps, B = plan.blocks;
  Value* smem = kb.StaticShared(plan.shared_bytes);
  Value* flag = kb.Gep(smem, plan.flag_offset);
  kb.GridDependencyWait();
  Value* cols = kb.Param("cols");
  Value* row = kb.Ctaid(0);
  Value* blk = kb.Ctaid(1);
  Value* base = kb.Gep(kb.Param("logits"),
                       b.CreateShl(b.CreateMul(b.CreateZExt(row, kb.I64()), b.CreateSExt(cols, kb.I64())), kb.I64c(2)));
  Value* tid = kb.Tid();
  const float kNegInf = -std::numeric_limits<float>::infinity();
  const int32_t kNone = std::numeric_limits<int32_t>::max();
  auto i64 = [&](Value* v) { return b.CreateZExt(v, kb.I64()); };
  Value* out = kb.Gep(kb.Param("out"), b.CreateShl(i64(row), kb.I64c(2)));
  // This block's columns [begin, end); the last blocks may get fewer, or
  // none, and still take part in the merge.
  Value* chunk = b.CreateUDiv(b.CreateAdd(cols, kb.I32c(B - 1)), kb.I32c(B));
  Value* begin = b.CreateMul(blk, chunk);
  Value* end = b.CreateAdd(begin, chunk);
  end = kb.SMin(end, cols);
  Value* best = kb.Var(kb.F32(), kb.F32c(kNegInf), "best");
  Value* idx = kb.Var(kb.I32(), kb.I32c(kNone), "idx");
  kb.For(b.CreateAdd(begin, tid), end, kb.I32c(NT), [&](Value* i) {
    Value* v = kb.LoadInput(kb.F32(), kb.Gep(base, b.CreateShl(i64(i), kb.I64c(2))), 4);
    // Indices grow within a thread, so a strict > keeps the lowest.
    Value* better = b.CreateFCmpOGT(v, kb.Get(best));
    kb.Set(best, b.CreateSelect(better, v, kb.Get(best)));
    kb.Set(idx, b.CreateSelect(better, i, kb.Get(idx)));
  });
  auto store_out = [&](Value* i) {
    kb.Store(b.CreateSelect(b.CreateICmpEQ(i, kb.I32c(kNone)), kb.I32c(0), i), out, 4);
  };
  if (B == 1) {
    BlockBest(kb, smem, NW, kb.Get(best), kb.Get(idx), [&](Value*, Value* i) { store_out(i); });
    kb.GridDependencyLaunchDependents();
    kb.Finish();
    return absl::OkStatus();
  }
  // Record (value f32, index i32) of block (row, blk), 8 bytes.
  auto record = [&](Value* r, Value* s) {
    Value* at = b.CreateAdd(b.CreateMul(i64(r), kb.I64c(B)), i64(s));
    return kb.Gep(kb.Param("partial"), b.CreateShl(at, kb.I64c(3)));
  };
  Value* counter = kb.Gep(kb.Param("counter"), b.CreateShl(i64(row), kb.I64c(2)));
  BlockBest(kb, smem, NW, kb.Get(best), kb.Get(idx), [&](Value* v, Value* i) {
    Value* rec = record(row, blk);
    kb.Store(v, rec, 4);
    kb.Store(i, kb.Gep(rec, int64_t{4}), 4);
    // acq_rel: releases the record, acquires the other blocks' for the merge.
    Value* old = kb.AtomicAddAcqRelU32(counter, kb.I32c(1));
    kb.Store(b.CreateZExt(b.CreateICmpEQ(old, kb.I32c(B - 1)), kb.I32()), flag, 4);
  });
  kb.Barrier();
  // The dependents may launch; only the merge is left.
  kb.GridDependencyLaunchDependents();
  kb.If(b.CreateICmpNE(kb.Load(kb.I32(), flag, 4), kb.I32c(0)), [&] {
    kb.If(b.CreateICmpEQ(tid, kb.I32c(0)), [&] { kb.StoreVolatile(kb.I32c(0), counter, 4); });
    Value* mv = kb.Var(kb.F32(), kb.F32c(kNegInf), "mv");
    Value* mi = kb.Var(kb.I32(), kb.I32c(kNone), "mi");
    kb.For(tid, kb.I32c(B), kb.I32c(NT), [&](Value* s) {
      Value* rec = record(row, s);
      Value* v = kb.LoadVolatile(kb.F32(), rec, 4);
      Value* i = kb.LoadVolatile(kb.I32(), kb.Gep(rec, int64_t{4}), 4);
      Value* take = Better(kb, v, i, kb.Get(mv), kb.Get(mi));
      kb.Set(mv, b.CreateSelect(take, v, kb.Get(mv)));
      kb.Set(mi, b.CreateSelect(take, i, kb.Get(mi)));
    }, /*unroll=*/1);
    BlockBest(kb, smem, NW, kb.Get(mv), kb.Get(mi), [&](Value*, Value* i) { store_out(i); });
  });
  kb.Finish();
  return absl::OkStatus();
}

}  // namespace kiln::codegen
