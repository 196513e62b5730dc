#include "models/quant_recipe.h"

#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace kiln::models {
namespace {

struct RecipeEntry {
  Recipe recipe;
  std::string_view name;
  uint32_t file_type;
  gguf::GgmlType base;
};

// spec/qwen3-model.md §1.2 file types; spec/q4km-recipe.md §1 step 3 bases.
constexpr std::array<RecipeEntry, 6> kRecipes = {{
    {Recipe::kF16, "F16", 1, gguf::GgmlType::kF16},
    {Recipe::kBF16, "BF16", 32, gguf::GgmlType::kBF16},
    {Recipe::kQ8_0, "Q8_0", 7, gguf::GgmlType::kQ8_0},
    {Recipe::kQ4_0, "Q4_0", 2, gguf::GgmlType::kQ4_0},
    {Recipe::kQ6_K, "Q6_K", 18, gguf::GgmlType::kQ6_K},
    {Recipe::kQ4_K_M, "Q4_K_M", 15, gguf::GgmlType::kQ4_K},
}};

const RecipeEntry& Entry(Recipe r) {
  for (const auto& e : kRecipes)
    if (e.recipe == r) return e;
  return kRecipes[0];
}

bool IsQuantized(Recipe r) { return r != Recipe::kF16 && r != Recipe::kBF16; }

}  // namespace

std::optional<Recipe> ParseRecipe(std::string_view name) {
  std::string upper = absl::AsciiStrToUpper(std::string(name));
  for (const auto& e : kRecipes)
    if (e.name == upper) return e.recipe;
  return std::nullopt;
}

std::string_view RecipeName(Recipe r) { return Entry(r).name; }
uint32_t RecipeFileType(Recipe r) { return Entry(r).file_type; }

bool UseMoreBits(int64_t i, int64_t n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

gguf::GgmlType RecipeType(Recipe r, const ExpectedTensor& t, int64_t layer, int64_t n_layer,
                          bool tied) {
  if (t.role == TensorRole::kNorm) return gguf::GgmlType::kF32;  // 1-D: never quantized
  const gguf::GgmlType base = Entry(r).base;
  if (!IsQuantized(r)) return base;
  // The "output" treatment (spec/q4km-recipe.md §2): Q6_K unless the recipe is Q8_0.
  const bool output_like = t.role == TensorRole::kOutput || (t.role == TensorRole::kEmbedding && tied);
  if (output_like) return r == Recipe::kQ8_0 ? gguf::GgmlType::kQ8_0 : gguf::GgmlType::kQ6_K;
  if (r == Recipe::kQ4_K_M && layer >= 0 &&
      (absl::StrContains(t.name, "attn_v.weight") || absl::StrContains(t.name, "ffn_down")) &&
      UseMoreBits(layer, n_layer))
    return gguf::GgmlType::kQ6_K;
  return base;
}

}  // namespace kiln::models
