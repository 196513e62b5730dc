// The meaning test: for the tiny synthetic Qwen3 in every weight type, the
// interpreter runs load + prefill + decode on the module after each pass of
// the full pipeline (compiler/pipelines.cc) and matches the module before
// any pass (relative error <= 1e-5, the same greedy tokens).
#include <cmath>
#include <vector>

#include "compiler/pipelines.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "models/gguf_weight_source.h"
#include "models/qwen3_graph.h"
#include "tests/models/test_models.h"

namespace kiln::passes {
namespace {

using models::Recipe;

ir::HostTensor Ids(std::vector<int32_t> ids) {
  const int64_t n = static_cast<int64_t>(ids.size());
  return ir::HostTensor::FromInts(ir::DType::kI32, {n}, std::move(ids));
}

struct Outputs {
  std::vector<std::vector<float>> logits;  // prefill, then each decode step
  std::vector<int32_t> tokens;             // decode's argmax
};

// load, prefill of a short prompt, three greedy decode steps.
Outputs RunModel(const ir::Module& m, const ir::WeightSource& weights) {
  Outputs out;
  auto interp = ir::Interpreter::Create(m, weights, {.max_context = 32, .threads = 2});
  EXPECT_TRUE(interp.ok()) << interp.status();
  if (!interp.ok()) return out;
  auto load = (*interp)->Run("load", {});
  EXPECT_TRUE(load.ok()) << load.status();
  const std::vector<int32_t> prompt = {3, 14, 15, 92, 65};
  auto prefill = (*interp)->Run("prefill", {Ids(prompt), Ids({0})});
  EXPECT_TRUE(prefill.ok()) << prefill.status();
  if (!prefill.ok()) return out;
  out.logits.push_back((*prefill)[0].floats());
  int32_t token = 7;
  for (int step = 0; step < 3; ++step) {
    auto d = (*interp)->Run("decode", {Ids({token}), Ids({static_cast<int32_t>(prompt.size()) + step})});
    EXPECT_TRUE(d.ok()) << d.status();
    if (!d.ok()) return out;
    out.logits.push_back((*d)[0].floats());
    token = (*d)[1].ints()[0];
    out.tokens.push_back(token);
  }
  return out;
}

class PipelineParity : public ::testing::TestWithParam<Recipe> {};

TEST_P(PipelineParity, EveryPassKeepsTheMeaning) {
  models::SynthOptions o;
  o.recipe = GetParam();
  o.seed = 5;
  auto f = models::SynthAndOpen(o, "m.gguf");
  ASSERT_NE(f, nullptr);
  const models::Qwen3Config c = *models::ReadQwen3Config(*f);
  models::GgufWeightSource weights(*f);
  auto original = models::BuildQwen3Module(*f, c);
  ASSERT_TRUE(original.ok()) << original.status();
  const Outputs want = RunModel(**original, weights);
  ASSERT_EQ(want.logits.size(), 4u);

  Pipeline names;
  compiler::BuildPipeline(names);
  for (const std::string& pass : names.PassNames()) {
    SCOPED_TRACE("after " + pass);
    auto m = models::BuildQwen3Module(*f, c);
    ASSERT_TRUE(m.ok()) << m.status();
    Pipeline p;
    compiler::BuildPipeline(p);
    PipelineOptions po;
    po.stop_after = pass;
    absl::Status s = p.Run(**m, PassContext{}, po);
    ASSERT_TRUE(s.ok()) << s;
    // Only canonicalize has nothing to do on the builder's output; the
    // others must act, or this test would compare a module with itself.
    EXPECT_EQ(p.records().back().changed, pass != "canonicalize");
    const Outputs got = RunModel(**m, weights);
    ASSERT_EQ(got.logits.size(), want.logits.size());
    for (size_t i = 0; i < got.logits.size(); ++i) {
      ASSERT_EQ(got.logits[i].size(), want.logits[i].size());
      EXPECT_LE(models::RelErr(got.logits[i], want.logits[i]), 1e-5) << (i == 0 ? "prefill" : "decode step ") << i;
    }
    EXPECT_EQ(got.tokens, want.tokens);
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, PipelineParity,
                         ::testing::Values(Recipe::kF16, Recipe::kBF16, Recipe::kQ8_0, Recipe::kQ4_0,
                                           Recipe::kQ6_K, Recipe::kQ4_K_M));

}  // namespace
}  // namespace kiln::passes
