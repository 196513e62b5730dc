// The matvec emitter (emit_matvec.cc has the kernel's design). Its members
// are defined by concern: emit_matvec.cc the kernel's structure (row tiles,
// chunks, pipelined and streamed items), matvec_staging.cc the activations
// staged in shared memory, matvec_accumulate.cc the decoded weights' dot
// products, matvec_store.cc the block's reduction and the epilogue. Private
// to compiler/codegen (it includes LLVM).
#ifndef KILN_COMPILER_CODEGEN_MATVEC_EMITTER_H_
#define KILN_COMPILER_CODEGEN_MATVEC_EMITTER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "compiler/codegen/emitters.h"
#include "compiler/codegen/kernel_plans.h"
#include "compiler/codegen/weight_decoder.h"

namespace kiln::codegen {

class MatVecEmitter {
 public:
  using Value = llvm::Value;

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

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_MATVEC_EMITTER_H_
