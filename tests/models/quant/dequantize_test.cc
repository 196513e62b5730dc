// Dequantization against the worked examples of spec/quant-formats.md §1-§7,
// plus the spec's per-element formulas on random blocks, and error cases.
#include "models/quant/dequantize.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "models/gguf/ggml_type.h"
#include "models/quant/float16.h"
#include "models/quant/scale_min_k4.h"
#include "tests/models/quant/hex.h"

namespace kiln::quant {
namespace {

using gguf::GgmlType;
using testing::Hex;

// Decodes `bytes` as `n` elements of `type` into a NaN-poisoned buffer.
std::vector<float> Decode(GgmlType type, const std::vector<uint8_t>& bytes, int n) {
  std::vector<float> y(n, std::numeric_limits<float>::quiet_NaN());
  const absl::Status s = Dequantize(type, bytes, absl::MakeSpan(y));
  EXPECT_TRUE(s.ok()) << s;
  return y;
}

TEST(Dequantize, F32) {
  const auto y = Decode(GgmlType::kF32, Hex("00 00 80 3F 00 00 00 C0"), 2);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
}

TEST(Dequantize, F16AndBf16AreLittleEndian) {
  const auto h = Decode(GgmlType::kF16, Hex("00 3C 00 C0 55 35 FF 7B 01 00 00 7C"), 6);
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.0f);
  EXPECT_EQ(h[2], 0.333251953125f);
  EXPECT_EQ(h[3], 65504.0f);
  EXPECT_EQ(h[4], 5.9604644775390625e-08f);
  EXPECT_EQ(h[5], std::numeric_limits<float>::infinity());
  const auto b = Decode(GgmlType::kBF16, Hex("80 3F 49 40 F7 C2"), 3);
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(b[1], 3.140625f);
  EXPECT_EQ(b[2], -123.5f);
}

// §2 worked example.
TEST(Dequantize, Q8_0SpecExample) {
  std::vector<uint8_t> block(34, 0);
  block[0] = 0x00;
  block[1] = 0x34;
  block[2 + 0] = 0x01;
  block[2 + 1] = 0x80;
  block[2 + 2] = 0xFF;
  block[2 + 31] = 0x7F;
  const auto y = Decode(GgmlType::kQ8_0, block, 32);
  EXPECT_EQ(y[0], 0.25f);
  EXPECT_EQ(y[1], -32.0f);
  EXPECT_EQ(y[2], -0.25f);
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_EQ(y[31], 31.75f);
}

// §3 worked example.
TEST(Dequantize, Q4_0SpecExample) {
  std::vector<uint8_t> block(18, 0x88);
  block[0] = 0x00;
  block[1] = 0x38;
  block[2 + 0] = 0x7A;
  block[2 + 15] = 0x0F;
  const auto y = Decode(GgmlType::kQ4_0, block, 32);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[16], -0.5f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[15], 3.5f);
  EXPECT_EQ(y[31], -4.0f);
}

const uint8_t kSc[8] = {1, 2, 3, 4, 40, 50, 60, 63};
const uint8_t kM[8] = {5, 6, 7, 8, 33, 17, 0, 48};

// §4.1 worked packing example.
TEST(ScaleMinK4, SpecPackingExample) {
  uint8_t s[kScaleMinK4Bytes];
  PackScaleMinK4(kSc, kM, s);
  EXPECT_EQ(std::vector<uint8_t>(s, s + 12), Hex("81 C2 C3 C4 85 46 07 C8 18 12 0C 0F"));
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    UnpackScaleMinK4(s, j, &sc, &m);
    EXPECT_EQ(sc, kSc[j]) << j;
    EXPECT_EQ(m, kM[j]) << j;
  }
}

TEST(ScaleMinK4, RandomCodesRoundTrip) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> code(0, 63);
  for (int iter = 0; iter < 1000; ++iter) {
    uint8_t sc[8], m[8], s[12];
    for (int j = 0; j < 8; ++j) {
      sc[j] = static_cast<uint8_t>(code(rng));
      m[j] = static_cast<uint8_t>(code(rng));
    }
    PackScaleMinK4(sc, m, s);
    for (int j = 0; j < 8; ++j) {
      uint8_t a, b;
      UnpackScaleMinK4(s, j, &a, &b);
      ASSERT_EQ(a, sc[j]);
      ASSERT_EQ(b, m[j]);
    }
  }
}

