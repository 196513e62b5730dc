// GPU numerics of the emitted kernels against compiler/codegen's reference
// kernels, on fresh random inputs with poisoned outputs (CTest label `gpu`;
// skipped where no GPU is visible). Also times the Qwen3-8B decode matvecs
// against the device's read bandwidth (printed, not asserted).
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
#include "compiler/tune/bench.h"
#include "gtest/gtest.h"
#include "models/quant/float16.h"
#include "runtime/cuda/driver.h"
#include "tests/compiler/codegen/test_specs.h"

namespace kiln::codegen {
namespace {

namespace cu = ::kiln::runtime::cuda;

struct Gpu {
  std::unique_ptr<cu::Context> ctx;
  std::unique_ptr<cu::Stream> stream;
  Target target;
};

Gpu* GetGpu() {
  static Gpu* gpu = []() -> Gpu* {
    absl::StatusOr<const cu::Driver*> driver = cu::Driver::Get();
    if (!driver.ok()) return nullptr;
    absl::StatusOr<std::unique_ptr<cu::Context>> ctx = cu::Context::Create(**driver, 0);
    if (!ctx.ok()) return nullptr;
    auto g = new Gpu;
    g->ctx = *std::move(ctx);
    g->stream = *cu::Stream::Create(*g->ctx);
    int sm = g->ctx->device().compute_capability();
    absl::StatusOr<Target> t = Target::FromName(absl::StrCat("sm_", sm >= 90 ? 90 : sm >= 89 ? 89 : sm >= 86 ? 86 : 80));
    g->target = *t;
    return g;
  }();
  return gpu;
}

#define REQUIRE_GPU()                                   \
  Gpu* gpu = GetGpu();                                  \
  if (gpu == nullptr) GTEST_SKIP() << "no GPU visible"; \
  (void)gpu

// Device copies of host bytes.
class Buffers {
 public:
  explicit Buffers(Gpu* gpu) : gpu_(gpu) {}
  CUdeviceptr Upload(const void* data, size_t bytes) {
    auto b = cu::DeviceBuffer::Allocate(*gpu_->ctx, std::max<size_t>(bytes, 256) + 256);
    EXPECT_TRUE(b.ok()) << b.status();
    CUdeviceptr p = b->ptr();
    if (bytes > 0) {
      EXPECT_TRUE(gpu_->stream->CopyToDevice(p, data, bytes).ok());
    }
    bufs_.push_back(*std::move(b));
    return p;
  }
  template <typename T>
  CUdeviceptr Upload(const std::vector<T>& v) {
    return Upload(v.data(), v.size() * sizeof(T));
  }
  // Poisoned (all 0xFF bytes: NaN floats).
  CUdeviceptr Poisoned(size_t bytes) {
    std::vector<uint8_t> p(bytes, 0xFF);
    return Upload(p.data(), bytes);
  }
  template <typename T>
  std::vector<T> Download(CUdeviceptr p, size_t n) {
    std::vector<T> v(n);
    EXPECT_TRUE(gpu_->stream->CopyToHost(v.data(), p, n * sizeof(T)).ok());
    EXPECT_TRUE(gpu_->stream->Synchronize().ok());
    return v;
  }

