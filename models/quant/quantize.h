// Reference quantizers (no importance matrix) for Q8_0, Q4_0, Q4_K, Q5_K,
// Q6_K, and plain F16/BF16/F32 encoding (spec/quant-formats.md §2-§3, §8).
// Outputs are bit-identical to the ggml reference quantizers.
#ifndef KILN_MODELS_QUANT_QUANTIZE_H_
#define KILN_MODELS_QUANT_QUANTIZE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "models/gguf/ggml_type.h"

namespace kiln::quant {

bool CanQuantize(gguf::GgmlType type);

// Encodes `in` (a multiple of the block size) into `out` (exactly RowBytes).
// InvalidArgument for other sizes, an unsupported type, or a NaN/Inf input to
// a block-quantized type (F32/F16/BF16 encode non-finite values as such).
absl::Status Quantize(gguf::GgmlType type, absl::Span<const float> in, absl::Span<uint8_t> out);

}  // namespace kiln::quant

#endif  // KILN_MODELS_QUANT_QUANTIZE_H_
