// MatVecEmitter (matvec_emitter.h): a piece's decoded weights against the
// staged activations, into the rows' fp32 accumulators (float FMAs or
// dp4a on the int8 levels).
#include <algorithm>
#include <functional>
#include <vector>

#include "compiler/codegen/matvec_emitter.h"

namespace kiln::codegen {

using llvm::Value;

void MatVecEmitter::Accumulate(const std::function<std::vector<Segment>(int)>& decode, Value* active,
                               const RowFn* row_done) {
  if (plan_.int8_x) return AccumulateInt8(decode, active, row_done);
  const int TT = plan_.tokens;
  std::vector<Segment> segs0 = decode(0);
  // Activations of the piece's columns, per segment and token, and their
  // sums where a segment needs them.
  const size_t S = segs0.size();
  std::vector<std::vector<std::vector<std::vector<Value*>>>> xv(S, std::vector<std::vector<std::vector<Value*>>>(TT));
  std::vector<std::vector<Value*>> sum(S, std::vector<Value*>(TT, nullptr));
  auto stage = [&](size_t si, int t) {
    bool need_sum = segs0[si].NeedsSum();
    xv[si][t].clear();
    sum[si][t] = nullptr;
    for (const Quad& q : segs0[si].quads) {
      std::vector<Value*> x = kb_.Load4xF32(StagedX(t, b_.CreateSub(q.col, chunk_col0_)));
      if (need_sum)
        for (int i = 0; i < 4; ++i) sum[si][t] = sum[si][t] == nullptr ? x[i] : b_.CreateFAdd(sum[si][t], x[i]);
      xv[si][t].push_back(x);
    }
  };
  auto dot = [&](const Segment& s, size_t si, int t) {
    // sum(w x) = a * sum(f x) + b * sum(x)  (weight_decoder.h)
    Value* a = s.scale == nullptr ? (s.inv_c1 == 1.0f ? nullptr : kb_.F32c(s.inv_c1))
                                  : (s.inv_c1 == 1.0f ? s.scale : b_.CreateFMul(s.scale, kb_.F32c(s.inv_c1)));
    float k = static_cast<float>(s.q_offset) - s.c0 * s.inv_c1;
    Value* bb = nullptr;
    if (k != 0.0f) bb = s.scale == nullptr ? kb_.F32c(k) : b_.CreateFMul(s.scale, kb_.F32c(k));
    if (s.offset != nullptr) bb = bb == nullptr ? s.offset : b_.CreateFAdd(bb, s.offset);
    Value* f = nullptr;
    for (size_t qi = 0; qi < s.quads.size(); ++qi)
      for (int i = 0; i < 4; ++i)
        f = f == nullptr ? b_.CreateFMul(s.quads[qi].f[i], xv[si][t][qi][i])
                         : kb_.Fma(s.quads[qi].f[i], xv[si][t][qi][i], f);
    Value* c = a == nullptr ? f : b_.CreateFMul(a, f);
    if (bb != nullptr) c = kb_.Fma(bb, sum[si][t], c);
    return c;
  };
  AccumulateSegments(segs0, decode, active, stage, dot, row_done);
}

void MatVecEmitter::AccumulateInt8(const std::function<std::vector<Segment>(int)>& decode, Value* active,
                                   const RowFn* row_done) {
  const int TT = plan_.tokens;
  std::vector<Segment> segs0 = decode(0);
  // Per segment and token: the activation code words of its columns, their
  // 32-column block's scale and (where the segment needs it) their scaled
  // sum.
  struct StagedSegment {
    std::vector<Value*> words[2];  // the two code levels
    Value* scale = nullptr;
    Value* sum = nullptr;
  };
  auto needs_sum = [](const Segment& s) { return s.q_offset != 0 || s.offset != nullptr; };
  std::vector<std::vector<StagedSegment>> xv(segs0.size(), std::vector<StagedSegment>(TT));
  auto stage = [&](size_t si, int t) {
    const Segment& s = segs0[si];
    // 8 (a 32-column segment), 4 (planar Q6_K's 16 columns) or 2 (Q6_K's 8)
    const int n = static_cast<int>(s.quads.size());
    Value* lc = b_.CreateSub(s.quads[0].col, chunk_col0_);
    StagedSegment& x = xv[si][t];
    const int vec = n % 4 == 0 ? 4 : n;  // 16- or 8-byte aligned runs within a padded piece
    for (int level = 0; level < 2; ++level) {
      x.words[level].clear();
      for (int i = 0; i < n; i += vec) {
        Value* v = kb_.Load(llvm::FixedVectorType::get(kb_.I32(), vec),
                            StagedCode(t, b_.CreateAdd(lc, kb_.I32c(4 * i)), level), 4 * vec);
        for (int k = 0; k < vec; ++k) x.words[level].push_back(b_.CreateExtractElement(v, uint64_t(k)));
      }
    }
    x.scale = kb_.Load(kb_.F32(), StagedScale(t, lc), 4);
    x.sum = nullptr;
    if (needs_sum(s)) {
      const int groups = n / 2;  // 8-column sums
      if (groups == 1) {
        x.sum = kb_.Load(kb_.F32(), StagedSum(t, lc), 4);
      } else {
        Value* v = kb_.Load(llvm::FixedVectorType::get(kb_.F32(), groups), StagedSum(t, lc), 4 * groups);
        for (int k = 0; k < groups; ++k) {
          Value* e = b_.CreateExtractElement(v, uint64_t(k));
          x.sum = x.sum == nullptr ? e : b_.CreateFAdd(x.sum, e);
        }
      }
    }
  };
  auto dot = [&](const Segment& s, size_t si, int t) {
    const StagedSegment& x = xv[si][t];
    // 128 * dot(q, q1) + dot(q, q2), in units of the staged scale d1/128
    // (|.| < 2^27, also with Q4_K's high nibbles in place at 16 q a byte; its
    // float rounding ~ 6e-8 relative).
    Value* d = kb_.I32c(0);
    for (int level = 0; level < 2; ++level) {
      if (level == 1) d = b_.CreateShl(d, kb_.I32c(7));
      for (size_t qi = 0; qi < s.quads.size(); ++qi) d = kb_.Dp4a(s.quads[qi].word, x.words[level][qi], d, s.signed_codes);
    }
    Value* ws = s.word_scale != nullptr ? s.word_scale : s.scale;
    Value* a = ws == nullptr ? x.scale : b_.CreateFMul(ws, x.scale);
    Value* c = b_.CreateFMul(a, b_.CreateSIToFP(d, kb_.F32()));
    // scale * q_offset + offset multiplies sum(x).
    Value* bb = nullptr;
    if (s.q_offset != 0)
      bb = s.scale == nullptr ? kb_.F32c(float(s.q_offset)) : b_.CreateFMul(s.scale, kb_.F32c(float(s.q_offset)));
    if (s.offset != nullptr) bb = bb == nullptr ? s.offset : b_.CreateFAdd(bb, s.offset);
    if (bb != nullptr) c = kb_.Fma(bb, x.sum, c);
    return c;
  };
  AccumulateSegments(segs0, decode, active, stage, dot, row_done);
}

void MatVecEmitter::AccumulateSegments(const std::vector<Segment>& segs0,
                                       const std::function<std::vector<Segment>(int)>& decode, Value* active,
                                       const std::function<void(size_t, int)>& stage,
                                       const std::function<Value*(const Segment&, size_t, int)>& dot,
                                       const RowFn* row_done) {
  const int R = plan_.rows_per_group, TT = plan_.tokens;
  const size_t S = segs0.size();
  // One token: the activations are read once for all rows. Several: re-read
  // per row (cheap shared-memory loads), so tokens x piece columns of them
  // are never live at once.
  if (TT == 1)
    for (size_t si = 0; si < S; ++si) stage(si, 0);
  for (int r = 0; r < R; ++r) {
    std::vector<Segment> segs = r == 0 ? segs0 : decode(r);
    std::vector<Value*> contrib(TT, nullptr);
    for (size_t si = 0; si < S; ++si)
      for (int t = 0; t < TT; ++t) {
        if (TT > 1) stage(si, t);
        Value* c = dot(segs[si], si, t);
        contrib[t] = contrib[t] == nullptr ? c : b_.CreateFAdd(contrib[t], c);
      }
    AddToRow(r, contrib, active);
    if (row_done != nullptr) (*row_done)(r);
  }
}

void MatVecEmitter::AddToRow(int r, const std::vector<Value*>& contrib, Value* active) {
  for (int t = 0; t < plan_.tokens; ++t) {
    Value* c = contrib[t];
    if (active != nullptr) c = b_.CreateSelect(active, c, kb_.F32c(0.0f));
    kb_.Set(acc_[r][t], b_.CreateFAdd(kb_.Get(acc_[r][t]), c));
  }
}

}  // namespace kiln::codegen
