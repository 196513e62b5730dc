#include "models/synth_weights.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "models/quant/dequantize.h"
#include "models/quant/float16.h"
#include "support/parallel_for.h"

namespace kiln::models {
namespace {

constexpr int64_t kRowsPerChunk = 16;

void PutHalf(uint8_t* p, float f) {
  uint16_t h = quant::FloatToHalf(f);
  std::memcpy(p, &h, 2);
}

void RandomBytes(SplitMix64& rng, uint8_t* p, size_t n) {
  while (n >= 8) {
    uint64_t r = rng.Next();
    std::memcpy(p, &r, 8);
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t r = rng.Next();
    std::memcpy(p, &r, n);
  }
}

// Each generator writes one block. The unit-variance constants are the
// variances of the uniform code distributions: (levels^2 - 1) / 12.
void Q8_0Block(SplitMix64& rng, float sigma, uint8_t* b) {
  // int8 codes uniform in [-127, 127]: variance 127*128/3 ~ 5419.
  PutHalf(b, sigma / std::sqrt(5419.0f));
  RandomBytes(rng, b + 2, 32);
  for (int i = 0; i < 32; ++i)
    if (b[2 + i] == 0x80) b[2 + i] = 0x81;
}

void Q4_0Block(SplitMix64& rng, float sigma, uint8_t* b) {
  PutHalf(b, sigma / std::sqrt(21.25f));  // codes 0..15 around 8
  RandomBytes(rng, b + 2, 16);
}

// Q4_K / Q5_K: per sub-block scale code sc_j = min code m_j in [32, 63] and
// dmin = d * (levels - 1) / 2, so every sub-block is centred on zero
// (layout: spec/quant-formats.md §4.1).
void KScales(SplitMix64& rng, uint8_t* s) {
  uint8_t v[8];
  for (int j = 0; j < 8; ++j) v[j] = static_cast<uint8_t>(32 + (rng.Next() & 31));
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>(v[j] | ((v[j + 4] >> 4) << 6));
    s[j + 4] = s[j];
    s[j + 8] = static_cast<uint8_t>((v[j + 4] & 15) | ((v[j + 4] & 15) << 4));
  }
}

void Q4_KBlock(SplitMix64& rng, float sigma, uint8_t* b) {
  const float d = sigma / (47.5f * std::sqrt(21.25f));
  PutHalf(b, d);
  PutHalf(b + 2, d * 7.5f);
  KScales(rng, b + 4);
  RandomBytes(rng, b + 16, 128);
}

void Q5_KBlock(SplitMix64& rng, float sigma, uint8_t* b) {
  const float d = sigma / (47.5f * std::sqrt(85.25f));
  PutHalf(b, d);
  PutHalf(b + 2, d * 15.5f);
  KScales(rng, b + 4);
  RandomBytes(rng, b + 16, 32 + 128);
}

void Q6_KBlock(SplitMix64& rng, float sigma, uint8_t* b) {
  RandomBytes(rng, b, 192);  // ql, qh
  for (int j = 0; j < 16; ++j) {
    int s = 64 + static_cast<int>(rng.Next() % 64);  // |scale| in [64, 127]
    b[192 + j] = static_cast<uint8_t>(static_cast<int8_t>((rng.Next() & 1) ? s : -s));
  }
  PutHalf(b + 208, sigma / (95.5f * std::sqrt(341.25f)));
}

void FloatRow(gguf::GgmlType type, SplitMix64& rng, float sigma, bool norm_like, int64_t n,
              uint8_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    float u = rng.Uniform() * 2.0f - 1.0f;
    float x = norm_like ? 1.0f + sigma * u : sigma * std::sqrt(3.0f) * u;
    if (type == gguf::GgmlType::kF32) {
      std::memcpy(out + 4 * i, &x, 4);
    } else {
      uint16_t h = type == gguf::GgmlType::kF16 ? quant::FloatToHalf(x) : quant::FloatToBf16(x);
      std::memcpy(out + 2 * i, &h, 2);
    }
  }
}

}  // namespace

uint64_t StableHash(const char* s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (; *s; ++s) h = (h ^ static_cast<uint8_t>(*s)) * 1099511628211ull;
  return h;
}

absl::Status FillRandomTensor(gguf::GgmlType type, int64_t row_len, float sigma, bool norm_like,
                              uint64_t seed, int threads, absl::Span<uint8_t> out) {
  const gguf::GgmlTypeInfo& info = gguf::TypeInfo(type);
  const uint64_t row_bytes = quant::RowBytes(type, row_len);
  if (row_bytes == 0 || out.size() % row_bytes != 0)
    return absl::InternalError(absl::StrCat("synthetic tensor of ", out.size(), " bytes is not whole rows of ", row_bytes));
  const bool is_float = type == gguf::GgmlType::kF32 || type == gguf::GgmlType::kF16 ||
                        type == gguf::GgmlType::kBF16;
  void (*block)(SplitMix64&, float, uint8_t*) = nullptr;
  switch (type) {
    case gguf::GgmlType::kQ8_0: block = Q8_0Block; break;
    case gguf::GgmlType::kQ4_0: block = Q4_0Block; break;
    case gguf::GgmlType::kQ4_K: block = Q4_KBlock; break;
    case gguf::GgmlType::kQ5_K: block = Q5_KBlock; break;
    case gguf::GgmlType::kQ6_K: block = Q6_KBlock; break;
    default:
      if (!is_float)
        return absl::UnimplementedError(absl::StrCat("cannot synthesize type ", std::string(info.name)));
  }
  if (norm_like && !is_float) return absl::InternalError("norm weights must be a float type");
  const int64_t rows = static_cast<int64_t>(out.size() / row_bytes);
  const int64_t chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  ParallelFor(chunks, threads, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      SplitMix64 rng(seed ^ (0x632BE59BD9B4E019ull * static_cast<uint64_t>(c + 1)));
      const int64_t r0 = c * kRowsPerChunk, r1 = std::min(rows, r0 + kRowsPerChunk);
      uint8_t* p = out.data() + r0 * row_bytes;
      if (is_float) {
        FloatRow(type, rng, sigma, norm_like, (r1 - r0) * row_len, p);
      } else {
        const int64_t blocks = (r1 - r0) * row_len / info.block_elems;
        for (int64_t i = 0; i < blocks; ++i) block(rng, sigma, p + i * info.block_bytes);
      }
    }
  });
  return absl::OkStatus();
}

}  // namespace kiln::models
