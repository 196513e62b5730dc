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
// an iteration are issued before the staging, so they overlap it; the first
// chunk's go before griddepcontrol.wait (weights never depend on the
// previous kernel), so under programmatic launch they overlap its tail.
// With stage_all, row_tiles > 1 runs several row tiles per block on one
// staging.
//
// stream_stages S >= 2 decouples the weight loads from registers: the
// block's work is a sequence of items (row tile, chunk), and while a
// thread computes item i, its warp's cp.async copies of items i+1 .. i+S-1
// are in flight into shared memory. A warp's 32 pieces of a row are one
// contiguous span; the warp copies it 16 bytes a lane (512 contiguous bytes
// per copy instruction; copies of each lane's own piece, 16 of every 32
// bytes per instruction, ran at half the direct loads' speed on an H200),
// then cp.async.wait_group and bar.warp.sync make it visible to the lanes,
// which decode from it as the decoder's global addresses moved into the
// copy. The bytes in flight per SM then no longer depend on how many
// registers a thread can spare (ncu on the register-bound schedules: DRAM
// 56 % busy, issue slots 30 %, stalls on the loads' scoreboard).
//
// kRmsNorm is fused into the staging: x is multiplied by the norm weight
// and x^2 summed as the chunk is staged (each column once per block); the
// final sum is scaled by 1/sqrt(mean(x^2) + eps) before the epilogue, since
// sum_k W (x r w) = r * sum_k W (x w).
//
// int8_activations: the staging quantizes instead, x w per 32 columns in two
// int8 levels: d1 = max|.| * (1/127), q1 = round(x/d1), then the residual
// q2 = round(128 (x - d1 q1)/d1), so x ~ d1 q1 + (d1/128) q2 to ~2^-15 of
// the block's maximum (one level, as llama.cpp quantizes activations, gave
// 1e-2 relative logit error on the model tests; spec/quant-formats.md §9).
// Per 8 columns the staging keeps the scaled sum of x. Each segment's
// integer codes meet both levels in dp4a, two instructions per 4 weights:
// sum(w x) = (scale d1/128) (128 dot(q, q1) + dot(q, q2))
//            + (scale q_offset + offset) sum(x).
// reference_kernels.cc reproduces the quantization exactly.
#include <algorithm>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "compiler/codegen/matvec_emitter.h"

