// Reference quantizers against the byte-exact examples of
// spec/quant-formats.md §2, §3 and the test vectors of §8.6, plus errors.
#include "models/quant/quantize.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "models/gguf/ggml_type.h"
#include "models/quant/dequantize.h"
#include "models/quant/quant_search.h"
#include "tests/models/quant/hex.h"

namespace kiln::quant {
namespace {

using gguf::GgmlType;
using testing::Hex;

std::vector<uint8_t> Encode(GgmlType type, const std::vector<float>& x) {
  std::vector<uint8_t> out(RowBytes(type, static_cast<int64_t>(x.size())), 0xCD);
  const absl::Status s = Quantize(type, x, absl::MakeSpan(out));
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

std::vector<float> Decode(GgmlType type, const std::vector<uint8_t>& bytes, size_t n) {
  std::vector<float> y(n, std::numeric_limits<float>::quiet_NaN());
  const absl::Status s = Dequantize(type, bytes, absl::MakeSpan(y));
  EXPECT_TRUE(s.ok()) << s;
  return y;
}

TEST(NearestInt, RoundsHalfToEven) {
  EXPECT_EQ(NearestInt(0.5f), 0);
  EXPECT_EQ(NearestInt(1.5f), 2);
  EXPECT_EQ(NearestInt(2.5f), 2);
  EXPECT_EQ(NearestInt(-0.5f), 0);
  EXPECT_EQ(NearestInt(-1.5f), -2);
  EXPECT_EQ(NearestInt(-2.5f), -2);
  EXPECT_EQ(NearestInt(2.49f), 2);
  EXPECT_EQ(NearestInt(-7.6f), -8);
  EXPECT_EQ(NearestInt(63.0f), 63);
  EXPECT_EQ(NearestInt(4194303.0f), 4194303);
  EXPECT_EQ(NearestInt(-4194303.0f), -4194303);
}

// §2 quantizer example: x_i = (i-10)*0.1 except x_5 = -2.54.
TEST(Quantize, Q8_0SpecExample) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i - 10) * 0.1f;
  x[5] = -2.54f;
  const auto bytes = Encode(GgmlType::kQ8_0, x);
  EXPECT_EQ(bytes,
            Hex("1F 25 CE D3 D8 DD E2 81 EC F1 F6 FB 00 05 0A 0F 14 19 1E 23 28 2D 32 37 3C 41 "
                "46 4B 50 55 5A 5F 64 69"));
  const auto y = Decode(GgmlType::kQ8_0, bytes, 32);
  EXPECT_EQ(y[0], -50 * 0.0200042724609375f);   // -1.00021362
  EXPECT_EQ(y[31], 105 * 0.0200042724609375f);  // 2.10044861
  EXPECT_EQ(y[0], -1.00021362f);
  EXPECT_EQ(y[31], 2.10044861f);
}

// roundf ties away from zero: 0.5*d must become 1 (banker's rounding gives 0).
TEST(Quantize, Q8_0RoundsTiesAwayFromZero) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // d = 1 exactly
  x[1] = 0.5f;
  x[2] = -0.5f;
  x[3] = 2.5f;
  const auto bytes = Encode(GgmlType::kQ8_0, x);
  EXPECT_EQ(static_cast<int8_t>(bytes[2 + 1]), 1);
  EXPECT_EQ(static_cast<int8_t>(bytes[2 + 2]), -1);
  EXPECT_EQ(static_cast<int8_t>(bytes[2 + 3]), 3);
}

// §3 quantizer example: x_i = (i-12)*0.25.
TEST(Quantize, Q4_0SpecExample) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i - 12) * 0.25f;
  const auto bytes = Encode(GgmlType::kQ4_0, x);
  EXPECT_EQ(bytes, Hex("C0 B8 6D 6D 5C 5C 5B 4B 4B 3A 3A 39 29 28 18 18 07 07"));
  const auto y = Decode(GgmlType::kQ4_0, bytes, 32);
  EXPECT_EQ(y[0], -2.96875f);
  EXPECT_EQ(y[31], 4.75f);
}

// §8.6 input: x_i = (((i*37) mod 101) - 50) / 16.
std::vector<float> Spec86Input(int n) {
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(((i * 37) % 101) - 50) / 16.0f;
  return x;
}

TEST(Quantize, Spec86InputPrefix) {
  const auto x = Spec86Input(8);
  EXPECT_EQ(
      x, (std::vector<float>{-3.125f, -0.8125f, 1.5f, -2.5f, -0.1875f, 2.125f, -1.875f, 0.4375f}));
}

