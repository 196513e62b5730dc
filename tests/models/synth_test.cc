// Synthetic models: valid Qwen3 files for every type, deterministic per seed.
#include "models/synth.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "models/qwen3_config.h"
#include "models/reference_forward.h"
#include "tests/models/test_models.h"

namespace kiln::models {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Synth, SameSeedSameBytesOtherSeedOtherBytes) {
  SynthOptions o;
  o.recipe = Recipe::kQ4_K_M;
  o.seed = 7;
  ASSERT_TRUE(WriteSyntheticModel(o, TempPath("a.gguf")).ok());
  o.threads = 1;  // the thread count must not change the bytes
  ASSERT_TRUE(WriteSyntheticModel(o, TempPath("b.gguf")).ok());
  o.seed = 8;
  ASSERT_TRUE(WriteSyntheticModel(o, TempPath("c.gguf")).ok());
  std::string a = ReadAll(TempPath("a.gguf")), b = ReadAll(TempPath("b.gguf")), c = ReadAll(TempPath("c.gguf"));
  EXPECT_GT(a.size(), 1000000u);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), c.size());
  EXPECT_NE(a, c);
}

class SynthEveryType : public ::testing::TestWithParam<Recipe> {};

TEST_P(SynthEveryType, LoadsChecksAndRunsFinite) {
  SynthOptions o;
  o.recipe = GetParam();
  o.seed = 3;
  auto f = SynthAndOpen(o, "m.gguf");
  ASSERT_NE(f, nullptr);
  auto c = ReadQwen3Config(*f);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->n_layer, 2);
  EXPECT_EQ(c->n_embd, 256);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_TRUE(c->tied_embeddings);
  ASSERT_TRUE(CheckQwen3Tensors(*f, *c).ok());
  auto m = ReferenceModel::Create(*f, *c, {.threads = 2});
  ASSERT_TRUE(m.ok()) << m.status();
  auto logits = (*m)->Forward(std::vector<int32_t>{1, 2, 3, 4, 5});
  ASSERT_TRUE(logits.ok()) << logits.status();
  double sum_sq = 0;
  for (float x : *logits) {
    ASSERT_TRUE(std::isfinite(x));
    sum_sq += x * x;
  }
  // Logits of unit-scale weights are O(1): not collapsed to zero, not blown up.
  double rms = std::sqrt(sum_sq / logits->size());
  EXPECT_GT(rms, 0.05);
  EXPECT_LT(rms, 50.0);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, SynthEveryType,
                         ::testing::Values(Recipe::kF16, Recipe::kBF16, Recipe::kQ8_0, Recipe::kQ4_0,
                                           Recipe::kQ6_K, Recipe::kQ4_K_M));

TEST(Synth, UntiedWritesOutputWeight) {
  SynthOptions o;
  o.force_untied = true;
  auto f = SynthAndOpen(o, "u.gguf");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->FindTensor("output.weight"), nullptr);
  EXPECT_FALSE(ReadQwen3Config(*f)->tied_embeddings);
}

TEST(Synth, UnknownPresetIsAClearError) {
  SynthOptions o;
  o.preset = "70b";
  absl::Status s = WriteSyntheticModel(o, TempPath("x.gguf"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("70b"), std::string::npos);
}

TEST(Synth, PresetShapesMatchQwen3) {
  auto c = PresetConfig("8b");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->n_layer, 36);
  EXPECT_EQ(c->n_embd, 4096);
  EXPECT_EQ(c->n_ff, 12288);
  EXPECT_EQ(c->q_dim(), 4096);
  EXPECT_FALSE(c->tied_embeddings);
  auto small = PresetConfig("0.6b");
  EXPECT_EQ(small->q_dim(), 2048);  // attention width differs from n_embd
  EXPECT_TRUE(small->tied_embeddings);
}

}  // namespace
}  // namespace kiln::models
