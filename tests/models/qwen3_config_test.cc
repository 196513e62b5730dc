// Qwen3 config reading and tensor checks: every bad input names its key or tensor.
#include "models/qwen3_config.h"

#include <cmath>

#include "gtest/gtest.h"
#include "tests/models/test_models.h"

namespace kiln::models {
namespace {

using gguf::Value;

class Qwen3ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { base_ = SynthAndOpen(SynthOptions{}, "base.gguf"); }
  // Status of reading the config and checking tensors of an edited copy.
  absl::Status Check(const Edit& e) {
    auto f = Rewrite(*base_, e, TempPath("edited.gguf"));
    if (f == nullptr) return absl::InternalError("the edited copy did not open");
    auto c = ReadQwen3Config(*f);
    if (!c.ok()) return c.status();
    return CheckQwen3Tensors(*f, *c);
  }
  // Replaces the key's value, or appends the key when the file lacks it.
  Edit SetKey(const std::string& key, Value v) {
    if (base_->Find(key) == nullptr) return {nullptr, nullptr, {{key, v}}};
    return {[=](const std::string& k, Value& x) {
              if (k == key) x = v;
              return true;
            },
            nullptr};
  }
  static Edit DropKey(const std::string& key) {
    return {[=](const std::string& k, Value&) { return k != key; }, nullptr};
  }
  std::unique_ptr<gguf::GgufFile> base_;
};

void ExpectError(const absl::Status& s, absl::StatusCode code, const std::string& needle) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s;
}

TEST_F(Qwen3ConfigTest, ReadsEveryKey) {
  auto c = ReadQwen3Config(*base_);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->n_layer, 2);
  EXPECT_EQ(c->n_ff, 768);
  EXPECT_EQ(c->n_head, 4);
  EXPECT_EQ(c->n_head_kv, 2);
  EXPECT_EQ(c->context_length, 4096);
  EXPECT_FLOAT_EQ(c->rms_eps, 1e-6f);
  EXPECT_FLOAT_EQ(c->rope_base, 1e6f);
  EXPECT_EQ(c->rope_scaling, RopeScaling::kNone);
  EXPECT_TRUE(Check({}).ok());
}

TEST_F(Qwen3ConfigTest, WrongArchitectureIsUnimplemented) {
  ExpectError(Check(SetKey("general.architecture", Value::Str("llama"))), absl::StatusCode::kUnimplemented, "'llama'");
  ExpectError(Check(SetKey("general.architecture", Value::Str("qwen3moe"))), absl::StatusCode::kUnimplemented, "qwen3moe");
}

TEST_F(Qwen3ConfigTest, MissingOrMistypedKeysAreNamed) {
  ExpectError(Check(DropKey("qwen3.block_count")), absl::StatusCode::kInvalidArgument, "qwen3.block_count");
  ExpectError(Check(DropKey("qwen3.attention.layer_norm_rms_epsilon")), absl::StatusCode::kInvalidArgument,
              "layer_norm_rms_epsilon");
  ExpectError(Check(SetKey("qwen3.embedding_length", Value::Str("256"))), absl::StatusCode::kInvalidArgument,
              "qwen3.embedding_length");
  ExpectError(Check(SetKey("qwen3.block_count", Value::I32(-2))), absl::StatusCode::kInvalidArgument, "out of range");
  ExpectError(Check(DropKey("tokenizer.ggml.tokens")), absl::StatusCode::kInvalidArgument, "tokenizer.ggml.tokens");
}

TEST_F(Qwen3ConfigTest, AnyIntegerWidthIsAccepted) {
  EXPECT_TRUE(Check(SetKey("qwen3.block_count", Value::U64(2))).ok());
  EXPECT_TRUE(Check(SetKey("qwen3.block_count", Value::I16(2))).ok());
}

TEST_F(Qwen3ConfigTest, ContradictionsAreNamed) {
  ExpectError(Check(SetKey("qwen3.attention.value_length", Value::U32(32))), absl::StatusCode::kInvalidArgument,
              "value_length");
  ExpectError(Check(SetKey("qwen3.attention.head_count_kv", Value::U32(3))), absl::StatusCode::kInvalidArgument,
              "head_count_kv");
  ExpectError(Check(SetKey("qwen3.vocab_size", Value::U32(7))), absl::StatusCode::kInvalidArgument, "vocab_size");
  ExpectError(Check(SetKey("qwen3.rope.scaling.type", Value::Str("longrope"))), absl::StatusCode::kUnimplemented,
              "longrope");
}

