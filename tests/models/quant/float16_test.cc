// FP16 / BF16 conversions against spec/quant-formats.md §1 and, for fp32 ->
// fp16, against the nearest-even definition evaluated in double.
#include "models/quant/float16.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "gtest/gtest.h"

namespace kiln::quant {
namespace {

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

// §1 F16 examples, decoded exactly and encoded back to the same bits.
TEST(HalfToFloat, SpecExamples) {
  struct Case {
    uint16_t h;
    float f;
  };
  const Case cases[] = {
      {0x3C00, 1.0f},
      {0xC000, -2.0f},
      {0x3555, 0.333251953125f},
      {0x7BFF, 65504.0f},
      {0x0400, 6.103515625e-05f},
      {0x0001, 5.9604644775390625e-08f},
      {0x251F, 0.0200042724609375f},
      {0x7C00, std::numeric_limits<float>::infinity()},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(HalfToFloat(c.h), c.f) << std::hex << c.h;
    EXPECT_EQ(FloatToHalf(c.f), c.h) << c.f;
  }
}

TEST(HalfToFloat, SignedZeroAndNaN) {
  EXPECT_EQ(Bits(HalfToFloat(0x0000)), 0u);
  EXPECT_EQ(Bits(HalfToFloat(0x8000)), 0x80000000u);
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7E00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7C01)));  // signalling pattern is still NaN
  EXPECT_EQ(HalfToFloat(0xFC00), -std::numeric_limits<float>::infinity());
}

// Every non-NaN half survives half -> float -> half; every NaN stays NaN.
TEST(FloatToHalf, AllHalvesRoundTrip) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      const uint16_t back = FloatToHalf(f);
      EXPECT_EQ(back & 0x7C00, 0x7C00) << h;
      EXPECT_NE(back & 0x03FF, 0) << h;
    } else {
      ASSERT_EQ(FloatToHalf(f), h) << std::hex << h;
    }
  }
}

TEST(FloatToHalf, RoundsHalfToEven) {
  EXPECT_EQ(FloatToHalf(1.0f + 0x1p-11f), 0x3C00);             // tie, 0x3C00 even: down
  EXPECT_EQ(FloatToHalf(1.0f + 3 * 0x1p-11f), 0x3C02);         // tie, 0x3C01 odd: up
  EXPECT_EQ(FloatToHalf(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);  // above the tie
  EXPECT_EQ(FloatToHalf(1.0f + 0x1p-11f - 0x1p-20f), 0x3C00);  // below the tie
  EXPECT_EQ(FloatToHalf(-(1.0f + 3 * 0x1p-11f)), 0xBC02);
  // Mantissa carry into the exponent: 2 - 2^-12 is above 2047/1024 + tie.
  EXPECT_EQ(FloatToHalf(2.0f - 0x1p-12f), 0x4000);
}

TEST(FloatToHalf, OverflowGoesToInf) {
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65519.996f), 0x7BFF);  // below the 65520 tie
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7C00);    // tie, 0x7BFF odd: up to Inf
  EXPECT_EQ(FloatToHalf(1e10f), 0x7C00);
  EXPECT_EQ(FloatToHalf(-1e10f), 0xFC00);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::max()), 0x7C00);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(FloatToHalf(-std::numeric_limits<float>::infinity()), 0xFC00);
}

TEST(FloatToHalf, Subnormals) {
  EXPECT_EQ(FloatToHalf(0x1p-24f), 0x0001);
  EXPECT_EQ(FloatToHalf(-0x1p-24f), 0x8001);
  EXPECT_EQ(FloatToHalf(0x1p-25f), 0x0000);  // tie to even zero
  EXPECT_EQ(FloatToHalf(0x1p-25f * 1.0001f), 0x0001);
  EXPECT_EQ(FloatToHalf(3 * 0x1p-25f), 0x0002);         // 1.5 ulp: tie to even 2
  EXPECT_EQ(FloatToHalf(5 * 0x1p-25f), 0x0002);         // 2.5 ulp: tie to even 2
  EXPECT_EQ(FloatToHalf(1023 * 0x1p-24f), 0x03FF);      // largest subnormal
  EXPECT_EQ(FloatToHalf(0x1p-14f - 0x1p-25f), 0x0400);  // tie between 0x3FF and min normal
  EXPECT_EQ(FloatToHalf(1e-10f), 0x0000);
  EXPECT_EQ(FloatToHalf(-1e-10f), 0x8000);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
}