 private:
  Gpu* gpu_;
  std::vector<cu::DeviceBuffer> bufs_;
};

struct Loaded {
  std::unique_ptr<cu::Module> module;
  CompiledModule compiled;
};

Loaded Load(Gpu* gpu, const std::vector<KernelSpec>& specs) {
  Loaded l;
  absl::StatusOr<CompiledModule> m = EmitPtx(specs, gpu->target);
  EXPECT_TRUE(m.ok()) << m.status();
  l.compiled = *std::move(m);
  auto mod = cu::Module::Load(*gpu->ctx,
                              absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(l.compiled.ptx.data()),
                                                  l.compiled.ptx.size()),
                              cu::ImageKind::kPtx, "codegen test PTX");
  EXPECT_TRUE(mod.ok()) << mod.status();
  l.module = *std::move(mod);
  return l;
}

struct Arg {
  CUdeviceptr ptr = 0;
  int32_t i = 0;
  bool is_ptr = true;
};
Arg P(CUdeviceptr p) { return {p, 0, true}; }
Arg I(int32_t v) { return {0, v, false}; }

void Launch(Gpu* gpu, const Loaded& l, const std::string& name, const std::vector<Arg>& args, int64_t T,
            int64_t rows_arg = 0) {
  const CompiledKernel* k = nullptr;
  for (const CompiledKernel& c : l.compiled.kernels)
    if (c.name == name) k = &c;
  ASSERT_NE(k, nullptr) << name;
  auto f = l.module->GetFunction(name);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(args.size(), k->abi.params.size()) << name;
  // Above 48 KiB of static + dynamic shared memory a kernel needs the opt-in.
  ASSERT_TRUE(tune::AllowSharedMemory(*gpu->ctx, *f, k->abi).ok());
  std::vector<Arg> a = args;
  std::vector<void*> params;
  for (Arg& x : a) params.push_back(x.is_ptr ? static_cast<void*>(&x.ptr) : static_cast<void*>(&x.i));
  const cu::LaunchConfig cfg = tune::LaunchConfigFor(k->abi, k->programmatic_launch, T, rows_arg);
  absl::Status s = gpu->stream->Launch(*f, cfg, params.data());
  ASSERT_TRUE(s.ok()) << s;
  s = gpu->stream->Synchronize();
  ASSERT_TRUE(s.ok()) << name << ": " << s;
}

// Random inputs and the error measure are the tuner's (compiler/tune/bench.h).
using tune::PutHalf;
using tune::RandomCache;
using tune::RandomFloats;
using tune::RelErr;

void RandomWeights(std::mt19937& rng, WeightFormat f, int64_t rows, int64_t cols, std::vector<uint8_t>* w,
                   std::vector<uint8_t>* scales) {
  tune::RandomWeights(rng(), f, rows, cols, w, scales);
}

// Runs a matvec/gemm spec on the GPU and the reference; returns the error.
double CheckMatrixKernel(Gpu* gpu, const Loaded& l, const KernelSpec& spec, int32_t T, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> w, ws;
  RandomWeights(rng, spec.weight, spec.rows, spec.cols, &w, &ws);
  std::vector<float> x = RandomFloats(rng, size_t(T) * spec.cols);
  std::vector<float> nw = RandomFloats(rng, spec.cols, 0.5f, 1.5f);
  const int64_t out_cols = spec.epilogue == Epilogue::kSiluMulPairs ? spec.rows / 2 : spec.rows;
  std::vector<float> out0 = RandomFloats(rng, size_t(T) * out_cols);
  Buffers bufs(gpu);
  CUdeviceptr dw = bufs.Upload(w), dws = ws.empty() ? 0 : bufs.Upload(ws), dx = bufs.Upload(x),
              dnw = bufs.Upload(nw);
  CUdeviceptr dout = spec.epilogue == Epilogue::kAddInPlace ? bufs.Upload(out0) : bufs.Poisoned(out0.size() * 4);
  std::vector<Arg> args = {P(dw), P(dws), P(dx), P(dnw), P(dout), I(T)};
  std::vector<float> extra = RandomFloats(rng, out0.size(), -4.0f, 4.0f);
  if (spec.epilogue == Epilogue::kSiluMulWith) args.push_back(P(bufs.Upload(extra)));
  Launch(gpu, l, spec.name, args, T);
  std::vector<float> got = bufs.Download<float>(dout, out0.size());
  std::vector<float> want = out0;
  absl::Status s = reference::MatVec(spec, w.data(), ws.data(), x.data(), nw.data(), want.data(), T, extra.data());
  EXPECT_TRUE(s.ok()) << s;
  if (spec.epilogue == Epilogue::kAddInPlace) {
    // Compare the increments, so the error is relative to what was added.
    for (size_t i = 0; i < got.size(); ++i) {
      got[i] -= out0[i];
      want[i] -= out0[i];
    }
  }
  return RelErr(got, want);
}

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

TEST(CodegenGpu, EmbedIsExact) {
  REQUIRE_GPU();
  std::vector<KernelSpec> specs;
  for (WeightFormat f : testing::AllFormats()) {
    if (ScaleRowBytes(f, 256) > 0) continue;  // planar formats: matrices only
    KernelSpec s;
    s.name = absl::StrCat("embed_", WeightFormatName(f));
    s.family = Family::kEmbed;
    s.weight = f;
    s.rows = 300;
    s.cols = 768;
    specs.push_back(s);
  }
  Loaded l = Load(gpu, specs);
  std::mt19937 rng(7);
  for (const KernelSpec& s : specs) {
    std::vector<uint8_t> w, ws;
    RandomWeights(rng, s.weight, s.rows, s.cols, &w, &ws);
    std::vector<int32_t> tokens = {0, 299, 17, 150, 3};
    Buffers bufs(gpu);
    CUdeviceptr dt = bufs.Upload(w), dtok = bufs.Upload(tokens), dout = bufs.Poisoned(tokens.size() * s.cols * 4);
    Launch(gpu, l, s.name, {P(dt), P(dtok), P(dout), I(5)}, 5);
    std::vector<float> got = bufs.Download<float>(dout, tokens.size() * s.cols), want(got.size());
    ASSERT_TRUE(reference::Embed(s, w.data(), tokens.data(), want.data(), 5).ok());
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 4)) << s.name;
  }
}

