// kMatVec: out[t, m] = epilogue(sum_k W[m, k] * prologue(x)[t, k]) for
// T <= max_tokens tokens (docs/codegen.md "matvec").
//
// A block owns rows_per_block consecutive rows, split over row_groups groups
// of whole warps. A group's threads stride over the pieces of the row
// (weight_decoder.h), `unroll` pieces per iteration, and every thread works
// on all of its group's rows at once, so each activation load serves
// rows_per_group rows. Weights arrive as 16-byte ld.global.nc.v4 loads:
// directly for formats whose pieces are 16-byte aligned, and for the 2-byte
// aligned GGUF blocks (Q8_0, Q4_0, Q6_K) as aligned 16-byte windows staged
// per warp in shared memory. fp32 accumulation; warp shuffles, then shared
// memory, reduce across the group.
//
// Activations: each iteration first stages its chunk of x columns (all
// tokens) in shared memory with coalesced 16-byte loads; pieces then read
// them conflict-free (kernel_plans.h). With `stage_all` the split's whole
// row is staged once up front instead, and the K loop has no barriers. Read straight from global memory,
// every lane's x loads would touch its own cache lines and the L1 became
// the bottleneck (ncu on H200: L1 84% busy, DRAM 35%). The weight loads of
// an iteration are issued before the staging, so they overlap it.
//
// kRmsNorm is fused into the staging: x is multiplied by the norm weight
// and x^2 summed as the chunk is staged (each column once per block); the
// final sum is scaled by 1/sqrt(mean(x^2) + eps) before the epilogue, since
// sum_k W (x r w) = r * sum_k W (x w).
#include <functional>

#include "absl/status/status.h"
#include "compiler/codegen/emitters.h"
#include "compiler/codegen/kernel_plans.h"
#include "compiler/codegen/weight_decoder.h"

namespace kiln::codegen {

using llvm::Value;

namespace {

class MatVecEmitter {
 public:
  explicit MatVecEmitter(KernelBuilder& kb)
      : kb_(kb), b_(kb.b()), spec_(kb.spec()), plan_(PlanMatVec(kb.spec())), dec_(kb.spec().weight) {}

  absl::Status Emit();

 private:
  // LoadDirect issues the weight loads of pieces[u] (clamped piece indices)
  // for every row of the group; ComputeDirect decodes and accumulates them,
  // `active[u]` masking tail pieces (nullptr: all active).
  std::vector<std::vector<std::vector<Value*>>> LoadDirect(const std::vector<Value*>& pieces);
  void ComputeDirect(const std::vector<Value*>& pieces, const std::vector<Value*>& active,
                     const std::vector<std::vector<std::vector<Value*>>>& raw);
  void ProcessStaged(Value* piece, Value* active, Value* warp_first_piece);
  // Stages x (times norm_w) for pieces [first, first + n) of every token.
  void StageActivations(Value* first_piece, Value* n_pieces);
  // Shared-memory address of staged column `col` of token t.
  Value* StagedX(int t, Value* col);
  // Adds one piece's contribution: the activations of its columns are read
  // once, then each row is decoded (decode(r)) right before its FMAs, so
  // only one row's weights are live at a time.
  void Accumulate(const std::function<std::vector<Segment>(int)>& decode, Value* active);
  void ReduceAndStore();
  Value* Silu(Value* z);

  KernelBuilder& kb_;
  llvm::IRBuilder<>& b_;
  const KernelSpec& spec_;
  MatVecPlan plan_;
  WeightDecoder dec_;