// Linear and YaRN rope scaling (the converters' rope.scaling.* keys): read,
// with YaRN's ramp and magnitude as the formula gives them for the tiny
// model's head_dim 64 and rope base 1e6: corr_dim(beta) = 64 ln(1024 /
// (2 pi beta)) / (2 ln 1e6) is 3.77 (beta_fast 32) and 11.80 (beta_slow 1),
// so the ramp runs over [3, 12]; mscale = 0.9 (1 + 0.1 ln 8) = 1.08715.
TEST_F(Qwen3ConfigTest, RopeScalingIsRead) {
  auto read = [&](std::vector<std::pair<std::string, Value>> keys) {
    auto f = Rewrite(*base_, {nullptr, nullptr, std::move(keys)}, TempPath("rope.gguf"));
    if (f == nullptr) return absl::StatusOr<Qwen3Config>(absl::InternalError("the edited copy did not open"));
    return ReadQwen3Config(*f);
  };
  auto linear = read({{"qwen3.rope.scaling.type", Value::Str("linear")}, {"qwen3.rope.scaling.factor", Value::F32(4)}});
  ASSERT_TRUE(linear.ok()) << linear.status();
  EXPECT_EQ(linear->rope_scaling, RopeScaling::kLinear);
  EXPECT_FLOAT_EQ(linear->rope_factor, 4.0f);
  auto unit = read({{"qwen3.rope.scaling.type", Value::Str("linear")}, {"qwen3.rope.scaling.factor", Value::F32(1)}});
  ASSERT_TRUE(unit.ok()) << unit.status();
  EXPECT_EQ(unit->rope_scaling, RopeScaling::kNone);
  auto yarn = read({{"qwen3.rope.scaling.type", Value::Str("yarn")},
                    {"qwen3.rope.scaling.factor", Value::F32(8)},
                    {"qwen3.rope.scaling.original_context_length", Value::U32(1024)},
                    {"qwen3.rope.scaling.yarn_attn_factor", Value::F32(0.9f)}});
  ASSERT_TRUE(yarn.ok()) << yarn.status();
  EXPECT_EQ(yarn->rope_scaling, RopeScaling::kYarn);
  EXPECT_EQ(yarn->rope_orig_context, 1024);
  EXPECT_FLOAT_EQ(yarn->yarn_ext_factor, 1.0f);  // the defaults
  EXPECT_FLOAT_EQ(yarn->yarn_beta_fast, 32.0f);
  EXPECT_FLOAT_EQ(yarn->yarn_beta_slow, 1.0f);
  const YarnRamp r = YarnRampOf(*yarn);
  EXPECT_FLOAT_EQ(r.low, 3.0f);
  EXPECT_FLOAT_EQ(r.high, 12.0f);
  EXPECT_NEAR(r.mscale, 1.0871497, 1e-6);
  // ext_factor 0 (no extrapolation mixed in): the magnitude is attn_factor
  // alone, without the ln s term, as llama.cpp's rope kernel applies it.
  auto no_ext = read({{"qwen3.rope.scaling.type", Value::Str("yarn")},
                      {"qwen3.rope.scaling.factor", Value::F32(8)},
                      {"qwen3.rope.scaling.original_context_length", Value::U32(1024)},
                      {"qwen3.rope.scaling.yarn_ext_factor", Value::F32(0)},
                      {"qwen3.rope.scaling.yarn_attn_factor", Value::F32(0.9f)}});
  ASSERT_TRUE(no_ext.ok()) << no_ext.status();
  EXPECT_FLOAT_EQ(YarnRampOf(*no_ext).mscale, 0.9f);
}

TEST_F(Qwen3ConfigTest, BadRopeKeysAreNamed) {
  ExpectError(Check(SetKey("qwen3.rope.scaling.factor", Value::F32(0))), absl::StatusCode::kInvalidArgument,
              "rope.scaling.factor' = 0 must be finite and > 0");
  ExpectError(Check(SetKey("qwen3.rope.scaling.type", Value::U32(1))), absl::StatusCode::kInvalidArgument,
              "rope.scaling.type' is not a string");
  ExpectError(Check({nullptr, nullptr,
                     {{"qwen3.rope.scaling.type", Value::Str("yarn")},
                      {"qwen3.rope.scaling.yarn_beta_fast", Value::F32(std::nanf(""))}}}),
              absl::StatusCode::kInvalidArgument, "rope.scaling.yarn_beta_fast' = nan is not finite");
  ExpectError(Check({nullptr, nullptr,
                     {{"qwen3.rope.scaling.type", Value::Str("yarn")},
                      {"qwen3.rope.scaling.yarn_ext_factor", Value::Str("1")}}}),
              absl::StatusCode::kInvalidArgument, "yarn_ext_factor' has type STRING, expected a float");
  ExpectError(Check({nullptr, nullptr,
                     {{"qwen3.rope.scaling.type", Value::Str("yarn")},
                      {"qwen3.rope.scaling.yarn_attn_factor", Value::F32(0.0f)}}}),
              absl::StatusCode::kInvalidArgument, "yarn_attn_factor' = 0 must be > 0");
  ExpectError(Check(SetKey("qwen3.rope.freq_base", Value::F32(1.0f))), absl::StatusCode::kInvalidArgument,
              "rope.freq_base' = 1 must be finite and > 1");
  ExpectError(Check(SetKey("qwen3.rope.dimension_count", Value::U32(32))), absl::StatusCode::kUnimplemented,
              "partial rotary embedding (rope.dimension_count 32 != key_length 64)");
}