struct AttnModel {
  const char* name;
  int64_t heads, kv_heads, head_dim;
};

KernelSpec AttnBase(const AttnModel& m, bool f16) {
  KernelSpec s;
  s.n_head = m.heads;
  s.n_head_kv = m.kv_heads;
  s.head_dim = m.head_dim;
  s.kv_f16 = f16;
  s.rope_base = 1000000.0f;
  s.attn_scale = 1.0f / std::sqrt(static_cast<float>(m.head_dim));
  s.programmatic_launch = true;
  return s;
}

std::vector<float> CacheAsFloat(const std::vector<uint8_t>& c, bool f16) {
  return tune::CacheAsFloats(c.data(), c.size(), f16);
}

// Rope + store of spec `rs` (kQkNormRopeStore): T = 3 tokens at position
// 1000 against the reference, q and the new K/V rows.
void CheckRopeStore(Gpu* gpu, const Loaded& l, Buffers& bufs, const KernelSpec& rs, std::mt19937& rng) {
  const int64_t D = rs.head_dim, nq = rs.n_head, nkv = rs.n_head_kv;
  const int64_t C = 4096, row = nkv * D;
  const int eb = rs.kv_f16 ? 2 : 4;
  const int32_t T = 3, pos = 1000;
  std::vector<float> qkv = RandomFloats(rng, size_t(T * (nq + 2 * nkv) * D));
  std::vector<float> qn = RandomFloats(rng, size_t(D), 0.5f, 1.5f), kn = RandomFloats(rng, size_t(D), 0.5f, 1.5f);
  std::vector<int32_t> posv = {pos};
  std::vector<uint8_t> kc(size_t(C * row * eb), 0), vc(kc.size(), 0);
  CUdeviceptr dqkv = bufs.Upload(qkv), dqn = bufs.Upload(qn), dkn = bufs.Upload(kn), dpos = bufs.Upload(posv),
              dk = bufs.Upload(kc), dv = bufs.Upload(vc), dq = bufs.Poisoned(size_t(T * nq * D * 4));
  Launch(gpu, l, rs.name, {P(dqkv), P(dqn), P(dkn), P(dpos), P(dk), P(dv), P(dq), I(T)}, T);
  std::vector<float> q_got = bufs.Download<float>(dq, size_t(T * nq * D)), q_want(q_got.size());
  std::vector<uint8_t> k_got = bufs.Download<uint8_t>(dk, kc.size()), v_got = bufs.Download<uint8_t>(dv, vc.size());
  ASSERT_TRUE(reference::QkNormRopeStore(rs, qkv.data(), qn.data(), kn.data(), posv.data(), kc.data(), vc.data(),
                                         q_want.data(), T)
                  .ok());
  double eq = RelErr(q_got, q_want);
  double ek = RelErr(CacheAsFloat(k_got, rs.kv_f16), CacheAsFloat(kc, rs.kv_f16));
  double ev = RelErr(CacheAsFloat(v_got, rs.kv_f16), CacheAsFloat(vc, rs.kv_f16));
  std::printf("%-20s q %.2e k %.2e v %.2e\n", rs.name.c_str(), eq, ek, ev);
  EXPECT_LT(eq, 1e-5) << rs.name;
  EXPECT_LT(ek, rs.kv_f16 ? 2e-3 : 1e-5) << rs.name;
  EXPECT_EQ(ev, 0.0) << rs.name;
}

