// Qwen3 config reading and tensor checks: every bad input names its key or tensor.
#include "models/qwen3_config.h"

#include <cstring>
#include <functional>

#include "gtest/gtest.h"
#include "models/gguf/gguf_writer.h"
#include "tests/models/test_models.h"

namespace kiln::models {
namespace {

using gguf::Value;

// Copies `src` with edited metadata and tensors, and opens the copy.
struct Edit {
  std::function<bool(const std::string& key, Value& v)> key;           // false drops the key
  std::function<bool(const std::string& name, std::vector<int64_t>& dims, gguf::GgmlType& t)> tensor;
  std::vector<std::pair<std::string, Value>> add = {};  // keys appended
};

std::unique_ptr<gguf::GgufFile> Rewrite(const gguf::GgufFile& src, const Edit& e, const std::string& path) {
  gguf::GgufWriter w;
  for (auto [k, v] : src.metadata())
    if (!e.key || e.key(k, v)) w.AddKey(k, v);
  for (const auto& [k, v] : e.add) w.AddKey(k, v);
  for (const gguf::TensorInfo& t : src.tensors()) {
    std::vector<int64_t> dims = t.dims;
    gguf::GgmlType type = t.type;
    if (e.tensor && !e.tensor(t.name, dims, type)) continue;
    if (dims == t.dims && type == t.type) {
      auto span = src.TensorData(t);
      w.AddTensor(t.name, dims, type, [span](absl::Span<uint8_t> out) {
        std::memcpy(out.data(), span.data(), out.size());
        return absl::OkStatus();
      });
    } else {
      w.AddTensor(t.name, dims, type, [](absl::Span<uint8_t> out) {
        std::memset(out.data(), 0, out.size());
        return absl::OkStatus();
      });
    }
  }
  absl::Status s = w.Write(path);
  EXPECT_TRUE(s.ok()) << s;
  auto f = gguf::GgufFile::Open(path);
  EXPECT_TRUE(f.ok()) << f.status();
  return std::move(*f);
}

class Qwen3ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { base_ = SynthAndOpen(SynthOptions{}, "base.gguf"); }
  // Status of reading the config and checking tensors of an edited copy.
  absl::Status Check(const Edit& e) {
    auto f = Rewrite(*base_, e, TempPath("edited.gguf"));
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
