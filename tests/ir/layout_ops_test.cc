// The ops pack-weights uses: q8_0_split, q6_k_split and the planar 3-operand matmul,
// concat_rows, interleave_rows, slice, swiglu; last_row (a prefill's last-token
// logits); their shape errors; arena.
#include <cmath>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/verifier.h"
#include "models/quant/dequantize.h"
#include "models/quant/float16.h"
#include "models/quant/quantize.h"

namespace kiln::ir {
namespace {

using gguf::GgmlType;

std::vector<float> Normal(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

std::vector<uint8_t> Quantize(GgmlType type, const std::vector<float>& v) {
  std::vector<uint8_t> bytes(quant::RowBytes(type, static_cast<int64_t>(v.size())));
  EXPECT_TRUE(quant::Quantize(type, v, absl::MakeSpan(bytes)).ok());
  return bytes;
}

HostTensor F32(std::vector<int64_t> dims, std::vector<float> v) {
  return HostTensor::FromFloats(DType::kF32, std::move(dims), std::move(v));
}

std::unique_ptr<Module> Parse(const std::string& text) {
  auto m = ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return nullptr;
  absl::Status s = Verify(**m);
  EXPECT_TRUE(s.ok()) << s;
  return std::move(*m);
}

std::vector<HostTensor> RunF(Interpreter& interp, const std::string& f, std::vector<HostTensor> args) {
  auto out = interp.Run(f, std::move(args));
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *std::move(out) : std::vector<HostTensor>{};
}

// The spec's worked example (spec/quant-formats.md §2) split into planes.
TEST(LayoutOps, Q8_0SplitFollowsTheSpecExample) {
  std::vector<uint8_t> block(34, 0);
  block[0] = 0x00, block[1] = 0x34;  // d = 0.25
  block[2] = 0x01, block[3] = 0x80, block[4] = 0xFF, block[33] = 0x7F;
  MemoryWeightSource ws;
  ws.Add("w", GgmlType::kQ8_0, {32, 1}, block);
  auto m = Parse(R"(weight @w : q8_0[1, 32] = "w"
state @w.qs : i8[1, 32]
state @w.d : f16[1, 1]

func @load() {
  %qs, %d = q8_0_split(@w) : i8[1, 32], f16[1, 1]
  store(%qs, @w.qs)
  store(%d, @w.d)
  return()
}
)");
  ASSERT_NE(m, nullptr);
  auto interp = Interpreter::Create(*m, ws, {.threads = 1});
  ASSERT_TRUE(interp.ok()) << interp.status();
  RunF(**interp, "load", {});
  const std::vector<int32_t>& qs = (*interp)->state("w.qs")->ints();
  EXPECT_EQ(qs[0], 1);
  EXPECT_EQ(qs[1], -128);
  EXPECT_EQ(qs[2], -1);
  EXPECT_EQ(qs[3], 0);
  EXPECT_EQ(qs[31], 127);
  EXPECT_EQ((*interp)->state("w.d")->floats()[0], 0.25f);
}

// matmul(x, qs, d) on a split's planes (q8_0_split: i8 and one f16 scale
// per 32; q6_k_split: q6_kd and one f16 d per 256) equals matmul(x, W) bit
// for bit; a poisoned scale shows that the 3-operand form reads the plane
// (row 1 holds scale 1 * K/block + (K/block - 1)).
void ExpectPlanarMatMulEqualsTheBlockForm(GgmlType type, const char* dtype, const char* split, const char* plane,
                                          int64_t block, int64_t M, int64_t K) {
  const int64_t nb = K / block;
  MemoryWeightSource ws;
  ws.Add("w", type, {K, M}, Quantize(type, Normal(M * K, 1)));
  const std::string d = absl::StrCat("f16[", M, ", ", nb, "]"), qs = absl::StrCat(plane, "[", M, ", ", K, "]");
  auto m = Parse(absl::StrCat("weight @w : ", dtype, "[", M, ", ", K, "] = \"w\"\nstate @w.qs : ", qs,
                              "\nstate @w.d : ", d, "\n\nfunc @load() {\n  %qs, %d = ", split, "(@w) : ", qs, ", ", d,
                              "\n  store(%qs, @w.qs)\n  store(%d, @w.d)\n  return()\n}\n\nfunc @f(%x: f32[T, ", K,
                              "]) -> (f32[T, ", M, "], f32[T, ", M, "]) {\n  %a = matmul(%x, @w) : f32[T, ", M,
                              "]\n  %b = matmul(%x, @w.qs, @w.d) : f32[T, ", M, "]\n  return(%a, %b)\n}\n"));
  ASSERT_NE(m, nullptr);
  auto interp = Interpreter::Create(*m, ws, {.threads = 2});
  ASSERT_TRUE(interp.ok()) << interp.status();
  RunF(**interp, "load", {});
  auto out = RunF(**interp, "f", {F32({3, K}, Normal(3 * K, 2))});
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].floats().size(), static_cast<size_t>(3 * M));
  EXPECT_EQ(std::memcmp(out[0].floats().data(), out[1].floats().data(), 3 * M * sizeof(float)), 0) << split;
  (*interp)->state("w.d")->floats()[size_t(2 * nb - 1)] = std::nanf("");
  out = RunF(**interp, "f", {F32({3, K}, Normal(3 * K, 2))});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(std::isnan(out[0].floats()[1])) << split;
  EXPECT_TRUE(std::isnan(out[1].floats()[1])) << split;
}

TEST(LayoutOps, PlanarMatMulsEqualTheBlockForms) {
  ExpectPlanarMatMulEqualsTheBlockForm(GgmlType::kQ8_0, "q8_0", "q8_0_split", "i8", 32, 40, 96);
  ExpectPlanarMatMulEqualsTheBlockForm(GgmlType::kQ6_K, "q6_k", "q6_k_split", "q6_kd", 256, 24, 512);
}

// Quantized rows are concatenated and interleaved as whole blocks; float
// rows as values.
TEST(LayoutOps, ConcatAndInterleaveRows) {
  MemoryWeightSource ws;
  const std::vector<float> a = Normal(4 * 32, 3), b = Normal(4 * 32, 4);
  ws.Add("a", GgmlType::kQ8_0, {32, 4}, Quantize(GgmlType::kQ8_0, a));
  ws.Add("b", GgmlType::kQ8_0, {32, 4}, Quantize(GgmlType::kQ8_0, b));
  ws.AddF32("fa", {32, 4}, a);
  ws.AddF32("fb", {32, 2}, absl::MakeConstSpan(b.data(), 64));
  auto m = Parse(R"(weight @a : q8_0[4, 32] = "a"
weight @b : q8_0[4, 32] = "b"
weight @fa : f32[4, 32] = "fa"
weight @fb : f32[2, 32] = "fb"
state @cat : q8_0[8, 32]
state @mix : q8_0[8, 32]
state @fcat : f32[6, 32]
state @fmix : f32[8, 32]

func @load() {
  %cat = concat_rows(@a, @b) : q8_0[8, 32]
  store(%cat, @cat)
  %mix = interleave_rows(@a, @b) {group = 2} : q8_0[8, 32]
  store(%mix, @mix)
  %fcat = concat_rows(@fa, @fb) : f32[6, 32]
  store(%fcat, @fcat)
  %fmix = interleave_rows(@fa, @fa) {group = 1} : f32[8, 32]
  store(%fmix, @fmix)
  return()
}
)");
  ASSERT_NE(m, nullptr);
  auto interp = Interpreter::Create(*m, ws, {.threads = 1});
  ASSERT_TRUE(interp.ok()) << interp.status();
  RunF(**interp, "load", {});
  const std::vector<uint8_t> qa = Quantize(GgmlType::kQ8_0, a), qb = Quantize(GgmlType::kQ8_0, b);
  const std::vector<uint8_t>& cat = (*interp)->state("cat")->owned_bytes();
  const std::vector<uint8_t>& mix = (*interp)->state("mix")->owned_bytes();
  ASSERT_EQ(cat.size(), 8u * 34);
  ASSERT_EQ(mix.size(), 8u * 34);
  for (int r = 0; r < 8; ++r) {
    const uint8_t* want_cat = r < 4 ? &qa[r * 34] : &qb[(r - 4) * 34];
    EXPECT_EQ(std::memcmp(&cat[r * 34], want_cat, 34), 0) << "concat row " << r;
    // group 2: a0 a1 b0 b1 a2 a3 b2 b3
    const int src = (r / 4) * 2 + r % 2;
    const uint8_t* want_mix = (r / 2) % 2 == 0 ? &qa[src * 34] : &qb[src * 34];
    EXPECT_EQ(std::memcmp(&mix[r * 34], want_mix, 34), 0) << "interleave row " << r;
  }
  const std::vector<float>& fcat = (*interp)->state("fcat")->floats();
  EXPECT_EQ(fcat[3 * 32 + 5], a[3 * 32 + 5]);
  EXPECT_EQ(fcat[5 * 32 + 7], b[32 + 7]);
  const std::vector<float>& fmix = (*interp)->state("fmix")->floats();
  EXPECT_EQ(fmix[3 * 32 + 1], a[1 * 32 + 1]);  // rows a0 a0 a1 a1 ...
}

TEST(LayoutOps, SliceAndSwiglu) {
  MemoryWeightSource ws;
  auto m = Parse(R"(func @f(%x: f32[T, 8]) -> (f32[T, 3], f32[T, 4]) {
  %s = slice(%x) {size = 3, start = 4} : f32[T, 3]
  %y = swiglu(%x) {group = 2} : f32[T, 4]
  return(%s, %y)
}
)");
  ASSERT_NE(m, nullptr);
  auto interp = Interpreter::Create(*m, ws, {.threads = 1});
  ASSERT_TRUE(interp.ok()) << interp.status();
  const std::vector<float> x = Normal(16, 5, 2.0f);
  auto out = RunF(**interp, "f", {F32({2, 8}, x)});
  ASSERT_EQ(out.size(), 2u);
  for (int t = 0; t < 2; ++t) {
    for (int j = 0; j < 3; ++j) EXPECT_EQ(out[0].floats()[t * 3 + j], x[t * 8 + 4 + j]);
    // Row layout with G = 2: g0 g1 u0 u1 g2 g3 u2 u3.
    const int gate[4] = {0, 1, 4, 5}, up[4] = {2, 3, 6, 7};
    for (int j = 0; j < 4; ++j) {
      const float g = x[t * 8 + gate[j]], u = x[t * 8 + up[j]];
      const float silu = g / (1.0f + std::exp(-g));
      EXPECT_EQ(out[1].floats()[t * 4 + j], silu * u) << "t " << t << " j " << j;
    }
  }
}

