// Random weights written straight into a GGML encoding, without a float
// detour or a quantizer search: an 8B model's 5 GB are produced at memory
// speed. Values are zero-mean with standard deviation ~`sigma`.
#ifndef KILN_MODELS_SYNTH_WEIGHTS_H_
#define KILN_MODELS_SYNTH_WEIGHTS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "models/gguf/ggml_type.h"

namespace kiln::models {

// splitmix64: a tiny, fast, well-mixed generator (Steele et al., 2014).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float Uniform() { return static_cast<float>(Next() >> 40) * (1.0f / 16777216.0f); }  // [0,1)

 private:
  uint64_t state_;
};

// Stable 64-bit FNV-1a of a string (unlike absl::Hash, the same in every process).
uint64_t StableHash(const char* s, uint64_t seed);

// Fills `out` (rows of `row_len` elements of `type`) with random values.
// `norm_like` gives values in [1 - sigma, 1 + sigma] instead of zero-mean
// (RMSNorm weights). Deterministic in `seed`; threads split rows in chunks
// seeded independently of the thread count.
absl::Status FillRandomTensor(gguf::GgmlType type, int64_t row_len, float sigma, bool norm_like,
                              uint64_t seed, int threads, absl::Span<uint8_t> out);

}  // namespace kiln::models

#endif  // KILN_MODELS_SYNTH_WEIGHTS_H_