// The §5 example block; Q5_K reuses its first 16 bytes and qs.
std::vector<uint8_t> Q4KExampleBlock() {
  std::vector<uint8_t> b(144, 0);
  b[0] = 0x00, b[1] = 0x38;  // d = 0.5
  b[2] = 0x00, b[3] = 0x34;  // dmin = 0.25
  PackScaleMinK4(kSc, kM, b.data() + 4);
  b[16 + 0] = 0x3C;
  b[16 + 63] = 0xA7;
  b[16 + 101] = 0xF0;
  return b;
}

// §5 worked example table.
TEST(Dequantize, Q4_KSpecExample) {
  const auto y = Decode(GgmlType::kQ4_K, Q4KExampleBlock(), 256);
  EXPECT_EQ(y[0], 4.75f);
  EXPECT_EQ(y[32], 1.5f);
  EXPECT_EQ(y[1], -1.25f);
  EXPECT_EQ(y[33], -1.5f);
  EXPECT_EQ(y[95], 8.75f);
  EXPECT_EQ(y[127], 18.0f);
  EXPECT_EQ(y[197], 0.0f);
  EXPECT_EQ(y[229], 460.5f);
}

// §6 worked example list.
TEST(Dequantize, Q5_KSpecExample) {
  const std::vector<uint8_t> q4 = Q4KExampleBlock();
  std::vector<uint8_t> b(176, 0);
  std::memcpy(b.data(), q4.data(), 16);             // d, dmin, scales
  std::memcpy(b.data() + 48, q4.data() + 16, 128);  // qs
  b[16 + 0] = 0x03;
  b[16 + 5] = 0x81;
  b[16 + 31] = 0x0C;
  const auto y = Decode(GgmlType::kQ5_K, b, 256);
  EXPECT_EQ(y[0], 12.75f);
  EXPECT_EQ(y[32], 17.5f);
  EXPECT_EQ(y[5], 6.75f);
  EXPECT_EQ(y[229], 964.5f);
  EXPECT_EQ(y[95], 32.75f);
  EXPECT_EQ(y[127], 50.0f);
  EXPECT_EQ(y[197], 0.0f);
}

// §7 worked example table.
TEST(Dequantize, Q6_KSpecExample) {
  std::vector<uint8_t> b(210, 0);
  const int8_t scales[16] = {2, 2, -3, 4, 4, 6, 5, 8, -128, 10, 11, 12, 13, 14, 15, 127};
  std::memcpy(b.data() + 192, scales, 16);
  b[208] = 0x00, b[209] = 0x30;  // d = 0.125
  b[0] = 0x5A;
  b[32] = 0x0F;
  b[128 + 0] = 0xE4;
  b[64] = 0x21;
  b[128 + 32] = 0x1B;
  b[127] = 0xF0;
  b[128 + 63] = 0xC0;
  const auto y = Decode(GgmlType::kQ6_K, b, 256);
  EXPECT_EQ(y[0], -5.5f);
  EXPECT_EQ(y[32], 0.375f);
  EXPECT_EQ(y[64], 2.5f);
  EXPECT_EQ(y[96], 10.0f);
  EXPECT_EQ(y[1], -8.0f);
  EXPECT_EQ(y[128], -272.0f);
  EXPECT_EQ(y[160], 0.0f);
  EXPECT_EQ(y[192], -22.75f);
  EXPECT_EQ(y[224], -60.0f);
  EXPECT_EQ(y[255], 492.125f);
}

// Random bytes with random finite fp16 scales.
std::vector<uint8_t> RandomBlocks(std::mt19937& rng, int blocks, int block_bytes,
                                  std::vector<int> f16_offsets) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> b(static_cast<size_t>(blocks) * block_bytes);
  for (auto& v : b) v = static_cast<uint8_t>(byte(rng));
  for (int k = 0; k < blocks; ++k)
    for (int off : f16_offsets) {
      uint8_t* p = b.data() + k * block_bytes + off;
      if ((p[1] & 0x7C) == 0x7C) p[1] &= 0xBF;  // Inf/NaN -> finite
    }
  return b;
}