  Value* smem_ = nullptr;
  Value* xs_ = nullptr;          // staged activations (dynamic shared memory)
  Value* chunk_col0_ = nullptr;  // first column of the staged chunk
  Value* tid_ = nullptr;
  Value* lane_ = nullptr;
  Value* gwarp_ = nullptr;       // warp index within the group
  Value* warp_ = nullptr;
  Value* block_row0_ = nullptr;
  Value* p_end_ = nullptr;
  std::vector<Value*> rowptr_, scale_row_, row_off_;  // per group row
  std::vector<Value*> xrow_;                          // per token
  std::vector<std::vector<Value*>> acc_;              // [row][token] vars
  std::vector<Value*> ss_;                            // [token] vars
  Value* tokens_ = nullptr;
};

absl::Status MatVecEmitter::Emit() {
  const int R = plan_.rows_per_group, TT = plan_.tokens;
  const int64_t row_bytes = WeightRowBytes(spec_.weight, spec_.cols);
  smem_ = kb_.StaticShared(plan_.shared_bytes);
  tid_ = kb_.Tid();
  lane_ = b_.CreateAnd(tid_, kb_.I32c(31));
  warp_ = b_.CreateLShr(tid_, kb_.I32c(5));
  Value* group = b_.CreateUDiv(tid_, kb_.I32c(plan_.group_threads));
  Value* gtid = b_.CreateURem(tid_, kb_.I32c(plan_.group_threads));
  gwarp_ = b_.CreateLShr(gtid, kb_.I32c(5));
  block_row0_ = b_.CreateMul(kb_.Ctaid(0), kb_.I32c(plan_.rows_per_block));
  Value* row0 = b_.CreateAdd(block_row0_, b_.CreateMul(group, kb_.I32c(R)));

  // Everything below may read what the previous kernel wrote.
  kb_.GridDependencyWait();

  Value* W = kb_.Param("w");
  Value* WS = kb_.Param("w_scales");
  Value* X = kb_.Param("x");
  tokens_ = kb_.Param("T");
  Value* last_token = b_.CreateSub(b_.CreateSelect(b_.CreateICmpSGT(tokens_, kb_.I32c(1)), tokens_, kb_.I32c(1)),
                                   kb_.I32c(1));
  for (int r = 0; r < R; ++r) {
    Value* row = b_.CreateAdd(row0, kb_.I32c(r));
    row = b_.CreateSelect(b_.CreateICmpSLT(row, kb_.I32c(spec_.rows)), row, kb_.I32c(spec_.rows - 1));
    Value* off = b_.CreateMul(b_.CreateZExt(row, kb_.I64()), kb_.I64c(row_bytes));
    row_off_.push_back(off);
    rowptr_.push_back(kb_.Gep(W, off));
    if (spec_.weight == WeightFormat::kQ8_0Planar)
      scale_row_.push_back(kb_.Gep(WS, b_.CreateMul(b_.CreateZExt(row, kb_.I64()), kb_.I64c(spec_.cols / 32 * 2))));
    else
      scale_row_.push_back(nullptr);
  }
  for (int t = 0; t < TT; ++t) {
    Value* tc = b_.CreateSelect(b_.CreateICmpSLT(kb_.I32c(t), last_token), kb_.I32c(t), last_token);
    xrow_.push_back(kb_.Gep(X, b_.CreateMul(b_.CreateZExt(tc, kb_.I64()), kb_.I64c(spec_.cols * 4))));
  }
  acc_.assign(R, std::vector<Value*>(TT));
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < TT; ++t) acc_[r][t] = kb_.Var(kb_.F32(), kb_.F32c(0.0f), "acc");
  if (plan_.rms)
    for (int t = 0; t < TT; ++t) ss_.push_back(kb_.Var(kb_.F32(), kb_.F32c(0.0f), "ss"));

