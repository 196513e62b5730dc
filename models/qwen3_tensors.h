// The tensor names and GGUF shapes of a dense Qwen3 model (spec/qwen3-model.md §2.1).
#ifndef KILN_MODELS_QWEN3_TENSORS_H_
#define KILN_MODELS_QWEN3_TENSORS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "models/qwen3_config.h"

namespace kiln::models {

enum class TensorRole { kNorm, kMatrix, kEmbedding, kOutput };

struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> dims;  // GGUF ne order: ne[0] (row length) first
  TensorRole role;
};

// Layer-tensor name, e.g. LayerTensor(3, "attn_q") == "blk.3.attn_q.weight".
std::string LayerTensor(int64_t layer, const char* what);

// All tensors in the order llama-quantize writes them (spec/q4km-recipe.md §5);
// output.weight only when untied.
std::vector<ExpectedTensor> ExpectedQwen3Tensors(const Qwen3Config& config);

}  // namespace kiln::models

#endif  // KILN_MODELS_QWEN3_TENSORS_H_