TEST(LayoutOps, LastRowTakesTheLastToken) {
  MemoryWeightSource ws;
  auto m = Parse(R"(func @f(%x: f32[T, 2, 3], %i: i32[T, 2]) -> (f32[1, 2, 3], i32[1, 2]) {
  %y = last_row(%x) : f32[1, 2, 3]
  %j = last_row(%i) : i32[1, 2]
  return(%y, %j)
}
)");
  ASSERT_NE(m, nullptr);
  auto interp = Interpreter::Create(*m, ws, {.threads = 1});
  ASSERT_TRUE(interp.ok()) << interp.status();
  for (int64_t t : {1, 4}) {
    const std::vector<float> x = Normal(static_cast<size_t>(t * 6), 11, 3.0f);
    std::vector<int32_t> ids(static_cast<size_t>(t * 2));
    for (size_t k = 0; k < ids.size(); ++k) ids[k] = static_cast<int32_t>(100 + k);
    auto out = RunF(**interp, "f", {F32({t, 2, 3}, x), HostTensor::FromInts(DType::kI32, {t, 2}, ids)});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{1, 2, 3}));
    for (int k = 0; k < 6; ++k) EXPECT_EQ(out[0].floats()[k], x[(t - 1) * 6 + k]) << "T " << t;
    EXPECT_EQ(out[1].ints(), (std::vector<int32_t>{ids[(t - 1) * 2], ids[(t - 1) * 2 + 1]})) << "T " << t;
  }
}

