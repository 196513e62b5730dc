// Exact IEEE binary16 and bfloat16 conversions (spec/quant-formats.md §1).
#ifndef KILN_MODELS_QUANT_FLOAT16_H_
#define KILN_MODELS_QUANT_FLOAT16_H_

#include <cstdint>

namespace kiln::quant {

float HalfToFloat(uint16_t h);        // exact, subnormals and Inf/NaN included
uint16_t FloatToHalf(float f);        // round to nearest even, overflow -> Inf
float Bf16ToFloat(uint16_t b);        // exact
uint16_t FloatToBf16(float f);        // round to nearest even, NaN kept quiet

}  // namespace kiln::quant

#endif  // KILN_MODELS_QUANT_FLOAT16_H_