namespace kiln::codegen {

using llvm::Value;

absl::Status MatVecEmitter::Emit() {
  const int R = plan_.rows_per_group, TT = plan_.tokens, RT = plan_.row_tiles;
  smem_ = kb_.StaticShared(plan_.shared_bytes);
  tid_ = kb_.Tid();
  lane_ = b_.CreateAnd(tid_, kb_.I32c(31));
  warp_ = b_.CreateLShr(tid_, kb_.I32c(5));
  group_ = b_.CreateUDiv(tid_, kb_.I32c(plan_.group_threads));
  gtid_ = b_.CreateURem(tid_, kb_.I32c(plan_.group_threads));
  gwarp_ = b_.CreateLShr(gtid_, kb_.I32c(5));
  tile0_ = b_.CreateMul(kb_.Ctaid(0), kb_.I32c(RT));
  Value* X = kb_.Param("x");
  tokens_ = kb_.Param("T");
  Value* last_token = b_.CreateSub(b_.CreateSelect(b_.CreateICmpSGT(tokens_, kb_.I32c(1)), tokens_, kb_.I32c(1)),
                                   kb_.I32c(1));
  SetTile(tile0_);

  // This split's pieces.
  const int64_t P = plan_.pieces;
  p_begin_ = kb_.I32c(0);
  p_end_ = kb_.I32c(P);
  int64_t span_pieces = P;
  if (plan_.k_split > 1) {
    span_pieces = P / plan_.k_split;
    p_begin_ = b_.CreateMul(kb_.Ctaid(1), kb_.I32c(span_pieces));
    p_end_ = b_.CreateAdd(p_begin_, kb_.I32c(span_pieces));
  }
  const int GT = plan_.group_threads;
  const int64_t CP = plan_.chunk_pieces;
  n_full_ = span_pieces / CP;
  xs_ = kb_.DynamicShared();
  // The first chunk's weights do not depend on the previous kernel: under
  // programmatic launch their loads are in flight while it finishes.
  const int S = plan_.stream_stages;
  const bool early = !plan_.fmt.staged && n_full_ > 0 && S == 0;
  Raw raw0;
  if (early) raw0 = LoadDirect(ChunkPieces(kb_.I32c(0)));
  // Streaming: the block's items, the first S - 1 of them copied now.
  Value* items = nullptr;
  if (S > 0) {
    items = BlockItems();
    for (int s = 0; s + 1 < S; ++s) {
      kb_.If(b_.CreateICmpSLT(kb_.I32c(s), items), [&] { IssueItem(kb_.I32c(s)); });
      kb_.CpAsyncCommit();
    }
    // The next kernel's blocks may become resident beside this one's (few
    // registers) and issue their own first copies; they wait for this
    // kernel to finish before reading anything it writes.
    if (spec_.matvec.release_early) kb_.GridDependencyLaunchDependents();
  }

  // Everything below may read what the previous kernel wrote.
  kb_.GridDependencyWait();

  for (int t = 0; t < TT; ++t) {
    Value* tc = b_.CreateSelect(b_.CreateICmpSLT(kb_.I32c(t), last_token), kb_.I32c(t), last_token);
    xrow_.push_back(kb_.Gep(X, b_.CreateMul(b_.CreateZExt(tc, kb_.I64()), kb_.I64c(spec_.cols * 4))));
  }
  acc_.assign(R, std::vector<Value*>(TT));
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < TT; ++t) acc_[r][t] = kb_.Var(kb_.F32(), kb_.F32c(0.0f), "acc");
  if (plan_.rms)
    for (int t = 0; t < TT; ++t) ss_.push_back(kb_.Var(kb_.F32(), kb_.F32c(0.0f), "ss"));

  Value* span = b_.CreateSub(p_end_, p_begin_);
  Value* full_chunks = b_.CreateUDiv(span, kb_.I32c(CP));
  const bool stage_all = plan_.stage_all;
  if (stage_all) {
    // The split's whole activation row at once: no barriers in the K loop.
    StageActivations(p_begin_, span);
    kb_.Barrier();
    if (plan_.warp_reduce && plan_.rms) BlockRmsScale();
  }
  if (S > 0) {
    StreamItems(items);
    if (!spec_.matvec.release_early) kb_.GridDependencyLaunchDependents();
    kb_.Finish();
    return absl::OkStatus();
  }
  if (plan_.pipeline) {
    PipelineItems(BlockItems(), std::move(raw0));
    kb_.Finish();
    return absl::OkStatus();
  }
  // The current tile's K loop; raw: its first chunk's loads, if issued.
  auto k_loop = [&](Raw raw) {
    // Full chunks: every thread has all of its `unroll` pieces. Chunk 0 is
    // peeled when its loads were issued early.
    const bool peeled = !raw.empty();
    if (peeled) FullChunk(kb_.I32c(0), std::move(raw));
    kb_.For(kb_.I32c(peeled ? 1 : 0), full_chunks, kb_.I32c(1), [&](Value* ci) { FullChunk(ci, {}); });
    // The rest (fewer than a chunk): one piece per thread per step, a
    // warp-uniform trip count, pieces past the end clamped and masked.
    Value* tail_begin = b_.CreateAdd(p_begin_, b_.CreateMul(full_chunks, kb_.I32c(CP)));
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
  };

