// Launch shapes and shared-memory layouts derived from a KernelSpec and its
// schedule (kernel_plans.cc), computed in one place so the ABI and the
// emitters agree. Plain arithmetic, no decisions beyond what the schedule
// says. LLVM-free.
#ifndef KILN_COMPILER_CODEGEN_KERNEL_PLANS_H_
#define KILN_COMPILER_CODEGEN_KERNEL_PLANS_H_

#include <cstdint>

#include "compiler/codegen/kernel_abi.h"
#include "compiler/codegen/kernel_spec.h"

namespace kiln::codegen {

inline constexpr int kWarp = 32;
inline constexpr int64_t kMaxStaticShared = 48 * 1024;

// kMatVec: block = `threads`, split into `row_groups` groups of whole warps;
// group g owns rows [r0 + g*rows_per_group, ...) and strides over the row's
// pieces with its threads, `unroll` pieces per iteration. Each iteration's
// activation columns (a "chunk" of group_threads*unroll pieces) are staged
// in dynamic shared memory first, 16 bytes of padding after every `window`
// columns so the per-piece reads are bank-conflict free.
struct MatVecPlan {
  FormatGeometry fmt;
  int threads = 0, warps = 0;
  int rows_per_block = 0, row_groups = 0, rows_per_group = 0;
  int group_threads = 0, group_warps = 0;
  int tokens = 0;        // max_tokens
  int unroll = 0;
  int k_split = 1;
  int64_t pieces = 0;    // per row
  bool rms = false;
  // Per-warp values reduced at the end: rows_per_group*tokens accumulators
  // (+ tokens sums of squares with kRmsNorm).
  int red_values = 0;
  int64_t red_offset = 0, red_bytes = 0;
  // Final per-(token, block row) values, [tokens][rows_per_block] floats.
  int64_t fin_offset = 0;
  // Staged formats: per (warp, row of its group) a buffer of `stage_windows`
  // 16-byte windows.
  int stage_windows = 0;
  int64_t stage_offset = 0, stage_bytes = 0;
  int64_t shared_bytes = 0;  // static
  int64_t chunk_pieces = 0;  // pieces per iteration: group_threads * unroll
  bool stage_all = false;    // the whole split is staged once, before the K loop
  int row_tiles = 1;         // tiles of rows_per_block rows per block (stage_all)
  int64_t chunk_cols = 0;    // columns staged at once: of min(chunk_pieces, pieces per split),
                             // or of the whole split with stage_all
  int64_t x_token_stride = 0;  // bytes per token of the staged chunk
  // int8_activations: per token, the chunk's two levels of int8 codes (16
  // bytes of padding after every x_code_pad columns; level 2 at
  // x_code2_offset), at x_scale_offset the float d1/128 per 32 columns, at
  // x_sum_offset a float per 8 columns (their sum of x ~ d1 q1 + d1/128 q2).
  bool int8_x = false;
  int x_code_pad = 0;
  int64_t x_code2_offset = 0, x_scale_offset = 0, x_sum_offset = 0;
  int64_t x_bytes = 0;         // dynamic
  // pipeline_loads: the K loop runs over the block's (row tile, chunk)
  // items with the next item's weight loads in flight during this one's
  // compute (direct formats; whole chunks).
  bool pipeline = false;
  // pipeline_rows: the next item's loads of each (piece, row) go out once
  // this item's same (piece, row) is computed.
  bool pipeline_rows = false;
  // warp_reduce: each group (one warp) reduces and stores its own rows.
  bool warp_reduce = false;
  // stream_stages: the weights' copies in dynamic shared memory after the
  // activations, at stream_offset. A warp's 32 consecutive pieces of a row
  // are one contiguous span of stream_span_bytes (and, the planar formats,
  // their scale-plane entries, stream_scale_bytes); per stage,
  // [warp][unroll][row of group] spans, each followed by its scales.
  int stream_stages = 0;
  int64_t stream_span_bytes = 0, stream_scale_bytes = 0;
  int64_t stream_offset = 0, stream_stage_bytes = 0, stream_bytes = 0;
};
MatVecPlan PlanMatVec(const KernelSpec& spec);

// kGemm: block tile tile_m x tile_n (rows x tokens), k tiles of tile_k.
// Tensor cores: warps arranged warps_m x warps_n, each owning
// (tile_m/warps_m) x (tile_n/warps_n) as m_frags x n_frags mma tiles.
// FP32 path: each thread owns micro_m x micro_n outputs.
struct GemmPlan {
  FormatGeometry fmt;
  int threads = 0, warps = 0;
  int tile_m = 0, tile_n = 0, tile_k = 0;
  int stages = 1;  // 2: the next k tile's loads in flight during this one's compute
  // Registers a thread's share of one k tile's loads takes (its pieces' raw
  // words, its activation quads): what stages = 2 keeps in flight.
  int prefetch_regs = 0;
  bool tensor_cores = true;
  int warps_m = 0, warps_n = 0, m_frags = 0, n_frags = 0;
  int micro_m = 0, micro_n = 0, threads_m = 0;
  int elem_bytes = 2;        // shared tiles: f16 (tensor cores) or f32
  int a_stride = 0;          // elements per row of the A (weights) tile
  int b_stride = 0;          // elements per row of the B (activations) tile
  int c_stride = 0;          // floats per row of the C tile ([tile_n][c_stride])
  int64_t a_offset = 0, b_offset = 0, c_offset = 0, r_offset = 0;
  int64_t shared_bytes = 0;  // dynamic
  int64_t k_tiles = 0;
  int pieces_per_tile_row = 0;
  bool rms = false;
};
GemmPlan PlanGemm(const KernelSpec& spec);

// kAttentionDecode: one block per (KV head, split); a split's length is
// decided at run time (AttentionSchedule), at most `split` positions.
struct DecodePlan {
  int threads = 0, warps = 0;
  int group = 0;        // query heads per KV head
  int group_pad = 0;    // group rounded up to a multiple of 4 (score rows)
  int head_dim = 0;
  int split = 0, max_splits = 0, min_split = 0;  // split: the cap on a split's length
  int elem_bytes = 2;   // cache element
  int dims_per_thread = 4;   // PV phase
  int threads_per_row = 0;   // head_dim / dims_per_thread
  int row_lanes = 0;         // key rows processed at once in the PV phase
  int64_t q_offset = 0, score_offset = 0, red_offset = 0, flag_offset = 0;
  // The warps' score maxima [warps][group], and the row lanes' sums of p
  // [row_lanes][group], each in a region of its own, so neither needs a
  // barrier before the next phase writes red.
  int64_t wmax_offset = 0, lsum_offset = 0;
  int64_t shared_bytes = 0;
  // `partial`: acc rows [n_head_kv][max_splits][group][head_dim] floats
  // (16-byte aligned for the merge's vector loads), then the (max, sum)
  // pairs [n_head_kv][max_splits][group][2] from float `stats` on; in all
  // n_head_kv * max_splits * group * (head_dim + 2) floats.
  int64_t stats = 0;
};
DecodePlan PlanAttentionDecode(const KernelSpec& spec);

// kAttentionPrefill with stage_keys: each block stages key_block K rows,
// then key_block V rows of its KV head (cache bytes as they are) in shared
// memory; warp w keeps queries w, w + warps, ... of the block's tile.
struct PrefillPlan {
  int warps = 0;
  int queries_per_warp = 0;
  int key_block = 0;
  int64_t row_bytes = 0;  // one cache row of a head: head_dim elements
  int64_t v_offset = 0;   // the V rows after the K rows
  int64_t shared_bytes = 0;
};
PrefillPlan PlanAttentionPrefill(const KernelSpec& spec);

// kArgmax: each row is split over `blocks` blocks (grid.y) of
// ceil(cols / blocks) columns, from the spec's cols (the kernel takes cols
// at run time and splits whatever it gets the same way).
struct ArgmaxPlan {
  int threads = 0, warps = 0;
  int blocks = 1;
  int64_t flag_offset = 0;   // shared: (value, index) per warp, then the last-block flag
  int64_t shared_bytes = 0;
};
ArgmaxPlan PlanArgmax(const KernelSpec& spec);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_KERNEL_PLANS_H_