// Decode attention `s` at position `pos`, twice (the counter must come back
// to zero), against the reference; with rope_fused, the new token's K/V row
// starts poisoned and must come out as the reference's.
void CheckDecode(Gpu* gpu, const Loaded& l, Buffers& bufs, const KernelSpec& s, int32_t pos, std::mt19937& rng) {
  const int64_t D = s.head_dim, nq = s.n_head, nkv = s.n_head_kv, row = nkv * D;
  const int eb = s.kv_f16 ? 2 : 4;
  std::vector<uint8_t> kc = RandomCache(rng, (pos + 1) * row, s.kv_f16), vc = RandomCache(rng, (pos + 1) * row, s.kv_f16);
  std::vector<float> q = RandomFloats(rng, size_t((s.rope_fused ? nq + 2 * nkv : nq) * D));
  std::vector<float> qn = RandomFloats(rng, size_t(D), 0.5f, 1.5f), kn = RandomFloats(rng, size_t(D), 0.5f, 1.5f);
  std::vector<int32_t> posv = {pos};
  const int64_t G = nq / nkv;
  std::vector<uint32_t> counter(size_t(nkv), 0);
  if (s.rope_fused) {
    std::fill(kc.end() - row * eb, kc.end(), uint8_t{0xFF});
    std::fill(vc.end() - row * eb, vc.end(), uint8_t{0xFF});
  }
  CUdeviceptr dq = bufs.Upload(q), dk = bufs.Upload(kc), dv = bufs.Upload(vc), dpos = bufs.Upload(posv),
              dpart = bufs.Poisoned(size_t(nkv * s.attention.max_splits * G * (D + 2) * 4)),
              dcnt = bufs.Upload(counter), dqn = bufs.Upload(qn), dkn = bufs.Upload(kn);
  std::vector<float> want(size_t(nq * D));
  if (s.rope_fused) {
    ASSERT_TRUE(reference::AttentionDecodeFused(s, q.data(), qn.data(), kn.data(), posv.data(), kc.data(), vc.data(),
                                                want.data())
                    .ok());
  } else {
    ASSERT_TRUE(reference::AttentionDecode(s, q.data(), kc.data(), vc.data(), posv.data(), want.data()).ok());
  }
  for (int rep = 0; rep < 2; ++rep) {
    CUdeviceptr dout = bufs.Poisoned(size_t(nq * D * 4));
    if (s.rope_fused)
      Launch(gpu, l, s.name, {P(dq), P(dk), P(dv), P(dpos), P(dout), P(dpart), P(dcnt), P(dqn), P(dkn)}, 1);
    else
      Launch(gpu, l, s.name, {P(dq), P(dk), P(dv), P(dpos), P(dout), P(dpart), P(dcnt)}, 1);
    double e = RelErr(bufs.Download<float>(dout, size_t(nq * D)), want);
    std::printf("%-20s pos %5d rep %d rel err %.2e\n", s.name.c_str(), pos, rep, e);
    EXPECT_LT(e, 1e-4) << s.name << " pos " << pos;
    std::vector<uint32_t> c = bufs.Download<uint32_t>(dcnt, size_t(nkv));
    for (uint32_t v : c) EXPECT_EQ(v, 0u) << s.name;
  }
  if (s.rope_fused) {
    // Row pos as the reference wrote it, the rows before it untouched.
    const std::vector<uint8_t> gk = bufs.Download<uint8_t>(dk, kc.size()), gv = bufs.Download<uint8_t>(dv, vc.size());
    auto row_pos = [&](const std::vector<uint8_t>& c) {
      return CacheAsFloat(std::vector<uint8_t>(c.end() - row * eb, c.end()), s.kv_f16);
    };
    double ek = RelErr(row_pos(gk), row_pos(kc)), ev = RelErr(row_pos(gv), row_pos(vc));
    std::printf("%-20s pos %5d k %.2e v %.2e\n", s.name.c_str(), pos, ek, ev);
    EXPECT_LT(ek, s.kv_f16 ? 2e-3 : 1e-5) << s.name << " pos " << pos;
    EXPECT_EQ(ev, 0.0) << s.name << " pos " << pos;
    EXPECT_TRUE(std::equal(gk.begin(), gk.end() - row * eb, kc.begin())) << s.name << ": K rows before pos changed";
    EXPECT_TRUE(std::equal(gv.begin(), gv.end() - row * eb, vc.begin())) << s.name << ": V rows before pos changed";
  }
}

