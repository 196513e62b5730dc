// The CPU reference forward pass of a dense Qwen3 model, float32 on
// dequantized weights (spec/qwen3-model.md §3). It is the oracle every
// compiled path is checked against: plain code, no fusion, no tricks.
#ifndef KILN_MODELS_REFERENCE_FORWARD_H_
#define KILN_MODELS_REFERENCE_FORWARD_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "models/gguf/gguf_file.h"
#include "models/qwen3_config.h"

namespace kiln::models {

struct ReferenceOptions {
  int threads = 0;         // 0: all hardware threads
  bool kv_f16 = false;     // round cached K/V through fp16 (as the GPU cache does)
  int64_t max_context = 0; // 0: the model's context_length
};

class ReferenceModel {
 public:
  // `file` must outlive the model; weights stay in the file's mapping and
  // are dequantized row by row as they are used.
  static absl::StatusOr<std::unique_ptr<ReferenceModel>> Create(const gguf::GgufFile& file,
                                                                const Qwen3Config& config,
                                                                ReferenceOptions options = {});
  ~ReferenceModel();

  // Runs `tokens` at positions position()..position()+T-1, appending their
  // K/V to the cache. Returns logits [T, n_vocab], row-major.
  absl::StatusOr<std::vector<float>> Forward(absl::Span<const int32_t> tokens);
  // Forgets the cache: the next Forward starts at position 0.
  void Reset();
  int64_t position() const;
  const Qwen3Config& config() const;

 private:
  struct State;
  explicit ReferenceModel(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

// Index of the largest logit (the first one on ties).
int32_t Argmax(absl::Span<const float> logits);

}  // namespace kiln::models

#endif  // KILN_MODELS_REFERENCE_FORWARD_H_
