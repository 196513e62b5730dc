#include "tests/compiler/codegen/gpu_harness.h"

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "compiler/codegen/reference_kernels.h"

namespace kiln::codegen {

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

void Launch(Gpu* gpu, const Loaded& l, const std::string& name, const std::vector<Arg>& args, int64_t T,
            int64_t rows_arg) {
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

void RandomWeights(std::mt19937& rng, WeightFormat f, int64_t rows, int64_t cols, std::vector<uint8_t>* w,
                   std::vector<uint8_t>* scales) {
  tune::RandomWeights(rng(), f, rows, cols, w, scales);
}

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

}  // namespace kiln::codegen