TEST(Quantize, Q4_KSpecVector) {
  const auto bytes = Encode(GgmlType::kQ4_K, Spec86Input(256));
  EXPECT_EQ(bytes, Hex(R"(
DE 1E 2C 2A FE FF FF FC FF FD FE FE CF DC FF FE A0 15 6B C1 27 8C D3 48 9E 04 5A B0 16 7B C2 37
8D E3 49 AE 05 6A B1 26 7C D2 38 9D E4 59 AF 15 26 8C E2 48 AD 04 59 B0 15 7B D1 37 9C E3 48 AE
04 6A C0 26 7B D2 37 9D F3 59 BE 15 6A C1 26 8C 9D F3 59 BE 15 7A C1 26 8C E2 48 AD 04 59 B0 15
7B D1 37 9C E3 48 AE 04 6A C0 26 7B D2 37 9D F3 15 6A C1 26 8C D2 48 9D F4 59 B0 15 7B C1 37 8C
E3 48 AE 04 6A B0 26 7B D2 37 9D E3 59 AE 15 6A)"));
  const auto y = Decode(GgmlType::kQ4_K, bytes, 256);
  EXPECT_EQ(y[0], -3.03771973f);
  EXPECT_EQ(y[1], -0.958786011f);
  EXPECT_EQ(y[255], -0.542999268f);
}

TEST(Quantize, Q5_KSpecVector) {
  const auto bytes = Encode(GgmlType::kQ5_K, Spec86Input(256));
  EXPECT_EQ(bytes, Hex(R"(
8E 1A 53 2A FF FD FD FD FF FC FE FF DF EF FD CF 32 6C 99 36 CC 93 66 C9 B3 64 99 32 4C 99 26 CC
93 66 C9 33 6C 99 36 4C 9B 66 CD B3 66 D9 33 6C 70 2B E7 A3 5F 1A D6 82 4D 09 C5 81 3C F8 B4 6F
2B E7 93 5E 1A D6 82 4D 09 C5 70 3C F8 A3 6F 2B 5E 1A D5 91 4D 09 C4 80 3C F8 B3 6F 2B E6 A2 5E
1A D5 91 4D 09 C4 70 3C F7 B3 6F 2B E6 A2 5E 1A 3B E8 B3 6E 2B E6 92 5E 19 C5 81 4C 08 B4 70 3C
F7 A3 6F 2A D6 92 5D 19 C5 81 4C 08 B4 70 3B E7 1B D7 82 4E 0A B5 71 3D E9 A4 60 2C D8 93 5F 1B
C6 82 4E 0A B5 71 3D E9 A4 60 1C D7 93 5F 1B C6)"));
}

TEST(Quantize, Q6_KSpecVector) {
  const auto bytes = Encode(GgmlType::kQ6_K, Spec86Input(256));
  EXPECT_EQ(bytes, Hex(R"(
D1 58 BF 37 BE 25 AD 04 8B 04 7B F3 7A D1 59 D0 C9 41 EA 63 EB 74 FB 74 1D 95 1E A7 2F C8 41 C9
BF 35 AD 16 9B 04 8D F2 6B E0 69 D1 47 CF 38 BD 1A 92 2C 84 0D 85 ED 77 FF 57 D0 38 B0 4A A2 2B
67 DF 58 C1 39 B2 2A A2 2B 93 1C 85 FD 76 EE 57 CE 5A D1 37 B3 1A 90 2C 83 0F 86 EC 78 FF 55 D1
C8 41 DA 62 EB 63 FC 84 0D 95 1E A6 3F B8 40 C9 D1 29 B3 0B 93 1C 74 FE 86 DE 67 FF 47 D1 29 B1
18 B1 C6 6C B1 1B 6C 86 1B 71 C6 1C B1 C7 6C B2 24 53 F9 24 8E F9 13 8E F4 53 8D 24 52 F9 24 8E
D4 A2 09 D4 7E 09 A3 7E 14 A3 49 D4 AE 09 D7 7E C8 63 BE 14 63 C9 14 7E C9 23 BE C4 63 BD 14 63
80 7F 89 7A 86 7A 84 87 7F 73 7D 7A 81 87 7C 89 75 92)"));
  // The first sub-block got code -128 and d = 0x9275 is negative.
  EXPECT_EQ(bytes[192], 0x80);
  const auto y = Decode(GgmlType::kQ6_K, bytes, 256);
  EXPECT_EQ(y[0], -3.12762451f);
  EXPECT_EQ(y[1], -0.807128906f);
  EXPECT_EQ(y[255], -0.468986034f);
}

TEST(Quantize, Q8_0SpecVector) {
  const auto bytes = Encode(GgmlType::kQ8_0, Spec86Input(32));
  EXPECT_EQ(bytes,
            Hex("4D 26 81 DF 3D 9A F8 56 B4 12 70 CD 2B 89 E7 45 A2 00 5E BB 19 77 D5 33 90 EE 4C "
                "AA 08 66 C3 21 7F DC"));
}

TEST(Quantize, PlainFloatEncodings) {
  const std::vector<float> x = {1.0f, -2.0f, 3.140625f};
  EXPECT_EQ(Encode(GgmlType::kF32, x), Hex("00 00 80 3F 00 00 00 C0 00 00 49 40"));
  EXPECT_EQ(Encode(GgmlType::kF16, x), Hex("00 3C 00 C0 48 42"));
  EXPECT_EQ(Encode(GgmlType::kBF16, x), Hex("80 3F 00 C0 49 40"));
  // Non-finite values are representable in the float formats.
  const std::vector<float> inf = {std::numeric_limits<float>::infinity()};
  EXPECT_EQ(Encode(GgmlType::kF16, inf), Hex("00 7C"));
}

// Zero input: every quantized format decodes back to exact zeros; Q6_K's
// all-zero block is all zero bytes (§8.4 step 2).
TEST(Quantize, ZeroBlocksRoundTripToZero) {
  const std::vector<float> zeros(512, 0.0f);
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0,
                     GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K}) {
    const auto bytes = Encode(t, zeros);
    const auto y = Decode(t, bytes, zeros.size());
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_EQ(y[i], 0.0f) << gguf::TypeName(t) << " element " << i;
  }
  EXPECT_EQ(Encode(GgmlType::kQ6_K, std::vector<float>(256, 0.0f)), std::vector<uint8_t>(210, 0));
}

// A zero sub-block inside an otherwise non-zero super-block decodes to zero too.
TEST(Quantize, ZeroSubBlocksStayZero) {
  std::vector<float> x = Spec86Input(256);
  for (int i = 32; i < 64; ++i) x[i] = 0.0f;
  for (GgmlType t :
       {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K}) {
    const auto y = Decode(t, Encode(t, x), 256);
    for (int i = 32; i < 64; ++i) ASSERT_EQ(y[i], 0.0f) << gguf::TypeName(t) << " element " << i;
  }
}

TEST(CanQuantize, SupportedTypes) {
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0,
                     GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K})
    EXPECT_TRUE(CanQuantize(t)) << gguf::TypeName(t);
  for (GgmlType t :
       {GgmlType::kQ4_1, GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ8_K, GgmlType::kI8})
    EXPECT_FALSE(CanQuantize(t)) << gguf::TypeName(t);
}