  k_loop(std::move(raw0));
  if (RT == 1) {
    // The dependents may start launching: what is left is the reduction.
    kb_.GridDependencyLaunchDependents();
    ReduceAndStore();
  } else {
    // The block's other tiles reuse the staged activations. (ReduceAndStore's
    // own barriers keep one tile's reduction apart from the next's.)
    ReduceAndStore();
    kb_.For(kb_.I32c(1), kb_.I32c(RT), kb_.I32c(1), [&](Value* i) {
      Value* tile = b_.CreateAdd(tile0_, i);
      kb_.If(b_.CreateICmpSLT(b_.CreateMul(tile, kb_.I32c(plan_.rows_per_block)), kb_.I32c(spec_.rows)), [&] {
        SetTile(tile);
        ResetAccumulators();
        k_loop({});
        ReduceAndStore();
      });
    }, /*unroll=*/1);
    kb_.GridDependencyLaunchDependents();
  }
  kb_.Finish();
  return absl::OkStatus();
}

void MatVecEmitter::FullChunk(Value* ci, Raw raw, const RowDone* row_done) {
  Value* base = b_.CreateAdd(p_begin_, b_.CreateMul(ci, kb_.I32c(plan_.chunk_pieces)));
  std::vector<Value*> pieces = ChunkPieces(ci);
  if (!plan_.fmt.staged && raw.empty()) raw = LoadDirect(pieces);  // in flight during the staging
  if (!plan_.stage_all) {
    StageActivations(base, kb_.I32c(plan_.chunk_pieces));
    kb_.Barrier();
  }
  if (plan_.fmt.staged) {
    for (Value* p : pieces) ProcessStaged(p, nullptr, WarpFirstPiece(p));
  } else {
    ForEachWord(raw, [&](Value*& w) { w = kb_.Opaque(w); });
    ComputeDirect(pieces, std::vector<Value*>(pieces.size(), nullptr), raw, row_done);
  }
  if (!plan_.stage_all) kb_.Barrier();  // the chunk is restaged next
}

void MatVecEmitter::PipelineItems(Value* items, Raw first) {
  // The item in flight lives in variables across iterations; the loop ends
  // one item early so the last one is computed with no loads behind it and
  // the dependents launch before its reduction.
  Raw held = first;
  ForEachWord(held, [&](Value*& w) { w = kb_.Var(w->getType(), w, "inflight"); });
  auto get = [&] {
    Raw raw = held;
    ForEachWord(raw, [&](Value*& w) { w = kb_.Get(w); });
    return raw;
  };
  Value* last = b_.CreateSub(items, kb_.I32c(1));
  kb_.For(kb_.I32c(0), last, kb_.I32c(1), [&](Value* i) {
    Value* next = b_.CreateAdd(i, kb_.I32c(1));
    std::vector<Value*> next_pieces = ChunkPieces(ItemChunk(next));
    Raw loaded;
    RowDone load_row;
    if (plan_.pipeline_rows) {
      // Each (piece, row) of item i + 1 is loaded once item i's is added,
      // pinned there so LLVM does not sink the load to the loop's end.
      TileRows rows = RowsOf(ItemTile(next));
      loaded.assign(next_pieces.size(), std::vector<std::vector<Value*>>(plan_.rows_per_group));
      load_row = [&, rows](size_t u, int r) {
        loaded[u][r] = dec_.Load(kb_, {rows.row[r], rows.scale_row[r], next_pieces[u]}, nullptr);
        for (Value*& w : loaded[u][r]) w = kb_.Opaque(w);
      };
    } else {
      SetTile(ItemTile(next));
      loaded = LoadDirect(next_pieces);
    }
    Raw current = get();
    SetTile(ItemTile(i));
    Value* ci = ItemChunk(i);
    FullChunk(ci, std::move(current), plan_.pipeline_rows ? &load_row : nullptr);
    kb_.If(b_.CreateICmpEQ(ci, kb_.I32c(n_full_ - 1)), [&] {  // the tile's last chunk
      ReduceAndStore();
      ResetAccumulators();
    });
    std::vector<Value*> words;
    ForEachWord(loaded, [&](Value*& w) { words.push_back(w); });
    size_t k = 0;
    ForEachWord(held, [&](Value*& var) { kb_.Set(var, words[k++]); });
  }, /*unroll=*/1);
  SetTile(ItemTile(last));
  FullChunk(ItemChunk(last), get());
  kb_.GridDependencyLaunchDependents();
  ReduceAndStore();
}