TEST(CodegenGpu, RopeAndAttention) {
  REQUIRE_GPU();
  // wide with an f32 cache takes the decode attention's key-per-thread path.
  const AttnModel models[] = {{"tiny", 4, 2, 64}, {"b8", 32, 8, 128}, {"wide", 8, 2, 256}};
  std::vector<KernelSpec> specs;
  for (const AttnModel& m : models)
    for (bool f16 : {true, false}) {
      const char* kv = f16 ? "f16" : "f32";
      KernelSpec r = AttnBase(m, f16);
      r.family = Family::kQkNormRopeStore;
      r.name = absl::StrCat("rope_", m.name, "_", kv);
      r.elementwise.threads = 64;
      specs.push_back(r);
      // Decode: 64 splits of 64 positions or more, up to 640 (covers 40960).
      KernelSpec d = AttnBase(m, f16);
      d.family = Family::kAttentionDecode;
      d.name = absl::StrCat("dec_", m.name, "_", kv);
      d.attention.max_splits = 64;
      d.attention.min_split_positions = 64;
      d.attention.split_positions = 640;
      specs.push_back(d);
      // Decode with a small capacity, 4 splits of at most 64 positions:
      // positions from 256 on are not attended.
      KernelSpec c = d;
      c.name = absl::StrCat("dec_cap_", m.name, "_", kv);
      c.attention.max_splits = 4;
      c.attention.split_positions = 64;
      c.attention.keys_in_flight = 1;  // the fewest loads in flight: more rounds a split
      c.attention.value_bytes_in_flight = f16 ? 8 : 16;  // one row a round
      specs.push_back(c);
      // Decode with 16 splits of up to 1024 positions (covers 16384) on 256
      // threads: the merge's threads split the splits in groups (tiny, b8)
      // or take one 16-byte chunk each (wide).
      KernelSpec f = d;
      f.name = absl::StrCat("dec16_", m.name, "_", kv);
      f.attention.max_splits = 16;
      f.attention.split_positions = 1024;
      f.attention.threads = 256;
      f.attention.keys_in_flight = 8;  // twice the default's loads in flight
      f.attention.value_bytes_in_flight = 128;
      specs.push_back(f);
      KernelSpec p = AttnBase(m, f16);
      p.family = Family::kAttentionPrefill;
      p.name = absl::StrCat("pre_", m.name, "_", kv);
      p.attention.query_block = 16;
      specs.push_back(p);
      // The three decode schedules with q/k-norm + RoPE + store fused in;
      // the 16-split one releases its dependents right after its wait.
      for (const KernelSpec* dec : {&d, &c, &f}) {
        KernelSpec x = *dec;
        x.name = "rope_" + x.name;
        x.rope_fused = true;
        x.eps = 1e-6f;
        x.attention.release_after_wait = dec == &f;
        specs.push_back(x);
      }
      // Prefill with K/V tiles in shared memory (tiles of 16 KiB at most:
      // several tiles for b8 f32 and wide, the last one partial), 4
      // queries a warp (128 threads), 2 (256: in the last block of 37
      // queries some warps have none) and 8 (64 threads).
      for (int threads : {128, 256, 64}) {
        KernelSpec st = p;
        st.name = absl::StrCat("pre_staged", threads, "_", m.name, "_", kv);
        st.attention.threads = threads;
        st.attention.query_block = threads == 64 && m.head_dim > 128 ? 8 : 16;  // state in registers
        st.attention.stage_keys = true;
        st.attention.key_block = static_cast<int>(std::min<int64_t>(64, 16384 / (m.head_dim * (f16 ? 2 : 4))));
        specs.push_back(st);
      }
    }
  Loaded l = Load(gpu, specs);
  std::mt19937 rng(11);
  for (size_t i = 0; i < specs.size(); i += 11) {
    const KernelSpec& rs = specs[i];
    const KernelSpec& ds = specs[i + 1];
    const KernelSpec& cs = specs[i + 2];
    const KernelSpec& fs = specs[i + 3];
    const KernelSpec& ps = specs[i + 4];
    const KernelSpec* fused[] = {&specs[i + 5], &specs[i + 6], &specs[i + 7]};
    const KernelSpec* staged[] = {&specs[i + 8], &specs[i + 9], &specs[i + 10]};
    const int64_t D = rs.head_dim, nq = rs.n_head, nkv = rs.n_head_kv, row = nkv * D;
    Buffers bufs(gpu);
    CheckRopeStore(gpu, l, bufs, rs, rng);
    // Decode, twice at each position (the counter must come back to zero).
    // dec_*: L = pos+1 positions go to splits of len = max(64,
    // roundup(ceil(L/64), 32)): one split (the direct path) at 0 and 63,
    // two at 64, 16 at 1000, all 64 at 4095; len 96 (43 splits) at 4096,
    // 256 (all 64) at 16383 and 320 (63 splits) at 20000. dec_cap_*: one
    // split at 0, all 4 full at 255, and at 300 only positions 0..255 are
    // attended (the reference stops at max_splits x split_positions too).
    // dec16_*: len = max(64, roundup(ceil(L/16), 32)): one split at 0, 5 at
    // 300, all 16 at 4095 (256 positions each) and 16383 (1024 each). The
    // merge keeps 8 / per-thread-chunks record loads in flight, so 2, 5, 43
    // and 63 splits exercise its masked last round.
    // rope_*: the same cases fused; the new token's K/V row (position pos)
    // starts poisoned and must come out as the reference's.
    struct DecodeCase {
      const KernelSpec* spec;
      int32_t pos;
    };
    std::vector<DecodeCase> cases = {{&ds, 0},    {&ds, 63},    {&ds, 64},   {&ds, 1000}, {&ds, 4095},
                                     {&ds, 4096}, {&ds, 16383}, {&ds, 20000}, {&cs, 0},    {&cs, 255},
                                     {&cs, 300},  {&fs, 0},     {&fs, 300},  {&fs, 4095}, {&fs, 16383}};
    const KernelSpec* unfused[] = {&ds, &cs, &fs};
    for (size_t n = cases.size(), ci = 0; ci < n; ++ci)
      for (int u = 0; u < 3; ++u)
        if (cases[ci].spec == unfused[u]) cases.push_back({fused[u], cases[ci].pos});
    for (const DecodeCase& dc : cases) CheckDecode(gpu, l, bufs, *dc.spec, dc.pos, rng);
    // Prefill: T = 37 queries after P = 20 cached positions, and a fresh
    // prompt (P = 0).
    for (const int32_t P0 : {20, 0}) {
      const int32_t T = 37;
      std::vector<uint8_t> kc = RandomCache(rng, (P0 + T) * row, rs.kv_f16), vc = RandomCache(rng, (P0 + T) * row, rs.kv_f16);
      std::vector<float> q = RandomFloats(rng, size_t(T * nq * D));
      std::vector<int32_t> posv = {P0};
      CUdeviceptr dq = bufs.Upload(q), dk = bufs.Upload(kc), dv = bufs.Upload(vc), dpos = bufs.Upload(posv),
                  dout = bufs.Poisoned(size_t(T * nq * D * 4));
      Launch(gpu, l, ps.name, {P(dq), P(dk), P(dv), P(dpos), P(dout), I(T)}, T);
      std::vector<float> want(size_t(T * nq * D));
      ASSERT_TRUE(reference::AttentionPrefill(ps, q.data(), kc.data(), vc.data(), posv.data(), want.data(), T).ok());
      const std::vector<float> streamed = bufs.Download<float>(dout, want.size());
      double e = RelErr(streamed, want);
      std::printf("%-20s rel err %.2e\n", ps.name.c_str(), e);
      EXPECT_LT(e, 1e-4) << ps.name;
      // The staged kernels: the same operations in the same order per query.
      for (const KernelSpec* st : staged) {
        CUdeviceptr dout2 = bufs.Poisoned(size_t(T * nq * D * 4));
        Launch(gpu, l, st->name, {P(dq), P(dk), P(dv), P(dpos), P(dout2), I(T)}, T);
        const std::vector<float> tiled = bufs.Download<float>(dout2, want.size());
        const double et = RelErr(tiled, want);
        std::printf("%-20s P %2d rel err %.2e\n", st->name.c_str(), P0, et);
        EXPECT_LT(et, 1e-4) << st->name << " P " << P0;
        EXPECT_TRUE(std::equal(tiled.begin(), tiled.end(), streamed.begin(),
                               [](float x, float y) { return std::memcmp(&x, &y, 4) == 0; }))
            << st->name << " P " << P0 << ": not bit-identical to " << ps.name;
      }
    }
  }
}

