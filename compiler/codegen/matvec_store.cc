// MatVecEmitter (matvec_emitter.h): the group rows' accumulators summed
// over the block (or one warp) and stored through the epilogue.
#include <algorithm>
#include <functional>
#include <vector>

#include "compiler/codegen/matvec_emitter.h"

namespace kiln::codegen {

using llvm::Value;

Value* MatVecEmitter::Silu(Value* z) {
  // silu(z) = z / (1 + e^-z), e^-z = 2^(-z log2 e) with ex2.approx.
  Value* e = kb_.Ex2(b_.CreateFMul(z, kb_.F32c(-1.4426950408889634f)));
  return b_.CreateFDiv(z, b_.CreateFAdd(kb_.F32c(1.0f), e));
}

void MatVecEmitter::ReduceAndStore() {
  if (plan_.warp_reduce) return ReduceAndStoreWarp();
  const int R = plan_.rows_per_group, TT = plan_.tokens, RB = plan_.rows_per_block;
  const int V = plan_.red_values;
  const int NT = plan_.threads;
  Value* red = kb_.Gep(smem_, plan_.red_offset);
  Value* fin = kb_.Gep(smem_, plan_.fin_offset);
  // Per-warp sums, lane 0 writes red[warp][v].
  std::vector<Value*> sums;
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < TT; ++t) sums.push_back(kb_.WarpSum(kb_.Get(acc_[r][t])));
  if (plan_.rms)
    for (int t = 0; t < TT; ++t) sums.push_back(kb_.WarpSum(kb_.Get(ss_[t])));
  kb_.If(b_.CreateICmpEQ(lane_, kb_.I32c(0)), [&] {
    Value* base = b_.CreateMul(warp_, kb_.I32c(V));
    for (int v = 0; v < V; ++v)
      kb_.Store(sums[v], kb_.Gep(red, b_.CreateShl(b_.CreateAdd(base, kb_.I32c(v)), kb_.I32c(2))), 4);
  });
  kb_.Barrier();
  // fin[t][r] = sum over the group's warps (times the RMSNorm factor).
  kb_.For(tid_, kb_.I32c(int64_t{RB} * TT), kb_.I32c(NT), [&](Value* i) {
    Value* t = b_.CreateUDiv(i, kb_.I32c(RB));
    Value* r = b_.CreateURem(i, kb_.I32c(RB));
    Value* grp = b_.CreateUDiv(r, kb_.I32c(R));
    Value* rg = b_.CreateURem(r, kb_.I32c(R));
    Value* v = b_.CreateAdd(b_.CreateMul(rg, kb_.I32c(TT)), t);
    Value* w0 = b_.CreateMul(grp, kb_.I32c(plan_.group_warps));
    Value* total = nullptr;
    for (int w = 0; w < plan_.group_warps; ++w) {
      Value* idx = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(w0, kb_.I32c(w)), kb_.I32c(V)), v);
      Value* x = kb_.Load(kb_.F32(), kb_.Gep(red, b_.CreateShl(idx, kb_.I32c(2))), 4);
      total = total == nullptr ? x : b_.CreateFAdd(total, x);
    }
    if (plan_.rms) {
      // Every column was staged (and squared) once per block, by any thread.
      Value* ss = nullptr;
      for (int w = 0; w < plan_.warps; ++w) {
        Value* idx = b_.CreateAdd(kb_.I32c(int64_t{w} * V + int64_t{R} * TT), t);
        Value* x = kb_.Load(kb_.F32(), kb_.Gep(red, b_.CreateShl(idx, kb_.I32c(2))), 4);
        ss = ss == nullptr ? x : b_.CreateFAdd(ss, x);
      }
      total = b_.CreateFMul(total, RmsFactor(ss));
    }
    kb_.Store(total, kb_.Gep(fin, b_.CreateShl(i, kb_.I32c(2))), 4);
  });
  kb_.Barrier();

  if (spec_.epilogue == Epilogue::kSiluMulPairs) {
    const int pg = spec_.pair_group;
    const int half = RB / 2;
    kb_.For(tid_, kb_.I32c(int64_t{half} * TT), kb_.I32c(NT), [&](Value* i) {
      Value* t = b_.CreateUDiv(i, kb_.I32c(half));
      Value* jl = b_.CreateURem(i, kb_.I32c(half));
      Value* gate = b_.CreateAdd(b_.CreateMul(b_.CreateUDiv(jl, kb_.I32c(pg)), kb_.I32c(2 * pg)),
                                 b_.CreateURem(jl, kb_.I32c(pg)));
      Value* ok = b_.CreateAnd(b_.CreateICmpSLT(b_.CreateAdd(block_row0_, gate), kb_.I32c(spec_.rows)),
                               b_.CreateICmpSLT(t, tokens_));
      kb_.If(ok, [&] {
        Value* fbase = b_.CreateMul(t, kb_.I32c(RB));
        Value* g = kb_.Load(kb_.F32(), kb_.Gep(fin, b_.CreateShl(b_.CreateAdd(fbase, gate), kb_.I32c(2))), 4);
        Value* u = kb_.Load(
            kb_.F32(), kb_.Gep(fin, b_.CreateShl(b_.CreateAdd(fbase, b_.CreateAdd(gate, kb_.I32c(pg))), kb_.I32c(2))), 4);
        StorePair(t, b_.CreateAdd(b_.CreateLShr(block_row0_, kb_.I32c(1)), jl), g, u);
      });
    });
    return;
  }
  kb_.For(tid_, kb_.I32c(int64_t{RB} * TT), kb_.I32c(NT), [&](Value* i) {
    Value* t = b_.CreateUDiv(i, kb_.I32c(RB));
    Value* r = b_.CreateURem(i, kb_.I32c(RB));
    Value* row = b_.CreateAdd(block_row0_, r);
    Value* ok = b_.CreateAnd(b_.CreateICmpSLT(row, kb_.I32c(spec_.rows)), b_.CreateICmpSLT(t, tokens_));
    kb_.If(ok, [&] { StoreRow(t, row, kb_.Load(kb_.F32(), kb_.Gep(fin, b_.CreateShl(i, kb_.I32c(2))), 4)); });
  });
}