TEST_F(Qwen3ConfigTest, UnsupportedModelKindsAreNamed) {
  ExpectError(Check(SetKey("qwen3.attention.causal", Value::Bool(false))), absl::StatusCode::kUnimplemented,
              "non-causal attention");
  EXPECT_TRUE(Check(SetKey("qwen3.attention.causal", Value::Bool(true))).ok());
  ExpectError(Check(SetKey("qwen3.attention.causal", Value::U32(1))), absl::StatusCode::kInvalidArgument,
              "attention.causal' is not a bool");
  ExpectError(Check(SetKey("qwen3.block_count", Value::U32(100))), absl::StatusCode::kInvalidArgument,
              "block_count' = 100, but the file has only");
  gguf::Array strings{gguf::ValueType::kString, {Value::Str("768")}};
  ExpectError(Check(SetKey("qwen3.feed_forward_length", Value::Arr(strings))), absl::StatusCode::kInvalidArgument,
              "feed_forward_length' is an array of STRING, expected integers");
}

// A file whose block_count is smaller than its layers is another model:
// running the first layers alone would be silently wrong.
TEST_F(Qwen3ConfigTest, TensorsOfALayerPastBlockCountAreRefused) {
  ExpectError(Check(SetKey("qwen3.block_count", Value::U32(1))), absl::StatusCode::kInvalidArgument,
              "belongs to layer 1, but qwen3.block_count is 1");
}

TEST_F(Qwen3ConfigTest, PerLayerArraysMustBeUniform) {
  gguf::Array same{gguf::ValueType::kUint32, {Value::U32(4), Value::U32(4)}};
  EXPECT_TRUE(Check(SetKey("qwen3.attention.head_count", Value::Arr(same))).ok());
  gguf::Array differ{gguf::ValueType::kUint32, {Value::U32(4), Value::U32(8)}};
  ExpectError(Check(SetKey("qwen3.attention.head_count", Value::Arr(differ))), absl::StatusCode::kUnimplemented,
              "varies per layer");
}

TEST_F(Qwen3ConfigTest, MissingTensorIsNamed) {
  Edit e{nullptr, [](const std::string& n, std::vector<int64_t>&, gguf::GgmlType&) { return n != "blk.1.ffn_up.weight"; }};
  ExpectError(Check(e), absl::StatusCode::kInvalidArgument, "blk.1.ffn_up.weight");
}

TEST_F(Qwen3ConfigTest, WrongShapeIsNamed) {
  Edit e{nullptr, [](const std::string& n, std::vector<int64_t>& d, gguf::GgmlType&) {
           if (n == "blk.0.attn_k.weight") d = {256, 256};
           return true;
         }};
  ExpectError(Check(e), absl::StatusCode::kInvalidArgument, "blk.0.attn_k.weight");
}

TEST_F(Qwen3ConfigTest, QuantizedNormIsRejected) {
  Edit e{nullptr, [](const std::string& n, std::vector<int64_t>&, gguf::GgmlType& t) {
           if (n == "blk.0.attn_norm.weight") t = gguf::GgmlType::kQ8_0;
           return true;
         }};
  ExpectError(Check(e), absl::StatusCode::kUnimplemented, "blk.0.attn_norm.weight");
}

TEST_F(Qwen3ConfigTest, UnsupportedTensorTypeIsNamed) {
  Edit e{nullptr, [](const std::string& n, std::vector<int64_t>&, gguf::GgmlType& t) {
           if (n == "blk.0.ffn_gate.weight") t = gguf::GgmlType::kQ2_K;
           return true;
         }};
  ExpectError(Check(e), absl::StatusCode::kUnimplemented, "Q2_K");
}

TEST_F(Qwen3ConfigTest, TiedWhenOutputIsAbsent) {
  EXPECT_TRUE(ReadQwen3Config(*base_)->tied_embeddings);
  // Weight bytes per token count the tied LM head in full.
  auto c = *ReadQwen3Config(*base_);
  const auto* embd = base_->FindTensor("token_embd.weight");
  EXPECT_GT(WeightBytesPerToken(*base_, c), embd->nbytes);
}

}  // namespace
}  // namespace kiln::models
