#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace kiln::runtime {
namespace {

float Clean(float x) { return std::isnan(x) ? -std::numeric_limits<float>::infinity() : x; }

// Most likely first; ties go to the lower id so results do not depend on the
// sort's stability.
bool Before(int32_t a, int32_t b, absl::Span<const float> logits) {
  float la = Clean(logits[a]), lb = Clean(logits[b]);
  return la > lb || (la == lb && a < b);
}

// A double in [0, 1) from the top 53 bits of one draw: unlike
// std::uniform_real_distribution, the same on every standard library.
double Uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

int32_t Argmax(absl::Span<const float> logits) {
  int32_t best = 0;
  for (int32_t i = 1; i < static_cast<int32_t>(logits.size()); ++i)
    if (Clean(logits[i]) > Clean(logits[best])) best = i;
  return best;
}

absl::StatusOr<Sampler> Sampler::Create(const SamplerOptions& o) {
  if (!std::isfinite(o.temperature) || o.temperature < 0.0f)
    return absl::InvalidArgumentError(absl::StrCat("--temp must be a finite number >= 0 (0: greedy), got ", o.temperature));
  if (o.top_k < 0) return absl::InvalidArgumentError(absl::StrCat("--top-k must be >= 0 (0: all), got ", o.top_k));
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f))
    return absl::InvalidArgumentError(absl::StrCat("--top-p must be in (0, 1], got ", o.top_p));
  return Sampler(o);
}

std::vector<Candidate> Sampler::Candidates(absl::Span<const float> logits) const {
  const int32_t n = static_cast<int32_t>(logits.size());
  if (n == 0) return {};
  if (greedy()) return {{Argmax(logits), 1.0f}};

  std::vector<int32_t> ids(n);
  for (int32_t i = 0; i < n; ++i) ids[i] = i;
  auto before = [&](int32_t a, int32_t b) { return Before(a, b, logits); };
  // Top-k (temperature does not change the order, so sort the raw logits).
  size_t keep = ids.size();
  if (options_.top_k > 0 && options_.top_k < n) keep = options_.top_k;
  std::partial_sort(ids.begin(), ids.begin() + keep, ids.end(), before);
  ids.resize(keep);
  // Drop -inf (and NaN) logits: they have probability 0.
  while (ids.size() > 1 && Clean(logits[ids.back()]) == -std::numeric_limits<float>::infinity()) ids.pop_back();
  if (Clean(logits[ids.front()]) == -std::numeric_limits<float>::infinity()) return {{0, 1.0f}};

  // Softmax at the temperature, in double so the nucleus cut is exact enough
  // for hand-made rows.
  const double inv_t = 1.0 / options_.temperature;
  const double max_logit = Clean(logits[ids.front()]);
  std::vector<double> w(ids.size());
  double sum = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    w[i] = std::exp((Clean(logits[ids[i]]) - max_logit) * inv_t);
    sum += w[i];
  }
  // Top-p: the shortest prefix whose probability reaches top_p.
  size_t cut = ids.size();
  if (options_.top_p < 1.0f) {
    double acc = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      acc += w[i] / sum;
      if (acc >= static_cast<double>(options_.top_p)) {
        cut = i + 1;
        break;
      }
    }
  }
  double kept = 0;
  for (size_t i = 0; i < cut; ++i) kept += w[i];
  std::vector<Candidate> out(cut);
  for (size_t i = 0; i < cut; ++i) out[i] = {ids[i], static_cast<float>(w[i] / kept)};
  return out;
}

int32_t Sampler::Sample(absl::Span<const float> logits) {
  if (greedy()) return Argmax(logits);
  std::vector<Candidate> c = Candidates(logits);
  if (c.empty()) return 0;
  double u = Uniform01(rng_);
  double acc = 0;
  for (const Candidate& x : c) {
    acc += x.prob;
    if (u < acc) return x.id;
  }
  return c.back().id;  // rounding left u just above the last sum
}

}  // namespace kiln::runtime
