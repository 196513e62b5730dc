// MatVecEmitter (matvec_emitter.h): the activations of a chunk or of the
// whole split staged in shared memory, as floats (with RMSNorm fused) or
// quantized to two int8 levels (emit_matvec.cc has the scheme).
#include <algorithm>
#include <functional>
#include <vector>

#include "compiler/codegen/matvec_emitter.h"

namespace kiln::codegen {

using llvm::Value;

void MatVecEmitter::StageActivations(Value* first_piece, Value* n_pieces) {
  if (plan_.int8_x) return StageActivationsInt8(first_piece, n_pieces);
  const int pw = plan_.fmt.piece_weights;
  chunk_col0_ = b_.CreateMul(first_piece, kb_.I32c(pw));
  Value* quads = b_.CreateMul(n_pieces, kb_.I32c(pw / 4));
  // A thread's loads of a round go out together before any store: the
  // split's whole row once per kernel (stage_all), or each chunk inside the
  // K loop. Either may hold fewer than 8 quads (a short split, a row's last
  // chunk).
  for (int t = 0; t < plan_.tokens; ++t)
    ForStagedQuads(t, quads, /*short_chunks=*/true,
                   [&](Value* lc, std::vector<Value*>& x) { kb_.Store4xF32(StagedX(t, lc), x); });
}

void MatVecEmitter::ForStagedQuads(int t, Value* quads, bool short_chunks, const QuadFn& process) {
  const int NT = plan_.threads;
  const int batch = static_cast<int>(std::clamp<int64_t>((plan_.chunk_cols / 4 + NT - 1) / NT, 1, 8));
  Value* NW = plan_.rms ? kb_.Param("norm_w") : nullptr;
  kb_.For(b_.CreateShl(warp_, kb_.I32c(5)), quads, kb_.I32c(int64_t{NT} * batch), [&](Value* round) {
    std::vector<Value*> lc(batch), active(batch);
    std::vector<std::vector<Value*>> x(batch), w(batch);
    for (int u = 0; u < batch; ++u) {
      Value* q = b_.CreateAdd(round, b_.CreateAdd(kb_.I32c(int64_t{u} * NT), lane_));
      active[u] = b_.CreateICmpSLT(q, quads);
      Value* spare = b_.CreateAnd(q, kb_.I32c(7));
      if (short_chunks) spare = b_.CreateSelect(b_.CreateICmpULT(spare, quads), spare, kb_.I32c(0));
      lc[u] = b_.CreateShl(b_.CreateSelect(active[u], q, spare), kb_.I32c(2));
      Value* col4 = b_.CreateShl(b_.CreateZExt(b_.CreateAdd(chunk_col0_, lc[u]), kb_.I64()), kb_.I64c(2));
      x[u] = kb_.LoadInput4xF32(kb_.Gep(xrow_[t], col4));
      if (NW != nullptr) w[u] = kb_.LoadNc4xF32(kb_.Gep(NW, col4));
    }
    for (int u = 0; u < batch; ++u) {
      if (NW != nullptr) {
        Value* sq = kb_.Get(ss_[t]);
        kb_.Set(ss_[t], b_.CreateSelect(active[u], Normalize(x[u], w[u], sq), sq));
      }
      process(lc[u], x[u]);
    }
  });
}

Value* MatVecEmitter::Normalize(std::vector<Value*>& x, const std::vector<Value*>& w, Value* ss) {
  for (int i = 0; i < 4; ++i) {
    ss = kb_.Fma(x[i], x[i], ss);
    x[i] = b_.CreateFMul(x[i], w[i]);
  }
  return ss;
}

void MatVecEmitter::StageActivationsInt8(Value* first_piece, Value* n_pieces) {
  const int pw = plan_.fmt.piece_weights;
  chunk_col0_ = b_.CreateMul(first_piece, kb_.I32c(pw));
  // A lane's quad is 4 columns of a 32-column block whose 8 lanes find its
  // maximum with three xor shuffles (chunks are whole blocks: pieces are 32
  // or 64 columns); lane pairs add their 8 columns' codes. Rounding to
  // nearest even by adding 1.5 * 2^23: the integer lands in the low
  // mantissa bits, its low byte is the two's-complement code. mul.rn/add.rn
  // are never contracted into an fma, so the reference reproduces every
  // code exactly.
  const float kMagic = 12582912.0f;
  Value* quads = b_.CreateMul(n_pieces, kb_.I32c(pw / 4));
  auto pack = [&](const std::vector<Value*>& bits) {  // low bytes of bits[0..3]
    return kb_.Prmt(kb_.Prmt(bits[0], bits[1], 0x0040u), kb_.Prmt(bits[2], bits[3], 0x0040u), 0x5410u);
  };
  Value* ones = kb_.I32c(0x01010101);
  for (int t = 0; t < plan_.tokens; ++t) {
    ForStagedQuads(t, quads, /*short_chunks=*/false, [&](Value* lc, std::vector<Value*>& v) {
      Value* amax = nullptr;
      for (Value* x : v) {
        Value* a = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
        amax = amax == nullptr ? a : kb_.Max(amax, a);
      }
      for (int m = 1; m < 8; m *= 2) amax = kb_.Max(amax, kb_.ShflXor(amax, m));
      // d1 by a multiply (one IEEE division a quad, not two: ~10 of the
      // staging's ~104 SASS instructions per quad); x * inv still rounds
      // to |q1| <= 127 and |x - d1 q1| stays within d1/2 (1 + 2^-14): q2 <= 64.
      Value* d1 = kb_.MulRn(amax, kb_.F32c(1.0f / 127.0f));
      Value* inv = b_.CreateSelect(b_.CreateFCmpOGT(amax, kb_.F32c(0.0f)), b_.CreateFDiv(kb_.F32c(127.0f), amax),
                                   kb_.F32c(0.0f));
      Value* inv2 = b_.CreateFMul(inv, kb_.F32c(128.0f));  // exact
      std::vector<Value*> bits1, bits2;
      for (Value* x : v) {
        Value* m1 = kb_.AddRn(kb_.MulRn(x, inv), kb_.F32c(kMagic));
        Value* q1 = kb_.AddRn(m1, kb_.F32c(-kMagic));
        Value* r = kb_.Fma(b_.CreateFNeg(d1), q1, x);  // |r| <= d1/2: q2 = round(128 r / d1) fits
        bits1.push_back(kb_.AsInt(m1));
        bits2.push_back(kb_.AsInt(kb_.AddRn(kb_.MulRn(r, inv2), kb_.F32c(kMagic))));
      }
      Value* d2 = b_.CreateFMul(d1, kb_.F32c(1.0f / 128.0f));  // exact
      Value* w1 = pack(bits1);
      Value* w2 = pack(bits2);
      // The 8 columns of this lane and its pair: x ~ d1 q1 + d2 q2.
      Value* s1 = kb_.Dp4a(w1, ones, kb_.I32c(0), true);
      Value* s2 = kb_.Dp4a(w2, ones, kb_.I32c(0), true);
      s1 = b_.CreateAdd(s1, kb_.ShflXor(s1, 1));
      s2 = b_.CreateAdd(s2, kb_.ShflXor(s2, 1));
      Value* sum = kb_.Fma(d1, b_.CreateSIToFP(s1, kb_.F32()), b_.CreateFMul(d2, b_.CreateSIToFP(s2, kb_.F32())));
      // Both lanes of a pair store the same sum, all 8 of a block the same
      // scale (no branches, as above).
      kb_.Store(w1, StagedCode(t, lc, 0), 4);
      kb_.Store(w2, StagedCode(t, lc, 1), 4);
      kb_.Store(sum, StagedSum(t, lc), 4);
      kb_.Store(d2, StagedScale(t, lc), 4);
    });
  }
}

Value* MatVecEmitter::StagedCode(int t, Value* lc, int level) {
  Value* off = b_.CreateAdd(lc, b_.CreateShl(b_.CreateUDiv(lc, kb_.I32c(plan_.x_code_pad)), kb_.I32c(4)));
  off = b_.CreateAdd(off, kb_.I32c(int64_t{t} * plan_.x_token_stride + level * plan_.x_code2_offset));
  return kb_.Gep(xs_, b_.CreateZExt(off, kb_.I64()));
}

Value* MatVecEmitter::StagedScale(int t, Value* lc) {
  Value* off = b_.CreateShl(b_.CreateLShr(lc, kb_.I32c(5)), kb_.I32c(2));
  off = b_.CreateAdd(off, kb_.I32c(int64_t{t} * plan_.x_token_stride + plan_.x_scale_offset));
  return kb_.Gep(xs_, b_.CreateZExt(off, kb_.I64()));
}

Value* MatVecEmitter::StagedSum(int t, Value* lc) {
  Value* off = b_.CreateShl(b_.CreateLShr(lc, kb_.I32c(3)), kb_.I32c(2));
  off = b_.CreateAdd(off, kb_.I32c(int64_t{t} * plan_.x_token_stride + plan_.x_sum_offset));
  return kb_.Gep(xs_, b_.CreateZExt(off, kb_.I64()));
}

Value* MatVecEmitter::StagedX(int t, Value* lc) {
  Value* off = b_.CreateAdd(b_.CreateShl(lc, kb_.I32c(2)),
                            b_.CreateShl(b_.CreateUDiv(lc, kb_.I32c(plan_.fmt.window)), kb_.I32c(4)));
  off = b_.CreateAdd(off, kb_.I32c(int64_t{t} * plan_.x_token_stride));
  return kb_.Gep(xs_, b_.CreateZExt(off, kb_.I64()));
}

void MatVecEmitter::ProcessStaged(Value* piece, Value* active, Value* warp_first_piece) {
  const int R = plan_.rows_per_group;
  const FormatGeometry& g = plan_.fmt;
  Value* W = kb_.Param("w");
  // The warp's pieces [first, first + n) cover whole blocks (pieces_per_block divides 32).
  Value* n = b_.CreateSub(p_end_, warp_first_piece);
  n = b_.CreateSelect(b_.CreateICmpSLT(n, kb_.I32c(kWarp)), n, kb_.I32c(kWarp));
  Value* block0 = b_.CreateUDiv(warp_first_piece, kb_.I32c(g.pieces_per_block));
  Value* span = b_.CreateMul(b_.CreateUDiv(n, kb_.I32c(g.pieces_per_block)), kb_.I32c(g.block_bytes));
  std::vector<Value*> bufs, misalign;
  for (int r = 0; r < R; ++r) {
    // Buffer of (warp, row r): 16-byte windows of the span's aligned cover.
    Value* slot = b_.CreateAdd(b_.CreateMul(warp_, kb_.I32c(R)), kb_.I32c(r));
    Value* buf = kb_.Gep(smem_, b_.CreateAdd(kb_.I32c(plan_.stage_offset),
                                             b_.CreateMul(slot, kb_.I32c(int64_t{16} * plan_.stage_windows))));
    Value* start = b_.CreateAdd(row_off_[r], b_.CreateMul(b_.CreateZExt(block0, kb_.I64()), kb_.I64c(g.block_bytes)));
    Value* o = b_.CreateTrunc(b_.CreateAnd(start, kb_.I64c(15)), kb_.I32());
    Value* aligned = b_.CreateSub(start, b_.CreateZExt(o, kb_.I64()));
    Value* windows = b_.CreateLShr(b_.CreateAdd(b_.CreateAdd(o, span), kb_.I32c(15)), kb_.I32c(4));
    for (int k = 0; k * kWarp < plan_.stage_windows; ++k) {
      Value* w = b_.CreateAdd(lane_, kb_.I32c(k * kWarp));
      kb_.If(b_.CreateICmpULT(w, windows), [&] {
        Value* woff = b_.CreateShl(w, kb_.I32c(4));
        Value* v = kb_.LoadNc(llvm::FixedVectorType::get(kb_.I32(), 4),
                              kb_.Gep(W, b_.CreateAdd(aligned, b_.CreateZExt(woff, kb_.I64()))), 16);
        kb_.Store(v, kb_.Gep(buf, woff), 16);
      });
    }
    bufs.push_back(buf);
    misalign.push_back(o);
  }
  kb_.SyncWarp();
  Accumulate(
      [&](int r) {
        Value* buf = bufs[r];
        Value* o = misalign[r];
        U16Reader reader = [&, buf, o, block0](Value* block, Value* byte_offset) -> Value* {
          Value* off = b_.CreateAdd(
              o, b_.CreateAdd(b_.CreateMul(b_.CreateSub(block, block0), kb_.I32c(g.block_bytes)), byte_offset));
          return kb_.Load(kb_.I16(), kb_.Gep(buf, off), 2);
        };
        PieceRef ref{rowptr_[r], scale_row_[r], piece};
        std::vector<Value*> raw = dec_.Load(kb_, ref, &reader);
        return dec_.Decode(kb_, ref, raw);
      },
      active);
  kb_.SyncWarp();  // the buffers are refilled next
}

}  // namespace kiln::codegen
