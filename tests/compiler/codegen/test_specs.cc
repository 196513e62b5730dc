#include "tests/compiler/codegen/test_specs.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/kernel_abi.h"
#include "compiler/codegen/kernel_plans.h"
#include "compiler/codegen/kernel_validation.h"

namespace kiln::codegen::testing {
namespace {

struct Shape {
  const char* name;
  int64_t rows, cols;
};

// tiny: n_embd 256, n_ff 768, 4/2 heads of 64, vocab 4096.
// 8B: n_embd 4096, n_ff 12288, 32/8 heads of 128, vocab 151936.
constexpr Shape kTinyQkv{"tiny_qkv", 512, 256}, kTinyOut{"tiny_out", 256, 256},
    kTinyGateUp{"tiny_gateup", 1536, 256}, kTinyDown{"tiny_down", 256, 768}, kTinyHead{"tiny_head", 4096, 256};
constexpr Shape kTinyUp{"tiny_up", 768, 256}, k8bUp{"b8_up", 12288, 4096};
constexpr Shape k8bQkv{"b8_qkv", 6144, 4096}, k8bOut{"b8_out", 4096, 4096}, k8bGateUp{"b8_gateup", 24576, 4096},
    k8bDown{"b8_down", 4096, 12288}, k8bHead{"b8_head", 151936, 4096};

const char* ProName(Prologue p) { return p == Prologue::kNone ? "x" : "rms"; }
const char* EpiName(Epilogue e) {
  switch (e) {
    case Epilogue::kStore: return "store";
    case Epilogue::kAddInPlace: return "add";
    case Epilogue::kSiluMulPairs: return "silu";
    case Epilogue::kSiluMulWith: return "siluwith";
  }
  return "?";
}

Shape ShapeFor(Epilogue e, bool big, int variant) {
  switch (e) {
    case Epilogue::kStore: return big ? (variant % 2 ? k8bHead : k8bQkv) : (variant % 2 ? kTinyHead : kTinyQkv);
    case Epilogue::kAddInPlace: return big ? (variant % 2 ? k8bDown : k8bOut) : (variant % 2 ? kTinyDown : kTinyOut);
    case Epilogue::kSiluMulPairs: return big ? k8bGateUp : kTinyGateUp;
    case Epilogue::kSiluMulWith: return big ? k8bUp : kTinyUp;
  }
  return kTinyOut;
}

}  // namespace

Target Sm(int sm) { return *Target::FromName(absl::StrCat("sm_", sm)); }

const std::vector<WeightFormat>& AllFormats() {
  static const std::vector<WeightFormat> kAll = {
      WeightFormat::kF16,  WeightFormat::kBF16, WeightFormat::kF32,  WeightFormat::kQ8_0Planar, WeightFormat::kQ8_0,
      WeightFormat::kQ4_0, WeightFormat::kQ4_K, WeightFormat::kQ5_K, WeightFormat::kQ6_K, WeightFormat::kQ6_KPlanar};
  return kAll;
}

KernelSpec MatVec(const std::string& name, WeightFormat format, int64_t rows, int64_t cols, Prologue prologue,
                  Epilogue epilogue, int max_tokens) {
  KernelSpec s;
  s.name = name;
  s.family = Family::kMatVec;
  s.weight = format;
  s.rows = rows;
  s.cols = cols;
  s.prologue = prologue;
  s.epilogue = epilogue;
  s.pair_group = epilogue == Epilogue::kSiluMulPairs ? 2 : 0;
  s.matvec.max_tokens = max_tokens;
  // Several tokens multiply the accumulators: fewer rows per block and one
  // piece in flight keep every format clear of spills.
  if (max_tokens > 1) {
    s.matvec.unroll = 1;
    s.matvec.rows_per_block = epilogue == Epilogue::kSiluMulPairs ? 4 : 2;
    // Planar Q6_K's 64-weight pieces hold 15 registers of a row's weights,
    // the most of any format: two rows per group.
    if (format == WeightFormat::kQ6_KPlanar) s.matvec.row_groups = s.matvec.rows_per_block / 2;
  }
  return s;
}

KernelSpec Gemm(const std::string& name, WeightFormat format, int64_t rows, int64_t cols, Prologue prologue,
                Epilogue epilogue) {
  KernelSpec s = MatVec(name, format, rows, cols, prologue, epilogue);
  s.family = Family::kGemm;
  s.pair_group = epilogue == Epilogue::kSiluMulPairs ? 16 : 0;
  return s;
}

std::vector<KernelSpec> MatVecMatrix() {
  std::vector<KernelSpec> out;
  int k = 0;
  for (WeightFormat f : AllFormats()) {
    for (Prologue p : {Prologue::kNone, Prologue::kRmsNorm}) {
      for (Epilogue e : {Epilogue::kStore, Epilogue::kAddInPlace, Epilogue::kSiluMulPairs, Epilogue::kSiluMulWith}) {
        bool big = k % 2 == 1;
        Shape sh = ShapeFor(e, big, k / 2);
        int tokens = (k % 3 == 0) ? 4 : 1;
        KernelSpec s = MatVec(absl::StrCat("mv_", WeightFormatName(f), "_", ProName(p), "_", EpiName(e), "_", sh.name,
                                           "_t", tokens),
                              f, sh.rows, sh.cols, p, e, tokens);
        if (k % 4 == 1) s.programmatic_launch = true;
        out.push_back(s);
        ++k;
      }
    }
  }
  return out;
}

namespace {

// Matvecs that run as a sequence of work items (row tile, chunk): every
// direct format, row tiles with the last block partly past the rows, k
// splits, unroll 2, row groups, float and int8, T <= 4. `stages` is the
// streamed variant's stream_stages.
struct WorkItemCase {
  WeightFormat f;
  Prologue p;
  Epilogue e;
  int tokens, threads, rows_per_block, row_groups, unroll, row_tiles, stages, k_split;
  bool int8;
  int64_t rows, cols;
};

// Named prefix + k + format, prologue, epilogue + `how` (e.g. "_s3": three
// stream stages) + float or int8.
KernelSpec WorkItemSpec(const std::string& prefix, int k, const std::string& how, const WorkItemCase& c) {
  KernelSpec st = MatVec(absl::StrCat(prefix, k, "_", WeightFormatName(c.f), "_", ProName(c.p), "_", EpiName(c.e), how,
                                      c.int8 ? "_i8" : "_f"),
                         c.f, c.rows, c.cols, c.p, c.e, c.tokens);
  st.matvec.threads = c.threads;
  st.matvec.rows_per_block = c.rows_per_block;
  st.matvec.row_groups = c.row_groups;
  st.matvec.unroll = c.unroll;
  st.matvec.row_tiles = c.row_tiles;
  st.matvec.stage_all = true;
  st.matvec.k_split = c.k_split;
  st.matvec.int8_activations = c.int8;
  st.programmatic_launch = true;
  return st;
}

const std::vector<WorkItemCase>& WorkItemCases() {
  static const std::vector<WorkItemCase> kCases = {
      {WeightFormat::kF16, Prologue::kNone, Epilogue::kStore, 4, 128, 8, 1, 1, 4, 4, 1, false, 259, 1024},
      {WeightFormat::kBF16, Prologue::kRmsNorm, Epilogue::kSiluMulPairs, 2, 64, 8, 2, 1, 4, 2, 1, false, 264, 1024},
      {WeightFormat::kF32, Prologue::kNone, Epilogue::kAddInPlace, 2, 64, 8, 1, 2, 1, 3, 2, false, 259, 1024},
      {WeightFormat::kQ8_0Planar, Prologue::kRmsNorm, Epilogue::kSiluMulWith, 4, 128, 8, 1, 1, 4, 4, 1, true, 259, 4096},
      {WeightFormat::kQ8_0Planar, Prologue::kNone, Epilogue::kStore, 1, 64, 8, 2, 1, 4, 2, 1, false, 259, 2048},
      {WeightFormat::kQ8_0Planar, Prologue::kNone, Epilogue::kAddInPlace, 2, 128, 4, 1, 1, 1, 3, 2, true, 259, 8192},
      {WeightFormat::kQ4_K, Prologue::kRmsNorm, Epilogue::kSiluMulPairs, 2, 64, 8, 1, 1, 4, 4, 1, true, 264, 4096},
      {WeightFormat::kQ4_K, Prologue::kNone, Epilogue::kStore, 2, 128, 8, 2, 1, 4, 2, 1, false, 259, 4096},
      {WeightFormat::kQ4_K, Prologue::kNone, Epilogue::kAddInPlace, 1, 64, 8, 1, 2, 1, 3, 2, true, 259, 16384},
      {WeightFormat::kQ5_K, Prologue::kRmsNorm, Epilogue::kSiluMulWith, 2, 128, 8, 2, 1, 4, 3, 1, true, 259, 4096},
      {WeightFormat::kQ5_K, Prologue::kNone, Epilogue::kStore, 1, 64, 8, 1, 1, 1, 2, 1, false, 259, 4096},
      // The shipped Qwen3-8B Q4_K down projection schedule: 3 chunks per
      // tile, 12 items per block, stage buffers reused.
      {WeightFormat::kQ4_K, Prologue::kNone, Epilogue::kAddInPlace, 1, 128, 16, 4, 1, 4, 4, 2, true, 4096, 12288},
      // k_split with unroll 2 and row tiles: 2 chunks per tile, up to 8
      // items, 3 stages wrapping around.
      {WeightFormat::kQ4_K, Prologue::kNone, Epilogue::kAddInPlace, 2, 64, 8, 2, 2, 4, 3, 2, true, 259, 16384},
      {WeightFormat::kQ8_0Planar, Prologue::kNone, Epilogue::kAddInPlace, 1, 64, 8, 2, 2, 4, 4, 2, false, 259, 8192},
      // Planar Q6_K: its 8-byte scale loads and d plane from the copies.
      {WeightFormat::kQ6_KPlanar, Prologue::kRmsNorm, Epilogue::kStore, 2, 128, 8, 4, 1, 4, 3, 1, false, 259, 4096},
      {WeightFormat::kQ6_KPlanar, Prologue::kNone, Epilogue::kAddInPlace, 1, 64, 4, 1, 1, 2, 2, 2, false, 259, 8192},
      {WeightFormat::kQ6_KPlanar, Prologue::kRmsNorm, Epilogue::kSiluMulPairs, 2, 64, 8, 2, 1, 4, 4, 1, true, 264, 4096},
      {WeightFormat::kQ6_KPlanar, Prologue::kNone, Epilogue::kAddInPlace, 2, 64, 4, 2, 2, 2, 3, 2, true, 259, 8192},
      // The Qwen3-8B Q6_K down projection's shape: 3 chunks per k split.
      {WeightFormat::kQ6_KPlanar, Prologue::kNone, Epilogue::kAddInPlace, 1, 256, 16, 8, 1, 1, 3, 2, false, 4096, 12288},
  };
  return kCases;
}

}  // namespace

std::vector<KernelSpec> StreamedMatVecs() {
  // Weights streamed through shared memory (cp.async, stream_stages ahead),
  // 2-4 stages.
  std::vector<KernelSpec> out;
  int k = 0;
  for (const WorkItemCase& c : WorkItemCases()) {
    KernelSpec st = WorkItemSpec("mvst", k++, absl::StrCat("_s", c.stages), c);
    st.matvec.stream_stages = c.stages;
    st.matvec.release_early = c.stages == 3;
    out.push_back(st);
  }
  return out;
}

std::vector<KernelSpec> PipelinedMatVecs() {
  // The streamed cases with their loads pipelined instead, then what
  // streaming cannot run: chunks restaged in the K loop (no stage_all: one
  // row tile, barriers around every item).
  std::vector<KernelSpec> out;
  int k = 0;
  for (const WorkItemCase& c : WorkItemCases()) {
    KernelSpec st = WorkItemSpec("mvpl", k++, "", c);
    st.matvec.pipeline_loads = true;
    out.push_back(st);
  }
  const WorkItemCase more[] = {
      {WeightFormat::kQ4_K, Prologue::kRmsNorm, Epilogue::kSiluMulPairs, 1, 128, 16, 4, 1, 4, 0, 1, true, 24576, 4096},
      {WeightFormat::kQ8_0Planar, Prologue::kRmsNorm, Epilogue::kStore, 3, 64, 4, 1, 1, 1, 0, 1, false, 259, 4096},
      {WeightFormat::kQ4_K, Prologue::kRmsNorm, Epilogue::kSiluMulWith, 2, 64, 4, 1, 1, 1, 0, 1, true, 259, 8192},
      {WeightFormat::kF16, Prologue::kNone, Epilogue::kStore, 1, 64, 4, 2, 2, 1, 0, 1, false, 300, 2048},
      // Blocks of 6, 10 and 12 warps (a warp per row group, as the wide
      // Qwen3-8B schedules), the last block partly past the rows.
      {WeightFormat::kQ4_K, Prologue::kRmsNorm, Epilogue::kSiluMulPairs, 1, 192, 24, 6, 1, 4, 0, 1, true, 300, 4096},
      {WeightFormat::kQ4_K, Prologue::kRmsNorm, Epilogue::kStore, 2, 384, 48, 12, 1, 1, 0, 1, true, 259, 4096},
      {WeightFormat::kQ8_0Planar, Prologue::kRmsNorm, Epilogue::kStore, 1, 320, 40, 10, 1, 2, 0, 1, false, 259, 2048},
  };
  for (const WorkItemCase& c : more) {
    KernelSpec st = WorkItemSpec("mvpl", k++, "", c);
    st.matvec.pipeline_loads = true;
    st.matvec.stage_all = c.row_tiles > 1;
    out.push_back(st);
  }
  // Every case also with pipeline_rows (the next item's loads row by row),
  // every other one of those with registers capped for 2 blocks an SM.
  const size_t whole = out.size();
  for (size_t i = 0; i < whole; ++i) {
    KernelSpec rows = out[i];
    rows.name = absl::StrCat(out[i].name, "_rows");
    rows.matvec.pipeline_rows = true;
    const int cap = MaxRegistersPerThread(rows.matvec.threads, 2);
    if (i % 2 == 1 && cap < 255 && cap >= 128) rows.matvec.blocks_per_sm = 2;
    out.push_back(rows);
  }
  return out;
}

std::vector<KernelSpec> MatVecJoins() {
  auto join = [](const std::string& name, std::vector<KernelSpec> parts) {
    KernelSpec j;
    j.name = name;
    j.family = Family::kMatVecJoin;
    j.parts = std::move(parts);
    return j;
  };
  auto schedule = [](KernelSpec s, int threads, int rows, int groups, int unroll, bool int8) {
    s.matvec.threads = threads;
    s.matvec.rows_per_block = rows;
    s.matvec.row_groups = groups;
    s.matvec.unroll = unroll;
    s.matvec.stage_all = true;
    s.matvec.int8_activations = int8;
    return s;
  };
  std::vector<KernelSpec> out;
  // Qwen3-8B Q4_K_M's split layers: the Q4_K q/k and the planar Q6_K v
  // projections on sm_90's tuned schedules (schedules/sm_90.txtpb).
  KernelSpec v8b = schedule(MatVec("", WeightFormat::kQ6_KPlanar, 1024, 4096, Prologue::kRmsNorm), 256, 8, 4, 1,
                            false);
  v8b.matvec.pipeline_loads = v8b.matvec.pipeline_rows = true;
  out.push_back(join("mvjoin_8b_qkv",
                     {schedule(MatVec("", WeightFormat::kQ4_K, 5120, 4096, Prologue::kRmsNorm), 256, 24, 4, 2, true),
                      v8b}));
  // The tiny model's shapes, the last block of each part partly past its rows.
  out.push_back(join("mvjoin_tiny_qkv",
                     {schedule(MatVec("", WeightFormat::kQ4_K, 388, 256, Prologue::kRmsNorm), 128, 8, 2, 1, true),
                      schedule(MatVec("", WeightFormat::kQ6_K, 132, 256, Prologue::kRmsNorm), 128, 8, 2, 1, false)}));
  // Three parts: a streamed planar Q6_K between planar Q8_0 and F16, the
  // larger static and dynamic shared memory in different parts.
  KernelSpec streamed = schedule(MatVec("", WeightFormat::kQ6_KPlanar, 260, 2048, Prologue::kRmsNorm), 128, 8, 4, 1,
                                 true);
  streamed.matvec.stream_stages = 3;
  out.push_back(join("mvjoin_three",
                     {schedule(MatVec("", WeightFormat::kQ8_0Planar, 300, 2048, Prologue::kRmsNorm), 128, 4, 2, 2,
                               true),
                      streamed,
                      schedule(MatVec("", WeightFormat::kF16, 100, 2048, Prologue::kRmsNorm), 128, 4, 4, 1, false)}));
  return out;
}

std::vector<KernelSpec> WarpReduceMatVecs() {
  std::vector<KernelSpec> out;
  const Target sm90 = *Target::FromName("sm_90");
  int k = 0;
  for (const WorkItemCase& c : WorkItemCases()) {
    KernelSpec st = WorkItemSpec("mvwr", k++, "", c);
    st.matvec.warp_reduce = true;
    if (ValidateKernelSpec(st, sm90).ok()) out.push_back(st);
  }
  for (KernelSpec st : PipelinedMatVecs()) {
    st.name = absl::StrCat("wr_", st.name);
    st.matvec.warp_reduce = true;
    if (ValidateKernelSpec(st, sm90).ok()) out.push_back(st);
  }
  return out;
}

std::vector<LayerMatrix> Qwen3_8BLayerMatrices() {
  return {{"qkv", 6144, 4096, Prologue::kRmsNorm, Epilogue::kStore},
          {"out", 4096, 4096, Prologue::kNone, Epilogue::kAddInPlace},
          {"gateup", 24576, 4096, Prologue::kRmsNorm, Epilogue::kSiluMulPairs},
          {"down", 4096, 12288, Prologue::kNone, Epilogue::kAddInPlace}};
}

void UseTwoStages(KernelSpec& s) {
  s.gemm.stages = 2;
  s.gemm.tile_k = std::max(32, GetFormatGeometry(s.weight).window);
  if (PlanGemm(s).prefetch_regs > kMaxGemmPrefetchRegisters) s.gemm.threads = 256;
}

std::vector<KernelSpec> GemmMatrix() {
  std::vector<KernelSpec> out;
  int k = 0;
  for (WeightFormat f : AllFormats()) {
    for (Prologue p : {Prologue::kNone, Prologue::kRmsNorm}) {
      for (Epilogue e : {Epilogue::kStore, Epilogue::kAddInPlace, Epilogue::kSiluMulPairs, Epilogue::kSiluMulWith}) {
        bool big = k % 2 == 1;
        Shape sh = ShapeFor(e, big, k / 2);
        KernelSpec s = Gemm(absl::StrCat("gemm_", WeightFormatName(f), "_", ProName(p), "_", EpiName(e), "_", sh.name),
                            f, sh.rows, sh.cols, p, e);
        s.gemm.tensor_cores = k % 5 != 2;
        if (k % 4 == 3) s.programmatic_launch = true;
        if (k % 3 != 1) UseTwoStages(s);
        out.push_back(s);
        ++k;
      }
    }
  }
  return out;
}

std::vector<KernelSpec> OtherKernels() {
  std::vector<KernelSpec> out;
  struct Model {
    const char* name;
    int64_t embd, vocab, heads, kv_heads, head_dim;
  };
  // wide: with an f32 cache its K rows (1 KiB) take the decode attention's
  // key-per-thread score path.
  const Model models[] = {
      {"tiny", 256, 4096, 4, 2, 64}, {"b8", 4096, 151936, 32, 8, 128}, {"wide", 512, 4096, 8, 2, 256}};
  int k = 0;
  for (const Model& m : models) {
    for (WeightFormat f : AllFormats()) {
      if (ScaleRowBytes(f, 256) > 0) continue;  // planar formats: matrices only
      KernelSpec s;
      s.name = absl::StrCat("embed_", WeightFormatName(f), "_", m.name);
      s.family = Family::kEmbed;
      s.weight = f;
      s.rows = m.vocab;
      s.cols = m.embd;
      out.push_back(s);
    }
    for (bool f16 : {true, false}) {
      const char* kv = f16 ? "f16" : "f32";
      KernelSpec base;
      base.n_head = m.heads;
      base.n_head_kv = m.kv_heads;
      base.head_dim = m.head_dim;
      base.kv_f16 = f16;
      base.rope_base = 1000000.0f;
      base.attn_scale = 1.0f / std::sqrt(static_cast<float>(m.head_dim));
      base.programmatic_launch = (k++ % 2) == 0;
      KernelSpec rope = base;
      rope.name = absl::StrCat("rope_", m.name, "_", kv);
      rope.family = Family::kQkNormRopeStore;
      rope.elementwise.threads = static_cast<int>(m.head_dim / 2 < 32 ? 32 : (m.head_dim / 2 + 31) / 32 * 32);
      out.push_back(rope);
      KernelSpec dec = base;
      dec.name = absl::StrCat("attn_decode_", m.name, "_", kv);
      dec.family = Family::kAttentionDecode;
      out.push_back(dec);
      KernelSpec fused = dec;
      fused.name = absl::StrCat("attn_decode_rope_", m.name, "_", kv);
      fused.rope_fused = true;
      out.push_back(fused);
      if (f16) {  // YaRN (factor 8, the ramp over pairs [3, 12], mscale 1.087) in both rope kernels
        const KernelSpec::RopeScaling yarn{0.125f, 1.0f, 3.0f, 12.0f, 1.0871497f};
        KernelSpec rope_yarn = rope;
        rope_yarn.name = absl::StrCat("rope_yarn_", m.name);
        rope_yarn.rope_scaling = yarn;
        out.push_back(rope_yarn);
        KernelSpec fused_yarn = fused;
        fused_yarn.name = absl::StrCat("attn_decode_rope_yarn_", m.name);
        fused_yarn.rope_scaling = yarn;
        out.push_back(fused_yarn);
      }
      KernelSpec pre = base;
      pre.name = absl::StrCat("attn_prefill_", m.name, "_", kv);
      pre.family = Family::kAttentionPrefill;
      out.push_back(pre);
      // K/V tiles in shared memory, tiles of at most 16 KiB each: 16
      // queries a block on 128, 256 and 64 threads (4, 2 and 8 a warp; 8
      // queries on 64 threads where head_dim 256's state would not fit).
      for (int threads : {128, 256, 64}) {
        KernelSpec staged = pre;
        staged.name = absl::StrCat("attn_prefill_staged", threads, "_", m.name, "_", kv);
        staged.attention.stage_keys = true;
        staged.attention.threads = threads;
        staged.attention.query_block = threads == 64 && m.head_dim > 128 ? 8 : 16;
        staged.attention.key_block = static_cast<int>(std::min<int64_t>(64, 16384 / (m.head_dim * (f16 ? 2 : 4))));
        out.push_back(staged);
      }
    }
    KernelSpec am;
    am.name = absl::StrCat("argmax_", m.name);
    am.family = Family::kArgmax;
    am.rows = 1;
    am.cols = m.vocab;
    out.push_back(am);
    KernelSpec pack;
    pack.name = absl::StrCat("pack_q8_0_", m.name);
    pack.family = Family::kPackQ8_0;
    pack.cols = m.embd;
    out.push_back(pack);
    KernelSpec pack6 = pack;
    pack6.name = absl::StrCat("pack_q6_k_", m.name);
    pack6.family = Family::kPackQ6_K;
    out.push_back(pack6);
    KernelSpec copy;
    copy.name = absl::StrCat("copy_rows_", m.name);
    copy.family = Family::kCopyRows;
    copy.row_bytes = WeightRowBytes(WeightFormat::kQ6_K, m.embd);
    out.push_back(copy);
  }
  KernelSpec pack;
  pack.name = "pack_q8_0_b8_down";
  pack.family = Family::kPackQ8_0;
  pack.cols = 12288;
  out.push_back(pack);
  KernelSpec copy;
  copy.name = "copy_rows_b8_q8_0p";
  copy.family = Family::kCopyRows;
  copy.row_bytes = 4096;
  out.push_back(copy);
  return out;
}

KernelSpec DecodeAttention8B(const char* name) {
  KernelSpec d;
  d.name = name;
  d.family = Family::kAttentionDecode;
  d.n_head = 32;
  d.n_head_kv = 8;
  d.head_dim = 128;
  return d;
}

}  // namespace kiln::codegen::testing
