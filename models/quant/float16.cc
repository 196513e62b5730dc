// IEEE binary16 and bfloat16 <-> binary32 conversions (spec/quant-formats.md §1).
// Pure bit manipulation, so results do not depend on the host's F16C support.
#include "models/quant/float16.h"

#include <cstdint>
#include <cstring>

namespace kiln::quant {
namespace {

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

constexpr uint32_t kF32ExpMask = 0x7F800000u;
constexpr uint32_t kF32AbsMask = 0x7FFFFFFFu;
// 65520 = halfway between 65504 (largest half) and 65536: it and everything
// above rounds (ties-to-even, 0x7BFF is odd) to Inf.
constexpr uint32_t kF32HalfOverflow = 0x477FF000u;
constexpr uint32_t kF32HalfMinNormal = 0x38800000u;  // 2^-14

}  // namespace

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return BitsToFloat(sign | kF32ExpMask | (mant << 13));  // Inf/NaN
  if (exp == 0) {
    // Subnormal: mant * 2^-24, exact in fp32 (mant < 2^10, power-of-two scale).
    const float v = static_cast<float>(mant) * 0x1p-24f;
    return BitsToFloat(sign | FloatBits(v));
  }
  // Rebias the exponent from 15 to 127.
  return BitsToFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t FloatToHalf(float f) {
  const uint32_t x = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & kF32AbsMask;
  if (ax > kF32ExpMask) return sign | 0x7E00u;        // NaN -> quiet NaN
  if (ax >= kF32HalfOverflow) return sign | 0x7C00u;  // overflow and Inf
  if (ax < kF32HalfMinNormal) {
    // Half subnormal (or zero): the result is round(|f| * 2^24) as an integer.
    // |f| = m * 2^(e - 150) with the 24-bit significand m, so shift m right by
    // 126 - e with round-half-even. A carry to 0x400 is the smallest normal.
    const uint32_t e = ax >> 23;
    const uint32_t shift = 126u - e;  // >= 14 here
    if (shift > 24) return sign;      // below 2^-25 (or exactly 0): rounds to 0
    const uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return sign | static_cast<uint16_t>(q);
  }
  // Normal: rebias 127 -> 15, drop 13 mantissa bits with round-half-even. A
  // mantissa carry correctly increments the exponent.
  uint32_t h = (ax - (112u << 23)) >> 13;
  const uint32_t rem = ax & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return sign | static_cast<uint16_t>(h);
}

float Bf16ToFloat(uint16_t b) { return BitsToFloat(static_cast<uint32_t>(b) << 16); }

uint16_t FloatToBf16(float f) {
  const uint32_t x = FloatBits(f);
  if ((x & kF32AbsMask) > kF32ExpMask)
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  // Round to nearest even on the dropped 16 bits (spec §1).
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace kiln::quant
