// The contract between lowering (passes/lower-to-kernels) and the kernel
// emitters: one KernelSpec describes one GPU kernel completely — what it
// computes (family, weight format, shapes, fused prologue/epilogue) and how
// (its schedule). Emitters turn a spec into an LLVM function; nothing about
// the schedule is decided inside an emitter (style.md: algorithm and
// schedule are separate).
#ifndef KILN_COMPILER_CODEGEN_KERNEL_SPEC_H_
#define KILN_COMPILER_CODEGEN_KERNEL_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

// How a weight matrix [rows, cols] sits in device memory.
enum class WeightFormat {
  kF16,        // row-major halves
  kBF16,       // row-major bfloat16
  kF32,        // row-major floats
  kQ8_0Planar, // int8 plane [rows, cols] (16-byte aligned rows) + f16 scale plane [rows, cols/32]
  kQ4_0,       // GGUF blocks as stored (18 bytes / 32 weights)
  kQ4_K,       // GGUF blocks as stored (144 bytes / 256)
  kQ5_K,       // GGUF blocks as stored (176 bytes / 256)
  kQ6_K,       // GGUF blocks as stored (210 bytes / 256)
  kQ6_KPlanar, // Q6_K split at load: the blocks without d [rows][cols/256 x 208 bytes] (ql, qh,
               // scales: 16-byte aligned) + f16 d plane [rows, cols/256]
  kQ8_0,       // GGUF blocks as stored (34 bytes / 32): kEmbed tables, unpacked matrices
};

enum class Family {
  kEmbed,            // out[t, :] = dequant(table[tokens[t], :])
  kMatVec,           // out[t, m] = epi(sum_k W[m, k] * pro(x)[t, k]) for small T
  kGemm,             // same math for large T (prefill), tensor cores allowed
  kQkNormRopeStore,  // per-head RMSNorm of q and k, NEOX RoPE, K/V into the cache
  kAttentionDecode,  // one query token, split over the context, GQA-grouped
  kAttentionPrefill, // T query tokens, causal
  kArgmax,           // index of the max of each row
  kPackQ8_0,         // GGUF Q8_0 blocks -> planar int8 + f16 scales (load)
  kPackQ6_K,         // GGUF Q6_K rows -> kQ6_KPlanar's planes at a row offset (load)
  kCopyRows,         // raw rows into a destination row offset (load: Q/K/V concat, gate/up interleave)
  kMatVecJoin,       // kMatVec `parts` in one launch: part i's blocks follow part i-1's
                     // (decode's q/k and v projections when their weight types differ)
};

enum class Prologue {
  kNone,
  kRmsNorm,  // x <- (x * rsqrt(mean(x^2) + eps)) * norm_weight, over cols
};

enum class Epilogue {
  kStore,        // out = acc
  kAddInPlace,   // out += acc (residual stream)
  kSiluMulPairs, // rows come as interleaved gate/up groups of `pair_group` rows:
                 // out[j] = silu(acc[gate j]) * acc[up j]; out has rows/2 entries
  kSiluMulWith,  // out = silu(extra) * acc, `extra` an extra f32 input [T, rows]
                 // (the gate matvec's result): passes/fuse's epilogue for an up
                 // matmul whose gate could not be packed with it (types differ)
};

// Schedules: plain data, chosen by passes/select-schedules from schedules/.
struct MatVecSchedule {
  int threads = 256;        // per block
  int rows_per_block = 4;   // output rows (after epilogue pairing: acc rows)
  int vector_bytes = 16;    // width of each weight load
  int k_split = 1;          // blocks splitting one row's K (reduced with atomics)
  int max_tokens = 1;       // T handled per launch (>1: small-batch prefill)
  int unroll = 2;           // weight pieces per thread in flight per loop iteration
  int row_groups = 1;       // thread groups per block, each owning rows_per_block/row_groups
                            // rows (for short rows: fewer threads per row)
  bool stage_all = false;   // stage the split's whole activation row in shared memory once,
                            // so the K loop runs without block barriers
  bool int8_activations = false;  // quantized weights only: activations quantized to int8 per
                                  // 32 columns as they are staged, dot products with dp4a
  int row_tiles = 1;              // with stage_all: tiles of rows_per_block rows one block
                                  // runs in turn, staging the activations once for all of them
  int stream_stages = 0;          // 0: weights load straight into registers. 2..8 (direct
                                  // formats, stage_all): each thread copies its weights into
                                  // shared memory (cp.async) this many work items ahead
  bool release_early = false;     // stream_stages: let the next kernel launch (programmatic
                                  // launch) once the first copies are issued, not at the end
  bool pipeline_loads = false;    // direct formats: the next work item's (chunk, or the next
                                  // row tile's first chunk) weight loads go out before this
                                  // one is computed, so they are in flight during its math
  bool pipeline_rows = false;     // with pipeline_loads: each (piece, row) of the next item is
                                  // loaded as soon as this item's same one is computed, into
                                  // the registers it leaves (no second item's registers)
  int blocks_per_sm = 1;          // registers capped (.maxnreg) so this many blocks fit an SM
  bool warp_reduce = false;       // a row group of one warp sums and stores its own rows with
                                  // shuffles: no block barrier per row tile (RMSNorm: stage_all,
                                  // its factor computed once after the staging; SiLU pairs:
                                  // whole pairs in a group)
};