TEST(LayoutOps, ShapeErrors) {
  const char* bad[] = {
      // scale plane of the wrong shape
      "weight @q : i8[4, 64] = \"q\"\nweight @d : f16[4, 3] = \"d\"\n"
      "func @f(%x: f32[1, 64]) -> (f32[1, 4]) {\n  %y = matmul(%x, @q, @d) : f32[1, 4]\n  return(%y)\n}\n",
      // concat of different widths
      "weight @a : f32[4, 32] = \"a\"\nweight @b : f32[4, 64] = \"b\"\n"
      "func @load() {\n  %c = concat_rows(@a, @b) : f32[8, 32]\n  return()\n}\n",
      // interleave of different dtypes
      "weight @a : f32[4, 32] = \"a\"\nweight @b : f16[4, 32] = \"b\"\n"
      "func @load() {\n  %c = interleave_rows(@a, @b) {group = 2} : f32[8, 32]\n  return()\n}\n",
      // group not dividing the rows
      "weight @a : f32[6, 32] = \"a\"\n"
      "func @load() {\n  %c = interleave_rows(@a, @a) {group = 4} : f32[12, 32]\n  return()\n}\n",
      // slice past the end
      "func @f(%x: f32[T, 8]) -> (f32[T, 4]) {\n  %y = slice(%x) {size = 4, start = 6} : f32[T, 4]\n  return(%y)\n}\n",
      // swiglu group not dividing half the width
      "func @f(%x: f32[T, 12]) -> (f32[T, 6]) {\n  %y = swiglu(%x) {group = 4} : f32[T, 6]\n  return(%y)\n}\n",
      // last_row of a vector, and of a quantized matrix
      "func @f(%x: f32[T]) -> (f32[1]) {\n  %y = last_row(%x) : f32[1]\n  return(%y)\n}\n",
      "weight @a : q8_0[4, 32] = \"a\"\n"
      "func @load() {\n  %r = last_row(@a) : q8_0[1, 32]\n  return()\n}\n",
      // q8_0_split of a non-q8_0 matrix
      "weight @a : q4_0[4, 32] = \"a\"\n"
      "func @load() {\n  %q, %d = q8_0_split(@a) : i8[4, 32], f16[4, 1]\n  return()\n}\n",
  };
  for (const char* text : bad) {
    auto m = ParseModule(text);
    ASSERT_TRUE(m.ok()) << m.status() << "\n" << text;
    EXPECT_FALSE(Verify(**m).ok()) << text;
  }
  // ... and the good forms of the same ops verify.
  auto m = ParseModule(
      "weight @a : f32[4, 32] = \"a\"\n"
      "func @load() {\n  arena() {bytes = \"0\", kernels = 0}\n"
      "  %c = interleave_rows(@a, @a) {group = 4} : f32[8, 32]\n"
      "  %d = concat_rows(@a, %c, @a) : f32[16, 32]\n  return()\n}\n");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(Verify(**m).ok()) << Verify(**m);
}

}  // namespace
}  // namespace kiln::ir
