// Qwen3 hyper-parameters read from GGUF metadata, and the checks that a
// file's tensors match them (spec/qwen3-model.md §1, §2, §6).
#ifndef KILN_MODELS_QWEN3_CONFIG_H_
#define KILN_MODELS_QWEN3_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "models/gguf/gguf_file.h"

namespace kiln::models {

enum class RopeScaling { kNone, kLinear, kYarn };

struct Qwen3Config {
  int64_t n_layer = 0;
  int64_t n_embd = 0;
  int64_t n_ff = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;  // attention.key_length (= value_length = n_rot)
  int64_t n_vocab = 0;
  int64_t context_length = 0;
  float rms_eps = 0;
  float rope_base = 10000.0f;
  RopeScaling rope_scaling = RopeScaling::kNone;
  float rope_factor = 1.0f;         // context extension factor s
  int64_t rope_orig_context = 0;    // YaRN n_ctx_orig
  float yarn_ext_factor = 0.0f;
  float yarn_attn_factor = 1.0f;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
  bool tied_embeddings = false;     // no output.weight: reuse token_embd

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
  const char* output_tensor() const {
    return tied_embeddings ? "token_embd.weight" : "output.weight";
  }
};

// YaRN's derived constants (spec/qwen3-model.md §3.4): the ramp's [low, high]
// over rotary dims from corr_dim(beta_fast / beta_slow), and the magnitude
// factor applied to cos and sin: attn_factor (1 + 0.1 ln s), or attn_factor
// alone when ext_factor is 0. Meaningful when rope_scaling == kYarn.
struct YarnRamp {
  float low = 0;
  float high = 0;
  float mscale = 1;
};
YarnRamp YarnRampOf(const Qwen3Config& config);

// Reads and cross-checks every key. Wrong architecture -> Unimplemented
// naming it; missing/mistyped/contradictory key -> InvalidArgument naming it.
absl::StatusOr<Qwen3Config> ReadQwen3Config(const gguf::GgufFile& file);

// Every tensor of the model present, with the right shape and a type kiln
// can read; errors name the tensor. Unknown extra tensors are allowed, but
// not those of a layer past block_count.
absl::Status CheckQwen3Tensors(const gguf::GgufFile& file, const Qwen3Config& config);

// Weight bytes a decode step reads: every matrix and norm, the output
// matrix, and one embedding row (the embedding table itself is gathered).
uint64_t WeightBytesPerToken(const gguf::GgufFile& file, const Qwen3Config& config);

}  // namespace kiln::models

#endif  // KILN_MODELS_QWEN3_CONFIG_H_