TEST(Quantize, RejectsUnsupportedTypeByName) {
  std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> out(110);
  const absl::Status s = Quantize(GgmlType::kQ3_K, x, absl::MakeSpan(out));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Q3_K"), std::string::npos) << s;
}

TEST(Quantize, RejectsPartialBlock) {
  for (GgmlType t :
       {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K}) {
    const std::vector<float> x(gguf::TypeInfo(t).block_elems + 1, 1.0f);
    std::vector<uint8_t> out(gguf::TypeInfo(t).block_bytes);
    EXPECT_EQ(Quantize(t, x, absl::MakeSpan(out)).code(), absl::StatusCode::kInvalidArgument)
        << gguf::TypeName(t);
  }
}

TEST(Quantize, RejectsWrongOutputLength) {
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ6_K}) {
    const std::vector<float> x(256, 1.0f);
    const uint64_t need = RowBytes(t, 256);
    for (uint64_t n : {need - 1, need + 1}) {
      std::vector<uint8_t> out(n);
      EXPECT_EQ(Quantize(t, x, absl::MakeSpan(out)).code(), absl::StatusCode::kInvalidArgument)
          << gguf::TypeName(t) << " " << n;
    }
    std::vector<uint8_t> out(need);
    EXPECT_TRUE(Quantize(t, x, absl::MakeSpan(out)).ok()) << gguf::TypeName(t);
  }
}

TEST(Quantize, RejectsNonFiniteInputToBlockTypes) {
  std::vector<float> x(256, 1.0f);
  x[77] = std::numeric_limits<float>::quiet_NaN();
  std::vector<uint8_t> out(RowBytes(GgmlType::kQ4_K, 256));
  const absl::Status s = Quantize(GgmlType::kQ4_K, x, absl::MakeSpan(out));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("77"), std::string::npos) << s;
  x[77] = std::numeric_limits<float>::infinity();
  std::vector<uint8_t> out8(RowBytes(GgmlType::kQ8_0, 256));
  EXPECT_EQ(Quantize(GgmlType::kQ8_0, x, absl::MakeSpan(out8)).code(),
            absl::StatusCode::kInvalidArgument);
}

// A block whose largest value is subnormal makes 1/d overflow in Q8_0/Q4_0;
// the result must still be defined and decode to finite values.
TEST(Quantize, TinyBlocksStayFinite) {
  std::vector<float> x(32, 0.0f);
  x[3] = 1e-40f;
  x[4] = -5e-41f;
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    const auto y = Decode(t, Encode(t, x), 32);
    for (float v : y) EXPECT_TRUE(std::isfinite(v)) << gguf::TypeName(t);
  }
}

}  // namespace
}  // namespace kiln::quant