// Linear and YaRN RoPE scaling (KernelSpec::rope_scaling, folded into the
// kernels' frequency table, YaRN's magnitude on cos and sin) in both rope
// kernels, f16 caches: the rope + store kernel at position 1000 and the
// fused decode attention at 300 and 4095, against the reference's own
// scaled angles. YaRN as an 8x extension whose ramp runs over pairs [3, 12]
// (tiny: of 32; b8: of 64), so pairs are extrapolated, mixed and
// interpolated.
TEST(CodegenGpu, ScaledRope) {
  REQUIRE_GPU();
  const AttnModel models[] = {{"tiny", 4, 2, 64}, {"b8", 32, 8, 128}};
  const std::pair<const char*, KernelSpec::RopeScaling> scalings[] = {
      {"linear", {0.25f, 0.0f, 0.0f, 0.0f, 1.0f}}, {"yarn", {0.125f, 1.0f, 3.0f, 12.0f, 1.0871497f}}};
  std::vector<KernelSpec> specs;  // per model and scaling: rope + store, fused decode
  for (const AttnModel& m : models)
    for (const auto& [kind, scaling] : scalings) {
      KernelSpec r = AttnBase(m, true);
      r.family = Family::kQkNormRopeStore;
      r.name = absl::StrCat("rope_", kind, "_", m.name);
      r.elementwise.threads = 64;
      r.rope_scaling = scaling;
      specs.push_back(r);
      KernelSpec d = AttnBase(m, true);
      d.family = Family::kAttentionDecode;
      d.name = absl::StrCat("rope_dec_", kind, "_", m.name);
      d.attention.max_splits = 64;
      d.attention.min_split_positions = 64;
      d.attention.split_positions = 640;
      d.rope_fused = true;
      d.eps = 1e-6f;
      d.rope_scaling = scaling;
      specs.push_back(d);
    }
  Loaded l = Load(gpu, specs);
  std::mt19937 rng(13);
  Buffers bufs(gpu);
  for (size_t i = 0; i < specs.size(); i += 2) {
    CheckRopeStore(gpu, l, bufs, specs[i], rng);
    for (int32_t pos : {300, 4095}) CheckDecode(gpu, l, bufs, specs[i + 1], pos, rng);
  }
}

