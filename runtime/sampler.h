// Picks the next token from a row of logits on the CPU: greedy, or
// temperature + top-k + top-p sampling from a seeded std::mt19937_64, so a
// seed reproduces a run on any platform.
#ifndef KILN_RUNTIME_SAMPLER_H_
#define KILN_RUNTIME_SAMPLER_H_

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace kiln::runtime {

struct SamplerOptions {
  // 0: greedy (argmax), whatever top_k and top_p say; negative is refused.
  float temperature = 0.0f;
  // Keep the k most likely tokens; <= 0 keeps all.
  int top_k = 0;
  // Keep the smallest set of most likely tokens whose probability reaches
  // top_p; >= 1 keeps all.
  float top_p = 1.0f;
  uint64_t seed = 0;
};

struct Candidate {
  int32_t id;
  float prob;  // renormalized over the kept candidates
};

class Sampler {
 public:
  // InvalidArgument for top_p outside (0, 1], a negative top_k, or a
  // temperature that is negative or not finite.
  static absl::StatusOr<Sampler> Create(const SamplerOptions& options);

  // Greedy: the device's argmax is the answer, so no logits need to travel.
  bool greedy() const { return options_.temperature <= 0.0f || options_.top_k == 1; }

  // The next token. Greedy returns Argmax(logits); otherwise one draw from
  // Candidates(logits), advancing the generator by exactly one number.
  int32_t Sample(absl::Span<const float> logits);

  // The distribution Sample draws from, most likely first (ties: lower id
  // first). Order of operations as in Hugging Face's generate(): divide by
  // the temperature, keep the top k, softmax, keep the top-p nucleus (at
  // least one token), renormalize. NaN logits count as -inf; a row with no
  // finite logit yields token 0 alone.
  std::vector<Candidate> Candidates(absl::Span<const float> logits) const;

  const SamplerOptions& options() const { return options_; }

 private:
  explicit Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) {}
  SamplerOptions options_;
  std::mt19937_64 rng_;
};

// Index of the largest logit, the lowest index on ties; NaN never wins.
int32_t Argmax(absl::Span<const float> logits);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_SAMPLER_H_