Value* MatVecEmitter::RmsFactor(Value* ss) {
  // 1/sqrt(mean + eps), correctly rounded sqrt and division.
  Value* mean = b_.CreateFDiv(ss, kb_.F32c(static_cast<float>(spec_.cols)));
  return b_.CreateFDiv(kb_.F32c(1.0f), kb_.Sqrt(b_.CreateFAdd(mean, kb_.F32c(spec_.eps))));
}

void MatVecEmitter::StoreRow(Value* t, Value* row, Value* v) {
  Value* out = kb_.Param("out");
  Value* idx = b_.CreateAdd(b_.CreateMul(b_.CreateZExt(t, kb_.I64()), kb_.I64c(spec_.rows)),
                            b_.CreateZExt(row, kb_.I64()));
  Value* ptr = kb_.Gep(out, b_.CreateShl(idx, kb_.I64c(2)));
  if (spec_.epilogue == Epilogue::kStore) {
    kb_.Store(v, ptr, 4);
  } else if (spec_.epilogue == Epilogue::kSiluMulWith) {
    Value* g = kb_.LoadInput(kb_.F32(), kb_.Gep(kb_.Param("extra"), b_.CreateShl(idx, kb_.I64c(2))), 4);
    kb_.Store(b_.CreateFMul(Silu(g), v), ptr, 4);
  } else if (plan_.k_split > 1) {
    kb_.AtomicAddF32(ptr, v);
  } else {
    kb_.Store(b_.CreateFAdd(kb_.Load(kb_.F32(), ptr, 4), v), ptr, 4);
  }
}

