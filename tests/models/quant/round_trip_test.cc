// dequant(quant(x)) against x on fresh random data, per type: every decoded
// value is finite and the relative RMS error stays under a measured bound.
//
// Data: 16 rows x 1024 of N(0, 1) values times a per-row scale drawn
// log-uniformly from [1e-3, 1e2], with a fraction of the values replaced by
// outliers of a few to tens of sigma. The error metric, accumulated in
// double, is sqrt(mean over rows of ||y_r - x_r||^2 / ||x_r||^2), so rows of
// every scale count equally.
//
// Bounds: a little (~10-15%) above the largest error measured over seeds
// 1-40 for each data set (the maxima are in the trailing comments). Even
// without outliers, Gaussian data gives Q6_K ~0.018 and Q4_0 ~0.086: that is
// the format's resolution (Q6_K: 64 levels spanning the 16-element max;
// Q4_0: 16 levels spanning the 32-element max), not a quantizer defect.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "models/gguf/ggml_type.h"
#include "models/quant/dequantize.h"
#include "models/quant/quantize.h"

namespace kiln::quant {
namespace {

using gguf::GgmlType;

constexpr int kRows = 16;
constexpr int kCols = 1024;

struct DataSet {
  const char* name;
  float outlier_rate;
  float outlier_lo;  // in units of the row's sigma
  float outlier_hi;
  // Bounds on the relative RMS error, in the order of kTypes.
  double bound[8];
};

constexpr GgmlType kTypes[8] = {GgmlType::kF32,  GgmlType::kBF16, GgmlType::kF16,  GgmlType::kQ8_0,
                                GgmlType::kQ6_K, GgmlType::kQ5_K, GgmlType::kQ4_K, GgmlType::kQ4_0};

// clang-format off
constexpr DataSet kDataSets[] = {
    // Weight-like: rare moderate outliers.
    {"moderate", 0.002f, 4.0f, 10.0f,
     {
         0.0,     // F32: exact
         0.002,   // BF16: 0.00169
         0.00025, // F16: 0.000211 (rows scaled by 1e-3 reach fp16 subnormals)
         0.0075,  // Q8_0: 0.0067
         0.024,   // Q6_K: 0.0211
         0.045,   // Q5_K: 0.0401
         0.09,    // Q4_K: 0.0794
         0.12,    // Q4_0: 0.1068
     }},
    // Stress: 1% outliers of 8-30 sigma dominate many blocks' scales.
    {"heavy", 0.01f, 8.0f, 30.0f,
     {
         0.0,     // F32
         0.002,   // BF16: 0.00175
         0.00025, // F16: 0.000223
         0.013,   // Q8_0: 0.0113
         0.037,   // Q6_K: 0.0326
         0.06,    // Q5_K: 0.0527
         0.12,    // Q4_K: 0.1052
         0.19,    // Q4_0: 0.1666
     }},
};
// clang-format on

std::vector<float> MakeData(const DataSet& ds, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(kRows) * kCols);
  for (int r = 0; r < kRows; ++r) {
    const float row_scale = std::pow(10.0f, -3.0f + 5.0f * unit(rng));
    for (int c = 0; c < kCols; ++c) {
      float v = normal(rng);
      if (unit(rng) < ds.outlier_rate)
        v = (unit(rng) < 0.5f ? -1.0f : 1.0f) *
            (ds.outlier_lo + (ds.outlier_hi - ds.outlier_lo) * unit(rng));
      x[static_cast<size_t>(r) * kCols + c] = v * row_scale;
    }
  }
  return x;
}

class RoundTrip : public ::testing::TestWithParam<std::tuple<int, uint32_t>> {};

TEST_P(RoundTrip, RelativeRmsErrorWithinBound) {
  const DataSet& ds = kDataSets[std::get<0>(GetParam())];
  const uint32_t seed = std::get<1>(GetParam());
  const std::vector<float> x = MakeData(ds, seed);
  for (int t = 0; t < 8; ++t) {
    const GgmlType type = kTypes[t];
    const char* name = gguf::TypeName(type).data();
    std::vector<uint8_t> bytes(RowBytes(type, kCols) * kRows);
    ASSERT_TRUE(Quantize(type, x, absl::MakeSpan(bytes)).ok()) << name;
    std::vector<float> y(x.size(), std::numeric_limits<float>::quiet_NaN());  // poison
    ASSERT_TRUE(Dequantize(type, bytes, absl::MakeSpan(y)).ok()) << name;
    double sum_rel2 = 0;
    for (int r = 0; r < kRows; ++r) {
      double err2 = 0, ref2 = 0;
      for (int c = 0; c < kCols; ++c) {
        const size_t i = static_cast<size_t>(r) * kCols + c;
        ASSERT_TRUE(std::isfinite(y[i])) << name << " element " << i;
        const double d = static_cast<double>(y[i]) - static_cast<double>(x[i]);
        err2 += d * d;
        ref2 += static_cast<double>(x[i]) * x[i];
      }
      sum_rel2 += err2 / ref2;
    }
    const double rel_rms = std::sqrt(sum_rel2 / kRows);
    std::printf("%-8s seed %2u %-5s relative RMS error %.4g (bound %g)\n", ds.name, seed, name,
                rel_rms, ds.bound[t]);
    EXPECT_LE(rel_rms, ds.bound[t]) << ds.name << " " << name << " seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, RoundTrip,
                         ::testing::Combine(::testing::Values(0, 1),
                                            ::testing::Values(1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u)));

}  // namespace
}  // namespace kiln::quant
