// Rounding helper and per-sub-block scale searches used by the K-quant
// reference quantizers (spec/quant-formats.md §8.1, §8.2, §8.4). Every float
// operation is evaluated in the order the spec's reference uses, so results
// are bit-identical to it.
#ifndef KILN_MODELS_QUANT_QUANT_SEARCH_H_
#define KILN_MODELS_QUANT_QUANT_SEARCH_H_

#include <cstdint>
#include <cstring>

namespace kiln::quant {

// Round half to even via the 1.5*2^23 trick (§8.1); exact for |f| <= 4194303.
// Outside that range the result is meaningless but defined (no UB).
inline int NearestInt(float f) {
  const float biased = f + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &biased, sizeof(bits));
  return (bits & 0x007FFFFF) - 0x00400000;
}

// Search grid of make_qkx2_quants: iscale = (rmin + rdelta*is + nmax)/(max-min)
// for is = 0..nstep.
struct Qkx2Grid {
  float rmin;
  float rdelta;
  int nstep;
};

// §8.2: fits x[i] ~= scale*L[i] - min_out over n values with weights w, with
// L in [0, nmax]. Returns the scale, writes the non-negative min magnitude to
// *min_out and the codes to L. `scratch` holds n bytes.
float MakeQkx2Quants(int n, int nmax, const float* x, const float* w, Qkx2Grid grid, uint8_t* L,
                     float* min_out, uint8_t* scratch);

// §8.4 with rmse_type 1 (weights x^2): fits a signed scale so that
// x[i] ~= scale*(L[i] - nmax), L in [0, 2*nmax - 1]. Returns the scale (0 and
// all L = 0 if every |x| < 1e-15).
float MakeQxQuants(int n, int nmax, const float* x, uint8_t* L);

}  // namespace kiln::quant

#endif  // KILN_MODELS_QUANT_QUANT_SEARCH_H_
