// The plans of kernel_plans.h: launch shapes and shared-memory layouts from
// a spec and its schedule.
#include "compiler/codegen/kernel_plans.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace kiln::codegen {
namespace {
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

MatVecPlan PlanMatVec(const KernelSpec& spec) {
  MatVecPlan p;
  const MatVecSchedule& m = spec.matvec;
  p.fmt = GetFormatGeometry(spec.weight);
  p.threads = m.threads;
  p.warps = m.threads / kWarp;
  p.rows_per_block = m.rows_per_block;
  p.row_groups = std::max(1, m.row_groups);
  p.rows_per_group = m.rows_per_block / p.row_groups;
  p.group_threads = m.threads / p.row_groups;
  p.group_warps = p.group_threads / kWarp;
  p.tokens = m.max_tokens;
  p.unroll = m.unroll;
  p.k_split = m.k_split;
  p.pieces = spec.cols / p.fmt.piece_weights;
  p.rms = spec.prologue == Prologue::kRmsNorm;
  p.red_values = p.rows_per_group * p.tokens + (p.rms ? p.tokens : 0);
  p.red_offset = 0;
  p.red_bytes = int64_t{4} * p.warps * p.red_values;
  p.fin_offset = (p.red_offset + p.red_bytes + 15) / 16 * 16;
  int64_t off = p.fin_offset + (int64_t{4} * p.rows_per_block * p.tokens + 15) / 16 * 16;
  if (p.fmt.staged) {
    // A warp stages the bytes of 32 consecutive pieces of each of its rows;
    // the span starts anywhere 2-byte aligned, so it covers one extra window.
    int64_t span = int64_t{kWarp} * p.fmt.block_bytes / p.fmt.pieces_per_block;
    p.stage_windows = static_cast<int>((span + 14 + 15) / 16);
    p.stage_offset = off;
    p.stage_bytes = int64_t{16} * p.stage_windows * p.warps * p.rows_per_group;
    off += p.stage_bytes;
  }
  p.shared_bytes = off;
  int64_t split_pieces = p.pieces / std::max(1, p.k_split);
  p.chunk_pieces = int64_t{p.group_threads} * p.unroll;
  p.stage_all = m.stage_all;
  p.row_tiles = m.row_tiles;
  p.chunk_cols = (p.stage_all ? split_pieces : std::min(p.chunk_pieces, split_pieces)) * p.fmt.piece_weights;
  p.int8_x = m.int8_activations;
  if (p.int8_x) {
    // Two levels of codes (16 bytes of padding after every piece's
    // columns), then the per-32-column scales, then the per-8-column sums.
    p.x_code_pad = p.fmt.piece_weights;
    p.x_code2_offset = (p.chunk_cols + p.chunk_cols / p.x_code_pad * 16 + 15) / 16 * 16;
    p.x_scale_offset = 2 * p.x_code2_offset;
    p.x_sum_offset = p.x_scale_offset + (p.chunk_cols / 32 * 4 + 15) / 16 * 16;
    p.x_token_stride = (p.x_sum_offset + p.chunk_cols / 8 * 4 + 15) / 16 * 16;
  } else {
    p.x_token_stride = (p.chunk_cols * 4 + p.chunk_cols / p.fmt.window * 16 + 15) / 16 * 16;
  }
  p.x_bytes = p.x_token_stride * p.tokens;
  p.pipeline = m.pipeline_loads;
  p.pipeline_rows = m.pipeline_rows;
  p.warp_reduce = m.warp_reduce;
  p.stream_stages = m.stream_stages;
  if (p.stream_stages > 0) {
    p.stream_span_bytes = int64_t{kWarp} * p.fmt.block_bytes * p.fmt.piece_weights / p.fmt.block_elems;
    // A warp span's entries of the planar formats' scale plane (an f16 per
    // block: 32 of planar Q8_0, 8 of planar Q6_K).
    p.stream_scale_bytes = ScaleRowBytes(spec.weight, int64_t{kWarp} * p.fmt.piece_weights);
    p.stream_offset = p.x_bytes;
    p.stream_stage_bytes =
        int64_t{p.warps} * p.unroll * p.rows_per_group * (p.stream_span_bytes + p.stream_scale_bytes);
    p.stream_bytes = p.stream_stage_bytes * p.stream_stages;
  }
  return p;
}

GemmPlan PlanGemm(const KernelSpec& spec) {
  GemmPlan p;
  const GemmSchedule& g = spec.gemm;
  p.fmt = GetFormatGeometry(spec.weight);
  p.threads = g.threads;
  p.warps = g.threads / kWarp;
  p.tile_m = g.tile_m;
  p.tile_n = g.tile_n;
  p.tile_k = g.tile_k;
  p.stages = g.stages;
  p.tensor_cores = g.tensor_cores;
  p.rms = spec.prologue == Prologue::kRmsNorm;
  p.k_tiles = g.tile_k > 0 ? spec.cols / g.tile_k : 0;
  p.pieces_per_tile_row = g.tile_k / p.fmt.window * p.fmt.pieces_per_window;
  if (p.threads > 0) {
    const int64_t pieces = int64_t{g.tile_m} * p.pieces_per_tile_row, quads = int64_t{g.tile_n} * (g.tile_k / 4);
    p.prefetch_regs = static_cast<int>((pieces + p.threads - 1) / p.threads * p.fmt.raw_words +
                                       (quads + p.threads - 1) / p.threads * 4);
  }
  if (p.tensor_cores) {
    p.elem_bytes = 2;
    // The first warps_m (a power of two dividing the warps) that leaves each
    // warp a tile of whole 16x8 fragments, preferring square warp tiles.
    for (int wm = 1; wm <= p.warps; wm *= 2) {
      if (p.warps % wm != 0) continue;
      int wn = p.warps / wm;
      if (g.tile_m % (wm * 16) != 0 || g.tile_n % (wn * 8) != 0) continue;
      int mt = g.tile_m / wm, nt = g.tile_n / wn;
      if (p.warps_m == 0 || std::abs(mt - nt) < std::abs(p.tile_m / p.warps_m - p.tile_n / p.warps_n)) {
        p.warps_m = wm;
        p.warps_n = wn;
      }
    }
    if (p.warps_m != 0) {
      p.m_frags = g.tile_m / p.warps_m / 16;
      p.n_frags = g.tile_n / p.warps_n / 8;
    }
    // Rows padded by 16 bytes: fragment loads of 8 rows x 4 columns hit 32
    // different banks.
    p.a_stride = g.tile_k + 8;
    p.b_stride = g.tile_k + 8;
  } else {
    p.elem_bytes = 4;
    p.micro_n = 4;
    int64_t outputs = int64_t{g.tile_m} * g.tile_n;
    if (g.tile_n % p.micro_n == 0 && outputs % (int64_t{p.threads} * p.micro_n) == 0) {
      p.micro_m = static_cast<int>(outputs / p.threads / p.micro_n);
      p.threads_m = g.tile_m / std::max(1, p.micro_m);
      if (p.micro_m == 0 || g.tile_m % p.micro_m != 0 ||
          p.threads_m * (g.tile_n / p.micro_n) != p.threads)
        p.micro_m = 0;
    }
    p.a_stride = g.tile_k + 4;
    p.b_stride = g.tile_k + 4;
  }
  p.c_stride = g.tile_m + 4;
  p.a_offset = 0;
  p.b_offset = (int64_t{g.tile_m} * p.a_stride * p.elem_bytes + 15) / 16 * 16;
  int64_t ab_end = p.b_offset + (int64_t{g.tile_n} * p.b_stride * p.elem_bytes + 15) / 16 * 16;
  p.c_offset = 0;  // the C tile reuses the A/B space after the k loop
  int64_t c_end = int64_t{g.tile_n} * p.c_stride * 4;
  p.r_offset = (std::max(ab_end, c_end) + 15) / 16 * 16;
  p.shared_bytes = p.r_offset + int64_t{4} * g.tile_n;
  return p;
}

PrefillPlan PlanAttentionPrefill(const KernelSpec& spec) {
  PrefillPlan p;
  const AttentionSchedule& a = spec.attention;
  p.warps = a.threads / kWarp;
  p.queries_per_warp = p.warps > 0 ? a.query_block / p.warps : 0;
  p.key_block = a.key_block;
  p.row_bytes = spec.head_dim * (spec.kv_f16 ? 2 : 4);
  p.v_offset = int64_t{a.key_block} * p.row_bytes;
  p.shared_bytes = 2 * p.v_offset;
  return p;
}

DecodePlan PlanAttentionDecode(const KernelSpec& spec) {
  DecodePlan p;
  const AttentionSchedule& a = spec.attention;
  p.threads = a.threads;
  p.warps = a.threads / kWarp;
  p.group = static_cast<int>(spec.n_head / std::max<int64_t>(1, spec.n_head_kv));
  p.group_pad = (p.group + 3) / 4 * 4;
  p.head_dim = static_cast<int>(spec.head_dim);
  p.split = a.split_positions;
  p.max_splits = a.max_splits;
  p.min_split = a.min_split_positions;
  p.elem_bytes = spec.kv_f16 ? 2 : 4;
  p.dims_per_thread = 4;
  p.threads_per_row = std::max(1, p.head_dim / p.dims_per_thread);
  p.row_lanes = std::max(1, p.threads / p.threads_per_row);
  p.stats = spec.n_head_kv * p.max_splits * p.group * int64_t{p.head_dim};
  int64_t off = 0;
  p.q_offset = off;
  off += int64_t{4} * p.group * p.head_dim;
  p.score_offset = off;  // scores, then the merge weights of the last block
  off += int64_t{4} * std::max(p.split, p.max_splits) * p.group_pad;
  p.red_offset = off;  // the row lanes' p*V sums, then the merge's group sums (4 * threads floats at most)
  off += int64_t{4} * p.row_lanes * p.group * p.head_dim;
  p.wmax_offset = off;
  off += int64_t{4} * p.warps * p.group;
  p.lsum_offset = off;
  off += int64_t{4} * p.row_lanes * p.group;
  off = (off + 15) / 16 * 16;
  p.flag_offset = off;
  off += 16;
  p.shared_bytes = off;
  return p;
}

int ArgmaxBlocks(const KernelSpec& spec) {
  const ElementwiseSchedule& e = spec.elementwise;
  const int64_t want = CeilDiv(std::max<int64_t>(spec.cols, 1), std::max(e.block_cols, 1));
  return static_cast<int>(std::clamp<int64_t>(want, 1, std::max(e.max_blocks, 1)));
}

ArgmaxPlan PlanArgmax(const KernelSpec& spec) {
  ArgmaxPlan p;
  p.threads = spec.elementwise.threads;
  p.warps = p.threads / kWarp;
  p.blocks = ArgmaxBlocks(spec);
  p.flag_offset = int64_t{8} * p.warps;
  p.shared_bytes = p.flag_offset + 16;
  return p;
}

}  // namespace kiln::codegen