float F16At(const uint8_t* p) { return HalfToFloat(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

// The general per-element formulas of §5 and §6, written independently of
// the decoder's loop structure.
TEST(Dequantize, Q4_KAndQ5_KMatchPerElementFormula) {
  std::mt19937 rng(11);
  for (bool q5 : {false, true}) {
    const int bytes = q5 ? 176 : 144;
    const auto data = RandomBlocks(rng, 64, bytes, {0, 2});
    const auto y = Decode(q5 ? GgmlType::kQ5_K : GgmlType::kQ4_K, data, 64 * 256);
    for (int k = 0; k < 64; ++k) {
      const uint8_t* b = data.data() + k * bytes;
      const uint8_t* qs = b + (q5 ? 48 : 16);
      const uint8_t* qh = b + 16;
      for (int i = 0; i < 256; ++i) {
        const int g = i / 32;
        uint8_t sc, m;
        UnpackScaleMinK4(b + 4, g, &sc, &m);
        const uint8_t byte = qs[32 * (i / 64) + (i % 32)];
        int q = (g % 2 == 0) ? (byte & 0xF) : (byte >> 4);
        if (q5) q |= ((qh[i % 32] >> g) & 1) << 4;
        const float dsc = F16At(b) * static_cast<float>(sc);
        const float dm = F16At(b + 2) * static_cast<float>(m);
        const float want = dsc * static_cast<float>(q) - dm;
        ASSERT_EQ(std::memcmp(&want, &y[k * 256 + i], 4), 0)
            << "q5=" << q5 << " block " << k << " i " << i;
      }
    }
  }
}

// The §7 formula: i = 128h + 32k + l.
TEST(Dequantize, Q6_KMatchesPerElementFormula) {
  std::mt19937 rng(12);
  const auto data = RandomBlocks(rng, 64, 210, {208});
  const auto y = Decode(GgmlType::kQ6_K, data, 64 * 256);
  for (int blk = 0; blk < 64; ++blk) {
    const uint8_t* b = data.data() + blk * 210;
    for (int i = 0; i < 256; ++i) {
      const int h = i / 128, k = (i % 128) / 32, l = i % 32;
      const uint8_t lbyte = b[64 * h + (k % 2 == 1 ? 32 : 0) + l];
      const int low4 = k < 2 ? (lbyte & 0xF) : (lbyte >> 4);
      const int high2 = (b[128 + 32 * h + l] >> (2 * k)) & 3;
      const int q = (low4 | (high2 << 4)) - 32;
      const float ds = F16At(b + 208) * static_cast<float>(static_cast<int8_t>(b[192 + i / 16]));
      const float want = ds * static_cast<float>(q);
      ASSERT_EQ(std::memcmp(&want, &y[blk * 256 + i], 4), 0) << "block " << blk << " i " << i;
    }
  }
}

TEST(RowBytes, SpecSizes) {
  EXPECT_EQ(RowBytes(GgmlType::kQ4_K, 4096), 2304u);
  EXPECT_EQ(RowBytes(GgmlType::kQ6_K, 4096), 3360u);
  EXPECT_EQ(RowBytes(GgmlType::kQ8_0, 4096), 4352u);
  EXPECT_EQ(RowBytes(GgmlType::kQ5_K, 256), 176u);
  EXPECT_EQ(RowBytes(GgmlType::kQ4_0, 64), 36u);
  EXPECT_EQ(RowBytes(GgmlType::kF32, 3), 12u);
  EXPECT_EQ(RowBytes(GgmlType::kF16, 3), 6u);
  EXPECT_EQ(RowBytes(GgmlType::kBF16, 3), 6u);
}

TEST(CanDequantize, SupportedTypes) {
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0,
                     GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K})
    EXPECT_TRUE(CanDequantize(t)) << gguf::TypeName(t);
  for (GgmlType t :
       {GgmlType::kQ4_1, GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ8_K, GgmlType::kI32})
    EXPECT_FALSE(CanDequantize(t)) << gguf::TypeName(t);
}

TEST(Dequantize, RejectsUnsupportedTypeByName) {
  std::vector<uint8_t> in(84);
  std::vector<float> out(256);
  const absl::Status s = Dequantize(GgmlType::kQ2_K, in, absl::MakeSpan(out));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Q2_K"), std::string::npos) << s;
  const absl::Status unknown = Dequantize(static_cast<GgmlType>(99), in, absl::MakeSpan(out));
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("99"), std::string::npos) << unknown;
}

TEST(Dequantize, RejectsPartialBlock) {
  std::vector<uint8_t> in(144);
  std::vector<float> out(255);
  EXPECT_EQ(Dequantize(GgmlType::kQ4_K, in, absl::MakeSpan(out)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Dequantize, RejectsWrongInputLength) {
  std::vector<float> out(256);
  for (size_t n : {143u, 145u, 0u, 288u}) {
    std::vector<uint8_t> in(n);
    EXPECT_EQ(Dequantize(GgmlType::kQ4_K, in, absl::MakeSpan(out)).code(),
              absl::StatusCode::kInvalidArgument)
        << n;
  }
  std::vector<uint8_t> in(144);
  EXPECT_TRUE(Dequantize(GgmlType::kQ4_K, in, absl::MakeSpan(out)).ok());
}

TEST(Dequantize, EmptyRowIsOk) { EXPECT_TRUE(Dequantize(GgmlType::kQ6_K, {}, {}).ok()); }

}  // namespace
}  // namespace kiln::quant
