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
  // A direct format's loaded words: [piece u][row of the group][word].
  using Raw = std::vector<std::vector<std::vector<Value*>>>;
  // Called once piece u's row r has been added to its accumulator (its
  // words are dead from there on).
  using RowDone = std::function<void(size_t u, int r)>;
  // LoadDirect issues the weight loads of pieces[u] (clamped piece indices)
  // for every row of the group; ComputeDirect decodes and accumulates them,
  // `active[u]` masking tail pieces (nullptr: all active).
  Raw LoadDirect(const std::vector<Value*>& pieces);
  void ComputeDirect(const std::vector<Value*>& pieces, const std::vector<Value*>& active, const Raw& raw,
                     const RowDone* row_done = nullptr);
  // Full chunk ci of the current tile: stages its activations (unless
  // stage_all), then computes it from `raw` (direct formats: its loaded
  // words; loaded here when empty) or from the staged windows.
  void FullChunk(Value* ci, Raw raw, const RowDone* row_done = nullptr);
  // pipeline_loads: the block's items one after another, the loads of item
  // i + 1 issued before item i is computed (pipeline_rows: each (piece,
  // row)'s as soon as item i's same (piece, row) is computed, into the
  // registers it leaves); `first`: item 0's loads.
  void PipelineItems(Value* items, Raw first);
  // The block's work items (stream_stages, pipeline_loads): its row tiles
  // (fewer in the last block) times the whole chunks of a split.
  Value* BlockItems();
  // fn(word) for every loaded word of `raw`, in order.
  static void ForEachWord(Raw& raw, const std::function<void(Value*&)>& fn);
  void ResetAccumulators();
  void ProcessStaged(Value* piece, Value* active, Value* warp_first_piece);
  // Stages x (times norm_w) for pieces [first, first + n) of every token.
  void StageActivations(Value* first_piece, Value* n_pieces);
  // The same, quantized to int8 (int8_activations).
  void StageActivationsInt8(Value* first_piece, Value* n_pieces);
  // The staged chunk's `quads` quads (4 columns each) of token t, a warp's
  // lanes on consecutive quads (each load reads 512 contiguous bytes), up to
  // 8 quads per thread a round with all their loads issued before any is
  // used: the L2-only loads of programmatic launch are inline asm, which
  // LLVM keeps below the shared-memory stores of the quad before, so one
  // quad a round waited a round trip per quad. RMSNorm's weight is applied
  // and x^2 added to ss. Warp-uniform and branch-free: a lane past the end
  // takes quad q mod 8, so it computes and stores exactly what the lane of
  // that quad of the first block does (a branch around the stores let LLVM
  // sink each load into the block that first uses it, one round trip per
  // quad again). int8 chunks are whole 32-column blocks, so 8 aligned lanes
  // still hold one block and quad q mod 8 exists. `short_chunks` (float:
  // a short split or a row's last chunk may hold fewer than 8 quads): a
  // lane whose q mod 8 is past the end takes quad 0 instead, so no load or
  // store leaves the chunk. `process` gets the local column and the quad's values.
  using QuadFn = std::function<void(Value* lc, std::vector<Value*>& x)>;
  void ForStagedQuads(int t, Value* quads, bool short_chunks, const QuadFn& process);
  // RMSNorm's staging of one quad: adds x^2 to `ss` (returned) and
  // multiplies x by the norm weight w.
  Value* Normalize(std::vector<Value*>& x, const std::vector<Value*>& w, Value* ss);
  // Shared-memory address of staged column `col` of token t.
  Value* StagedX(int t, Value* col);
  // int8_activations: the address of column col's level-0/1 code, of its
  // 32-column block's scale and of its 8-column group's sum, for token t.
  Value* StagedCode(int t, Value* col, int level);
  Value* StagedScale(int t, Value* col);
  Value* StagedSum(int t, Value* col);
  // Adds one piece's contribution: the activations of its columns are read
  // once, then each row is decoded (decode(r)) right before its FMAs, so
  // only one row's weights are live at a time.
  // row_done(r), when given, runs once row r is added.
  using RowFn = std::function<void(int r)>;
  void Accumulate(const std::function<std::vector<Segment>(int)>& decode, Value* active,
                  const RowFn* row_done = nullptr);
  void AccumulateInt8(const std::function<std::vector<Segment>(int)>& decode, Value* active, const RowFn* row_done);
  // The loops both paths share: the group's rows, the piece's segments
  // (segs0: row 0's, decode(r): row r's), tokens. stage(si, t) reads what
  // segment si of token t needs from shared memory; dot(s, si, t) is the
  // segment's contribution to its row.
  void AccumulateSegments(const std::vector<Segment>& segs0, const std::function<std::vector<Segment>(int)>& decode,
                          Value* active, const std::function<void(size_t, int)>& stage,
                          const std::function<Value*(const Segment&, size_t, int)>& dot, const RowFn* row_done);
  // acc[r][t] += contrib[t] (0 where `active` is false).
  void AddToRow(int r, const std::vector<Value*>& contrib, Value* active);
  // Sums the group rows' accumulators over the block and stores them
  // through the epilogue (warp_reduce: ReduceAndStoreWarp).
  void ReduceAndStore();
  // warp_reduce: the group's one warp sums its rows with shuffles and its
  // lanes store them, no barrier (the RMSNorm factor: rms_scale_).
  void ReduceAndStoreWarp();
  // warp_reduce with RMSNorm: the staged row's factor per token, once, from
  // every warp's sum of squares (one barrier).
  void BlockRmsScale();
  // 1/sqrt(mean + eps) of a row whose squares sum to ss.
  Value* RmsFactor(Value* ss);
  // The epilogue of output `row` of token t (both i32): stores v (k_split:
  // adds it atomically; kAddInPlace: into out; kSiluMulWith: times
  // silu(extra)). StorePair: kSiluMulPairs, out[t][j] = silu(g) u.
  void StoreRow(Value* t, Value* row, Value* v);
  void StorePair(Value* t, Value* j, Value* g, Value* u);
  // Points the row pointers (and block_row0_) at row tile `tile`.
  void SetTile(Value* tile);
  // Row tile `tile`'s row pointers: the int8/weight rows, the planar scale
  // rows and the byte offsets (rows past the end clamped to the last).
  struct TileRows {
    std::vector<Value*> row, scale_row, offset;
  };
  TileRows RowsOf(Value* tile);
  // The `unroll` pieces of this thread in chunk ci of the split.
  std::vector<Value*> ChunkPieces(Value* ci);
  // stream_stages and pipeline_loads: item i is row tile tile0_ + i /
  // n_full_, chunk i % n_full_; streamed, its copies go to stage i %
  // stream_stages.
  Value* ItemTile(Value* item);
  Value* ItemChunk(Value* item);
  Value* ItemStage(Value* item);
  void StreamItems(Value* items);
  void IssueItem(Value* item);
  void ComputeItem(Value* stage, const std::vector<Value*>& pieces);
  // The warp's copy of its span u of group row r in stream stage `stage`.
  Value* StreamSpan(Value* stage, int u, int r);
  // The first piece of the warp's span holding `piece` (this lane's).
  Value* WarpFirstPiece(Value* piece);
  // Where the warp's span holding `piece` starts in global memory: its
  // pieces in `row`, and (the planar formats) their scale-plane entries in
  // `scale_row`.
  struct SpanSource {
    Value* pieces = nullptr;
    Value* scales = nullptr;
  };
  SpanSource SourceOf(Value* row, Value* scale_row, Value* piece);
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
  Value* group_ = nullptr;       // row group of this thread
  Value* block_row0_ = nullptr;  // first row of the current tile
  Value* tile0_ = nullptr;       // the block's first row tile
  Value* gtid_ = nullptr;        // thread index within the group
  Value* p_begin_ = nullptr;
  Value* p_end_ = nullptr;
  int64_t n_full_ = 0;           // whole chunks per split
  std::vector<Value*> rowptr_, scale_row_, row_off_;  // per group row
  std::vector<Value*> xrow_;                          // per token
  std::vector<std::vector<Value*>> acc_;              // [row][token] vars
  std::vector<Value*> ss_;                            // [token] vars
  std::vector<Value*> rms_scale_;                     // [token], warp_reduce with RMSNorm
  Value* tokens_ = nullptr;
};

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

}  // namespace

absl::Status EmitMatVec(KernelBuilder& kb) { return MatVecEmitter(kb).Emit(); }

}  // namespace kiln::codegen