TEST(FloatToHalf, NaNStaysNaN) {
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::quiet_NaN()), 0x7E00);
  EXPECT_EQ(FloatToHalf(FromBits(0x7F800001u)), 0x7E00);  // payload only in low bits
  EXPECT_EQ(FloatToHalf(FromBits(0xFFC00000u)), 0xFE00);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::numeric_limits<float>::quiet_NaN()))));
}

// Property check on random finite floats around the fp16 range: the result is
// the nearest half (ties to even), judged in double.
TEST(FloatToHalf, NearestEvenOnRandomFloats) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<uint32_t> exp_dist(90, 145);  // 2^-37 .. 2^18
  std::uniform_int_distribution<uint32_t> mant_dist(0, 0x7FFFFF);
  for (int iter = 0; iter < 200000; ++iter) {
    const uint32_t bits =
        (static_cast<uint32_t>(iter & 1) << 31) | (exp_dist(rng) << 23) | mant_dist(rng);
    const float f = FromBits(bits);
    const uint16_t h = FloatToHalf(f);
    const double x = std::fabs(static_cast<double>(f));
    const uint16_t mag = h & 0x7FFF;
    ASSERT_EQ(h & 0x8000, (bits >> 16) & 0x8000) << f;
    if (mag == 0x7C00) {
      ASSERT_GE(x, 65520.0) << f;
      continue;
    }
    const double got = HalfToFloat(mag);
    const double err = std::fabs(got - x);
    if (mag > 0) {
      ASSERT_LE(err, std::fabs(HalfToFloat(mag - 1) - x)) << f;
    }
    const double up = mag == 0x7BFF ? 65536.0 : HalfToFloat(mag + 1);
    ASSERT_LE(err, std::fabs(up - x)) << f;
    const bool tie =
        (mag > 0 && err == std::fabs(HalfToFloat(mag - 1) - x)) || err == std::fabs(up - x);
    if (tie) {
      ASSERT_EQ(mag & 1, 0) << f;
    }
  }
}

// §1 BF16 examples.
TEST(Bf16, SpecExamples) {
  EXPECT_EQ(Bf16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(Bf16ToFloat(0x4049), 3.140625f);
  EXPECT_EQ(Bf16ToFloat(0xC2F7), -123.5f);
  EXPECT_EQ(FloatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(FloatToBf16(3.140625f), 0x4049);
  EXPECT_EQ(FloatToBf16(-123.5f), 0xC2F7);
}

TEST(Bf16, RoundsHalfToEven) {
  EXPECT_EQ(FloatToBf16(FromBits(0x3F808000u)), 0x3F80);  // tie, even: down
  EXPECT_EQ(FloatToBf16(FromBits(0x3F818000u)), 0x3F82);  // tie, odd: up
  EXPECT_EQ(FloatToBf16(FromBits(0x3F808001u)), 0x3F81);
  EXPECT_EQ(FloatToBf16(FromBits(0x3F807FFFu)), 0x3F80);
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to Inf
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(FloatToBf16(-std::numeric_limits<float>::infinity()), 0xFF80);
}

TEST(Bf16, SubnormalsAreNotFlushed) {
  const float tiny = FromBits(0x00012345u);
  EXPECT_EQ(FloatToBf16(tiny), 0x0001);
  EXPECT_GT(Bf16ToFloat(FloatToBf16(1e-40f)), 0.0f);
}

// A NaN whose payload sits only in the low 16 bits must not become Inf.
TEST(Bf16, EncodeNaNStaysNaN) {
  EXPECT_EQ(FloatToBf16(FromBits(0x7F800001u)), 0x7FC0);
  EXPECT_EQ(FloatToBf16(FromBits(0xFF80FFFFu)), 0xFFC0);
  EXPECT_EQ(FloatToBf16(FromBits(0x7FC00000u)), 0x7FC0);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(FromBits(0x7F800001u)))));
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::numeric_limits<float>::quiet_NaN()))));
}

}  // namespace
}  // namespace kiln::quant
