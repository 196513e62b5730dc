// The Q4_K_M/Q6_K/Q8_0 type assignment against spec/q4km-recipe.md §3.1-§3.2.
#include "models/quant_recipe.h"

#include <map>

#include "gtest/gtest.h"
#include "models/synth.h"

namespace kiln::models {
namespace {

std::map<gguf::GgmlType, int> Counts(const std::string& preset, Recipe r, bool untied = false) {
  Qwen3Config c = *PresetConfig(preset);
  c.n_vocab = 151936;
  if (untied) c.tied_embeddings = false;
  std::map<gguf::GgmlType, int> counts;
  for (const ExpectedTensor& t : ExpectedQwen3Tensors(c)) {
    int64_t layer = t.name.rfind("blk.", 0) == 0 ? std::atoll(t.name.c_str() + 4) : -1;
    ++counts[RecipeType(r, t, layer, c.n_layer, c.tied_embeddings)];
  }
  return counts;
}

TEST(QuantRecipe, Q4KMCountsMatchSpecTable) {
  using T = gguf::GgmlType;
  struct Row { const char* preset; bool untied; int f32, q4k, q6k; };
  for (const Row& r : {Row{"0.6b", false, 113, 168, 29}, Row{"0.6b", true, 113, 169, 29},
                       Row{"4b", false, 145, 216, 37}, Row{"8b", false, 145, 217, 37},
                       Row{"14b", false, 161, 241, 41}, Row{"32b", false, 257, 385, 65}}) {
    auto c = Counts(r.preset, Recipe::kQ4_K_M, r.untied);
    EXPECT_EQ(c[T::kF32], r.f32) << r.preset;
    EXPECT_EQ(c[T::kQ4_K], r.q4k) << r.preset;
    EXPECT_EQ(c[T::kQ6_K], r.q6k) << r.preset;
    EXPECT_EQ(c.size(), 3u) << r.preset;
  }
}

TEST(QuantRecipe, UseMoreBitsLayersFor36) {
  std::vector<int64_t> got;
  for (int64_t i = 0; i < 36; ++i)
    if (UseMoreBits(i, 36)) got.push_back(i);
  EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 31, 32, 33, 34, 35}));
}

TEST(QuantRecipe, Q8AndQ6KAreUniform) {
  auto q8 = Counts("8b", Recipe::kQ8_0);
  EXPECT_EQ(q8[gguf::GgmlType::kQ8_0], 36 * 7 + 2);
  auto q6 = Counts("0.6b", Recipe::kQ6_K);
  EXPECT_EQ(q6[gguf::GgmlType::kQ6_K], 28 * 7 + 1);  // tied: token_embd only
}

TEST(QuantRecipe, FloatRecipesNeverQuantize) {
  auto f16 = Counts("tiny", Recipe::kF16);
  EXPECT_EQ(f16.count(gguf::GgmlType::kQ6_K), 0u);
  EXPECT_GT(f16[gguf::GgmlType::kF16], 0);
  EXPECT_EQ(ParseRecipe("q4_k_m"), Recipe::kQ4_K_M);
  EXPECT_FALSE(ParseRecipe("Q3_K_S").has_value());
}

}  // namespace
}  // namespace kiln::models
