// GPU numerics of the emitted matvecs (every format, int8 activations, row
// tiles, the 8B shapes, joins) and GEMMs against the reference kernels, on
// fresh random inputs with poisoned outputs (CTest label `gpu`; skipped
// where no GPU is visible); the Qwen3-8B decode matvecs timed against the
// device's read bandwidth (printed, not asserted).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/kernel_validation.h"
#include "compiler/codegen/reference_kernels.h"
#include "gtest/gtest.h"
#include "models/quant/float16.h"
#include "tests/compiler/codegen/gpu_harness.h"
#include "tests/compiler/codegen/test_specs.h"

namespace kiln::codegen {
namespace {

const char* Pro(Prologue p) { return p == Prologue::kNone ? "x" : "rms"; }

const char* Epi(Epilogue e) {
  return e == Epilogue::kStore ? "store" : e == Epilogue::kAddInPlace ? "add" : e == Epilogue::kSiluMulPairs ? "silu" : "siluwith";
}

TEST(CodegenGpu, MatVecAllFormatsTiny) {
  REQUIRE_GPU();
  std::vector<KernelSpec> specs;
  for (WeightFormat f : testing::AllFormats())
    for (Prologue p : {Prologue::kNone, Prologue::kRmsNorm})
      for (Epilogue e : {Epilogue::kStore, Epilogue::kAddInPlace, Epilogue::kSiluMulPairs, Epilogue::kSiluMulWith}) {
        int64_t rows = e == Epilogue::kSiluMulPairs ? 1536 : 512, cols = e == Epilogue::kAddInPlace ? 768 : 256;
        KernelSpec s = testing::MatVec(absl::StrCat("mv_", WeightFormatName(f), "_", Pro(p), "_", Epi(e)), f, rows,
                                       cols, p, e, 4);
        s.programmatic_launch = true;
        specs.push_back(s);
      }
  // Schedules off the defaults: row groups, k split, rows not a multiple.
  KernelSpec rg = testing::MatVec("mv_q4_k_rowgroups", WeightFormat::kQ4_K, 300, 512);
  rg.matvec.rows_per_block = 4;
  rg.matvec.row_groups = 4;
  rg.matvec.threads = 128;
  specs.push_back(rg);
  KernelSpec ks = testing::MatVec("mv_q6_k_ksplit", WeightFormat::kQ6_K, 100, 1024, Prologue::kNone,
                                  Epilogue::kAddInPlace);
  ks.matvec.k_split = 2;
  specs.push_back(ks);
  KernelSpec ksp = ks;
  ksp.name = "mv_q6_kp_ksplit";
  ksp.weight = WeightFormat::kQ6_KPlanar;
  specs.push_back(ksp);
  KernelSpec odd = testing::MatVec("mv_q8_0p_oddrows", WeightFormat::kQ8_0Planar, 257, 2048, Prologue::kRmsNorm);
  odd.matvec.unroll = 3;
  specs.push_back(odd);
  // The whole activation row staged once (no barriers in the K loop), with
  // RMSNorm, a tail, a k split, and a staged GGUF format.
  for (WeightFormat f : {WeightFormat::kQ8_0Planar, WeightFormat::kQ4_K, WeightFormat::kQ6_K, WeightFormat::kQ4_0,
                         WeightFormat::kQ6_KPlanar}) {
    KernelSpec sa = testing::MatVec(absl::StrCat("mv_", WeightFormatName(f), "_stageall"), f, 259, 2304,
                                    Prologue::kRmsNorm, Epilogue::kStore, 4);
    sa.matvec.stage_all = true;
    sa.matvec.threads = 128;
    specs.push_back(sa);
  }
  KernelSpec sak = testing::MatVec("mv_q8_0p_stageall_ksplit", WeightFormat::kQ8_0Planar, 100, 4096,
                                   Prologue::kNone, Epilogue::kAddInPlace);
  sak.matvec.stage_all = true;
  sak.matvec.k_split = 2;
  specs.push_back(sak);
  Loaded l = Load(gpu, specs);
  uint32_t seed = 1;
  for (const KernelSpec& s : specs) {
    for (int32_t T : {1, s.matvec.max_tokens}) {
      double err = CheckMatrixKernel(gpu, l, s, T, seed++);
      EXPECT_LT(err, 1e-4) << s.name << " T=" << T;
      std::printf("%-32s T=%d rel err %.2e\n", s.name.c_str(), T, err);
    }
  }
}

// int8 activations (dp4a): every quantized format against the reference's
// identical activation quantization; both prologues, every epilogue, one and
// four tokens, chunked (with a tail) and whole-row staging, a k split.
TEST(CodegenGpu, MatVecInt8ActivationsAndRowTiles) {
  REQUIRE_GPU();
  std::vector<KernelSpec> specs;
  int k = 0;
  for (WeightFormat f : testing::AllFormats()) {
    if (GetFormatGeometry(f).block_elems == 1) continue;
    for (Epilogue e : {Epilogue::kStore, Epilogue::kAddInPlace, Epilogue::kSiluMulPairs, Epilogue::kSiluMulWith})
      for (bool stage_all : {false, true}) {
        Prologue p = (k++ % 2) ? Prologue::kRmsNorm : Prologue::kNone;
        int64_t rows = e == Epilogue::kSiluMulPairs ? 1536 : 300, cols = e == Epilogue::kAddInPlace ? 2304 : 512;
        KernelSpec s = testing::MatVec(absl::StrCat("mv8_", WeightFormatName(f), "_", Pro(p), "_", Epi(e), "_",
                                                    stage_all ? "all" : "chunk"),
                                       f, rows, cols, p, e, 4);
        s.matvec.int8_activations = true;
        s.matvec.stage_all = stage_all;
        s.matvec.threads = 128;
        s.programmatic_launch = true;
        specs.push_back(s);
      }
  }
  KernelSpec ks = testing::MatVec("mv8_q4_k_ksplit", WeightFormat::kQ4_K, 100, 4096, Prologue::kNone,
                                  Epilogue::kAddInPlace);
  ks.matvec.k_split = 2;
  ks.matvec.int8_activations = true;
  specs.push_back(ks);
  KernelSpec rg = testing::MatVec("mv8_q6_k_rowgroups", WeightFormat::kQ6_K, 259, 4096, Prologue::kRmsNorm);
  rg.matvec.rows_per_block = 8;
  rg.matvec.row_groups = 4;
  rg.matvec.unroll = 3;
  rg.matvec.int8_activations = true;
  specs.push_back(rg);
  // Several row tiles per block, the last block's partly or wholly past the
  // rows (259 rows = 8 blocks of 4 tiles of 8 rows, minus 5), float and int8.
  for (WeightFormat f : {WeightFormat::kQ8_0Planar, WeightFormat::kQ4_K, WeightFormat::kQ6_K, WeightFormat::kQ6_KPlanar})
    for (bool int8 : {false, true})
      for (Epilogue e : {Epilogue::kStore, Epilogue::kSiluMulPairs}) {
        KernelSpec rt = testing::MatVec(absl::StrCat("mvrt_", WeightFormatName(f), int8 ? "_i8_" : "_f_", Epi(e)), f,
                                        e == Epilogue::kSiluMulPairs ? 264 : 259, 1024, Prologue::kRmsNorm, e, 2);
        rt.matvec.rows_per_block = 8;
        rt.matvec.row_tiles = 4;
        rt.matvec.stage_all = true;
        rt.matvec.threads = 64;
        rt.matvec.unroll = 1;
        rt.matvec.int8_activations = int8;
        rt.programmatic_launch = true;
        specs.push_back(rt);
      }
  for (const KernelSpec& st : testing::StreamedMatVecs()) specs.push_back(st);
  for (const KernelSpec& st : testing::PipelinedMatVecs()) specs.push_back(st);
  for (const KernelSpec& st : testing::WarpReduceMatVecs()) specs.push_back(st);
  Loaded l = Load(gpu, specs);
  uint32_t seed = 300;
  for (const KernelSpec& s : specs) {
    for (int32_t T : {1, s.matvec.max_tokens}) {
      double err = CheckMatrixKernel(gpu, l, s, T, seed++);
      EXPECT_LT(err, 1e-4) << s.name << " T=" << T;
      std::printf("%-32s T=%d rel err %.2e\n", s.name.c_str(), T, err);
    }
  }
}

TEST(CodegenGpu, MatVec8B) {
  REQUIRE_GPU();
  std::vector<KernelSpec> specs;
  for (WeightFormat f : {WeightFormat::kQ8_0Planar, WeightFormat::kQ4_K, WeightFormat::kQ6_K, WeightFormat::kQ5_K,
                         WeightFormat::kQ6_KPlanar}) {
    specs.push_back(testing::MatVec(absl::StrCat("mv8b_qkv_", WeightFormatName(f)), f, 6144, 4096,
                                    Prologue::kRmsNorm, Epilogue::kStore));
    specs.push_back(testing::MatVec(absl::StrCat("mv8b_down_", WeightFormatName(f)), f, 4096, 12288,
                                    Prologue::kNone, Epilogue::kAddInPlace));
  }
  Loaded l = Load(gpu, specs);
  uint32_t seed = 100;
  for (const KernelSpec& s : specs) {
    double err = CheckMatrixKernel(gpu, l, s, 1, seed++);
    EXPECT_LT(err, 1e-4) << s.name;
    std::printf("%-32s rel err %.2e\n", s.name.c_str(), err);
  }
}

// Matvec joins (testing::MatVecJoins, with and without programmatic
// launch): one launch computes every part, as the decode's joined q/k/v
// projections do: one input row and RMSNorm weight for all parts, each
// writing its rows of one poisoned output (the qkv scratch). Each part's
// rows against the reference matvec of that part alone; rows past the
// parts' must stay poisoned.
TEST(CodegenGpu, MatVecJoins) {
  REQUIRE_GPU();
  std::vector<KernelSpec> specs;
  for (bool pdl : {false, true})
    for (KernelSpec j : testing::MatVecJoins()) {
      j.name += pdl ? "_pdl" : "";
      j.programmatic_launch = pdl;
      specs.push_back(j);
    }
  Loaded l = Load(gpu, specs);
  std::mt19937 rng(77);
  for (const KernelSpec& j : specs) {
    Buffers bufs(gpu);
    const int64_t cols = j.parts[0].cols;
    std::vector<float> x = RandomFloats(rng, cols);
    std::vector<float> nw = RandomFloats(rng, cols, 0.5f, 1.5f);
    CUdeviceptr dx = bufs.Upload(x), dnw = bufs.Upload(nw);
    int64_t rows = 0;
    for (const KernelSpec& p : j.parts) rows += p.rows;
    const int64_t kSlack = 64;  // poisoned floats past the last part's rows
    CUdeviceptr dout = bufs.Poisoned((rows + kSlack) * 4);
    std::vector<Arg> args;
    std::vector<std::vector<uint8_t>> w(j.parts.size()), ws(j.parts.size());
    int64_t row0 = 0;
    for (size_t i = 0; i < j.parts.size(); ++i) {
      const KernelSpec& p = j.parts[i];
      ASSERT_EQ(p.cols, cols);
      RandomWeights(rng, p.weight, p.rows, p.cols, &w[i], &ws[i]);
      const CUdeviceptr dw = bufs.Upload(w[i]), dws = ws[i].empty() ? 0 : bufs.Upload(ws[i]);
      for (Arg a : {P(dw), P(dws), P(dx), P(dnw), P(dout + 4 * row0), I(1)}) args.push_back(a);
      row0 += p.rows;
    }
    Launch(gpu, l, j.name, args, 1);
    const std::vector<float> got = bufs.Download<float>(dout, rows + kSlack);
    row0 = 0;
    for (size_t i = 0; i < j.parts.size(); ++i) {
      const KernelSpec p = JoinPart(j, i);
      std::vector<float> want(p.rows);
      absl::Status st = reference::MatVec(p, w[i].data(), ws[i].data(), x.data(), nw.data(), want.data(), 1, nullptr);
      ASSERT_TRUE(st.ok()) << st;
      const std::vector<float> mine(got.begin() + row0, got.begin() + row0 + p.rows);
      const double err = RelErr(mine, want);
      EXPECT_LT(err, 1e-4) << p.name;
      std::printf("%-32s part %zu (%s %lldx%lld) rel err %.2e\n", j.name.c_str(), i, WeightFormatName(p.weight),
                  static_cast<long long>(p.rows), static_cast<long long>(p.cols), err);
      row0 += p.rows;
    }
    for (int64_t r = rows; r < rows + kSlack; ++r) EXPECT_TRUE(std::isnan(got[r])) << j.name << " wrote row " << r;
  }
}

TEST(CodegenGpu, Gemm) {
  REQUIRE_GPU();
  std::vector<KernelSpec> specs;
  int k = 0;
  for (WeightFormat f : testing::AllFormats())
    for (Epilogue e : {Epilogue::kStore, Epilogue::kAddInPlace, Epilogue::kSiluMulPairs, Epilogue::kSiluMulWith}) {
      Prologue p = (k % 2) ? Prologue::kRmsNorm : Prologue::kNone;
      int64_t rows = e == Epilogue::kSiluMulPairs ? 1536 : 320, cols = e == Epilogue::kAddInPlace ? 768 : 256;
      KernelSpec s = testing::Gemm(absl::StrCat("gemm_", WeightFormatName(f), "_", Pro(p), "_", Epi(e)), f, rows,
                                   cols, p, e);
      s.gemm.tensor_cores = (k % 3) != 2;
      s.programmatic_launch = true;
      specs.push_back(s);
      // The same with the next k tile's loads in flight (gemm.stages = 2),
      // and with k tiles twice as deep (every thread decodes a piece, as the
      // sm_90 table has it) where the ABI allows.
      KernelSpec two = s;
      two.name += "_s2";
      testing::UseTwoStages(two);
      specs.push_back(two);
      KernelSpec deep = two;
      deep.name += "_k2";
      deep.gemm.tile_k *= 2;
      deep.gemm.threads = 256;
      if (cols % deep.gemm.tile_k == 0 && ValidateKernelSpec(deep, gpu->target).ok()) specs.push_back(deep);
      ++k;
    }
  Loaded l = Load(gpu, specs);
  uint32_t seed = 200;
  for (const KernelSpec& s : specs) {
    double err = CheckMatrixKernel(gpu, l, s, 70, seed++);
    EXPECT_LT(err, s.gemm.tensor_cores ? 3e-3 : 1e-4) << s.name;
    std::printf("%-32s tc=%d rel err %.2e\n", s.name.c_str(), s.gemm.tensor_cores, err);
  }
}

// Time per launch (T = 1) of a matvec over weight copies rotated through
// 1 GiB so the L2 does not serve them; the median of `samples` batches of
// `iters` launches, after one pass over the copies.
double TimeMatVecUs(Gpu* gpu, const Loaded& l, const KernelSpec& s, int iters, int samples = 1) {
  const int64_t wbytes = WeightRowBytes(s.weight, s.cols) * s.rows;
  const int64_t sbytes = s.rows * ScaleRowBytes(s.weight, s.cols);
  auto copies = tune::CopyWeights(*gpu->ctx, *gpu->stream, 0, wbytes, 0, sbytes, int64_t{1} << 30);
  EXPECT_TRUE(copies.ok()) << copies.status();
  if (!copies.ok()) return 0;
  Buffers bufs(gpu);
  std::vector<float> x(size_t(s.cols), 0.5f), nw(size_t(s.cols), 1.0f), out(size_t(s.rows), 0.0f);
  CUdeviceptr dx = bufs.Upload(x), dnw = bufs.Upload(nw), dout = bufs.Upload(out);
  auto f = l.module->GetFunction(s.name);
  EXPECT_TRUE(f.ok());
  const CompiledKernel* k = nullptr;
  for (const CompiledKernel& c : l.compiled.kernels)
    if (c.name == s.name) k = &c;
  if (!f.ok() || k == nullptr) return 0;
  EXPECT_TRUE(tune::AllowSharedMemory(*gpu->ctx, *f, k->abi).ok());
  const cu::LaunchConfig cfg = tune::LaunchConfigFor(k->abi, true, 1);
  int32_t T = 1;
  CUdeviceptr w = 0, sc = 0;
  void* params[] = {&w, &sc, &dx, &dnw, &dout, &T};
  const int n = copies->count();
  auto t = tune::TimeLaunches(*gpu->ctx, *gpu->stream, *f, cfg,
                              [&](int i) {
                                w = copies->w[size_t(i % n)].ptr();
                                sc = copies->scales[size_t(i % n)].ptr();
                                return static_cast<void**>(params);
                              },
                              n, samples, iters);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? t->median_us : 0;
}

// Decode matvecs of Qwen3-8B: achieved read bandwidth (weights only), over
// enough copies of the weights to defeat the L2.
TEST(CodegenGpu, MatVecBandwidth8B) {
  REQUIRE_GPU();
  std::vector<KernelSpec> specs;
  for (WeightFormat f : {WeightFormat::kQ8_0Planar, WeightFormat::kQ4_K, WeightFormat::kQ6_K})
    for (const testing::LayerMatrix& c : testing::Qwen3_8BLayerMatrices()) {
      KernelSpec s = testing::MatVec(absl::StrCat("bw_", c.name, "_", WeightFormatName(f)), f, c.rows, c.cols, c.pro,
                                     c.epi);
      s.pair_group = c.epi == Epilogue::kSiluMulPairs ? 2 : 0;
      s.programmatic_launch = true;
      specs.push_back(s);
    }
  Loaded l = Load(gpu, specs);
  for (const KernelSpec& s : specs) {
    const int64_t wbytes = WeightRowBytes(s.weight, s.cols) * s.rows;
    const int64_t sbytes = s.rows * ScaleRowBytes(s.weight, s.cols);
    const double us = TimeMatVecUs(gpu, l, s, 200);
    std::printf("%-20s %7.2f us/launch  %6.0f GB/s (weights %.1f MB)\n", s.name.c_str(), us,
                double(wbytes + sbytes) / (us * 1e3), double(wbytes + sbytes) / 1e6);
  }
}

// Schedule sweep for the Qwen3-8B decode matvecs (run with
// --gtest_also_run_disabled_tests): correctness of every candidate on one
// shape, then time per launch and achieved bandwidth.
TEST(CodegenGpu, DISABLED_MatVecScheduleSweep) {
  REQUIRE_GPU();
  struct Sched {
    int threads, rows, groups, unroll;
    bool stage_all = false;
  };
  const Sched scheds[] = {{256, 4, 1, 2},  {64, 4, 1, 1},   {64, 8, 1, 1},   {128, 8, 2, 1},  {128, 16, 2, 1},
                          {128, 8, 4, 2},  {128, 16, 4, 1}, {256, 16, 4, 1}, {256, 8, 4, 2},  {32, 4, 1, 2},
                          {32, 8, 1, 1},   {64, 4, 1, 2},   {128, 4, 1, 2},  {256, 16, 8, 2}, {64, 8, 2, 1},
                          {128, 8, 1, 1, true}, {256, 8, 2, 1, true}, {256, 16, 4, 1, true}, {512, 16, 4, 1, true},
                          {256, 4, 1, 2, true}};
  struct Shape {
    const char* name;
    int64_t rows, cols;
    Prologue pro;
    Epilogue epi;
  };
  const Shape shapes[] = {{"qkv", 6144, 4096, Prologue::kRmsNorm, Epilogue::kStore},
                          {"gateup", 24576, 4096, Prologue::kRmsNorm, Epilogue::kSiluMulPairs},
                          {"down", 4096, 12288, Prologue::kNone, Epilogue::kAddInPlace}};
  const WeightFormat formats[] = {WeightFormat::kQ8_0Planar, WeightFormat::kQ4_K, WeightFormat::kQ6_K};
  std::vector<KernelSpec> specs;
  for (WeightFormat f : formats)
    for (const Shape& sh : shapes)
      for (const Sched& sc : scheds) {
        KernelSpec s = testing::MatVec(absl::StrCat("sw_", WeightFormatName(f), "_", sh.name, "_", sc.threads, "_",
                                                    sc.rows, "_", sc.groups, "_", sc.unroll, sc.stage_all ? "_sa" : ""),
                                       f, sh.rows, sh.cols, sh.pro, sh.epi);
        s.pair_group = sh.epi == Epilogue::kSiluMulPairs ? 2 : 0;
        s.matvec.threads = sc.threads;
        s.matvec.rows_per_block = sc.rows;
        s.matvec.row_groups = sc.groups;
        s.matvec.unroll = sc.unroll;
        s.matvec.stage_all = sc.stage_all;
        s.programmatic_launch = true;
        if (!DescribeKernel(s, gpu->target).ok()) continue;
        const char* filter = std::getenv("KILN_SWEEP_FILTER");
        if (filter != nullptr && s.name.find(filter) == std::string::npos) continue;
        specs.push_back(s);
      }
  Loaded l = Load(gpu, specs);
  uint32_t seed = 500;
  for (const KernelSpec& s : specs) {
    if (s.cols != 4096 || s.rows != 6144) continue;
    double err = CheckMatrixKernel(gpu, l, s, 1, seed++);
    EXPECT_LT(err, 1e-4) << s.name;
  }
  for (const KernelSpec& s : specs) {
    const int64_t wbytes = WeightRowBytes(s.weight, s.cols) * s.rows;
    const int64_t sbytes = s.rows * ScaleRowBytes(s.weight, s.cols);
    const double us = TimeMatVecUs(gpu, l, s, 100);
    auto f = l.module->GetFunction(s.name);
    int regs = f.ok() ? f->GetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS).value_or(-1) : -1;
    std::printf("SWEEP %-34s %8.2f us %6.0f GB/s regs %d\n", s.name.c_str(), us, double(wbytes + sbytes) / (us * 1e3),
                regs);
  }
}

}  // namespace
}  // namespace kiln::codegen
