// The GPU test harness of the codegen tests: one context and stream on GPU
// 0, device buffers from host bytes (poisoned outputs), emitted kernels
// loaded and launched with their ABI, and a matvec or GEMM spec checked
// against the reference kernels.
#ifndef KILN_TESTS_COMPILER_CODEGEN_GPU_HARNESS_H_
#define KILN_TESTS_COMPILER_CODEGEN_GPU_HARNESS_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/codegen.h"
#include "compiler/tune/bench.h"
#include "gtest/gtest.h"
#include "runtime/cuda/driver.h"

namespace kiln::codegen {

namespace cu = ::kiln::runtime::cuda;

struct Gpu {
  std::unique_ptr<cu::Context> ctx;
  std::unique_ptr<cu::Stream> stream;
  Target target;
};

// GPU 0's context and stream, made once; null when no GPU is visible. The
// target is the newest kiln has at or below the GPU's compute capability.
Gpu* GetGpu();

// Skips the test where no GPU is visible; otherwise declares `gpu`.
#define REQUIRE_GPU()                                                      \
  ::kiln::codegen::Gpu* gpu = ::kiln::codegen::GetGpu(); \
  if (gpu == nullptr) GTEST_SKIP() << "no GPU visible";                    \
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

// EmitPtx of `specs` for the GPU's target, loaded as one module.
Loaded Load(Gpu* gpu, const std::vector<KernelSpec>& specs);

struct Arg {
  CUdeviceptr ptr = 0;
  int32_t i = 0;
  bool is_ptr = true;
};
inline Arg P(CUdeviceptr p) { return {p, 0, true}; }
inline Arg I(int32_t v) { return {0, v, false}; }

// Launches kernel `name` of `l` with `args` (its ABI's order) for T tokens
// (and the `rows` argument) and waits for it.
void Launch(Gpu* gpu, const Loaded& l, const std::string& name, const std::vector<Arg>& args, int64_t T,
            int64_t rows_arg = 0);

// Random inputs and the error measure are the tuner's (compiler/tune/bench.h).
using tune::PutHalf;
using tune::RandomCache;
using tune::RandomFloats;
using tune::RelErr;

void RandomWeights(std::mt19937& rng, WeightFormat f, int64_t rows, int64_t cols, std::vector<uint8_t>* w,
                   std::vector<uint8_t>* scales);

// Runs a matvec/gemm spec on the GPU and the reference; returns the error.
double CheckMatrixKernel(Gpu* gpu, const Loaded& l, const KernelSpec& spec, int32_t T, uint32_t seed);

}  // namespace kiln::codegen

#endif  // KILN_TESTS_COMPILER_CODEGEN_GPU_HARNESS_H_