// Runs an argmax spec (rows >= 2) on planted rows, twice (the counters must
// come back to zero), against the reference: ties across blocks, NaNs, rows
// without a finite maximum.
void CheckArgmax(Gpu* gpu, const Loaded& l, const KernelSpec& s, std::mt19937& rng) {
  const int32_t cols = static_cast<int32_t>(s.cols);
  const int64_t rows = s.rows;
  std::vector<float> logits = RandomFloats(rng, size_t(rows * cols));
  auto at = [&](int64_t r, int32_t i) -> float& { return logits[size_t(r * cols + i)]; };
  // Row 0: the largest value at the middle, next to it and last (in other
  // blocks where there are several): the middle wins.
  at(0, cols / 2) = at(0, cols - 1) = 7.0f;
  if (cols / 2 + 1 < cols) at(0, cols / 2 + 1) = 7.0f;
  // Row 1: only NaNs and -inf, so no finite maximum: 0.
  for (int32_t i = 0; i < cols; ++i) at(1, i) = i % 3 == 1 ? NAN : -INFINITY;
  // Row 2: a NaN first, the maximum last.
  if (rows > 2) {
    at(2, 0) = NAN;
    at(2, cols - 1) = 9.0f;
  }
  // Row 3: all -inf: 0.
  if (rows > 3)
    for (int32_t i = 0; i < cols; ++i) at(3, i) = -INFINITY;
  std::vector<int32_t> want(static_cast<size_t>(rows));
  ASSERT_TRUE(reference::Argmax(s, logits.data(), want.data(), cols).ok());
  EXPECT_EQ(want[0], cols / 2);
  EXPECT_EQ(want[1], 0);
  if (rows > 2) {
    EXPECT_EQ(want[2], cols - 1);
  }
  Buffers bufs(gpu);
  CUdeviceptr dl = bufs.Upload(logits), dpart = bufs.Poisoned(size_t(rows * s.elementwise.max_blocks * 8)),
              dcnt = bufs.Upload(std::vector<uint32_t>(size_t(rows), 0));
  for (int rep = 0; rep < 2; ++rep) {
    CUdeviceptr dout = bufs.Poisoned(size_t(rows * 4));
    Launch(gpu, l, s.name, {P(dl), P(dout), P(dpart), P(dcnt), I(cols)}, 1);
    EXPECT_EQ(bufs.Download<int32_t>(dout, size_t(rows)), want) << s.name << " rep " << rep;
    for (uint32_t c : bufs.Download<uint32_t>(dcnt, size_t(rows))) EXPECT_EQ(c, 0u) << s.name;
  }
}

