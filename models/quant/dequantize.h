// Bit-exact dequantization of F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K
// rows to float32 (spec/quant-formats.md §1-§7).
#ifndef KILN_MODELS_QUANT_DEQUANTIZE_H_
#define KILN_MODELS_QUANT_DEQUANTIZE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "models/gguf/ggml_type.h"

namespace kiln::quant {

// True for the types kiln can dequantize.
bool CanDequantize(gguf::GgmlType type);

// Decodes `out.size()` elements (a multiple of the block size) from `in`,
// which must hold exactly the matching number of bytes.
absl::Status Dequantize(gguf::GgmlType type, absl::Span<const uint8_t> in, absl::Span<float> out);

// Bytes needed for `n` elements of `type` (n a multiple of the block size).
uint64_t RowBytes(gguf::GgmlType type, int64_t n);

}  // namespace kiln::quant

#endif  // KILN_MODELS_QUANT_DEQUANTIZE_H_