  // This split's pieces.
  const int64_t P = plan_.pieces;
  Value* p_begin = kb_.I32c(0);
  p_end_ = kb_.I32c(P);
  if (plan_.k_split > 1) {
    int64_t per = P / plan_.k_split;
    p_begin = b_.CreateMul(kb_.Ctaid(1), kb_.I32c(per));
    p_end_ = b_.CreateAdd(p_begin, kb_.I32c(per));
  }
  const int GT = plan_.group_threads;
  const int U = plan_.unroll;
  const int64_t CP = plan_.chunk_pieces;
  xs_ = kb_.DynamicShared();
  Value* span = b_.CreateSub(p_end_, p_begin);
  Value* full_chunks = b_.CreateUDiv(span, kb_.I32c(CP));
  const bool stage_all = plan_.stage_all;
  if (stage_all) {
    // The split's whole activation row at once: no barriers in the K loop.
    StageActivations(p_begin, span);
    kb_.Barrier();
  }
  // Full chunks: every thread has all of its `unroll` pieces.
  kb_.For(kb_.I32c(0), full_chunks, kb_.I32c(1), [&](Value* ci) {
    Value* base = b_.CreateAdd(p_begin, b_.CreateMul(ci, kb_.I32c(CP)));
    std::vector<Value*> pieces, active;
    for (int u = 0; u < U; ++u) {
      pieces.push_back(b_.CreateAdd(base, b_.CreateAdd(gtid, kb_.I32c(int64_t{u} * GT))));
      active.push_back(nullptr);
    }
    std::vector<std::vector<std::vector<Value*>>> raw;
    if (!plan_.fmt.staged) raw = LoadDirect(pieces);  // in flight during the staging
    if (!stage_all) {
      StageActivations(base, kb_.I32c(CP));
      kb_.Barrier();
    }
    if (plan_.fmt.staged) {
      for (int u = 0; u < U; ++u) ProcessStaged(pieces[u], nullptr, b_.CreateSub(pieces[u], lane_));
    } else {
      for (auto& per_row : raw)
        for (auto& words : per_row)
          for (Value*& w : words) w = kb_.Opaque(w);
      ComputeDirect(pieces, active, raw);
    }
    if (!stage_all) kb_.Barrier();  // the chunk is restaged next
  });
  // The rest (fewer than a chunk): one piece per thread per step, a
  // warp-uniform trip count, pieces past the end clamped and masked.
  Value* tail_begin = b_.CreateAdd(p_begin, b_.CreateMul(full_chunks, kb_.I32c(CP)));
  kb_.If(b_.CreateICmpSLT(tail_begin, p_end_), [&] {
    if (!stage_all) {
      StageActivations(tail_begin, b_.CreateSub(p_end_, tail_begin));
      kb_.Barrier();
    }
    Value* warp_begin = b_.CreateAdd(tail_begin, b_.CreateShl(gwarp_, kb_.I32c(5)));
    kb_.For(warp_begin, p_end_, kb_.I32c(GT), [&](Value* wp) {
      Value* p = b_.CreateAdd(wp, lane_);
      Value* active = b_.CreateICmpSLT(p, p_end_);
      Value* pc = b_.CreateSelect(active, p, b_.CreateSub(p_end_, kb_.I32c(1)));
      if (plan_.fmt.staged) {
        ProcessStaged(pc, active, wp);
      } else {
        std::vector<Value*> pieces = {pc};
        ComputeDirect(pieces, {active}, LoadDirect(pieces));
      }
    });
  });

