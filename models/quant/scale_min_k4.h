// The 12-byte packing of eight 6-bit (scale, min) pairs shared by Q4_K and
// Q5_K super-blocks (spec/quant-formats.md §4.1).
#ifndef KILN_MODELS_QUANT_SCALE_MIN_K4_H_
#define KILN_MODELS_QUANT_SCALE_MIN_K4_H_

#include <cstdint>

namespace kiln::quant {

inline constexpr int kScaleMinK4Bytes = 12;

// Sub-block j's 6-bit scale and min codes from the packed array
// (spec §4.1 "Unpacking"; j in 0..7).
inline void UnpackScaleMinK4(const uint8_t* s, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((s[j + 4] & 15) | ((s[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// Packs eight codes (each 0..63) into `s[12]`, the inverse of UnpackScaleMinK4.
inline void PackScaleMinK4(const uint8_t sc[8], const uint8_t m[8], uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
}

}  // namespace kiln::quant

#endif  // KILN_MODELS_QUANT_SCALE_MIN_K4_H_
