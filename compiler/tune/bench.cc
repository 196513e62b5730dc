#include "compiler/tune/bench.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/reference_kernels.h"
#include "models/quant/float16.h"
#include "support/parallel_for.h"
#include "support/status_macros.h"

namespace kiln::tune {
namespace {

using codegen::WeightFormat;

// splitmix64 (Steele, Lea, Flood 2014): fast, and any seed is a good one.
struct SplitMix {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi).
  float Uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(Next() >> 40) * 0x1p-24f; }
};

constexpr int64_t kRowsPerChunk = 64;  // fixed, so the bytes do not depend on the thread count

void RandomRow(SplitMix& rng, WeightFormat f, int64_t cols, uint8_t* row) {
  const codegen::FormatGeometry g = codegen::GetFormatGeometry(f);
  switch (f) {
    case WeightFormat::kF32:
      for (int64_t i = 0; i < cols; ++i) {
        float v = rng.Uniform(-1.0f, 1.0f);
        std::memcpy(row + 4 * i, &v, 4);
      }
      return;
    case WeightFormat::kF16:
      for (int64_t i = 0; i < cols; ++i) PutHalf(row + 2 * i, rng.Uniform(-1.0f, 1.0f));
      return;
    case WeightFormat::kBF16:
      for (int64_t i = 0; i < cols; ++i) {
        uint16_t b = quant::FloatToBf16(rng.Uniform(-1.0f, 1.0f));
        std::memcpy(row + 2 * i, &b, 2);
      }
      return;
    default:
      break;
  }
  const int64_t bytes = codegen::WeightRowBytes(f, cols);
  for (int64_t i = 0; i < bytes; i += 8) {
    const uint64_t v = rng.Next();
    std::memcpy(row + i, &v, static_cast<size_t>(std::min<int64_t>(8, bytes - i)));
  }
  // Planar formats: codes (and Q6_K's int8 sub-block scales) only; the f16
  // scales are a plane of their own.
  if (codegen::ScaleRowBytes(f, cols) > 0) return;
  for (int64_t b = 0; b < bytes / g.block_bytes; ++b) {
    uint8_t* blk = row + b * g.block_bytes;
    switch (f) {
      case WeightFormat::kQ8_0:
      case WeightFormat::kQ4_0:
        PutHalf(blk, rng.Uniform(0.002f, 0.02f));
        break;
      case WeightFormat::kQ4_K:
      case WeightFormat::kQ5_K:
        PutHalf(blk, rng.Uniform(0.002f, 0.02f));
        PutHalf(blk + 2, rng.Uniform(0.002f, 0.02f));
        break;
      case WeightFormat::kQ6_K:
        PutHalf(blk + 208, rng.Uniform(0.0002f, 0.002f));
        break;
      default:
        break;
    }
  }
}

}  // namespace

