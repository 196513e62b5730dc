// Row decoders for every type in spec/quant-formats.md §1-§7. Each decoder
// follows the spec's fp32 evaluation order exactly (the project builds with
// -ffp-contract=off, so no multiply-add is fused), which makes the output
// bit-identical to ggml's dequantize_row_* reference.
#include "models/quant/dequantize.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "models/gguf/ggml_type.h"
#include "models/quant/float16.h"
#include "models/quant/scale_min_k4.h"

namespace kiln::quant {
namespace {

using gguf::GgmlType;

uint16_t LoadU16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

float LoadF16(const uint8_t* p) { return HalfToFloat(LoadU16(p)); }

// §1. Bytes are little-endian, like the file.
void DecodeF32(const uint8_t* in, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u =
        static_cast<uint32_t>(in[4 * i]) | (static_cast<uint32_t>(in[4 * i + 1]) << 8) |
        (static_cast<uint32_t>(in[4 * i + 2]) << 16) | (static_cast<uint32_t>(in[4 * i + 3]) << 24);
    std::memcpy(&y[i], &u, sizeof(float));
  }
}

void DecodeF16(const uint8_t* in, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = HalfToFloat(LoadU16(in + 2 * i));
}

void DecodeBf16(const uint8_t* in, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = Bf16ToFloat(LoadU16(in + 2 * i));
}

// §2: d (fp16), qs[32] int8; y = d * q.
void DecodeQ8_0Block(const uint8_t* b, float* y) {
  const float d = LoadF16(b);
  const int8_t* qs = reinterpret_cast<const int8_t*>(b + 2);
  for (int i = 0; i < 32; ++i) y[i] = static_cast<float>(qs[i]) * d;
}

// §3: byte j holds element j (low nibble) and element j + 16 (high nibble).
void DecodeQ4_0Block(const uint8_t* b, float* y) {
  const float d = LoadF16(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0xF) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

// §5 and §6 share everything except the optional fifth bit: `qh` is null for
// Q4_K. Element i: sub-block g = i/32, low nibble of qs[32*(i/64) + i%32] for
// even g and high nibble for odd g, fifth bit = bit g of qh[i%32];
// y = (d*sc) * q - (dmin*m), the two products rounded to fp32 first.
void DecodeQ45KBlock(const uint8_t* b, const uint8_t* qh, const uint8_t* qs, float* y) {
  const float d = LoadF16(b);
  const float dmin = LoadF16(b + 2);
  const uint8_t* scales = b + 4;
  for (int g = 0; g < 8; ++g) {
    uint8_t sc, m;
    UnpackScaleMinK4(scales, g, &sc, &m);
    const float dl = d * static_cast<float>(sc);
    const float ml = dmin * static_cast<float>(m);
    const uint8_t* q = qs + 32 * (g / 2);
    const int shift = (g % 2) * 4;
    float* out = y + 32 * g;
    for (int l = 0; l < 32; ++l) {
      int v = (q[l] >> shift) & 0xF;
      if (qh != nullptr) v |= ((qh[l] >> g) & 1) << 4;
      out[l] = dl * static_cast<float>(v) - ml;
    }
  }
}

void DecodeQ4_KBlock(const uint8_t* b, float* y) { DecodeQ45KBlock(b, nullptr, b + 16, y); }

void DecodeQ5_KBlock(const uint8_t* b, float* y) { DecodeQ45KBlock(b, b + 16, b + 48, y); }

// §7: ql[128], qh[64], int8 scales[16], d (fp16, last). Half h, quarter k,
// lane l: element 128h + 32k + l; y = (d * scale[i/16]) * (q - 32).
void DecodeQ6_KBlock(const uint8_t* b, float* y) {
  const uint8_t* ql_all = b;
  const uint8_t* qh_all = b + 128;
  const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
  const float d = LoadF16(b + 208);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = ql_all + 64 * h;
    const uint8_t* qh = qh_all + 32 * h;
    for (int k = 0; k < 4; ++k) {
      const uint8_t* low_src = ql + 32 * (k % 2);
      const int low_shift = 4 * (k / 2);
      const int high_shift = 2 * k;
      float* out = y + 128 * h + 32 * k;
      const int8_t* sc = scales + 8 * h + 2 * k;  // (128h + 32k) / 16
      const float d0 = d * static_cast<float>(sc[0]);
      const float d1 = d * static_cast<float>(sc[1]);
      for (int l = 0; l < 32; ++l) {
        const int q = (((low_src[l] >> low_shift) & 0xF) | (((qh[l] >> high_shift) & 3) << 4)) - 32;
        out[l] = (l < 16 ? d0 : d1) * static_cast<float>(q);
      }
    }
  }
}

using BlockDecoder = void (*)(const uint8_t*, float*);

std::optional<BlockDecoder> BlockDecoderFor(GgmlType type) {
  switch (type) {
    case GgmlType::kQ8_0:
      return DecodeQ8_0Block;
    case GgmlType::kQ4_0:
      return DecodeQ4_0Block;
    case GgmlType::kQ4_K:
      return DecodeQ4_KBlock;
    case GgmlType::kQ5_K:
      return DecodeQ5_KBlock;
    case GgmlType::kQ6_K:
      return DecodeQ6_KBlock;
    default:
      return std::nullopt;
  }
}

std::string TypeLabel(GgmlType type) {
  const auto info = gguf::LookupGgmlType(static_cast<uint32_t>(type));
  if (info.has_value()) return std::string(info->name);
  return absl::StrCat("type id ", static_cast<uint32_t>(type));
}

}  // namespace

bool CanDequantize(GgmlType type) {
  return type == GgmlType::kF32 || type == GgmlType::kF16 || type == GgmlType::kBF16 ||
         BlockDecoderFor(type).has_value();
}

uint64_t RowBytes(GgmlType type, int64_t n) {
  const auto info = gguf::LookupGgmlType(static_cast<uint32_t>(type));
  if (!info.has_value() || n <= 0) return 0;
  return static_cast<uint64_t>(n) / info->block_elems * info->block_bytes;
}

absl::Status Dequantize(GgmlType type, absl::Span<const uint8_t> in, absl::Span<float> out) {
  if (!CanDequantize(type))
    return absl::InvalidArgumentError(
        absl::StrCat("dequantize: unsupported tensor type ", TypeLabel(type)));
  const gguf::GgmlTypeInfo& info = gguf::TypeInfo(type);
  const int64_t n = static_cast<int64_t>(out.size());
  if (n % info.block_elems != 0)
    return absl::InvalidArgumentError(absl::StrCat("dequantize ", TypeLabel(type), ": ", n,
                                                   " elements is not a multiple of the block size ",
                                                   info.block_elems));
  if (in.size() != RowBytes(type, n))
    return absl::InvalidArgumentError(absl::StrCat("dequantize ", TypeLabel(type), ": ", n,
                                                   " elements need ", RowBytes(type, n),
                                                   " bytes, got ", in.size()));
  switch (type) {
    case GgmlType::kF32:
      DecodeF32(in.data(), n, out.data());
      return absl::OkStatus();
    case GgmlType::kF16:
      DecodeF16(in.data(), n, out.data());
      return absl::OkStatus();
    case GgmlType::kBF16:
      DecodeBf16(in.data(), n, out.data());
      return absl::OkStatus();
    default:
      break;
  }
  const BlockDecoder decode = *BlockDecoderFor(type);
  const int64_t blocks = n / info.block_elems;
  for (int64_t b = 0; b < blocks; ++b)
    decode(in.data() + b * info.block_bytes, out.data() + b * info.block_elems);
  return absl::OkStatus();
}

}  // namespace kiln::quant