struct GemmSchedule {
  int tile_m = 64, tile_n = 64, tile_k = 128;  // tile_k: a multiple of the format's
                                               // column window (docs/codegen.md)
  int threads = 128;
  int stages = 1;            // 2: the next k tile's loads in flight (kMaxGemmPrefetchRegisters)
  bool tensor_cores = true;  // mma.sync m16n8k16 f16/bf16
};

// Decode runs n_head_kv x max_splits blocks; the positions per split follow
// L = pos + 1 at run time: len = min(split_positions, max(min_split_positions,
// roundup(ceil(L / max_splits), 32))), and the first ceil(L / len) splits are
// live. split_positions caps len (it sizes the score buffer), so positions
// past max_splits * split_positions are not attended.
struct AttentionSchedule {
  int threads = 128;
  int split_positions = 256;     // decode: the most positions one split takes
  int max_splits = 64;           // decode: splits per KV head (grid.y)
  int min_split_positions = 64;  // decode: the fewest positions a split takes (below: fewer splits)
  int blocks_per_sm = 1;          // decode: registers capped (.maxnreg) so this many blocks fit an SM
  // decode, programmatic launch: dependents released right after the wait
  // (their blocks' first weight loads overlap this kernel), not at the stores
  bool release_after_wait = false;
  int keys_in_flight = 4;          // decode: K rows a lane has in flight in the score loop
  int value_bytes_in_flight = 64;  // decode: V bytes a thread has in flight in the p*V loop
  int query_block = 64;          // prefill query tile (queries per block)
  int key_block = 64;            // prefill with stage_keys: K/V rows per shared-memory tile
  bool stage_keys = false;       // prefill: K/V tiles in shared memory, shared by the block's warps
};

struct ElementwiseSchedule {
  int threads = 256;
  // kArgmax: a row is split over min(max_blocks, ceil(cols / block_cols))
  // blocks, merged by the last one to finish.
  int block_cols = 2048;  // 8 KiB of f32 logits per block
  int max_blocks = 128;
};

struct KernelSpec {
  std::string name;  // deterministic, e.g. "l0_matvec_qkv_q8_0"
  Family family = Family::kMatVec;

  // Matrix kernels.
  WeightFormat weight = WeightFormat::kF16;
  int64_t rows = 0;   // output rows M (before epilogue pairing)
  int64_t cols = 0;   // reduction length K
  Prologue prologue = Prologue::kNone;
  Epilogue epilogue = Epilogue::kStore;
  int pair_group = 0;  // kSiluMulPairs: gate rows then up rows, alternating groups
  float eps = 1e-6f;
  int64_t row_bytes = 0;  // kCopyRows: bytes per row

  // Attention / rope kernels.
  int64_t n_head = 0, n_head_kv = 0, head_dim = 0;
  float rope_base = 10000.0f;
  // RoPE scaling (linear, YaRN; ir::RopeParams, computed by the model
  // builder): pair i's angle is p base^(-2i/D) (freq_scale (1 - mix_i) +
  // mix_i) with mix_i = ext_factor (1 - clamp((i - ramp_low) / max(0.001,
  // ramp_high - ramp_low), 0, 1)), and cos and sin are scaled by mscale.
  // The defaults are plain RoPE.
  struct RopeScaling {
    float freq_scale = 1.0f, ext_factor = 0.0f, ramp_low = 0.0f, ramp_high = 0.0f, mscale = 1.0f;
  } rope_scaling;
  float attn_scale = 1.0f;
  bool kv_f16 = true;  // cache element type (f16, else f32)
  // kAttentionDecode: the kernel also does kQkNormRopeStore's work for the
  // new token (q/k RMSNorm with eps, RoPE with rope_base and rope_scaling, K/V into the
  // cache): it reads the raw qkv row and the two norm weights instead of q.
  bool rope_fused = false;

  // Activation element type between kernels is f32.
  MatVecSchedule matvec;
  GemmSchedule gemm;
  AttentionSchedule attention;
  ElementwiseSchedule elementwise;
  bool programmatic_launch = false;  // emit griddepcontrol (sm_90 only)

  // kMatVecJoin: the matvecs it runs, each with its own schedule (one block
  // size and register cap for all: ValidateKernelSpec). The join's own
  // matrix and schedule fields above are unused; JoinPart(join, i) gives
  // part i its name ("<join>_p<i>") and the join's programmatic_launch.
  std::vector<KernelSpec> parts;
};

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_KERNEL_SPEC_H_