  // The dependents may start launching: what is left is the reduction.
  kb_.GridDependencyLaunchDependents();
  ReduceAndStore();
  kb_.Finish();
  return absl::OkStatus();
}

std::vector<std::vector<std::vector<Value*>>> MatVecEmitter::LoadDirect(const std::vector<Value*>& pieces) {
  const int R = plan_.rows_per_group;
  std::vector<std::vector<std::vector<Value*>>> raw(pieces.size(), std::vector<std::vector<Value*>>(R));
  for (size_t u = 0; u < pieces.size(); ++u)
    for (int r = 0; r < R; ++r) raw[u][r] = dec_.Load(kb_, {rowptr_[r], scale_row_[r], pieces[u]}, nullptr);
  return raw;
}

void MatVecEmitter::ComputeDirect(const std::vector<Value*>& pieces, const std::vector<Value*>& active,
                                  const std::vector<std::vector<std::vector<Value*>>>& raw) {
  const int R = plan_.rows_per_group;
  for (size_t u = 0; u < pieces.size(); ++u) {
    Accumulate([&](int r) { return dec_.Decode(kb_, {rowptr_[r], scale_row_[r], pieces[u]}, raw[u][r]); },
               active[u]);
  }
  (void)R;
}

void MatVecEmitter::StageActivations(Value* first_piece, Value* n_pieces) {
  const int TT = plan_.tokens, NT = plan_.threads;
  const int pw = plan_.fmt.piece_weights;
  Value* NW = kb_.Param("norm_w");
  chunk_col0_ = b_.CreateMul(first_piece, kb_.I32c(pw));
  Value* quads = b_.CreateMul(n_pieces, kb_.I32c(pw / 4));
  for (int t = 0; t < TT; ++t) {
    kb_.For(tid_, quads, kb_.I32c(NT), [&](Value* q) {
      Value* lc = b_.CreateShl(q, kb_.I32c(2));
      Value* col = b_.CreateAdd(chunk_col0_, lc);
      Value* col4 = b_.CreateShl(b_.CreateZExt(col, kb_.I64()), kb_.I64c(2));
      std::vector<Value*> x = kb_.LoadNc4xF32(kb_.Gep(xrow_[t], col4));
      if (plan_.rms) {
        std::vector<Value*> w = kb_.LoadNc4xF32(kb_.Gep(NW, col4));
        Value* sq = kb_.Get(ss_[t]);
        for (int i = 0; i < 4; ++i) {
          sq = kb_.Fma(x[i], x[i], sq);
          x[i] = b_.CreateFMul(x[i], w[i]);
        }
        kb_.Set(ss_[t], sq);
      }
      kb_.Store4xF32(StagedX(t, lc), x);
    });
  }
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

void MatVecEmitter::Accumulate(const std::function<std::vector<Segment>(int)>& decode, Value* active) {
  const int R = plan_.rows_per_group, TT = plan_.tokens;
  std::vector<Segment> segs0 = decode(0);
  // Activations of the piece's columns, per segment and token, from the
  // staged chunk, and their sums where a segment needs them. One token:
  // read once for all rows. Several: re-read per row (cheap shared-memory
  // loads), so tokens x piece columns of them are never live at once.
  const size_t S = segs0.size();
  std::vector<std::vector<std::vector<std::vector<Value*>>>> xv(S, std::vector<std::vector<std::vector<Value*>>>(TT));
  std::vector<std::vector<Value*>> sum(S, std::vector<Value*>(TT, nullptr));
  auto load_x = [&](size_t si, int t) {
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
  if (TT == 1)
    for (size_t si = 0; si < S; ++si) load_x(si, 0);
  for (int r = 0; r < R; ++r) {
    std::vector<Segment> segs = r == 0 ? segs0 : decode(r);
    std::vector<Value*> contrib(TT, nullptr);
    for (size_t si = 0; si < S; ++si) {
      const Segment& s = segs[si];
      // sum(w x) = a * sum(f x) + b * sum(x)  (weight_decoder.h)
      Value* a = s.scale == nullptr ? (s.inv_c1 == 1.0f ? nullptr : kb_.F32c(s.inv_c1))
                                    : (s.inv_c1 == 1.0f ? s.scale : b_.CreateFMul(s.scale, kb_.F32c(s.inv_c1)));
      float k = static_cast<float>(s.q_offset) - s.c0 * s.inv_c1;
      Value* bb = nullptr;
      if (k != 0.0f) bb = s.scale == nullptr ? kb_.F32c(k) : b_.CreateFMul(s.scale, kb_.F32c(k));
      if (s.offset != nullptr) bb = bb == nullptr ? s.offset : b_.CreateFAdd(bb, s.offset);
      for (int t = 0; t < TT; ++t) {
        if (TT > 1) load_x(si, t);
        Value* f = nullptr;
        for (size_t qi = 0; qi < s.quads.size(); ++qi)
          for (int i = 0; i < 4; ++i)
            f = f == nullptr ? b_.CreateFMul(s.quads[qi].f[i], xv[si][t][qi][i])
                             : kb_.Fma(s.quads[qi].f[i], xv[si][t][qi][i], f);
        Value* c = a == nullptr ? f : b_.CreateFMul(a, f);
        if (bb != nullptr) c = kb_.Fma(bb, sum[si][t], c);
        contrib[t] = contrib[t] == nullptr ? c : b_.CreateFAdd(contrib[t], c);
      }
    }
    for (int t = 0; t < TT; ++t) {
      Value* c = contrib[t];
      if (active != nullptr) c = b_.CreateSelect(active, c, kb_.F32c(0.0f));
      kb_.Set(acc_[r][t], b_.CreateFAdd(kb_.Get(acc_[r][t]), c));
    }
  }
}

Value* MatVecEmitter::Silu(Value* z) {
  // silu(z) = z / (1 + e^-z), e^-z = 2^(-z log2 e) with ex2.approx.
  Value* e = kb_.Ex2(b_.CreateFMul(z, kb_.F32c(-1.4426950408889634f)));
  return b_.CreateFDiv(z, b_.CreateFAdd(kb_.F32c(1.0f), e));
}

void MatVecEmitter::ReduceAndStore() {
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
      // 1/sqrt(mean + eps), correctly rounded sqrt and division.
      Value* mean = b_.CreateFDiv(ss, kb_.F32c(static_cast<float>(spec_.cols)));
      Value* scale = b_.CreateFDiv(kb_.F32c(1.0f), kb_.Sqrt(b_.CreateFAdd(mean, kb_.F32c(spec_.eps))));
      total = b_.CreateFMul(total, scale);
    }
    kb_.Store(total, kb_.Gep(fin, b_.CreateShl(i, kb_.I32c(2))), 4);
  });
  kb_.Barrier();

