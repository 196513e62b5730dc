// Quantize(): size validation, plain float encodings (spec/quant-formats.md
// §1) and the Q8_0 / Q4_0 reference quantizers (§2, §3). The K-quant
// super-block encoders live in quantize_k.cc.
#include "models/quant/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "models/gguf/ggml_type.h"
#include "models/quant/dequantize.h"
#include "models/quant/float16.h"
#include "models/quant/quantize_k.h"

namespace kiln::quant {
namespace {

using gguf::GgmlType;

void StoreU16(uint16_t v, uint8_t* p) {
  p[0] = static_cast<uint8_t>(v & 0xFF);
  p[1] = static_cast<uint8_t>(v >> 8);
}

void EncodeF32(const float* x, int64_t n, uint8_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, &x[i], sizeof(u));
    for (int k = 0; k < 4; ++k) out[4 * i + k] = static_cast<uint8_t>(u >> (8 * k));
  }
}

void EncodeF16(const float* x, int64_t n, uint8_t* out) {
  for (int64_t i = 0; i < n; ++i) StoreU16(FloatToHalf(x[i]), out + 2 * i);
}

void EncodeBf16(const float* x, int64_t n, uint8_t* out) {
  for (int64_t i = 0; i < n; ++i) StoreU16(FloatToBf16(x[i]), out + 2 * i);
}

// float -> int8 the way the reference's plain C cast behaves on x86
// (cvttss2si: NaN and out-of-range give INT32_MIN, whose low byte is 0).
// Only reachable when a block's amax is so small that 1/d overflows to Inf;
// doing it explicitly avoids the undefined behaviour of a direct cast.
int8_t TruncToInt8(float v) {
  if (!(v > -2147483648.0f && v < 2147483648.0f)) return 0;
  return static_cast<int8_t>(static_cast<int32_t>(v));
}

// §2 reference quantizer: d = amax/127 in fp32, q = roundf(x/d) (ties away
// from zero) computed with the fp32 d, d stored as fp16.
void QuantizeQ8_0Block(const float* x, uint8_t* out) {
  float amax = 0;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  StoreU16(FloatToHalf(d), out);
  for (int i = 0; i < 32; ++i)
    out[2 + i] = static_cast<uint8_t>(TruncToInt8(std::round(x[i] * id)));
}

// §3 reference quantizer: the largest-magnitude element (sign kept) maps to
// nibble 0; q = min(15, trunc(x/d + 8.5)).
void QuantizeQ4_0Block(const float* x, uint8_t* out) {
  float amax = 0;
  float max = 0;
  for (int i = 0; i < 32; ++i) {
    if (amax < std::fabs(x[i])) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  const float d = max / -8;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  StoreU16(FloatToHalf(d), out);
  for (int j = 0; j < 16; ++j) {
    const int q0 = std::min(15, static_cast<int>(TruncToInt8(x[j] * id + 8.5f)));
    const int q1 = std::min(15, static_cast<int>(TruncToInt8(x[j + 16] * id + 8.5f)));
    out[2 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

using BlockEncoder = void (*)(const float*, uint8_t*);

BlockEncoder BlockEncoderFor(GgmlType type) {
  switch (type) {
    case GgmlType::kQ8_0:
      return QuantizeQ8_0Block;
    case GgmlType::kQ4_0:
      return QuantizeQ4_0Block;
    case GgmlType::kQ4_K:
      return QuantizeQ4_KBlock;
    case GgmlType::kQ5_K:
      return QuantizeQ5_KBlock;
    case GgmlType::kQ6_K:
      return QuantizeQ6_KBlock;
    default:
      return nullptr;
  }
}

std::string TypeLabel(GgmlType type) {
  const auto info = gguf::LookupGgmlType(static_cast<uint32_t>(type));
  if (info.has_value()) return std::string(info->name);
  return absl::StrCat("type id ", static_cast<uint32_t>(type));
}

}  // namespace

bool CanQuantize(GgmlType type) {
  return type == GgmlType::kF32 || type == GgmlType::kF16 || type == GgmlType::kBF16 ||
         BlockEncoderFor(type) != nullptr;
}

absl::Status Quantize(GgmlType type, absl::Span<const float> in, absl::Span<uint8_t> out) {
  if (!CanQuantize(type))
    return absl::InvalidArgumentError(
        absl::StrCat("quantize: unsupported tensor type ", TypeLabel(type)));
  const gguf::GgmlTypeInfo& info = gguf::TypeInfo(type);
  const int64_t n = static_cast<int64_t>(in.size());
  if (n % info.block_elems != 0)
    return absl::InvalidArgumentError(absl::StrCat("quantize ", TypeLabel(type), ": ", n,
                                                   " elements is not a multiple of the block size ",
                                                   info.block_elems));
  if (out.size() != RowBytes(type, n))
    return absl::InvalidArgumentError(absl::StrCat("quantize ", TypeLabel(type), ": ", n,
                                                   " elements need ", RowBytes(type, n),
                                                   " output bytes, got ", out.size()));
  switch (type) {
    case GgmlType::kF32:
      EncodeF32(in.data(), n, out.data());
      return absl::OkStatus();
    case GgmlType::kF16:
      EncodeF16(in.data(), n, out.data());
      return absl::OkStatus();
    case GgmlType::kBF16:
      EncodeBf16(in.data(), n, out.data());
      return absl::OkStatus();
    default:
      break;
  }
  // A NaN or Inf weight has no meaningful code (the reference would emit
  // garbage for the whole block), so it is reported instead.
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(in[i]))
      return absl::InvalidArgumentError(absl::StrCat("quantize ", TypeLabel(type), ": element ", i,
                                                     " is not finite (", in[i], ")"));
  const BlockEncoder encode = BlockEncoderFor(type);
  const int64_t blocks = n / info.block_elems;
  for (int64_t b = 0; b < blocks; ++b)
    encode(in.data() + b * info.block_elems, out.data() + b * info.block_bytes);
  return absl::OkStatus();
}

}  // namespace kiln::quant