std::vector<float> RandomFloats(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

void PutHalf(uint8_t* p, float v) {
  uint16_t h = quant::FloatToHalf(v);
  std::memcpy(p, &h, 2);
}

std::vector<uint8_t> RandomCache(std::mt19937& rng, int64_t n, bool f16) {
  std::vector<float> v = RandomFloats(rng, size_t(n));
  std::vector<uint8_t> out(size_t(n) * (f16 ? 2 : 4));
  for (int64_t i = 0; i < n; ++i) {
    if (f16)
      PutHalf(out.data() + 2 * i, v[size_t(i)]);
    else
      std::memcpy(out.data() + 4 * i, &v[size_t(i)], 4);
  }
  return out;
}

std::vector<float> CacheAsFloats(const uint8_t* bytes, size_t n_bytes, bool f16) {
  std::vector<float> v(n_bytes / (f16 ? 2 : 4));
  for (size_t i = 0; i < v.size(); ++i) {
    if (f16) {
      uint16_t h;
      std::memcpy(&h, bytes + 2 * i, 2);
      v[i] = quant::HalfToFloat(h);
    } else {
      std::memcpy(&v[i], bytes + 4 * i, 4);
    }
  }
  return v;
}

void RandomWeights(uint64_t seed, WeightFormat f, int64_t rows, int64_t cols, std::vector<uint8_t>* w,
                   std::vector<uint8_t>* scales) {
  const int64_t row_bytes = codegen::WeightRowBytes(f, cols);
  w->resize(static_cast<size_t>(row_bytes * rows));
  const int64_t chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  ParallelFor(chunks, DefaultThreads(), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      SplitMix rng{seed * 0x100000001B3ull + static_cast<uint64_t>(c)};
      for (int64_t r = c * kRowsPerChunk; r < std::min(rows, (c + 1) * kRowsPerChunk); ++r)
        RandomRow(rng, f, cols, w->data() + r * row_bytes);
    }
  });
  if (const int64_t n = rows * codegen::ScaleRowBytes(f, cols) / 2; n > 0) {
    // Planar Q6_K's d multiplies int8 scales up to 128: smaller, as in its blocks.
    const float lo = f == WeightFormat::kQ6_KPlanar ? 0.0002f : 0.002f;
    SplitMix rng{~seed};
    scales->resize(static_cast<size_t>(n * 2));
    for (int64_t i = 0; i < n; ++i) PutHalf(scales->data() + 2 * i, rng.Uniform(lo, 10 * lo));
  } else if (scales != nullptr) {
    scales->clear();
  }
}

double RelErr(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(got[i]) != std::isnan(want[i])) return INFINITY;
    if (std::isnan(want[i])) continue;
    num = std::max(num, std::fabs(double(got[i]) - want[i]));
    den = std::max(den, std::fabs(double(want[i])));
  }
  return den == 0 ? num : num / den;
}

absl::Status ParallelReferenceMatVec(const codegen::KernelSpec& spec, const void* w, const void* w_scales,
                                     const float* x, const float* norm_w, float* out, const float* extra,
                                     int threads) {
  // Blocks of whole gate/up groups, so each block is a valid spec itself.
  const int64_t unit = spec.epilogue == codegen::Epilogue::kSiluMulPairs ? 2 * spec.pair_group : 1;
  const int64_t block = (256 + unit - 1) / unit * unit;
  const int64_t blocks = (spec.rows + block - 1) / block;
  const int64_t row_bytes = codegen::WeightRowBytes(spec.weight, spec.cols);
  std::vector<absl::Status> errors(static_cast<size_t>(blocks));
  ParallelFor(blocks, threads, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t r0 = b * block;
      codegen::KernelSpec s = spec;
      s.rows = std::min(block, spec.rows - r0);
      const uint8_t* ws = static_cast<const uint8_t*>(w_scales);
      const int64_t out0 = spec.epilogue == codegen::Epilogue::kSiluMulPairs ? r0 / 2 : r0;
      errors[size_t(b)] = codegen::reference::MatVec(
          s, static_cast<const uint8_t*>(w) + r0 * row_bytes, ws ? ws + r0 * codegen::ScaleRowBytes(spec.weight, spec.cols) : nullptr, x,
          norm_w, out + out0, 1, extra ? extra + r0 : nullptr);
    }
  });
  for (const absl::Status& s : errors) RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

cu::LaunchConfig LaunchConfigFor(const codegen::KernelAbi& abi, bool programmatic, int64_t tokens, int64_t rows_arg) {
  cu::LaunchConfig cfg;
  for (int d = 0; d < 3; ++d) {
    cfg.grid[d] = static_cast<uint32_t>(abi.grid[size_t(d)].Eval(tokens, rows_arg));
    cfg.block[d] = static_cast<uint32_t>(abi.block[size_t(d)]);
  }
  cfg.shared_bytes = static_cast<uint32_t>(abi.dynamic_shared_bytes);
  cfg.programmatic = programmatic;
  return cfg;
}

