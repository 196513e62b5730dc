// Synthetic Qwen3 GGUF files: real shapes (tiny for tests, then 0.6B to 32B),
// random weights generated directly in their quantized encodings so an 8B
// file is written in well under two minutes, deterministic for a seed.
#ifndef KILN_MODELS_SYNTH_H_
#define KILN_MODELS_SYNTH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/qwen3_config.h"
#include "models/quant_recipe.h"

namespace kiln::models {

// Hyper-parameters of a preset ("tiny", "0.6b", "1.7b", "4b", "8b", "14b",
// "32b"); n_vocab is 0 here, it comes from the tokenizer.
absl::StatusOr<Qwen3Config> PresetConfig(const std::string& preset);
std::vector<std::string> PresetNames();

struct SynthOptions {
  std::string preset = "tiny";
  Recipe recipe = Recipe::kQ8_0;
  uint64_t seed = 0;
  // tokenizer.json of the real Qwen3 vocabulary (tokenizer_config.json beside
  // it), or a .gguf to copy the vocabulary from. Empty: the small synthetic
  // vocabulary for "tiny", the default location of the real one otherwise.
  std::string tokenizer;
  bool force_untied = false;  // write output.weight even for tied presets
  int threads = 0;            // 0: all hardware threads
  // Called with (bytes written, total bytes) as tensors finish.
  std::function<void(uint64_t, uint64_t)> progress;
};

absl::Status WriteSyntheticModel(const SynthOptions& options, const std::string& path);

// Where the install step puts the real Qwen3 tokenizer.json (env
// KILN_TOKENIZER overrides).
std::string DefaultTokenizerPath();
// The files WriteSyntheticModel reads for `o`'s vocabulary: none for tiny's
// own; the .gguf; or tokenizer.json and the tokenizer_config.json beside it.
std::vector<std::string> TokenizerFiles(const SynthOptions& o);

}  // namespace kiln::models

#endif  // KILN_MODELS_SYNTH_H_
