// Reference (no importance matrix) encoders of one K-quant super-block of 256
// floats (spec/quant-formats.md §8.3, §8.4). Internal to kiln_quant: callers
// use Quantize() from quantize.h, which validates sizes first.
#ifndef KILN_MODELS_QUANT_QUANTIZE_K_H_
#define KILN_MODELS_QUANT_QUANTIZE_K_H_

#include <cstdint>

namespace kiln::quant {

// Each writes TypeInfo(type).block_bytes bytes to `out` from x[0..255].
void QuantizeQ4_KBlock(const float* x, uint8_t* out);  // 144 bytes
void QuantizeQ5_KBlock(const float* x, uint8_t* out);  // 176 bytes
void QuantizeQ6_KBlock(const float* x, uint8_t* out);  // 210 bytes

}  // namespace kiln::quant

#endif  // KILN_MODELS_QUANT_QUANTIZE_K_H_
