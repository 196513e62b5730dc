// Checking and timing one emitted kernel on the GPU, shared by the tuner's
// worker and tests/compiler/codegen/codegen_gpu_test: random inputs in every
// weight format, the relative error against the reference kernels, launch
// configurations from the kernel ABI, and timing with CUDA events over
// weight copies rotated so the L2 cannot serve them (docs/tuning.md).
#ifndef KILN_COMPILER_TUNE_BENCH_H_
#define KILN_COMPILER_TUNE_BENCH_H_

#include <cstdint>
#include <random>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/codegen/kernel_abi.h"
#include "compiler/codegen/kernel_spec.h"
#include "runtime/cuda/driver.h"

namespace kiln::tune {

namespace cu = ::kiln::runtime::cuda;

// ---- host data ----

std::vector<float> RandomFloats(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f);
void PutHalf(uint8_t* p, float v);
// `n` random values in [-1, 1) as a KV cache stores them (f16, else f32).
std::vector<uint8_t> RandomCache(std::mt19937& rng, int64_t n, bool f16);
// KV-cache bytes (f16, else f32) as floats.
std::vector<float> CacheAsFloats(const uint8_t* bytes, size_t n_bytes, bool f16);
// A random [rows][cols] weight in `format`'s device layout (the int8 plane
// for kQ8_0Planar, whose f16 scale plane goes to `scales`) with scales that
// keep dot products O(1). Generated in parallel chunks from `seed`: the
// bytes depend only on the seed, not on the thread count.
void RandomWeights(uint64_t seed, codegen::WeightFormat format, int64_t rows, int64_t cols,
                   std::vector<uint8_t>* w, std::vector<uint8_t>* scales);
// max |got - want| / max |want|; a NaN in one but not the other is +inf.
double RelErr(const std::vector<float>& got, const std::vector<float>& want);
// codegen::reference::MatVec for T = 1, split over row blocks on `threads`
// threads (the reference is the oracle; this only runs it in parallel).
absl::Status ParallelReferenceMatVec(const codegen::KernelSpec& spec, const void* w, const void* w_scales,
                                     const float* x, const float* norm_w, float* out, const float* extra,
                                     int threads);

// ---- device ----

// The launch of `abi` for T tokens (and a `rows` argument).
cu::LaunchConfig LaunchConfigFor(const codegen::KernelAbi& abi, bool programmatic, int64_t tokens,
                                 int64_t rows_arg = 0);
// Raises the dynamic shared memory limit when static + dynamic exceed 48 KiB.
absl::Status AllowSharedMemory(const cu::Context& ctx, cu::Function& f, const codegen::KernelAbi& abi);

// `count` device copies of a weight and its scale plane (the scale buffers
// are at least 256 bytes, so an unused plane still has an address): at
// least 2, and at least `min_total_bytes` together, so launches rotating
// through them stream from DRAM. `w`/`scales` 0: filled with 0x11 bytes
// (f16 scales of 4.5e-4, finite weights in every format).
struct WeightCopies {
  std::vector<cu::DeviceBuffer> w, scales;
  int count() const { return static_cast<int>(w.size()); }
};
absl::StatusOr<WeightCopies> CopyWeights(const cu::Context& ctx, const cu::Stream& stream, CUdeviceptr w,
                                         int64_t w_bytes, CUdeviceptr scales, int64_t scale_bytes,
                                         int64_t min_total_bytes);

struct Timing {
  double median_us = 0;  // per launch
  double min_us = 0;
};
// `warmup` launches, then `samples` event-timed batches of `per_sample`
// back-to-back launches; launch i takes the parameters `params(i)` returns.
absl::StatusOr<Timing> TimeLaunches(const cu::Context& ctx, const cu::Stream& stream, const cu::Function& f,
                                    const cu::LaunchConfig& config, absl::FunctionRef<void**(int)> params,
                                    int warmup, int samples, int per_sample);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_BENCH_H_