void MatVecEmitter::ForEachWord(Raw& raw, const std::function<void(Value*&)>& fn) {
  for (auto& per_row : raw)
    for (auto& words : per_row)
      for (Value*& w : words) fn(w);
}

Value* MatVecEmitter::BlockItems() {
  const int64_t tiles = (spec_.rows + plan_.rows_per_block - 1) / plan_.rows_per_block;
  Value* left = b_.CreateSub(kb_.I32c(tiles), tile0_);
  Value* my_tiles = b_.CreateSelect(b_.CreateICmpSLT(left, kb_.I32c(plan_.row_tiles)), left, kb_.I32c(plan_.row_tiles));
  return b_.CreateMul(my_tiles, kb_.I32c(n_full_));
}

void MatVecEmitter::ResetAccumulators() {
  for (auto& row : acc_)
    for (Value* a : row) kb_.Set(a, kb_.F32c(0.0f));
}

void MatVecEmitter::SetTile(Value* tile) {
  block_row0_ = b_.CreateMul(tile, kb_.I32c(plan_.rows_per_block));
  TileRows rows = RowsOf(tile);
  rowptr_ = rows.row;
  scale_row_ = rows.scale_row;
  row_off_ = rows.offset;
}

MatVecEmitter::TileRows MatVecEmitter::RowsOf(Value* tile) {
  const int R = plan_.rows_per_group;
  const int64_t row_bytes = WeightRowBytes(spec_.weight, spec_.cols);
  Value* W = kb_.Param("w");
  Value* WS = kb_.Param("w_scales");
  Value* row0 = b_.CreateAdd(b_.CreateMul(tile, kb_.I32c(plan_.rows_per_block)), b_.CreateMul(group_, kb_.I32c(R)));
  TileRows rows;
  for (int r = 0; r < R; ++r) {
    Value* row = b_.CreateAdd(row0, kb_.I32c(r));
    row = b_.CreateSelect(b_.CreateICmpSLT(row, kb_.I32c(spec_.rows)), row, kb_.I32c(spec_.rows - 1));
    Value* off = b_.CreateMul(b_.CreateZExt(row, kb_.I64()), kb_.I64c(row_bytes));
    rows.offset.push_back(off);
    rows.row.push_back(kb_.Gep(W, off));
    const int64_t scale_row_bytes = ScaleRowBytes(spec_.weight, spec_.cols);
    if (scale_row_bytes > 0)
      rows.scale_row.push_back(kb_.Gep(WS, b_.CreateMul(b_.CreateZExt(row, kb_.I64()), kb_.I64c(scale_row_bytes))));
    else
      rows.scale_row.push_back(nullptr);
  }
  return rows;
}

std::vector<Value*> MatVecEmitter::ChunkPieces(Value* ci) {
  Value* base = b_.CreateAdd(p_begin_, b_.CreateMul(ci, kb_.I32c(plan_.chunk_pieces)));
  std::vector<Value*> pieces;
  for (int u = 0; u < plan_.unroll; ++u)
    pieces.push_back(b_.CreateAdd(base, b_.CreateAdd(gtid_, kb_.I32c(int64_t{u} * plan_.group_threads))));
  return pieces;
}