absl::Status AllowSharedMemory(const cu::Context& ctx, cu::Function& f, const codegen::KernelAbi& abi) {
  if (abi.static_shared_bytes + abi.dynamic_shared_bytes <= 48 * 1024) return absl::OkStatus();
  return f.SetMaxDynamicSharedMemory(static_cast<int>(abi.dynamic_shared_bytes),
                                     ctx.device().max_shared_per_block_optin);
}

absl::StatusOr<WeightCopies> CopyWeights(const cu::Context& ctx, const cu::Stream& stream, CUdeviceptr w,
                                         int64_t w_bytes, CUdeviceptr scales, int64_t scale_bytes,
                                         int64_t min_total_bytes) {
  const int64_t s_bytes = std::max<int64_t>(scale_bytes, 256);
  const int count = static_cast<int>(std::max<int64_t>(2, (min_total_bytes + w_bytes + s_bytes - 1) / (w_bytes + s_bytes)));
  WeightCopies out;
  for (int i = 0; i < count; ++i) {
    // 256 bytes of slack: the staged weight formats read whole 16-byte
    // windows past a row's end (docs/codegen.md "Kernel ABI").
    ASSIGN_OR_RETURN(cu::DeviceBuffer bw, cu::DeviceBuffer::Allocate(ctx, uint64_t(w_bytes) + 256));
    ASSIGN_OR_RETURN(cu::DeviceBuffer bs, cu::DeviceBuffer::Allocate(ctx, uint64_t(s_bytes)));
    if (w != 0) {
      RETURN_IF_ERROR(stream.CopyDeviceToDevice(bw.ptr(), w, uint64_t(w_bytes)));
    } else {
      RETURN_IF_ERROR(stream.Memset(bw.ptr(), 0x11, uint64_t(w_bytes)));
    }
    if (scales != 0 && scale_bytes > 0) {
      RETURN_IF_ERROR(stream.CopyDeviceToDevice(bs.ptr(), scales, uint64_t(scale_bytes)));
    } else {
      RETURN_IF_ERROR(stream.Memset(bs.ptr(), 0x11, uint64_t(s_bytes)));
    }
    out.w.push_back(std::move(bw));
    out.scales.push_back(std::move(bs));
  }
  RETURN_IF_ERROR(stream.Synchronize());
  return out;
}

absl::StatusOr<Timing> TimeLaunches(const cu::Context& ctx, const cu::Stream& stream, const cu::Function& f,
                                    const cu::LaunchConfig& config, absl::FunctionRef<void**(int)> params,
                                    int warmup, int samples, int per_sample) {
  int i = 0;
  for (; i < warmup; ++i) RETURN_IF_ERROR(stream.Launch(f, config, params(i)));
  RETURN_IF_ERROR(stream.Synchronize());
  ASSIGN_OR_RETURN(std::unique_ptr<cu::Event> e0, cu::Event::Create(ctx, CU_EVENT_DEFAULT));
  ASSIGN_OR_RETURN(std::unique_ptr<cu::Event> e1, cu::Event::Create(ctx, CU_EVENT_DEFAULT));
  std::vector<double> us;
  for (int s = 0; s < samples; ++s) {
    RETURN_IF_ERROR(e0->Record(stream));
    for (int j = 0; j < per_sample; ++j, ++i) RETURN_IF_ERROR(stream.Launch(f, config, params(i)));
    RETURN_IF_ERROR(e1->Record(stream));
    RETURN_IF_ERROR(e1->Synchronize());
    ASSIGN_OR_RETURN(float ms, cu::Event::ElapsedMs(*e0, *e1));
    us.push_back(1000.0 * ms / per_sample);
  }
  if (us.empty()) return absl::InvalidArgumentError("TimeLaunches needs at least one sample");
  std::sort(us.begin(), us.end());
  return Timing{us[us.size() / 2], us.front()};
}

}  // namespace kiln::tune
