#include "compiler/codegen/kernel_validation.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "compiler/codegen/kernel_plans.h"

namespace kiln::codegen {

namespace {

absl::Status Bad(const KernelSpec& spec, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("kernel '", spec.name, "' (", FamilyName(spec.family), "): ", what));
}

bool IsIdentifier(const std::string& s) {
  if (s.empty() || s.size() > 200) return false;
  if (!absl::ascii_isalpha(s[0]) && s[0] != '_') return false;
  for (char c : s)
    if (!absl::ascii_isalnum(c) && c != '_') return false;
  return true;
}

absl::Status CheckThreads(const KernelSpec& spec, int threads, absl::string_view which) {
  if (threads < kWarp || threads > 1024 || threads % kWarp != 0)
    return Bad(spec, absl::StrCat(which, ".threads = ", threads,
                                  " must be a multiple of 32 in [32, 1024]"));
  return absl::OkStatus();
}

// blocks_per_sm (matvec, decode attention): .maxnreg leaves registers for
// that many blocks of `threads` on an SM (kernel_builder.cc).
absl::Status CheckBlocksPerSm(const KernelSpec& spec, int blocks, int threads, absl::string_view which) {
  if (blocks < 1 || int64_t{blocks} * threads > 2048)
    return Bad(spec, absl::StrCat(which, ".blocks_per_sm = ", blocks, " must be >= 1 and leave ",
                                  "blocks_per_sm * threads <= 2048 (an SM's threads)"));
  // A cap at or above 255 registers (the most a thread has) caps nothing:
  // the same kernel as blocks_per_sm 1, so the tuner would time it twice.
  if (blocks > 1 && MaxRegistersPerThread(threads, blocks) >= 255)
    return Bad(spec, absl::StrCat(which, ".blocks_per_sm = ", blocks, " caps nothing at ", threads,
                                  " threads (a thread may still use all 255 registers); use 1"));
  return absl::OkStatus();
}

absl::Status CheckMatrix(const KernelSpec& spec) {
  if (spec.rows <= 0 || spec.cols <= 0)
    return Bad(spec, absl::StrCat("rows = ", spec.rows, ", cols = ", spec.cols, " must be positive"));
  if (spec.rows > (int64_t{1} << 31) / 2 || spec.cols > (int64_t{1} << 24))
    return Bad(spec, "rows or cols too large for 32-bit indexing");
  FormatGeometry g = GetFormatGeometry(spec.weight);
  int64_t unit = std::max<int64_t>(g.window, g.block_elems);
  if (spec.cols % unit != 0)
    return Bad(spec, absl::StrCat("cols = ", spec.cols, " is not a multiple of ", unit,
                                  " (the ", WeightFormatName(spec.weight), " block/window size)"));
  if (WeightRowBytes(spec.weight, spec.cols) * spec.rows >= (int64_t{1} << 40))
    return Bad(spec, "weight matrix too large");
  if (spec.prologue == Prologue::kRmsNorm && !(spec.eps >= 0.0f))
    return Bad(spec, "eps must be >= 0");
  if (spec.epilogue == Epilogue::kSiluMulPairs) {
    if (spec.pair_group <= 0) return Bad(spec, "kSiluMulPairs needs pair_group > 0");
    if (spec.rows % (2 * spec.pair_group) != 0)
      return Bad(spec, absl::StrCat("rows = ", spec.rows, " is not a multiple of 2*pair_group = ",
                                    2 * spec.pair_group));
  }
  return absl::OkStatus();
}

absl::Status ValidateMatVec(const KernelSpec& spec, const Target& target) {
  absl::Status s = CheckMatrix(spec);
  if (!s.ok()) return s;
  const MatVecSchedule& m = spec.matvec;
  s = CheckThreads(spec, m.threads, "matvec");
  if (!s.ok()) return s;
  if (m.vector_bytes != 16) return Bad(spec, "matvec.vector_bytes must be 16");
  if (m.rows_per_block < 1 || m.rows_per_block > 64)
    return Bad(spec, "matvec.rows_per_block must be in [1, 64]");
  if (m.row_groups < 1 || m.rows_per_block % m.row_groups != 0 ||
      m.threads % (m.row_groups * kWarp) != 0)
    return Bad(spec, absl::StrCat("matvec.row_groups = ", m.row_groups,
                                  " must divide rows_per_block and threads/32"));
  if (m.max_tokens < 1 || m.max_tokens > 16) return Bad(spec, "matvec.max_tokens must be in [1, 16]");
  if (m.unroll < 1 || m.unroll > 8) return Bad(spec, "matvec.unroll must be in [1, 8]");
  if ((m.rows_per_block / m.row_groups) * m.max_tokens > 64)
    return Bad(spec, "matvec: rows per group x max_tokens > 64 accumulators per thread");
  if (m.k_split < 1) return Bad(spec, "matvec.k_split must be >= 1");
  if (s = CheckBlocksPerSm(spec, m.blocks_per_sm, m.threads, "matvec"); !s.ok()) return s;
  FormatGeometry g = GetFormatGeometry(spec.weight);
  int64_t pieces = spec.cols / g.piece_weights;
  if (m.k_split > 1) {
    if (spec.epilogue != Epilogue::kAddInPlace || spec.prologue != Prologue::kNone)
      return Bad(spec, "matvec.k_split > 1 needs epilogue kAddInPlace and no prologue");
    if (m.k_split > pieces) return Bad(spec, "matvec.k_split exceeds the pieces per row");
    int64_t per_split = pieces / m.k_split;
    if (pieces % m.k_split != 0 || per_split % g.pieces_per_block != 0)
      return Bad(spec, "matvec.k_split must split the row into whole blocks");
  }
  if (m.row_tiles < 1 || m.row_tiles > 64) return Bad(spec, "matvec.row_tiles must be in [1, 64]");
  if (m.row_tiles > 1 && !m.stage_all)
    return Bad(spec, "matvec.row_tiles > 1 needs stage_all (the tiles share the staged activations)");
  if (m.int8_activations && (g.block_elems == 1 || g.piece_weights % 32 != 0))
    return Bad(spec, absl::StrCat("matvec.int8_activations needs a quantized weight format, not ",
                                  WeightFormatName(spec.weight)));
  if (spec.epilogue == Epilogue::kSiluMulPairs && m.rows_per_block % (2 * spec.pair_group) != 0)
    return Bad(spec, absl::StrCat("matvec.rows_per_block = ", m.rows_per_block,
                                  " is not a multiple of 2*pair_group"));
  // Work items (stream_stages, pipeline_loads) are whole chunks: a split's
  // pieces must be a multiple of threads/row_groups x unroll.
  auto whole_chunks = [&](const char* field) -> absl::Status {
    int64_t per_split = pieces / m.k_split;
    if (per_split % (int64_t{m.threads / m.row_groups} * m.unroll) != 0)
      return Bad(spec, absl::StrCat("matvec.", field, ": a split's ", per_split,
                                    " pieces are not whole chunks of threads/row_groups x unroll pieces"));
    return absl::OkStatus();
  };
  if (m.pipeline_loads) {
    if (g.staged)
      return Bad(spec, absl::StrCat("matvec.pipeline_loads needs a weight format loaded straight into registers, not ",
                                    WeightFormatName(spec.weight), " (staged in shared memory)"));
    if (m.stream_stages != 0) return Bad(spec, "matvec.pipeline_loads and stream_stages exclude each other");
    if (absl::Status s = whole_chunks("pipeline_loads"); !s.ok()) return s;
  }
  if (m.pipeline_rows && !m.pipeline_loads)
    return Bad(spec, "matvec.pipeline_rows needs pipeline_loads (it says when the next item's loads go out)");
  if (m.warp_reduce) {
    if (m.threads != m.row_groups * kWarp)
      return Bad(spec, absl::StrCat("matvec.warp_reduce needs a warp per row group (threads = 32 x row_groups), not ",
                                    m.threads, " threads in ", m.row_groups, " groups"));
    if (spec.prologue == Prologue::kRmsNorm && !m.stage_all)
      return Bad(spec, "matvec.warp_reduce with RMSNorm needs stage_all (the factor comes from the whole staged row)");
    if (spec.epilogue == Epilogue::kSiluMulPairs && (m.rows_per_block / m.row_groups) % (2 * spec.pair_group) != 0)
      return Bad(spec, absl::StrCat("matvec.warp_reduce with SiLU pairs needs whole pairs in a group: ",
                                    m.rows_per_block / m.row_groups, " rows a group, pair_group ", spec.pair_group));
  }
  if (m.release_early && m.stream_stages == 0)
    return Bad(spec, "matvec.release_early needs stream_stages (it releases after the first copies)");
  if (m.stream_stages != 0) {
    if (m.stream_stages < 2 || m.stream_stages > 8)
      return Bad(spec, absl::StrCat("matvec.stream_stages = ", m.stream_stages, " must be 0 or in [2, 8]"));
    if (!StreamableFormat(spec.weight))
      return Bad(spec, absl::StrCat("matvec.stream_stages needs a 16-byte aligned weight format (not the 2-byte "
                                    "aligned GGUF blocks), not ",
                                    WeightFormatName(spec.weight)));
    if (!m.stage_all) return Bad(spec, "matvec.stream_stages needs stage_all (no barriers between work items)");
    if (absl::Status s = whole_chunks("stream_stages"); !s.ok()) return s;
    // Whole chunks make every warp's span start at a multiple of 32 pieces,
    // so rows are whole spans; a warp copies its 32 pieces (and a planar
    // format's scale-plane entries for them: 64 bytes of planar Q8_0, 16 of
    // planar Q6_K, both starting 16-byte aligned since a row's pieces, and
    // so its scale-plane bytes, are whole spans) as 16-byte units, which
    // every direct format's span is (Codegen.StreamedSpansAreWhole16ByteUnits).
  }
  MatVecPlan p = PlanMatVec(spec);
  if (p.shared_bytes > kMaxStaticShared)
    return Bad(spec, absl::StrCat("needs ", p.shared_bytes,
                                  " bytes of static shared memory (> 48 KiB); lower rows_per_block or threads"));
  if (p.shared_bytes + p.x_bytes + p.stream_bytes > target.MaxSharedPerBlock())
    return Bad(spec, absl::StrCat("needs ", p.shared_bytes + p.x_bytes + p.stream_bytes, " bytes of shared memory (",
                                  target.Name(), " has ", target.MaxSharedPerBlock(),
                                  "); lower threads, unroll, max_tokens or stream_stages"));
  return absl::OkStatus();
}

// kMatVecJoin: at least two parts, each a valid matvec, that one launch can
// run: one block size, register cap (.maxnreg), k_split (grid.y) and token
// count, and the largest static plus the largest dynamic shared memory of
// the parts (possibly of different parts) within the target's limit.
absl::Status ValidateMatVecJoin(const KernelSpec& spec, const Target& target) {
  if (spec.parts.size() < 2)
    return Bad(spec, absl::StrCat("a matvec join needs at least 2 parts, has ", spec.parts.size()));
  const MatVecSchedule& m0 = spec.parts[0].matvec;
  int64_t static_bytes = 0, dynamic_bytes = 0;
  for (size_t i = 0; i < spec.parts.size(); ++i) {
    const KernelSpec part = JoinPart(spec, i);
    if (part.family != Family::kMatVec || !part.parts.empty())
      return Bad(spec, absl::StrCat("part ", i, " is a ", FamilyName(part.family),
                                    part.parts.empty() ? "" : " with parts", " kernel, not a matvec"));
    if (absl::Status s = ValidateMatVec(part, target); !s.ok())
      return Bad(spec, absl::StrCat("part ", i, ": ", s.message()));
    const MatVecSchedule& m = part.matvec;
    if (m.threads != m0.threads || m.blocks_per_sm != m0.blocks_per_sm || m.k_split != m0.k_split ||
        m.max_tokens != m0.max_tokens)
      return Bad(spec, absl::StrCat("part ", i, "'s threads, blocks_per_sm, k_split and max_tokens (", m.threads, ", ",
                                    m.blocks_per_sm, ", ", m.k_split, ", ", m.max_tokens,
                                    ") differ from part 0's (", m0.threads, ", ", m0.blocks_per_sm, ", ",
                                    m0.k_split, ", ", m0.max_tokens, "): one launch has one of each"));
    const MatVecPlan p = PlanMatVec(part);
    static_bytes = std::max<int64_t>(static_bytes, p.shared_bytes);
    dynamic_bytes = std::max<int64_t>(dynamic_bytes, p.x_bytes + p.stream_bytes);
  }
  if (static_bytes + dynamic_bytes > target.MaxSharedPerBlock())
    return Bad(spec, absl::StrCat("the parts' shared memory, ", static_bytes, " static and ", dynamic_bytes,
                                  " dynamic bytes at most, exceeds ", target.Name(), "'s ",
                                  target.MaxSharedPerBlock(), " a block"));
  return absl::OkStatus();
}

absl::Status ValidateGemm(const KernelSpec& spec, const Target& target) {
  absl::Status s = CheckMatrix(spec);
  if (!s.ok()) return s;
  const GemmSchedule& g = spec.gemm;
  s = CheckThreads(spec, g.threads, "gemm");
  if (!s.ok()) return s;
  FormatGeometry f = GetFormatGeometry(spec.weight);
  if (g.tile_m < 16 || g.tile_m % 16 != 0 || g.tile_m > 256)
    return Bad(spec, "gemm.tile_m must be a multiple of 16 in [16, 256]");
  if (g.tile_n < 8 || g.tile_n % 8 != 0 || g.tile_n > 256)
    return Bad(spec, "gemm.tile_n must be a multiple of 8 in [8, 256]");
  if (g.tile_k < 16 || g.tile_k % 16 != 0 || g.tile_k % f.window != 0)
    return Bad(spec, absl::StrCat("gemm.tile_k = ", g.tile_k, " must be a multiple of 16 and of ",
                                  f.window, " (the ", WeightFormatName(spec.weight), " column window)"));
  if (spec.cols % g.tile_k != 0)
    return Bad(spec, absl::StrCat("cols = ", spec.cols, " is not a multiple of gemm.tile_k = ", g.tile_k));
  if (g.stages != 1 && g.stages != 2) return Bad(spec, absl::StrCat("gemm.stages = ", g.stages, " must be 1 or 2"));
  if (spec.epilogue == Epilogue::kSiluMulPairs && g.tile_m % (2 * spec.pair_group) != 0)
    return Bad(spec, "gemm.tile_m is not a multiple of 2*pair_group");
  GemmPlan p = PlanGemm(spec);
  if (g.stages == 2 && p.prefetch_regs > kMaxGemmPrefetchRegisters)
    return Bad(spec, absl::StrCat("gemm.stages = 2 holds a thread's share of the next k tile in ", p.prefetch_regs,
                                  " registers, more than ", kMaxGemmPrefetchRegisters,
                                  "; lower tile_k, tile_m or tile_n, raise threads, or use stages = 1"));
  if (g.tensor_cores) {
    if (p.warps_m == 0)
      return Bad(spec, "gemm: the warps cannot tile tile_m x tile_n in 16x8 mma tiles");
  } else if (p.micro_m == 0) {
    return Bad(spec, "gemm: tile_m*tile_n must split into threads x 4 outputs (4 tokens per thread)");
  }
  if (p.shared_bytes > target.MaxSharedPerBlock())
    return Bad(spec, absl::StrCat("gemm needs ", p.shared_bytes, " bytes of shared memory (", target.Name(), " has ",
                                  target.MaxSharedPerBlock(), ")"));
  return absl::OkStatus();
}

absl::Status CheckHeads(const KernelSpec& spec) {
  if (spec.n_head <= 0 || spec.n_head_kv <= 0 || spec.n_head % spec.n_head_kv != 0)
    return Bad(spec, absl::StrCat("n_head = ", spec.n_head, ", n_head_kv = ", spec.n_head_kv,
                                  ": need n_head a positive multiple of n_head_kv"));
  if (spec.head_dim <= 0 || spec.head_dim % 32 != 0 || spec.head_dim > 512)
    return Bad(spec, absl::StrCat("head_dim = ", spec.head_dim, " must be a multiple of 32 in [32, 512]"));
  return absl::OkStatus();
}

absl::Status CheckRope(const KernelSpec& spec) {
  if (!(spec.rope_base > 1.0f)) return Bad(spec, "rope_base must be > 1");
  if (!(spec.eps >= 0.0f)) return Bad(spec, "eps must be >= 0");
  const KernelSpec::RopeScaling& r = spec.rope_scaling;
  if (!(r.freq_scale > 0.0f) || !std::isfinite(r.freq_scale) || !(r.mscale > 0.0f) || !std::isfinite(r.mscale) ||
      !std::isfinite(r.ext_factor) || !std::isfinite(r.ramp_low) || !std::isfinite(r.ramp_high))
    return Bad(spec, "rope_scaling: freq_scale and mscale must be finite and > 0, the ramp and ext_factor finite");
  return absl::OkStatus();
}

absl::Status ValidateAttention(const KernelSpec& spec) {
  absl::Status s = CheckHeads(spec);
  if (!s.ok()) return s;
  const AttentionSchedule& a = spec.attention;
  s = CheckThreads(spec, a.threads, "attention");
  if (!s.ok()) return s;
  if (!(spec.attn_scale > 0.0f)) return Bad(spec, "attn_scale must be > 0");
  if (spec.family == Family::kAttentionPrefill && a.release_after_wait)
    return Bad(spec, "attention.release_after_wait is a decode attention field");
  if (spec.family == Family::kAttentionDecode) {
    if (a.split_positions < 1 || a.split_positions > 4096)
      return Bad(spec, "attention.split_positions must be in [1, 4096]");
    if (a.max_splits < 1 || a.max_splits > 65535) return Bad(spec, "attention.max_splits must be in [1, 65535]");
    if (a.min_split_positions < 1 || a.min_split_positions > a.split_positions)
      return Bad(spec, "attention.min_split_positions must be in [1, split_positions]");
    if (s = CheckBlocksPerSm(spec, a.blocks_per_sm, a.threads, "attention"); !s.ok()) return s;
    if (a.stage_keys) return Bad(spec, "attention.stage_keys is a prefill attention field");
    if (a.keys_in_flight < 1 || a.keys_in_flight > 16)
      return Bad(spec, absl::StrCat("attention.keys_in_flight = ", a.keys_in_flight, " must be in [1, 16]"));
    // Whole loads of 4 dims of a row: 8 bytes of an f16 cache, 16 of f32.
    if (const int row_bytes = spec.kv_f16 ? 8 : 16; a.value_bytes_in_flight < row_bytes ||
                                                    a.value_bytes_in_flight > 256 ||
                                                    a.value_bytes_in_flight % row_bytes != 0)
      return Bad(spec, absl::StrCat("attention.value_bytes_in_flight = ", a.value_bytes_in_flight,
                                    " must be a positive multiple of ", row_bytes, " (4 dims of a ",
                                    spec.kv_f16 ? "f16" : "f32", " row a load), at most 256"));
    // Without griddepcontrol it is the same kernel: the tuner would time it twice.
    if (a.release_after_wait && !spec.programmatic_launch)
      return Bad(spec, "attention.release_after_wait needs programmatic launch (griddepcontrol, sm_90)");
    if (spec.n_head / spec.n_head_kv > 16) return Bad(spec, "more than 16 query heads per KV head");
    if (spec.rope_fused) {
      s = CheckRope(spec);
      if (!s.ok()) return s;
    }
    DecodePlan p = PlanAttentionDecode(spec);
    if (a.threads % p.threads_per_row != 0)
      return Bad(spec, "attention.threads must be a multiple of head_dim/4");
    if (p.shared_bytes > kMaxStaticShared)
      return Bad(spec, absl::StrCat("needs ", p.shared_bytes, " bytes of shared memory (> 48 KiB)"));
  } else {
    if (a.query_block < 1 || a.query_block > 1024) return Bad(spec, "attention.query_block must be in [1, 1024]");
    // A lane's dims load as 1, 2 or whole groups of 4 elements (aligned).
    const int64_t dims_per_lane = spec.head_dim / kWarp;
    if (dims_per_lane > 2 && dims_per_lane % 4 != 0)
      return Bad(spec, absl::StrCat("head_dim = ", spec.head_dim,
                                    ": prefill attention takes 32, 64 or a multiple of 128 (dims a lane)"));
    if (a.stage_keys) {
      const PrefillPlan p = PlanAttentionPrefill(spec);
      if (a.key_block < 4 || a.key_block % 4 != 0)
        return Bad(spec, "attention.key_block must be a positive multiple of 4 with stage_keys (whole key groups)");
      if (a.query_block % p.warps != 0)
        return Bad(spec, absl::StrCat("attention.query_block = ", a.query_block, " must be a multiple of the ",
                                      p.warps, " warps with stage_keys (each warp keeps as many queries)"));
      // A query's state (its dims and accumulators, max and sum) stays in
      // registers across the tiles: at most 8 queries, in half of what a
      // thread may have.
      const int64_t state = p.queries_per_warp * (2 * dims_per_lane + 2);
      if (p.queries_per_warp > 8 || state > MaxRegistersPerThread(a.threads, 1) / 2)
        return Bad(spec, absl::StrCat("attention.query_block = ", a.query_block, " puts ", p.queries_per_warp,
                                      " queries on a warp with stage_keys (", state,
                                      " registers of state a thread): at most 8, and half the registers of ",
                                      a.threads, " threads"));
      if (p.shared_bytes > kMaxStaticShared)
        return Bad(spec, absl::StrCat("stage_keys needs ", p.shared_bytes,
                                      " bytes of shared memory (> 48 KiB); lower attention.key_block"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateKernelSpec(const KernelSpec& spec, const Target& target) {
  if (!IsIdentifier(spec.name))
    return absl::InvalidArgumentError(
        absl::StrCat("kernel name '", spec.name, "' is not a C identifier"));
  if (spec.rope_fused && spec.family != Family::kAttentionDecode)
    return Bad(spec, "rope_fused is for attention_decode only");
  if (!spec.parts.empty() && spec.family != Family::kMatVecJoin)
    return Bad(spec, "parts are for matvec_join only");
  switch (spec.family) {
    case Family::kMatVec:
      return ValidateMatVec(spec, target);
    case Family::kGemm:
      return ValidateGemm(spec, target);
    case Family::kEmbed: {
      if (ScaleRowBytes(spec.weight, spec.cols) > 0)
        return Bad(spec, absl::StrCat("embedding tables are read as stored, not as ", WeightFormatName(spec.weight),
                                      "'s planes"));
      if (spec.rows <= 0) return Bad(spec, "rows (vocabulary size) must be positive");
      absl::Status s = CheckMatrix(spec);
      if (!s.ok()) return s;
      return CheckThreads(spec, spec.elementwise.threads, "elementwise");
    }
    case Family::kQkNormRopeStore: {
      absl::Status s = CheckHeads(spec);
      if (!s.ok()) return s;
      s = CheckRope(spec);
      if (!s.ok()) return s;
      return CheckThreads(spec, spec.elementwise.threads, "elementwise");
    }
    case Family::kAttentionDecode:
    case Family::kAttentionPrefill:
      return ValidateAttention(spec);
    case Family::kArgmax:
      if (spec.rows <= 0) return Bad(spec, "rows must be positive");
      if (spec.elementwise.block_cols < 1) return Bad(spec, "elementwise.block_cols must be positive");
      if (spec.elementwise.max_blocks < 1 || spec.elementwise.max_blocks > 65535)
        return Bad(spec, "elementwise.max_blocks must be in [1, 65535]");
      return CheckThreads(spec, spec.elementwise.threads, "elementwise");
    case Family::kPackQ8_0:
    case Family::kPackQ6_K: {
      const int64_t block = spec.family == Family::kPackQ6_K ? 256 : 32;  // weights per GGUF block
      if (spec.cols <= 0 || spec.cols % block != 0)
        return Bad(spec, absl::StrCat("cols = ", spec.cols, " is not a positive multiple of ", block));
      return CheckThreads(spec, spec.elementwise.threads, "elementwise");
    }
    case Family::kMatVecJoin:
      return ValidateMatVecJoin(spec, target);
    case Family::kCopyRows:
      if (spec.row_bytes <= 0 || spec.row_bytes > (int64_t{1} << 30))
        return Bad(spec, absl::StrCat("row_bytes = ", spec.row_bytes, " must be positive"));
      return CheckThreads(spec, spec.elementwise.threads, "elementwise");
  }
  return Bad(spec, "unknown family");
}

}  // namespace kiln::codegen