Value* MatVecEmitter::ItemTile(Value* item) { return b_.CreateAdd(tile0_, b_.CreateUDiv(item, kb_.I32c(n_full_))); }
Value* MatVecEmitter::ItemChunk(Value* item) { return b_.CreateURem(item, kb_.I32c(n_full_)); }
Value* MatVecEmitter::ItemStage(Value* item) { return b_.CreateURem(item, kb_.I32c(plan_.stream_stages)); }

void MatVecEmitter::StreamItems(Value* items) {
  const int S = plan_.stream_stages;
  kb_.For(kb_.I32c(0), items, kb_.I32c(1), [&](Value* i) {
    // Item i + S - 1 goes to the stage item i - 1 was computed from.
    Value* next = b_.CreateAdd(i, kb_.I32c(S - 1));
    kb_.If(b_.CreateICmpSLT(next, items), [&] { IssueItem(next); });
    kb_.CpAsyncCommit();  // empty past the end: the wait below counts groups
    kb_.CpAsyncWait(S - 1);
    kb_.SyncWarp();  // the other lanes' copies of item i are visible
    Value* ci = ItemChunk(i);
    SetTile(ItemTile(i));
    ComputeItem(ItemStage(i), ChunkPieces(ci));
    kb_.SyncWarp();  // every lane has read item i before its stage is refilled
    kb_.If(b_.CreateICmpEQ(ci, kb_.I32c(n_full_ - 1)), [&] {  // the tile's last chunk
      ReduceAndStore();
      ResetAccumulators();
    });
  }, /*unroll=*/1);
}

Value* MatVecEmitter::StreamSpan(Value* stage, int u, int r) {
  const int R = plan_.rows_per_group;
  Value* slot = b_.CreateAdd(b_.CreateMul(warp_, kb_.I32c(int64_t{plan_.unroll} * R)), kb_.I32c(int64_t{u} * R + r));
  Value* off = b_.CreateAdd(b_.CreateMul(slot, kb_.I32c(plan_.stream_span_bytes + plan_.stream_scale_bytes)),
                            b_.CreateAdd(kb_.I32c(plan_.stream_offset),
                                         b_.CreateMul(stage, kb_.I32c(plan_.stream_stage_bytes))));
  return kb_.Gep(xs_, b_.CreateZExt(off, kb_.I64()));
}

Value* MatVecEmitter::WarpFirstPiece(Value* piece) { return b_.CreateSub(piece, lane_); }

MatVecEmitter::SpanSource MatVecEmitter::SourceOf(Value* row, Value* scale_row, Value* piece) {
  // The warp's first piece is a multiple of 32 (whole chunks): its span is
  // span number first / 32 of the row, in both planes (a planar Q6_K span's
  // 32 pieces share 8 d, so its scales are not 2 bytes a piece).
  Value* span_index = b_.CreateZExt(b_.CreateLShr(WarpFirstPiece(piece), kb_.I32c(5)), kb_.I64());
  SpanSource src;
  src.pieces = kb_.Gep(row, b_.CreateMul(span_index, kb_.I64c(plan_.stream_span_bytes)));
  if (plan_.stream_scale_bytes > 0)
    src.scales = kb_.Gep(scale_row, b_.CreateMul(span_index, kb_.I64c(plan_.stream_scale_bytes)));
  return src;
}

