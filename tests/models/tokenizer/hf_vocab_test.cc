// VocabFromHfJson on small hand-written tokenizer.json files: what it builds
// (spec §2 type rule, padding, merges forms, special ids) and what it rejects.
#include "models/tokenizer/hf_vocab.h"

#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"

namespace kiln::tokenizer {
namespace {

// JSON-escaped qwen2 pre-tokenizer regex, as tokenizer.json stores it.
constexpr char kQwen2RegexJson[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+)";

std::string TokenizerJson(const std::string& merges, const std::string& regex = kQwen2RegexJson,
                          const std::string& model_type = "BPE") {
  return absl::StrCat(R"({
  "added_tokens": [
    {"id": 5, "content": "<|endoftext|>", "special": true},
    {"id": 6, "content": "<|fim_pad|>", "special": false},
    {"id": 7, "content": "<think>", "special": false},
    {"id": 9, "content": "<pad>", "special": false}
  ],
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": ")",
                      regex, R"("}, "behavior": "Isolated", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},
  "model": {"type": ")",
                      model_type, R"(", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120": 3, "\u0120a": 4},
            "merges": )",
                      merges, "}}");
}

constexpr char kConfigJson[] = R"({
  "add_bos_token": false, "bos_token": null,
  "eos_token": "<|endoftext|>", "pad_token": {"content": "<|endoftext|>"},
  "chat_template": "{{ messages }}"
})";

class HfVocabTest : public testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = absl::StrCat(testing::TempDir(), "/hf_vocab_test_", name);
    std::ofstream(path) << text;
    return path;
  }
  absl::StatusOr<Vocab> Load(const std::string& tokenizer_json, int32_t vocab_size = 12) {
    return VocabFromHfJson(Write("tokenizer.json", tokenizer_json),
                           Write("tokenizer_config.json", kConfigJson), vocab_size);
  }
};

TEST_F(HfVocabTest, BuildsWhatTheConverterWrites) {
  absl::StatusOr<Vocab> v = Load(TokenizerJson(R"([["a", "b"], ["\u0120", "a"]])"));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->model, "gpt2");
  EXPECT_EQ(v->pre, "qwen2");
  const std::vector<std::string> tokens = {"a", "b", "ab", "\xC4\xA0", "\xC4\xA0" "a",
                                           "<|endoftext|>", "<|fim_pad|>", "<think>", "[PAD8]",
                                           "<pad>", "[PAD10]", "[PAD11]"};
  EXPECT_EQ(v->tokens, tokens);
  using T = TokenType;
  const std::vector<TokenType> types = {T::kNormal, T::kNormal, T::kNormal, T::kNormal,
                                        T::kNormal, T::kControl, T::kControl /*looks special*/,
                                        T::kUserDefined, T::kUnused, T::kControl, T::kUnused,
                                        T::kUnused};
  EXPECT_EQ(v->token_types, types);
  EXPECT_EQ(v->merges, (std::vector<std::string>{"a b", "\xC4\xA0 a"}));
  EXPECT_EQ(v->bos_id, 5);  // bos_token null: "<|endoftext|>"
  EXPECT_EQ(v->eos_id, 5);
  EXPECT_EQ(v->pad_id, 5);
  EXPECT_FALSE(v->add_bos);
  EXPECT_EQ(v->chat_template, "{{ messages }}");
}

TEST_F(HfVocabTest, AcceptsStringMergesAndNoPadding) {
  absl::StatusOr<Vocab> v = Load(TokenizerJson(R"(["a b", "\u0120 a"])"), /*vocab_size=*/0);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->merges, (std::vector<std::string>{"a b", "\xC4\xA0 a"}));
  EXPECT_EQ(v->tokens.size(), 10u);  // up to the highest id, 9
  EXPECT_EQ(v->tokens[8], "[PAD8]");
}

TEST_F(HfVocabTest, RejectsAVocabSizeBelowTheHighestId) {
  EXPECT_EQ(Load(TokenizerJson("[]"), 9).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(HfVocabTest, RejectsOtherPreTokenizersAndModels) {
  absl::Status s = Load(TokenizerJson("[]", "\\\\s+")).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  s = Load(TokenizerJson("[]", kQwen2RegexJson, "Unigram")).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_NE(s.message().find("Unigram"), std::string::npos) << s;
}

TEST_F(HfVocabTest, RejectsMalformedInput) {
  EXPECT_EQ(Load("{not json").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Load(TokenizerJson(R"([["a b", "c"]])")).status().code(),
            absl::StatusCode::kInvalidArgument);  // left part with a space
  EXPECT_EQ(Load(TokenizerJson(R"([["a"]])")).status().code(), absl::StatusCode::kInvalidArgument);
  std::string dup = TokenizerJson("[]");
  dup = absl::StrReplaceAll(dup, {{R"("b": 1)", R"("b": 0)"}});
  EXPECT_EQ(Load(dup).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(VocabFromHfJson("/nonexistent/tokenizer.json", "/nonexistent/c.json", 0).ok());
}

}  // namespace
}  // namespace kiln::tokenizer
