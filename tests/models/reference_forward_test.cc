// The CPU reference: prefill-all and token-by-token decode agree, for every
// weight type, and bad calls are clear errors.
#include "models/reference_forward.h"

#include <cmath>

#include "gtest/gtest.h"
#include "models/qwen3_config.h"
#include "tests/models/test_models.h"

namespace kiln::models {
namespace {

class PrefillVsDecode : public ::testing::TestWithParam<std::tuple<Recipe, bool>> {};

TEST_P(PrefillVsDecode, Agree) {
  SynthOptions o;
  o.recipe = std::get<0>(GetParam());
  o.seed = 11;
  auto f = SynthAndOpen(o, "m.gguf");
  ASSERT_NE(f, nullptr);
  auto c = *ReadQwen3Config(*f);
  ReferenceOptions ro{.threads = 2, .kv_f16 = std::get<1>(GetParam())};
  auto all = *ReferenceModel::Create(*f, c, ro);
  auto step = *ReferenceModel::Create(*f, c, ro);
  const std::vector<int32_t> tokens = {5, 17, 42, 99, 3, 250, 7, 64, 128, 11, 300, 2};
  auto prefill = all->Forward(tokens);
  ASSERT_TRUE(prefill.ok());
  std::vector<float> decoded;
  for (int32_t t : tokens) {
    auto l = step->Forward({t});
    ASSERT_TRUE(l.ok());
    decoded.insert(decoded.end(), l->begin(), l->end());
  }
  EXPECT_EQ(step->position(), static_cast<int64_t>(tokens.size()));
  EXPECT_LE(RelErr(decoded, *prefill), 1e-5);
  // Rows differ from position to position: the cache is really used.
  std::vector<float> first(prefill->begin(), prefill->begin() + c.n_vocab);
  std::vector<float> last(prefill->end() - c.n_vocab, prefill->end());
  EXPECT_GT(RelErr(first, last), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Types, PrefillVsDecode,
                         ::testing::Combine(::testing::Values(Recipe::kF16, Recipe::kBF16, Recipe::kQ8_0,
                                                              Recipe::kQ4_0, Recipe::kQ6_K, Recipe::kQ4_K_M),
                                            ::testing::Bool()));

TEST(Reference, ResetStartsOver) {
  SynthOptions o;
  auto f = SynthAndOpen(o, "m.gguf");
  auto c = *ReadQwen3Config(*f);
  auto m = *ReferenceModel::Create(*f, c, {.threads = 2});
  auto a = *m->Forward({1, 2, 3});
  m->Reset();
  auto b = *m->Forward({1, 2, 3});
  EXPECT_EQ(a, b);
}

TEST(Reference, RejectsBadTokensAndFullContext) {
  SynthOptions o;
  auto f = SynthAndOpen(o, "m.gguf");
  auto c = *ReadQwen3Config(*f);
  auto m = *ReferenceModel::Create(*f, c, {.threads = 2, .max_context = 4});
  auto bad = m->Forward({static_cast<int32_t>(c.n_vocab)});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("outside the vocabulary"), std::string::npos);
  EXPECT_TRUE(m->Forward({1, 2, 3, 4}).ok());
  auto full = m->Forward({1});
  EXPECT_NE(full.status().message().find("context full"), std::string::npos);
  EXPECT_EQ(m->Forward({}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Reference, ArgmaxTakesFirstMaximum) {
  std::vector<float> x = {1, 3, 2, 3};
  EXPECT_EQ(Argmax(x), 1);
}

}  // namespace
}  // namespace kiln::models