void MatVecEmitter::IssueItem(Value* item) {
  const int R = plan_.rows_per_group;
  Value* stage = ItemStage(item);
  TileRows rows = RowsOf(ItemTile(item));
  std::vector<Value*> pieces = ChunkPieces(ItemChunk(item));
  // The warp copies its span 16 bytes a lane at a time: every copy
  // instruction reads 512 contiguous bytes. Spans are whole 16-byte units
  // (ValidateMatVec).
  auto copy = [&](Value* dst, Value* src, int64_t bytes) {
    const int64_t units = bytes / 16;
    for (int64_t k = 0; k * kWarp < units; ++k) {
      Value* unit = b_.CreateAdd(lane_, kb_.I32c(k * kWarp));
      Value* off = b_.CreateZExt(b_.CreateShl(unit, kb_.I32c(4)), kb_.I64());
      auto one = [&] { kb_.CpAsync16(kb_.Gep(dst, off), kb_.Gep(src, off)); };
      if ((k + 1) * kWarp <= units)
        one();
      else
        kb_.If(b_.CreateICmpULT(unit, kb_.I32c(units)), one);
    }
  };
  for (size_t u = 0; u < pieces.size(); ++u)
    for (int r = 0; r < R; ++r) {
      Value* span = StreamSpan(stage, static_cast<int>(u), r);
      SpanSource src = SourceOf(rows.row[r], rows.scale_row[r], pieces[u]);
      copy(span, src.pieces, plan_.stream_span_bytes);
      if (src.scales != nullptr) copy(kb_.Gep(span, plan_.stream_span_bytes), src.scales, plan_.stream_scale_bytes);
    }
}

void MatVecEmitter::ComputeItem(Value* stage, const std::vector<Value*>& pieces) {
  for (size_t u = 0; u < pieces.size(); ++u) {
    Accumulate(
        [&](int r) {
          // The decoder's global addresses, moved into the warp's copy of
          // the span: the data plane's 16-byte (and planar Q6_K's 8-byte
          // scale) loads from the pieces' copy, the planar formats' 2-byte
          // scale-plane entries from their copy right after it.
          Value* span = StreamSpan(stage, static_cast<int>(u), r);
          SpanSource src = SourceOf(rowptr_[r], scale_row_[r], pieces[u]);
          DirectFetch read = [&](Value* address, int bytes, RowPlane plane) -> std::vector<Value*> {
            const bool scales = plane == RowPlane::kScales;
            Value* global_start = scales ? src.scales : src.pieces;
            Value* copy = scales ? kb_.Gep(span, plan_.stream_span_bytes) : span;
            Value* off = b_.CreateSub(b_.CreatePtrToInt(address, kb_.I64()), b_.CreatePtrToInt(global_start, kb_.I64()));
            Value* at = kb_.Gep(copy, off);
            if (bytes == 2) return {kb_.Load(kb_.I16(), at, 2)};
            Value* v = kb_.Load(llvm::FixedVectorType::get(kb_.I32(), bytes / 4), at, static_cast<unsigned>(bytes));
            std::vector<Value*> words;
            for (int i = 0; i < bytes / 4; ++i) words.push_back(b_.CreateExtractElement(v, uint64_t(i)));
            return words;
          };
          PieceRef ref{rowptr_[r], scale_row_[r], pieces[u]};
          return dec_.Decode(kb_, ref, dec_.Load(kb_, ref, nullptr, &read));
        },
        nullptr);
  }
}

MatVecEmitter::Raw MatVecEmitter::LoadDirect(const std::vector<Value*>& pieces) {
  const int R = plan_.rows_per_group;
  Raw raw(pieces.size(), std::vector<std::vector<Value*>>(R));
  for (size_t u = 0; u < pieces.size(); ++u)
    for (int r = 0; r < R; ++r) raw[u][r] = dec_.Load(kb_, {rowptr_[r], scale_row_[r], pieces[u]}, nullptr);
  return raw;
}

void MatVecEmitter::ComputeDirect(const std::vector<Value*>& pieces, const std::vector<Value*>& active, const Raw& raw,
                                  const RowDone* row_done) {
  for (size_t u = 0; u < pieces.size(); ++u) {
    RowFn done = [&](int r) { (*row_done)(u, r); };
    Accumulate([&](int r) { return dec_.Decode(kb_, {rowptr_[r], scale_row_[r], pieces[u]}, raw[u][r]); },
               active[u], row_done != nullptr ? &done : nullptr);
  }
}

absl::Status EmitMatVec(KernelBuilder& kb) { return MatVecEmitter(kb).Emit(); }

}  // namespace kiln::codegen
