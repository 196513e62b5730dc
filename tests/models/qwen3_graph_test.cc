// The Qwen3 IR module, run by the IR interpreter, matches the CPU reference
// forward pass (relative error <= 1e-5) at prefill and at decode steps, for
// every weight type.
#include "models/qwen3_graph.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "models/gguf/gguf_writer.h"
#include "models/gguf_weight_source.h"
#include "models/reference_forward.h"
#include "tests/models/test_models.h"

namespace kiln::models {
namespace {

ir::HostTensor Ids(std::vector<int32_t> ids) {
  int64_t n = static_cast<int64_t>(ids.size());
  return ir::HostTensor::FromInts(ir::DType::kI32, {n}, std::move(ids));
}

std::unique_ptr<gguf::GgufFile> Synth(const std::string& preset, Recipe recipe) {
  SynthOptions o;
  o.preset = preset;
  o.recipe = recipe;
  o.seed = 21;
  return SynthAndOpen(o, "m.gguf");
}

// Runs the Qwen3 module of `f` in the interpreter and the reference side by
// side: prefill of `prompt`, then `steps` greedy decode steps.
void ExpectParity(const std::unique_ptr<gguf::GgufFile>& f, const std::vector<int32_t>& prompt, int steps) {
  ASSERT_NE(f, nullptr);
  Qwen3Config c = *ReadQwen3Config(*f);
  auto m = BuildQwen3Module(*f, c);
  ASSERT_TRUE(m.ok()) << m.status();
  GgufWeightSource weights(*f);
  auto interp = ir::Interpreter::Create(**m, weights, {.max_context = 64, .threads = 2});
  ASSERT_TRUE(interp.ok()) << interp.status();
  auto ref = *ReferenceModel::Create(*f, c, {.threads = 2, .kv_f16 = true, .max_context = 64});

  ASSERT_TRUE((*interp)->Run("load", {}).ok());
  auto out = (*interp)->Run("prefill", {Ids(prompt), Ids({0})});
  ASSERT_TRUE(out.ok()) << out.status();
  auto want = ref->Forward(prompt);
  ASSERT_TRUE(want.ok());
  ASSERT_EQ((*out)[0].floats().size(), want->size());
  EXPECT_LE(RelErr((*out)[0].floats(), *want), 1e-5) << "prefill";

  // Decode steps continue from the prefill's cache, at several positions.
  int32_t token = Argmax(absl::MakeConstSpan(want->data() + want->size() - c.n_vocab, c.n_vocab));
  for (int step = 0; step < steps; ++step) {
    const int32_t pos = static_cast<int32_t>(prompt.size()) + step;
    auto d = (*interp)->Run("decode", {Ids({token}), Ids({pos})});
    ASSERT_TRUE(d.ok()) << d.status();
    auto r = ref->Forward({token});
    ASSERT_TRUE(r.ok());
    EXPECT_LE(RelErr((*d)[0].floats(), *r), 1e-5) << "decode at position " << pos;
    const int32_t next = (*d)[1].ints()[0];
    EXPECT_EQ(next, Argmax(*r)) << "decode at position " << pos;
    token = next;
  }
}

class GraphParity : public ::testing::TestWithParam<Recipe> {};

TEST_P(GraphParity, InterpreterMatchesReferenceTiny) {
  ExpectParity(Synth("tiny", GetParam()), {3, 14, 15, 92, 65, 35, 89, 79}, 6);
}

// The real 0.6B shape (28 layers, 151936-token vocabulary): a short prompt
// and two decode steps keep it to seconds per type.
TEST_P(GraphParity, InterpreterMatchesReference0_6B) {
  ExpectParity(Synth("0.6b", GetParam()), {9707, 11, 1879, 0}, 2);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GraphParity,
                         ::testing::Values(Recipe::kF16, Recipe::kBF16, Recipe::kQ8_0, Recipe::kQ4_0,
                                           Recipe::kQ6_K, Recipe::kQ4_K_M));

// Scaled RoPE: the interpreter's rope op and the reference's angles are
// written apart from each other; they agree for linear scaling and for YaRN
// (the ramp over pairs [3, 12] of 32, so every pair is interpolated, mixed
// or extrapolated; mscale 1.087: see qwen3_config_test).
TEST(Qwen3Graph, ScaledRopeMatchesReference) {
  auto base = Synth("tiny", Recipe::kQ8_0);
  ASSERT_NE(base, nullptr);
  const std::vector<int32_t> prompt = {3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26, 43, 38, 32, 79, 50, 28};
  {
    SCOPED_TRACE("linear");
    ExpectParity(Rewrite(*base,
                         {nullptr, nullptr,
                          {{"qwen3.rope.scaling.type", gguf::Value::Str("linear")},
                           {"qwen3.rope.scaling.factor", gguf::Value::F32(4)}}},
                         TempPath("linear.gguf")),
                 prompt, 4);
  }
  {
    SCOPED_TRACE("yarn");
    ExpectParity(Rewrite(*base,
                         {nullptr, nullptr,
                          {{"qwen3.rope.scaling.type", gguf::Value::Str("yarn")},
                           {"qwen3.rope.scaling.factor", gguf::Value::F32(8)},
                           {"qwen3.rope.scaling.original_context_length", gguf::Value::U32(1024)},
                           {"qwen3.rope.scaling.yarn_attn_factor", gguf::Value::F32(0.9f)}}},
                         TempPath("yarn.gguf")),
                 prompt, 4);
  }
}

// prefill_last_logits: prefill returns f32[1, V], exactly the last row of
// the every-row logits (the final norm and LM head are per row), and leaves
// the same cache behind (the next decode step agrees bit for bit).
// GGUF may store trailing ne dims of 1 (spec/gguf-format.md §5): a file
// whose embedding is [E, V, 1] and whose norms are [E, 1, 1] builds the same
// shapes as one without them.
TEST(Qwen3Graph, TrailingDimsOfOneAreDropped) {
  SynthOptions o;
  o.preset = "tiny";
  o.recipe = Recipe::kQ8_0;
  auto f = SynthAndOpen(o, "t.gguf");
  ASSERT_NE(f, nullptr);
  gguf::GgufWriter w;
  for (const auto& [key, value] : f->metadata())
    if (key != "general.alignment") w.AddKey(key, value);
  for (const gguf::TensorInfo& t : f->tensors()) {
    std::vector<int64_t> dims = t.dims;
    if (t.name == "token_embd.weight") dims.push_back(1);
    if (t.name == "output_norm.weight") dims.insert(dims.end(), {1, 1});
    absl::Span<const uint8_t> bytes = f->TensorData(t);
    w.AddTensorBytes(t.name, dims, t.type, std::vector<uint8_t>(bytes.begin(), bytes.end()));
  }
  auto out = w.WriteToMemory();
  ASSERT_TRUE(out.ok()) << out.status();
  auto padded = gguf::GgufFile::Parse(*out, "padded.gguf");
  ASSERT_TRUE(padded.ok()) << padded.status();
  Qwen3Config c = *ReadQwen3Config(**padded);
  auto m = BuildQwen3Module(**padded, c);
  ASSERT_TRUE(m.ok()) << m.status();
  auto plain = BuildQwen3Module(*f, *ReadQwen3Config(*f));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(ir::PrintModule(**m), ir::PrintModule(**plain));
}

TEST(Qwen3Graph, PrefillLastLogitsAreTheLastRow) {
  SynthOptions o;
  o.recipe = Recipe::kQ8_0;
  o.seed = 9;
  auto f = SynthAndOpen(o, "l.gguf");
  ASSERT_NE(f, nullptr);
  const Qwen3Config c = *ReadQwen3Config(*f);
  auto all = BuildQwen3Module(*f, c);
  auto last = BuildQwen3Module(*f, c, {.prefill_last_logits = true});
  ASSERT_TRUE(all.ok() && last.ok()) << last.status();
  ASSERT_EQ((*last)->FindFunction("prefill")->result_types()[0].ToString(),
            absl::StrCat("f32[1, ", c.n_vocab, "]"));
  GgufWeightSource weights(*f);
  auto a = ir::Interpreter::Create(**all, weights, {.max_context = 64, .threads = 2});
  auto b = ir::Interpreter::Create(**last, weights, {.max_context = 64, .threads = 2});
  ASSERT_TRUE(a.ok() && b.ok()) << b.status();
  ASSERT_TRUE((*a)->Run("load", {}).ok() && (*b)->Run("load", {}).ok());
  const std::vector<int32_t> prompt = {5, 17, 2, 99, 41, 8, 63};
  auto pa = (*a)->Run("prefill", {Ids(prompt), Ids({0})});
  auto pb = (*b)->Run("prefill", {Ids(prompt), Ids({0})});
  ASSERT_TRUE(pa.ok() && pb.ok()) << pb.status();
  const std::vector<float>& rows = (*pa)[0].floats();
  ASSERT_EQ(rows.size(), prompt.size() * c.n_vocab);
  const std::vector<float> want(rows.end() - c.n_vocab, rows.end());
  EXPECT_EQ((*pb)[0].floats(), want);
  const int32_t next = Argmax(want);
  auto da = (*a)->Run("decode", {Ids({next}), Ids({static_cast<int32_t>(prompt.size())})});
  auto db = (*b)->Run("decode", {Ids({next}), Ids({static_cast<int32_t>(prompt.size())})});
  ASSERT_TRUE(da.ok() && db.ok());
  EXPECT_EQ((*db)[0].floats(), (*da)[0].floats());
}

TEST(Qwen3Graph, UntiedUsesOutputWeightAndPrintsBindings) {
  SynthOptions o;
  o.force_untied = true;
  auto f = SynthAndOpen(o, "u.gguf");
  auto m = BuildQwen3Module(*f, *ReadQwen3Config(*f));
  ASSERT_TRUE(m.ok()) << m.status();
  std::string text = ir::PrintModule(**m);
  EXPECT_NE(text.find("= \"output.weight\""), std::string::npos);
  EXPECT_NE(text.find("state @k_cache.1 : f16[C, 128]"), std::string::npos) << text.substr(0, 2000);
  EXPECT_NE(text.find("func @decode"), std::string::npos);
}

}  // namespace
}  // namespace kiln::models
