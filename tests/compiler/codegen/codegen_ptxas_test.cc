// Every family x weight format x prologue x epilogue, at the shapes of the
// tiny model and of Qwen3-8B, assembles with ptxas for sm_80, sm_89 and
// sm_90, and neither LLVM (local arrays) nor ptxas (spills) uses local
// memory. One CTest test per target (CMakeLists.txt), so they run in
// parallel. KILN_CODEGEN_VERBOSE=1 prints registers per kernel.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/kernel_validation.h"
#include "compiler/tune/spec_entries.h"
#include "gtest/gtest.h"
#include "schedules/schedules.h"
#include "tests/compiler/codegen/test_specs.h"

namespace kiln::codegen {
namespace {

using testing::Sm;

std::vector<KernelSpec> AllSpecs() {
  std::vector<KernelSpec> all = testing::MatVecMatrix();
  for (KernelSpec& s : testing::GemmMatrix()) all.push_back(s);
  for (KernelSpec& s : testing::OtherKernels()) all.push_back(s);
  for (KernelSpec& s : testing::MatVecJoins()) all.push_back(s);
  return all;
}

// Assembles everything for one target: ptxas accepts it, and neither LLVM
// (local arrays) nor ptxas (spills) puts anything in local memory.
void CheckPtxas(const std::vector<KernelSpec>& specs, const Target& target) {
  if (!FindPtxas()) GTEST_SKIP() << "ptxas not installed";
  absl::StatusOr<CompiledModule> m = EmitPtx(specs, target);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(absl::StrContains(m->ptx, "__local_depot"));
  EXPECT_FALSE(absl::StrContains(m->ptx, "ld.local"));
  EXPECT_FALSE(absl::StrContains(m->ptx, "st.local"));
  PtxasReport report;
  absl::StatusOr<std::string> cubin = RunPtxas(m->ptx, target, &report);
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  EXPECT_GT(cubin->size(), 0u);
  for (const KernelSpec& s : specs) {
    const PtxasKernelInfo* k = report.Find(s.name);
    ASSERT_NE(k, nullptr) << s.name;
    EXPECT_EQ(k->stack_frame, 0) << s.name;
    EXPECT_EQ(k->spill_stores, 0) << s.name;
    EXPECT_EQ(k->spill_loads, 0) << s.name;
    EXPECT_GT(k->registers, 0) << s.name;
    if (std::getenv("KILN_CODEGEN_VERBOSE") != nullptr)
      std::printf("%-44s %-6s regs %3d smem %6ld\n", s.name.c_str(), target.Name().c_str(), k->registers,
                  static_cast<long>(k->shared));
  }
}

// A matvec join's block runs one part, so it needs about the registers of
// its hungriest part: ptxas counts a function's largest need over its
// paths, and this fails if the join's code made one part's path hungrier
// than that part alone (LLVM hoisting or sharing values across the parts'
// branches). On the 8B q/k + v join ptxas took 125 registers where the q/k
// part alone takes 143 (2 blocks an SM instead of 1): the join's code is
// not the parts' standalone code, and only the GPU can say which is faster.
TEST(CodegenPtxas, MatVecJoinTakesTheRegistersOfItsLargestPartSm90) {
  if (!FindPtxas()) GTEST_SKIP() << "ptxas not installed";
  std::vector<KernelSpec> specs = testing::MatVecJoins();
  const size_t joins = specs.size();
  for (size_t j = 0; j < joins; ++j)
    for (size_t i = 0; i < specs[j].parts.size(); ++i) specs.push_back(JoinPart(specs[j], i));
  absl::StatusOr<CompiledModule> m = EmitPtx(specs, Sm(90));
  ASSERT_TRUE(m.ok()) << m.status();
  PtxasReport report;
  ASSERT_TRUE(RunPtxas(m->ptx, Sm(90), &report).ok());
  for (size_t j = 0; j < joins; ++j) {
    const PtxasKernelInfo* join = report.Find(specs[j].name);
    ASSERT_NE(join, nullptr);
    int largest = 0;
    for (size_t i = 0; i < specs[j].parts.size(); ++i) {
      const PtxasKernelInfo* part = report.Find(JoinPart(specs[j], i).name);
      ASSERT_NE(part, nullptr);
      largest = std::max(largest, part->registers);
    }
    std::printf("%s: %d registers, its largest part alone %d\n", specs[j].name.c_str(), join->registers, largest);
    EXPECT_LE(join->registers, largest + 8) << specs[j].name;
    EXPECT_EQ(join->spill_stores, 0) << specs[j].name;
  }
}

// ptxas runs are the slow part: CTest runs each target as its own test
// (tests/compiler/codegen/CMakeLists.txt), so they go in parallel.
TEST(CodegenPtxas, AllKernelsSm80) { CheckPtxas(AllSpecs(), Sm(80)); }
TEST(CodegenPtxas, AllKernelsSm89) { CheckPtxas(AllSpecs(), Sm(89)); }
TEST(CodegenPtxas, AllKernelsSm90) { CheckPtxas(AllSpecs(), Sm(90)); }
// The row groups that reduce in their own warp (warp_reduce), pipelined or
// not: ptxas takes them, nothing spills.
TEST(CodegenPtxas, WarpReduceSm90) { CheckPtxas(testing::WarpReduceMatVecs(), Sm(90)); }
TEST(CodegenPtxas, SchedulesOffDefaultSm90) {
  std::vector<KernelSpec> specs;
  for (WeightFormat f : testing::AllFormats()) {
    KernelSpec a = testing::MatVec(absl::StrCat("rg_", WeightFormatName(f)), f, 4096, 4096, Prologue::kRmsNorm);
    a.matvec.threads = 128;
    a.matvec.rows_per_block = 8;
    a.matvec.row_groups = 2;
    a.matvec.unroll = 1;
    specs.push_back(a);
    KernelSpec b = testing::MatVec(absl::StrCat("ks_", WeightFormatName(f)), f, 4096, 12288, Prologue::kNone,
                                   Epilogue::kAddInPlace);
    b.matvec.k_split = 3;
    b.matvec.unroll = 4;
    specs.push_back(b);
    if (GetFormatGeometry(f).block_elems > 1) {
      KernelSpec i8 = a;
      i8.name = absl::StrCat("i8_", WeightFormatName(f));
      i8.matvec.int8_activations = true;
      i8.matvec.stage_all = true;
      specs.push_back(i8);
    }
    if (StreamableFormat(f)) {  // weights streamed through shared memory
      KernelSpec st = a;
      st.name = absl::StrCat("st_", WeightFormatName(f));
      st.matvec.stage_all = true;
      st.matvec.row_tiles = 4;
      st.matvec.stream_stages = 3;
      st.matvec.int8_activations = GetFormatGeometry(f).block_elems > 1;
      specs.push_back(st);
    }
    KernelSpec c = testing::Gemm(absl::StrCat("g128_", WeightFormatName(f)), f, 6144, 4096, Prologue::kRmsNorm);
    c.gemm.tile_m = 128;
    c.gemm.tile_n = 32;
    c.gemm.tile_k = 256;
    c.gemm.threads = 256;
    specs.push_back(c);
  }
  for (const KernelSpec& st : testing::StreamedMatVecs()) specs.push_back(st);
  KernelSpec d;
  d.name = "dec_g8_d128";  // Qwen3-32B: 64 query heads on 8 KV heads
  d.family = Family::kAttentionDecode;
  d.n_head = 64;
  d.n_head_kv = 8;
  d.head_dim = 128;
  d.attention.threads = 256;
  d.attention.split_positions = 128;
  specs.push_back(d);
  CheckPtxas(specs, Sm(90));
}


// The Qwen3-8B decode matvecs with the schedules the built-in sm_90 table
// gives them (schedules/sm_90.txtpb, tuned on an H200), looked up as the
// compiler looks them up: no spills on sm_90; registers printed.
TEST(CodegenPtxas, Qwen3_8B_DecodeMatVecsSm90) {
  struct Row {
    WeightFormat f;
    const char* shape;
    int64_t rows, cols;
    Prologue pro;
    Epilogue epi;
  };
  const Row table[] = {
      {WeightFormat::kQ8_0Planar, "qkv", 6144, 4096, Prologue::kRmsNorm, Epilogue::kStore},
      {WeightFormat::kQ8_0Planar, "gateup", 24576, 4096, Prologue::kRmsNorm, Epilogue::kSiluMulPairs},
      {WeightFormat::kQ8_0Planar, "down", 4096, 12288, Prologue::kNone, Epilogue::kAddInPlace},
      {WeightFormat::kQ8_0Planar, "out", 4096, 4096, Prologue::kNone, Epilogue::kAddInPlace},
      {WeightFormat::kQ8_0Planar, "head", 151936, 4096, Prologue::kRmsNorm, Epilogue::kStore},
      {WeightFormat::kQ4_K, "qkv", 6144, 4096, Prologue::kRmsNorm, Epilogue::kStore},
      {WeightFormat::kQ4_K, "qk", 5120, 4096, Prologue::kRmsNorm, Epilogue::kStore},
      {WeightFormat::kQ4_K, "gateup", 24576, 4096, Prologue::kRmsNorm, Epilogue::kSiluMulPairs},
      {WeightFormat::kQ4_K, "down", 4096, 12288, Prologue::kNone, Epilogue::kAddInPlace},
      {WeightFormat::kQ4_K, "out", 4096, 4096, Prologue::kNone, Epilogue::kAddInPlace},
      // Q4_K_M's Q6_K matrices, kept planar: its V, down and head.
      {WeightFormat::kQ6_KPlanar, "v", 1024, 4096, Prologue::kRmsNorm, Epilogue::kStore},
      {WeightFormat::kQ6_KPlanar, "down", 4096, 12288, Prologue::kNone, Epilogue::kAddInPlace},
      {WeightFormat::kQ6_KPlanar, "head", 151936, 4096, Prologue::kRmsNorm, Epilogue::kStore},
      // The stored GGUF Q6_K blocks (a tied embedding's table), keyed
      // "q6_k_blocks": the catch-alls, never the planar kernels' entries.
      {WeightFormat::kQ6_K, "qkv", 6144, 4096, Prologue::kRmsNorm, Epilogue::kStore},
      {WeightFormat::kQ6_K, "head", 151936, 4096, Prologue::kRmsNorm, Epilogue::kStore},
  };
  absl::StatusOr<schedules::ScheduleLibrary> lib = schedules::ScheduleLibrary::Builtin();
  ASSERT_TRUE(lib.ok()) << lib.status();
  int tuned = 0;  // rows with a TUNED entry of exactly their shape
  std::vector<KernelSpec> specs;
  int flipped = 0;  // pipeline_loads flipped and still valid
  int by_rows = 0;  // pipeline_rows valid
  std::vector<std::string> streamed_rows;  // format_shape of the valid streamed variants
  for (const Row& r : table) {
    // The tuned schedule also with its weights streamed through shared
    // memory, 3 stages (direct formats), with pipeline_loads flipped, and
    // pipelined row by row (pipeline_rows).
    for (const char* variant : {"default", "tuned", "streamed", "pipelined", "rows"}) {
      const bool streamed = std::string(variant) == "streamed";
      const bool pipelined = std::string(variant) == "pipelined";
      const bool rows = std::string(variant) == "rows";
      if (streamed && !StreamableFormat(r.f)) continue;
      KernelSpec s = testing::MatVec(absl::StrCat("b8_", WeightFormatName(r.f), "_", r.shape, "_", variant), r.f,
                                     r.rows, r.cols, r.pro, r.epi);
      if (std::string(variant) != "default") {
        absl::StatusOr<schedules::ScheduleChoice> c =
            lib->Lookup({"matvec", tune::TableDtype(r.f), r.rows, r.cols}, "sm_90");
        ASSERT_TRUE(c.ok()) << c.status();
        ASSERT_FALSE(c->fallback) << s.name;
        ASSERT_TRUE(tune::ApplyEntry(c->entry, &s).ok()) << s.name;
        const bool exact = c->entry.min_rows() == r.rows && c->entry.max_rows() == r.rows &&
                           c->entry.min_cols() == r.cols && c->entry.max_cols() == r.cols;
        tuned += std::string(variant) == "tuned" && exact && c->provenance.source() == schedules::Provenance::TUNED;
      }
      if (pipelined || rows) {  // register paths
        s.matvec.stream_stages = 0;
        s.matvec.release_early = false;
      }
      if (pipelined) {
        s.matvec.pipeline_loads = !s.matvec.pipeline_loads;
        s.matvec.pipeline_rows = false;
      }
      if (rows) s.matvec.pipeline_loads = s.matvec.pipeline_rows = true;
      if (streamed) {  // in place of the tuned entry's pipelined loads, if any
        s.matvec.pipeline_loads = s.matvec.pipeline_rows = false;
        s.matvec.stage_all = true;
        s.matvec.stream_stages = 3;
        s.matvec.int8_activations = r.f == WeightFormat::kQ4_K;
      }
      s.programmatic_launch = true;
      // The variants of a wide schedule may not fit (shared memory, whole
      // chunks); the shipped ones must.
      if (std::string(variant) != "tuned" && !ValidateKernelSpec(s, Sm(90)).ok()) continue;
      flipped += pipelined;
      by_rows += rows;
      if (streamed) streamed_rows.push_back(absl::StrCat(WeightFormatName(r.f), "_", r.shape));
      specs.push_back(s);
    }
  }
  EXPECT_EQ(tuned, 13);   // all but the stored Q6_K blocks' two
  EXPECT_GE(flipped, 8);  // 9 of the 15 rows at session 9's table
  EXPECT_GE(by_rows, 8);
  // Streamed with the tuned schedules' shapes: every planar Q8_0 shape but
  // the output projection, the Q4_K QKV, gate/up and down, and (since
  // planar Q6_K streams) the Q6_K V and down projections.
  for (const char* want : {"q6_kp_v", "q6_kp_down", "q4_k_down", "q8_0p_gateup"})
    EXPECT_NE(std::find(streamed_rows.begin(), streamed_rows.end(), want), streamed_rows.end()) << want;
  CheckPtxas(specs, Sm(90));
}

// Decode attention over its tuning space (schedules/spaces.txtpb: threads x
// max_splits x blocks_per_sm, split_positions covering Qwen3's 40960
// positions as the tuner sets it) at the Qwen3-8B shape, f16 and f32
// caches: no spills anywhere the tuner may land, the shipped 256-thread
// entry capped for 2 blocks an SM included. Schedules the ABI rejects (over
// 48 KiB of shared memory, a cap that caps nothing) are skipped, as the
// tuner skips them.
TEST(CodegenPtxas, AttentionDecodeSpaceSm90) {
  const Target target = Sm(90);
  std::vector<KernelSpec> specs;
  for (bool f16 : {true, false})
    for (int threads : {64, 128, 256})
      for (int max_splits : {16, 32, 64, 128})
        for (int blocks : {1, 2}) {
          KernelSpec d;
          d.name = absl::StrCat("dec_b8_", f16 ? "f16" : "f32", "_t", threads, "_s", max_splits, "_b", blocks);
          d.family = Family::kAttentionDecode;
          d.n_head = 32;
          d.n_head_kv = 8;
          d.head_dim = 128;
          d.kv_f16 = f16;
          d.programmatic_launch = true;
          d.attention.threads = threads;
          d.attention.max_splits = max_splits;
          d.attention.split_positions = (40960 / max_splits + 31) / 32 * 32;
          d.attention.blocks_per_sm = blocks;
          if (ValidateKernelSpec(d, target).ok()) specs.push_back(d);
          // Twice the loads in flight (keys_in_flight, value_bytes_in_flight)
          // where no register cap binds: the short-context variants.
          if (blocks == 1 && (max_splits == 32 || max_splits == 64)) {
            d.name += "_k8v128";
            d.attention.keys_in_flight = 8;
            d.attention.value_bytes_in_flight = 128;
            if (ValidateKernelSpec(d, target).ok()) specs.push_back(d);
          }
        }
  // The shipped 8B entry's shape (256 threads, 32 splits, capped for 2
  // blocks an SM) as the decode graph runs it, with q/k-norm + RoPE + the
  // KV store fused, and one of the two doubled alone: each fits the cap
  // without spills (both together spill; bench/logs/2026-12-05-s22's
  // attention call times them).
  for (bool keys : {true, false}) {
    KernelSpec d;
    d.name = keys ? "dec_b8_shipped_rope_k8" : "dec_b8_shipped_rope_v128";
    d.family = Family::kAttentionDecode;
    d.n_head = 32;
    d.n_head_kv = 8;
    d.head_dim = 128;
    d.kv_f16 = true;
    d.rope_fused = true;
    d.rope_base = 1000000.0f;
    d.programmatic_launch = true;
    d.attention.threads = 256;
    d.attention.max_splits = 32;
    d.attention.split_positions = 1280;
    d.attention.blocks_per_sm = 2;
    (keys ? d.attention.keys_in_flight : d.attention.value_bytes_in_flight) *= 2;
    ASSERT_TRUE(ValidateKernelSpec(d, target).ok()) << d.name;
    specs.push_back(d);
  }
  EXPECT_GE(specs.size(), 36u);
  CheckPtxas(specs, target);
}

// The Qwen3-8B prefill GEMMs on the sm_90 table's 128 x 128 tiles, one and
// two stages, k tiles of the format's smallest (32 or its window) and twice
// that, where the ABI allows them (256-deep q6_k tiles hold too much for two
// stages): no spills. The shipped entries are among them.
TEST(CodegenPtxas, Qwen3_8B_PrefillGemmsSm90) {
  std::vector<KernelSpec> specs;
  for (WeightFormat f : {WeightFormat::kQ8_0Planar, WeightFormat::kQ4_K, WeightFormat::kQ6_KPlanar}) {
    const int k0 = std::max(32, GetFormatGeometry(f).window);
    for (const testing::LayerMatrix& sh : testing::Qwen3_8BLayerMatrices())
      for (int tile_k : {k0, 2 * k0})
        for (int stages : {1, 2}) {
          KernelSpec g = testing::Gemm(absl::StrCat("g8b_", WeightFormatName(f), "_", sh.name, "_k", tile_k, "_s", stages),
                                       f, sh.rows, sh.cols, sh.pro, sh.epi);
          g.programmatic_launch = true;
          g.gemm.tile_m = 128;
          g.gemm.tile_n = 128;
          g.gemm.tile_k = tile_k;
          g.gemm.threads = 256;
          g.gemm.stages = stages;
          if (!ValidateKernelSpec(g, Sm(90)).ok()) {
            EXPECT_EQ(stages, 2) << g.name;  // only the two-stage share limit refuses
            continue;
          }
          specs.push_back(g);
        }
  }
  for (const char* shipped : {"g8b_q8_0p_gateup_k64_s2", "g8b_q4_k_gateup_k128_s2", "g8b_q6_kp_down_k128_s2"})
    EXPECT_TRUE(std::any_of(specs.begin(), specs.end(), [&](const KernelSpec& s) { return s.name == shipped; }))
        << shipped;
  CheckPtxas(specs, Sm(90));
}
}  // namespace
}  // namespace kiln::codegen

namespace kiln::codegen {
namespace {
// Dev helper: KILN_CODEGEN_DUMP=dir KILN_CODEGEN_DUMP_SM=80 dumps every kernel.
TEST(CodegenDev, Dump) {
  const char* dir = std::getenv("KILN_CODEGEN_DUMP");
  if (dir == nullptr) GTEST_SKIP();
  const char* sm = std::getenv("KILN_CODEGEN_DUMP_SM");
  EmitOptions o;
  o.dump_dir = dir;
  std::vector<KernelSpec> specs = AllSpecs();
  if (sm == nullptr || std::atoi(sm) == 90)
    for (const KernelSpec& s : testing::StreamedMatVecs()) specs.push_back(s);
  for (const KernelSpec& s : testing::PipelinedMatVecs()) specs.push_back(s);
  absl::StatusOr<CompiledModule> m = EmitPtx(specs, Sm(sm ? std::atoi(sm) : 90), o);
  ASSERT_TRUE(m.ok()) << m.status();
}
}  // namespace
}  // namespace kiln::codegen