void MatVecEmitter::StorePair(Value* t, Value* j, Value* g, Value* u) {
  Value* idx = b_.CreateAdd(b_.CreateMul(b_.CreateZExt(t, kb_.I64()), kb_.I64c(spec_.rows / 2)),
                            b_.CreateZExt(j, kb_.I64()));
  kb_.Store(b_.CreateFMul(Silu(g), u), kb_.Gep(kb_.Param("out"), b_.CreateShl(idx, kb_.I64c(2))), 4);
}

void MatVecEmitter::BlockRmsScale() {
  const int TT = plan_.tokens;
  Value* red = kb_.Gep(smem_, plan_.red_offset);
  std::vector<Value*> sums;
  for (int t = 0; t < TT; ++t) sums.push_back(kb_.WarpSum(kb_.Get(ss_[t])));
  kb_.If(b_.CreateICmpEQ(lane_, kb_.I32c(0)), [&] {
    for (int t = 0; t < TT; ++t)
      kb_.Store(sums[t], kb_.Gep(red, b_.CreateShl(b_.CreateAdd(b_.CreateMul(warp_, kb_.I32c(TT)), kb_.I32c(t)),
                                                   kb_.I32c(2))), 4);
  });
  kb_.Barrier();
  for (int t = 0; t < TT; ++t) {
    Value* ss = nullptr;
    for (int w = 0; w < plan_.warps; ++w) {
      Value* x = kb_.Load(kb_.F32(), kb_.Gep(red, int64_t{4} * (int64_t{w} * TT + t)), 4);
      ss = ss == nullptr ? x : b_.CreateFAdd(ss, x);
    }
    rms_scale_.push_back(RmsFactor(ss));
  }
}

void MatVecEmitter::ReduceAndStoreWarp() {
  const int R = plan_.rows_per_group, TT = plan_.tokens;
  // Every lane holds every sum (xor shuffles); lane k stores value k.
  std::vector<std::vector<Value*>> sum(R, std::vector<Value*>(TT));
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < TT; ++t) {
      Value* v = kb_.WarpSum(kb_.Get(acc_[r][t]));
      sum[r][t] = plan_.rms ? b_.CreateFMul(v, rms_scale_[t]) : v;
    }
  Value* row0 = b_.CreateAdd(block_row0_, b_.CreateMul(group_, kb_.I32c(R)));  // the group's first row
  auto on_lane = [&](int k, Value* cond, const std::function<void()>& body) {
    kb_.If(b_.CreateAnd(b_.CreateICmpEQ(lane_, kb_.I32c(k % kWarp)), cond), body);
  };
  if (spec_.epilogue == Epilogue::kSiluMulPairs) {
    // Whole pairs in a group (ABI): output jl of the group takes rows gate
    // and gate + pair_group of it.
    const int pg = spec_.pair_group;
    for (int jl = 0; jl < R / 2; ++jl)
      for (int t = 0; t < TT; ++t) {
        const int gate = jl / pg * 2 * pg + jl % pg;
        Value* ok = b_.CreateAnd(b_.CreateICmpSLT(b_.CreateAdd(row0, kb_.I32c(gate)), kb_.I32c(spec_.rows)),
                                 b_.CreateICmpSLT(kb_.I32c(t), tokens_));
        on_lane(jl * TT + t, ok, [&] {
          StorePair(kb_.I32c(t), b_.CreateAdd(b_.CreateLShr(row0, kb_.I32c(1)), kb_.I32c(jl)), sum[gate][t],
                    sum[gate + pg][t]);
        });
      }
    return;
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < TT; ++t) {
      Value* row = b_.CreateAdd(row0, kb_.I32c(r));
      Value* ok = b_.CreateAnd(b_.CreateICmpSLT(row, kb_.I32c(spec_.rows)), b_.CreateICmpSLT(kb_.I32c(t), tokens_));
      on_lane(r * TT + t, ok, [&] { StoreRow(kb_.I32c(t), row, sum[r][t]); });
    }
}

}  // namespace kiln::codegen
