// Sub-block scale searches of the K-quant reference quantizers
// (spec/quant-formats.md §8.2 make_qkx2_quants, §8.4 make_qx_quants).
// Sums accumulate in fp32 in index order and each product is evaluated left
// to right ((w*l)*x, not w*(l*x)), as in the reference; changing either would
// change the chosen scales in the last bit and break the §8.6 test vectors.
#include "models/quant/quant_search.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace kiln::quant {
namespace {

int Clamp(int v, int lo, int hi) { return std::max(lo, std::min(hi, v)); }

// Weighted squared error of x ~= scale*L + offset.
float WeightedError(int n, const float* x, const float* w, const uint8_t* L, float scale,
                    float offset) {
  float err = 0;
  for (int i = 0; i < n; ++i) {
    float diff = scale * static_cast<float>(L[i]) + offset - x[i];
    diff = diff * diff;
    err += w[i] * diff;
  }
  return err;
}

}  // namespace

float MakeQkx2Quants(int n, int nmax, const float* x, const float* w, Qkx2Grid grid, uint8_t* L,
                     float* min_out, uint8_t* scratch) {
  float min = x[0];
  float max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;  // the offset is never positive: mins are stored as magnitudes
  if (max == min) {
    std::fill(L, L + n, 0);
    *min_out = -min;
    return 0.f;
  }
  // Step 2: plain min/max quantization as the first candidate.
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  for (int i = 0; i < n; ++i)
    L[i] = static_cast<uint8_t>(Clamp(NearestInt(iscale * (x[i] - min)), 0, nmax));
  float best_error = WeightedError(n, x, w, L, scale, min);

  // Step 3: grid search with a weighted least-squares refit per candidate.
  // As in the reference, once a better (scale, min) is found the following
  // candidates are built from that updated min.
  for (int is = 0; is <= grid.nstep; ++is) {
    iscale =
        (grid.rmin + grid.rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = Clamp(NearestInt(iscale * (x[i] - min)), 0, nmax);
      scratch[i] = static_cast<uint8_t>(l);
      const float fl = static_cast<float>(l);
      sum_l += w[i] * fl;
      sum_l2 += w[i] * fl * fl;
      sum_xl += w[i] * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (!(D > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    const float cur_error = WeightedError(n, x, w, scratch, this_scale, this_min);
    if (cur_error < best_error) {
      std::copy(scratch, scratch + n, L);
      best_error = cur_error;
      scale = this_scale;
      min = this_min;
    }
  }
  *min_out = -min;
  return scale;
}

float MakeQxQuants(int n, int nmax, const float* x, uint8_t* L) {
  // The element of largest magnitude, sign kept.
  float max = 0;
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < 1e-15f) {
    std::fill(L, L + n, 0);
    return 0.f;
  }
  // Candidate iscale: sums for the least-squares scale sum(w x L)/sum(w L^2)
  // with w = x^2; the quality of a candidate is sumlx^2/suml2.
  auto fit = [&](float iscale, float* sumlx, float* suml2) {
    *sumlx = 0;
    *suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const float l = static_cast<float>(Clamp(NearestInt(iscale * x[i]), -nmax, nmax - 1));
      const float wi = x[i] * x[i];
      *sumlx += wi * x[i] * l;
      *suml2 += wi * l * l;
    }
  };
  auto store = [&](float iscale) {
    for (int i = 0; i < n; ++i)
      L[i] = static_cast<uint8_t>(nmax + Clamp(NearestInt(iscale * x[i]), -nmax, nmax - 1));
  };

  // Negative iscale puts the extreme value on -nmax, the side with the extra level.
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx, suml2;
  fit(iscale, &sumlx, &suml2);
  store(iscale);
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    fit(iscale, &sumlx, &suml2);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      store(iscale);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

}  // namespace kiln::quant
