// The tokenizer vocabulary in GGUF metadata: what AddVocabKeys writes,
// ReadVocab reads back field for field; every missing, mistyped or
// inconsistent tokenizer key is an error that names it.
#include "models/vocab_from_gguf.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/models/test_models.h"

namespace kiln::models {
namespace {

using gguf::Value;

class VocabFromGgufTest : public ::testing::Test {
 protected:
  void SetUp() override { base_ = SynthAndOpen(SynthOptions{}, "base.gguf"); }
  // ReadVocab of a copy of the tiny model whose key `key` is `v` (added
  // when absent), or without it (`drop`).
  absl::StatusOr<tokenizer::Vocab> ReadEdited(const std::string& key, Value v, bool drop = false) {
    Edit e{[&](const std::string& k, Value& x) {
             if (k != key) return true;
             x = v;
             return !drop;
           },
           nullptr};
    if (!drop && base_->Find(key) == nullptr) e = {nullptr, nullptr, {{key, v}}};
    auto f = Rewrite(*base_, e, TempPath("edited.gguf"));
    if (f == nullptr) return absl::InternalError("the edited copy did not open");
    return ReadVocab(*f);
  }
  void ExpectError(const std::string& key, Value v, const std::string& needle, bool drop = false) {
    SCOPED_TRACE(key);
    absl::StatusOr<tokenizer::Vocab> r = ReadEdited(key, std::move(v), drop);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status();
  }
  std::unique_ptr<gguf::GgufFile> base_;
};

TEST_F(VocabFromGgufTest, WrittenKeysReadBack) {
  absl::StatusOr<tokenizer::Vocab> v = ReadVocab(*base_);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->model, "gpt2");
  EXPECT_EQ(v->tokens.size(), 371u);
  EXPECT_EQ(v->token_types.size(), v->tokens.size());
  EXPECT_FALSE(v->merges.empty());
  EXPECT_GE(v->eos_id, 0);
  // Through AddVocabKeys into a file of its own and back: the same vocabulary.
  tokenizer::Vocab w = *v;
  w.bos_id = 3;
  w.pad_id = 5;
  w.add_bos = true;
  w.chat_template = "{{ messages }}";
  w.token_types[7] = tokenizer::TokenType::kControl;
  gguf::GgufWriter writer;
  writer.AddKey("general.architecture", Value::Str("qwen3"));
  AddVocabKeys(w, writer);
  const std::string path = TempPath("vocab.gguf");
  ASSERT_TRUE(writer.Write(path).ok());
  auto f = gguf::GgufFile::Open(path);
  std::remove(path.c_str());  // the mapping keeps it readable
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<tokenizer::Vocab> back = ReadVocab(**f);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->model, w.model);
  EXPECT_EQ(back->pre, w.pre);
  EXPECT_EQ(back->tokens, w.tokens);
  EXPECT_EQ(back->token_types, w.token_types);
  EXPECT_EQ(back->merges, w.merges);
  EXPECT_EQ(back->bos_id, 3);
  EXPECT_EQ(back->eos_id, w.eos_id);
  EXPECT_EQ(back->pad_id, 5);
  EXPECT_TRUE(back->add_bos);
  EXPECT_EQ(back->chat_template, w.chat_template);
}

TEST_F(VocabFromGgufTest, OptionalKeysDefault) {
  absl::StatusOr<tokenizer::Vocab> v = ReadEdited("tokenizer.ggml.token_type", Value::U32(0), /*drop=*/true);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->token_types, std::vector<tokenizer::TokenType>(v->tokens.size(), tokenizer::TokenType::kNormal));
  absl::StatusOr<tokenizer::Vocab> p = ReadEdited("tokenizer.ggml.pre", Value::U32(0), /*drop=*/true);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->pre, "default");
}

TEST_F(VocabFromGgufTest, BadKeysAreNamed) {
  const int64_t n = static_cast<int64_t>(ReadVocab(*base_)->tokens.size());
  ExpectError("tokenizer.ggml.model", Value::U32(0), "missing tokenizer key 'tokenizer.ggml.model'", true);
  ExpectError("tokenizer.ggml.model", Value::U32(2), "tokenizer key 'tokenizer.ggml.model' is not a string");
  ExpectError("tokenizer.ggml.tokens", Value::U32(0), "missing tokenizer key 'tokenizer.ggml.tokens'", true);
  ExpectError("tokenizer.ggml.tokens", Value::Str("a"), "'tokenizer.ggml.tokens' has type STRING, expected an array");
  ExpectError("tokenizer.ggml.tokens", Value::Arr({gguf::ValueType::kUint32, {Value::U32(1)}}),
              "'tokenizer.ggml.tokens' is an array of UINT32, expected strings");
  ExpectError("tokenizer.ggml.token_type", Value::Arr({gguf::ValueType::kInt32, {Value::I32(1)}}),
              "tokenizer.ggml.token_type has 1 entries but tokenizer.ggml.tokens has 371");
  std::vector<Value> types(static_cast<size_t>(n), Value::I32(1));
  types[4] = Value::I32(9);
  ExpectError("tokenizer.ggml.token_type", Value::Arr({gguf::ValueType::kInt32, types}),
              "tokenizer.ggml.token_type holds a value outside 1..6");
  ExpectError("tokenizer.ggml.merges", Value::U32(0), "missing tokenizer key 'tokenizer.ggml.merges'", true);
  ExpectError("tokenizer.ggml.eos_token_id", Value::U32(static_cast<uint32_t>(n)),
              "'tokenizer.ggml.eos_token_id' = 371 is outside the vocabulary of 371 tokens");
  ExpectError("tokenizer.ggml.bos_token_id", Value::Str("1"), "'tokenizer.ggml.bos_token_id' is not an integer");
  ExpectError("tokenizer.ggml.add_bos_token", Value::U32(1),
              "tokenizer key 'tokenizer.ggml.add_bos_token' is not a bool");
  ExpectError("tokenizer.chat_template", Value::U32(1), "tokenizer key 'tokenizer.chat_template' is not a string");
}

}  // namespace
}  // namespace kiln::models