TEST(CodegenGpu, Argmax) {
  REQUIRE_GPU();
  auto spec = [](const char* name, int64_t rows, int64_t cols, int threads, int block_cols, int max_blocks) {
    KernelSpec s;
    s.name = name;
    s.family = Family::kArgmax;
    s.rows = rows;
    s.cols = cols;
    s.elementwise.threads = threads;
    s.elementwise.block_cols = block_cols;
    s.elementwise.max_blocks = max_blocks;
    s.programmatic_launch = true;
    return s;
  };
  const std::vector<KernelSpec> specs = {
      spec("argmax_vocab", 4, 151936, 1024, 2048, 128),    // the tables' schedule: 75 blocks
      spec("argmax_vocab_256", 4, 151936, 256, 2048, 128), // 75 blocks of 256 threads
      spec("argmax_one_block", 4, 151936, 1024, 2048, 1),  // one block per row, no merge
      spec("argmax_capped", 3, 151936, 64, 64, 128),       // 128 blocks (the cap), 2 records per merging thread
      spec("argmax_odd", 3, 100003, 128, 1000, 128),       // 101 blocks of 991 columns, the last 903
      spec("argmax_tiny", 3, 5, 32, 1, 4),                 // 4 blocks of 2 columns: the last one empty
  };
  Loaded l = Load(gpu, specs);
  std::mt19937 rng(5);
  for (const KernelSpec& s : specs) CheckArgmax(gpu, l, s, rng);
}

TEST(CodegenGpu, PackCopy) {
  REQUIRE_GPU();
  KernelSpec pack;
  pack.name = "pack";
  pack.family = Family::kPackQ8_0;
  pack.cols = 768;
  KernelSpec copy;
  copy.name = "copy";
  copy.family = Family::kCopyRows;
  copy.row_bytes = 210;
  KernelSpec copy16 = copy;
  copy16.name = "copy16";
  copy16.row_bytes = 2304;
  KernelSpec pack6;
  pack6.name = "pack6";
  pack6.family = Family::kPackQ6_K;
  pack6.cols = 768;
  Loaded l = Load(gpu, {pack, copy, copy16, pack6});
  std::mt19937 rng(3);
  Buffers bufs(gpu);
  for (const KernelSpec* p : {&pack, &pack6}) {
    // GGUF rows into poisoned planes, byte for byte as the reference packs
    // them (that the planes decode to the rows' weights: codegen_test's
    // ReferenceKernels.PackQ6_KPlanesDecodeToTheGgufRows).
    const bool q6 = p->family == Family::kPackQ6_K;
    const WeightFormat planar = q6 ? WeightFormat::kQ6_KPlanar : WeightFormat::kQ8_0Planar;
    const int32_t rows = 5;
    std::vector<uint8_t> w, ws;
    RandomWeights(rng, q6 ? WeightFormat::kQ6_K : WeightFormat::kQ8_0, rows, p->cols, &w, &ws);
    const size_t qs_bytes = size_t(rows * WeightRowBytes(planar, p->cols));
    const size_t d_bytes = size_t(rows * ScaleRowBytes(planar, p->cols));
    CUdeviceptr dsrc = bufs.Upload(w), dqs = bufs.Poisoned(qs_bytes), dd = bufs.Poisoned(d_bytes);
    Launch(gpu, l, p->name, {P(dsrc), P(dqs), P(dd), I(rows)}, 1, rows);
    std::vector<uint8_t> qs(qs_bytes), d(d_bytes);
    ASSERT_TRUE((q6 ? reference::PackQ6_K : reference::PackQ8_0)(*p, w.data(), qs.data(), d.data(), rows).ok());
    EXPECT_EQ(bufs.Download<uint8_t>(dqs, qs.size()), qs) << p->name;
    EXPECT_EQ(bufs.Download<uint8_t>(dd, d.size()), d) << p->name;
  }
  for (const KernelSpec* c : {&copy, &copy16}) {
    // Gate/up interleave: 6 gate rows into groups of 2 at offset 0, stride 4.
    const int32_t rows = 6;
    std::vector<uint8_t> src(size_t(rows * c->row_bytes));
    for (uint8_t& b : src) b = static_cast<uint8_t>(rng());
    std::vector<uint8_t> dst(size_t(2 * rows * c->row_bytes), 0xAB);
    CUdeviceptr dsrc = bufs.Upload(src), ddst = bufs.Upload(dst);
    Launch(gpu, l, c->name, {P(dsrc), P(ddst), I(rows), I(0), I(2), I(4)}, 1, rows);
    ASSERT_TRUE(reference::CopyRows(*c, src.data(), dst.data(), rows, 0, 2, 4).ok());
    EXPECT_EQ(bufs.Download<uint8_t>(ddst, dst.size()), dst) << c->name;
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

}  // namespace
}  // namespace kiln::codegen

namespace kiln::codegen {
namespace {

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
