// Which GGML type each tensor of a Qwen3 model gets under a llama-quantize
// style recipe (spec/q4km-recipe.md): F16, BF16, Q8_0, Q4_0, Q6_K, Q4_K_M.
#ifndef KILN_MODELS_QUANT_RECIPE_H_
#define KILN_MODELS_QUANT_RECIPE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "models/gguf/ggml_type.h"
#include "models/qwen3_tensors.h"

namespace kiln::models {

enum class Recipe { kF16, kBF16, kQ8_0, kQ4_0, kQ6_K, kQ4_K_M };

std::optional<Recipe> ParseRecipe(std::string_view name);  // "q4_k_m", "Q8_0", ...
std::string_view RecipeName(Recipe r);
uint32_t RecipeFileType(Recipe r);  // general.file_type (llama_ftype)

// llama-quantize's use_more_bits(i, n) (spec/q4km-recipe.md §3).
bool UseMoreBits(int64_t i, int64_t n);

// The type of `tensor` (layer index `layer`, -1 outside blocks) in a model of
// `n_layer` layers; `tied` when the file has no output.weight.
gguf::GgmlType RecipeType(Recipe r, const ExpectedTensor& tensor, int64_t layer, int64_t n_layer,
                          bool tied);

}  // namespace kiln::models

#endif  // KILN_MODELS_QUANT_RECIPE_H_
