// K-quant super-block encoders following the reference quantizers
// quantize_row_q{4,5,6}_K_ref (spec/quant-formats.md §8.3, §8.4); the block
// layouts they write are §5 (Q4_K), §6 (Q5_K) and §7 (Q6_K).
#include "models/quant/quantize_k.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "models/quant/float16.h"
#include "models/quant/quant_search.h"
#include "models/quant/scale_min_k4.h"

namespace kiln::quant {
namespace {

constexpr int kQK = 256;

void StoreU16(uint16_t v, uint8_t* p) {
  p[0] = static_cast<uint8_t>(v & 0xFF);
  p[1] = static_cast<uint8_t>(v >> 8);
}

// §8.3 steps 1-5, shared by Q4_K (nmax 15) and Q5_K (nmax 31): writes d, dmin
// and the packed scales to header[0..15] and the codes to L[256].
void EncodeQ45KScales(const float* x, int nmax, Qkx2Grid grid, uint8_t* header, uint8_t* L) {
  float scales[8];
  float mins[8];
  float weights[32];
  uint8_t scratch[32];
  float max_scale = 0;
  float max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    // Weights w_i = av_x + |x_i| with av_x the RMS of the sub-block (§8.2).
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = MakeQkx2Quants(32, nmax, xs, weights, grid, L + 32 * j, &mins[j], scratch);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }

  // Step 3: 6-bit codes relative to the largest scale and min. The code goes
  // through uint8_t before the clamp to 63, as in the reference.
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t sc[8];
  uint8_t m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = std::min<uint8_t>(63, static_cast<uint8_t>(NearestInt(inv_scale * scales[j])));
    m[j] = std::min<uint8_t>(63, static_cast<uint8_t>(NearestInt(inv_min * mins[j])));
  }
  // Step 4.
  const uint16_t d16 = FloatToHalf(max_scale / 63.f);
  const uint16_t dmin16 = FloatToHalf(max_min / 63.f);
  StoreU16(d16, header);
  StoreU16(dmin16, header + 2);
  PackScaleMinK4(sc, m, header + 4);

  // Step 5: re-quantize with the parameters the decoder will see.
  const float d = HalfToFloat(d16);
  const float dmin = HalfToFloat(dmin16);
  for (int j = 0; j < 8; ++j) {
    const float dl = d * static_cast<float>(sc[j]);
    if (dl == 0) continue;  // keep the search's codes
    const float ml = dmin * static_cast<float>(m[j]);
    for (int i = 0; i < 32; ++i) {
      const int l = NearestInt((x[32 * j + i] + ml) / dl);
      L[32 * j + i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    }
  }
}

// §5/§6 nibble layout: byte 32c + l holds element 64c + l (low nibble) and
// element 64c + 32 + l (high nibble).
void PackNibbles(const uint8_t* L, uint8_t* qs) {
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      qs[32 * c + l] =
          static_cast<uint8_t>((L[64 * c + l] & 0xF) | ((L[64 * c + 32 + l] & 0xF) << 4));
}

}  // namespace

void QuantizeQ4_KBlock(const float* x, uint8_t* out) {
  uint8_t L[kQK];
  EncodeQ45KScales(x, 15, Qkx2Grid{-1.0f, 0.1f, 20}, out, L);
  PackNibbles(L, out + 16);
}

void QuantizeQ5_KBlock(const float* x, uint8_t* out) {
  uint8_t L[kQK];
  EncodeQ45KScales(x, 31, Qkx2Grid{-0.5f, 0.1f, 15}, out, L);
  // §6: bit g of qh[l] is the fifth bit of element 32g + l.
  uint8_t* qh = out + 16;
  std::memset(qh, 0, 32);
  for (int i = 0; i < kQK; ++i) qh[i % 32] |= static_cast<uint8_t>(((L[i] >> 4) & 1) << (i / 32));
  PackNibbles(L, out + 48);
}

void QuantizeQ6_KBlock(const float* x, uint8_t* out) {
  uint8_t L[kQK];  // codes 0..63 = q + 32
  float scales[16];
  float max_scale = 0;
  float max_abs_scale = 0;
  for (int j = 0; j < 16; ++j) {
    scales[j] = MakeQxQuants(16, 32, x + 16 * j, L + 16 * j);
    const float abs_scale = std::fabs(scales[j]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scales[j];
    }
  }
  if (max_abs_scale < 1e-15f) {  // §8.4 step 2: an all-zero block
    std::memset(out, 0, 210);
    return;
  }
  // Step 3: the largest scale maps to -128, so d has the opposite sign.
  const float iscale = -128.f / max_scale;
  const uint16_t d16 = FloatToHalf(1 / iscale);
  int8_t* sc = reinterpret_cast<int8_t*>(out + 192);
  for (int j = 0; j < 16; ++j)
    sc[j] = static_cast<int8_t>(std::min(127, NearestInt(iscale * scales[j])));
  StoreU16(d16, out + 208);

  // Step 4: re-quantize with the decoded d and codes.
  const float d = HalfToFloat(d16);
  for (int j = 0; j < 16; ++j) {
    const float dl = d * static_cast<float>(sc[j]);
    if (dl == 0) continue;
    for (int i = 0; i < 16; ++i) {
      const int l = NearestInt(x[16 * j + i] / dl);
      L[16 * j + i] = static_cast<uint8_t>(std::max(-32, std::min(31, l)) + 32);
    }
  }

  // Step 5, §7 layout: per half h, lane l: ql[64h+l] = q(32*0+l) | q(64+l)<<4,
  // ql[64h+32+l] = q(32+l) | q(96+l)<<4, qh[32h+l] = the four high pairs.
  for (int h = 0; h < 2; ++h) {
    uint8_t* ql = out + 64 * h;
    uint8_t* qh = out + 128 + 32 * h;
    const uint8_t* q = L + 128 * h;
    for (int l = 0; l < 32; ++l) {
      ql[l] = static_cast<uint8_t>((q[l] & 0xF) | ((q[64 + l] & 0xF) << 4));
      ql[32 + l] = static_cast<uint8_t>((q[32 + l] & 0xF) | ((q[96 + l] & 0xF) << 4));
      qh[l] = static_cast<uint8_t>((q[l] >> 4) | ((q[32 + l] >> 4) << 2) | ((q[64 + l] >> 4) << 4) |
                                   ((q[96 + l] >> 4) << 6));
    }
  }
}

}  // namespace kiln::quant
