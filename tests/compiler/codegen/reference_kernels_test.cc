// The CPU reference kernels the GPU tests compare against: the int8
// activation levels, the planar and paired matvecs, the epilogues, argmax,
// the Q6_K planes and RoPE.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/reference_kernels.h"
#include "gtest/gtest.h"
#include "models/quant/float16.h"
#include "tests/compiler/codegen/test_specs.h"

namespace kiln::codegen {
namespace {

TEST(ReferenceKernels, Int8ActivationsTwoLevelsMatchFloatTo1e4) {
  // Two int8 levels per 32 columns: each x is represented to ~2^-15 of its
  // block's maximum, so a random dot product stays within ~1e-4 of the
  // float one (one level: ~1e-2).
  const int64_t rows = 64, cols = 1024;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(rows * cols)), x(static_cast<size_t>(cols));
  for (float& v : w) v = nd(rng);
  for (float& v : x) v = nd(rng);
  KernelSpec f = testing::MatVec("ref_f32", WeightFormat::kF32, rows, cols);
  KernelSpec q = f;
  q.matvec.int8_activations = true;  // the reference does not validate formats
  std::vector<float> want(size_t(rows), NAN), got(size_t(rows), NAN);
  ASSERT_TRUE(reference::MatVec(f, w.data(), nullptr, x.data(), nullptr, want.data(), 1).ok());
  ASSERT_TRUE(reference::MatVec(q, w.data(), nullptr, x.data(), nullptr, got.data(), 1).ok());
  double num = 0, den = 0, diff = 0;
  for (int64_t r = 0; r < rows; ++r) {
    num += double(got[size_t(r)] - want[size_t(r)]) * (got[size_t(r)] - want[size_t(r)]);
    den += double(want[size_t(r)]) * want[size_t(r)];
    diff = std::max(diff, std::fabs(double(got[size_t(r)] - want[size_t(r)])));
  }
  EXPECT_LT(std::sqrt(num / den), 1e-4);
  EXPECT_GT(diff, 0.0);  // it is quantized, not the float path
}

TEST(ReferenceKernels, MatVecPlanarAndSiluPairs) {
  // 4 rows x 32 cols, Q8_0 planar with scale 0.5: rows 0,1 are gates, 2,3 ups.
  KernelSpec s = testing::MatVec("ref", WeightFormat::kQ8_0Planar, 4, 32, Prologue::kNone, Epilogue::kSiluMulPairs);
  s.pair_group = 2;
  std::vector<int8_t> qs(4 * 32, 0);
  qs[0 * 32 + 0] = 2;   // gate 0 = 2 * 0.5 * x0 = 1
  qs[1 * 32 + 1] = -4;  // gate 1 = -2 * x1 = -2
  qs[2 * 32 + 0] = 6;   // up 0 = 3
  qs[3 * 32 + 1] = 8;   // up 1 = 4
  std::vector<uint16_t> d(4, quant::FloatToHalf(0.5f));
  std::vector<float> x(32, 0.0f);
  x[0] = 1.0f;
  x[1] = 1.0f;
  std::vector<float> out(2, NAN);
  ASSERT_TRUE(reference::MatVec(s, qs.data(), d.data(), x.data(), nullptr, out.data(), 1).ok());
  auto silu = [](double z) { return z / (1 + std::exp(-z)); };
  EXPECT_NEAR(out[0], silu(1.0) * 3.0, 1e-6);
  EXPECT_NEAR(out[1], silu(-2.0) * 4.0, 1e-6);
}

TEST(ReferenceKernels, SiluMulWithMultipliesTheGate) {
  KernelSpec s = testing::MatVec("ref", WeightFormat::kF32, 2, 4, Prologue::kNone, Epilogue::kSiluMulWith);
  std::vector<float> w = {1, 0, 0, 0, 0, 1, 0, 0}, x = {3, 5, 0, 0}, gate = {0, 2}, out(2, NAN);
  ASSERT_TRUE(reference::MatVec(s, w.data(), nullptr, x.data(), nullptr, out.data(), 1, gate.data()).ok());
  EXPECT_FLOAT_EQ(out[0], 0.0f);  // silu(0) * 3
  EXPECT_NEAR(out[1], 2.0 / (1 + std::exp(-2.0)) * 5.0, 1e-6);
}

TEST(ReferenceKernels, RmsNormPrologueAndResidualAdd) {
  KernelSpec s = testing::MatVec("ref", WeightFormat::kF32, 1, 4, Prologue::kRmsNorm, Epilogue::kAddInPlace);
  std::vector<float> w = {1, 1, 1, 1}, x = {1, 1, 1, 1}, nw = {1, 2, 3, 4}, out = {10};
  s.eps = 0.0f;
  ASSERT_TRUE(reference::MatVec(s, w.data(), nullptr, x.data(), nw.data(), out.data(), 1).ok());
  EXPECT_FLOAT_EQ(out[0], 20.0f);  // rms(x) = 1, sum(nw) = 10
}

TEST(ReferenceKernels, ArgmaxAndCopyRows) {
  KernelSpec a;
  a.name = "a";
  a.family = Family::kArgmax;
  a.rows = 2;
  std::vector<float> l = {1, 3, 3, NAN, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  std::vector<int32_t> out(2, -1);
  ASSERT_TRUE(reference::Argmax(a, l.data(), out.data(), 4).ok());
  EXPECT_EQ(out, (std::vector<int32_t>{1, 0}));
  KernelSpec c;
  c.name = "c";
  c.family = Family::kCopyRows;
  c.row_bytes = 1;
  std::vector<uint8_t> src = {10, 11, 12, 13}, dst(8, 0);
  // gate/up interleave with pair_group 2: up rows go to 2,3,6,7.
  ASSERT_TRUE(reference::CopyRows(c, src.data(), dst.data(), 4, 2, 2, 4).ok());
  EXPECT_EQ(dst, (std::vector<uint8_t>{0, 0, 10, 11, 0, 0, 12, 13}));
}

// kQ6_KPlanar's layout (kPackQ6_K, the reference the GPU tests compare
// against): random GGUF Q6_K rows packed into planes decode to the same
// weights row by row, the bytes after the planes' rows keep their poison,
// and a matvec over the planes equals one over the GGUF rows.
TEST(ReferenceKernels, PackQ6_KPlanesDecodeToTheGgufRows) {
  const int64_t cols = 512, nb = cols / 256;
  const int32_t rows = 6;
  std::mt19937 rng(11);
  std::vector<uint8_t> gguf(size_t(rows * nb * 210));
  for (uint8_t& b : gguf) b = static_cast<uint8_t>(rng());
  for (int64_t b = 0; b < rows * nb; ++b) {
    const uint16_t d = quant::FloatToHalf(0.001f * static_cast<float>(1 + b % 7));
    std::memcpy(gguf.data() + b * 210 + 208, &d, 2);
  }
  KernelSpec pack;
  pack.name = "pack6";
  pack.family = Family::kPackQ6_K;
  pack.cols = cols;
  // One row of poison past each plane.
  std::vector<uint8_t> data(size_t((rows + 1) * nb * 208), 0xAB), d(size_t((rows + 1) * nb * 2), 0xAB);
  ASSERT_TRUE(reference::PackQ6_K(pack, gguf.data(), data.data(), d.data(), rows).ok());
  for (int32_t i = 0; i < rows; ++i) {
    std::vector<float> want(static_cast<size_t>(cols)), got(static_cast<size_t>(cols));
    ASSERT_TRUE(reference::DequantizeRow(WeightFormat::kQ6_K, gguf.data(), nullptr, cols, i, want.data()).ok());
    ASSERT_TRUE(reference::DequantizeRow(WeightFormat::kQ6_KPlanar, data.data(), d.data(), cols, i, got.data()).ok());
    EXPECT_EQ(got, want) << "row " << i;
  }
  for (size_t k = size_t(rows * nb * 208); k < data.size(); ++k) ASSERT_EQ(data[k], 0xAB) << k;
  for (size_t k = size_t(rows * nb * 2); k < d.size(); ++k) ASSERT_EQ(d[k], 0xAB) << k;
  KernelSpec mv = testing::MatVec("mv", WeightFormat::kQ6_K, rows, cols, Prologue::kNone, Epilogue::kStore);
  KernelSpec mvp = mv;
  mvp.weight = WeightFormat::kQ6_KPlanar;
  std::vector<float> x(static_cast<size_t>(cols));
  for (float& v : x) v = static_cast<float>(rng() % 2001) / 1000.0f - 1.0f;
  std::vector<float> a(size_t(rows), NAN), b(size_t(rows), NAN);
  ASSERT_TRUE(reference::MatVec(mv, gguf.data(), nullptr, x.data(), nullptr, a.data(), 1).ok());
  ASSERT_TRUE(reference::MatVec(mvp, data.data(), d.data(), x.data(), nullptr, b.data(), 1).ok());
  EXPECT_EQ(a, b);
  for (float v : a) EXPECT_TRUE(std::isfinite(v));
}

TEST(ReferenceKernels, RopeRotatesPairsHalfADimApart) {
  KernelSpec r;
  r.name = "r";
  r.family = Family::kQkNormRopeStore;
  r.n_head = 1;
  r.n_head_kv = 1;
  r.head_dim = 4;
  r.rope_base = 100.0f;
  r.kv_f16 = false;
  r.eps = 0.0f;
  // q = (1, 0, 0, 0) normalizes to (2, 0, 0, 0); at position 3, pair (0, 2)
  // rotates by 3 rad.
  std::vector<float> qkv = {1, 0, 0, 0, 0, 1, 0, 0, 5, 6, 7, 8};
  std::vector<float> ones(4, 1.0f), q(4);
  std::vector<float> k(4 * 4, 0.0f), v(4 * 4, 0.0f);
  int32_t pos = 3;
  ASSERT_TRUE(reference::QkNormRopeStore(r, qkv.data(), ones.data(), ones.data(), &pos, k.data(), v.data(), q.data(), 1)
                  .ok());
  EXPECT_NEAR(q[0], 2 * std::cos(3.0), 1e-6);
  EXPECT_NEAR(q[2], 2 * std::sin(3.0), 1e-6);
  // k = (0, 1, 0, 0) -> 2 at dim 1, pair (1, 3) rotates by 3 * 100^(-1/2).
  EXPECT_NEAR(k[3 * 4 + 1], 2 * std::cos(0.3), 1e-6);
  EXPECT_NEAR(k[3 * 4 + 3], 2 * std::sin(0.3), 1e-6);
  EXPECT_EQ(v[3 * 4 + 0], 5.0f);
  EXPECT_EQ(v[3 * 4 + 3], 8.0f);
  // YaRN with its ramp over pairs [0, 1]: pair 0 keeps its angle (mix 1),
  // pair 1 is interpolated by the factor 2 (mix 0), both scaled by 1.5.
  r.rope_scaling = {0.5f, 1.0f, 0.0f, 1.0f, 1.5f};
  ASSERT_TRUE(reference::QkNormRopeStore(r, qkv.data(), ones.data(), ones.data(), &pos, k.data(), v.data(), q.data(), 1)
                  .ok());
  EXPECT_NEAR(q[0], 3 * std::cos(3.0), 1e-6);
  EXPECT_NEAR(q[2], 3 * std::sin(3.0), 1e-6);
  EXPECT_NEAR(k[3 * 4 + 1], 3 * std::cos(0.15), 1e-6);
  EXPECT_NEAR(k[3 * 4 + 3], 3 * std::sin(0.15), 1e-6);
}

}  // namespace
}  // namespace kiln::codegen