  Value* out = kb_.Param("out");
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
        Value* j = b_.CreateAdd(b_.CreateLShr(block_row0_, kb_.I32c(1)), jl);
        Value* idx = b_.CreateAdd(b_.CreateMul(b_.CreateZExt(t, kb_.I64()), kb_.I64c(spec_.rows / 2)),
                                  b_.CreateZExt(j, kb_.I64()));
        kb_.Store(b_.CreateFMul(Silu(g), u), kb_.Gep(out, b_.CreateShl(idx, kb_.I64c(2))), 4);
      });
    });
    return;
  }
  kb_.For(tid_, kb_.I32c(int64_t{RB} * TT), kb_.I32c(NT), [&](Value* i) {
    Value* t = b_.CreateUDiv(i, kb_.I32c(RB));
    Value* r = b_.CreateURem(i, kb_.I32c(RB));
    Value* row = b_.CreateAdd(block_row0_, r);
    Value* ok = b_.CreateAnd(b_.CreateICmpSLT(row, kb_.I32c(spec_.rows)), b_.CreateICmpSLT(t, tokens_));
    kb_.If(ok, [&] {
      Value* v = kb_.Load(kb_.F32(), kb_.Gep(fin, b_.CreateShl(i, kb_.I32c(2))), 4);
      Value* idx = b_.CreateAdd(b_.CreateMul(b_.CreateZExt(t, kb_.I64()), kb_.I64c(spec_.rows)),
                                b_.CreateZExt(row, kb_.I64()));
      Value* ptr = kb_.Gep(out, b_.CreateShl(idx, kb_.I64c(2)));
      if (spec_.epilogue == Epilogue::kStore) {
        kb_.Store(v, ptr, 4);
      } else if (spec_.epilogue == Epilogue::kSiluMulWith) {
        Value* g = kb_.Load(kb_.F32(), kb_.Gep(kb_.Param("extra"), b_.CreateShl(idx, kb_.I64c(2))), 4);
        kb_.Store(b_.CreateFMul(Silu(g), v), ptr, 4);
      } else if (plan_.k_split > 1) {
        kb_.AtomicAddF32(ptr, v);
      } else {
        kb_.Store(b_.CreateFAdd(kb_.Load(kb_.F32(), ptr, 4), v), ptr, 4);
      }
    });
  });
}

}  // namespace

absl::Status EmitMatVec(KernelBuilder& kb) { return MatVecEmitter(kb).Emit(); }

}  // namespace kiln::codegen
