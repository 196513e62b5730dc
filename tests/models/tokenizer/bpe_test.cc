// The tokenizer on a small hand-made vocabulary: BPE rank order and
// tie-breaking (spec §3.4), special-token splitting (§3.1), decoding (§4),
// the EOG set (§6) and Create()'s validation.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "models/tokenizer/bpe.h"
#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/special_split.h"
#include "models/tokenizer/tokenizer.h"

namespace kiln::tokenizer {
namespace {

using Ids = std::vector<int32_t>;

std::string Mapped(std::string_view raw) {
  std::string out;
  AppendByteLevel(raw, out);
  return out;
}

// All 256 single-byte symbols, then a few merged tokens, then specials.
Vocab HandVocab(std::vector<std::string> merges) {
  Vocab v;
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(Mapped(std::string(1, static_cast<char>(b))));
    v.token_types.push_back(TokenType::kNormal);
  }
  auto add = [&](std::string text, TokenType type) {
    v.tokens.push_back(std::move(text));
    v.token_types.push_back(type);
  };
  for (const char* t : {"ab", "bc", "abc", "aa", "aaaa", "\xC4\xA0" "a", "\xC3\x83\xC2\xA9"}) {
    add(t, TokenType::kNormal);  // "Ġa", "Ã©" (mapped "é")
  }
  add("<|end|>", TokenType::kControl);
  add("<|im_end|>", TokenType::kControl);
  add("<ud>", TokenType::kUserDefined);
  add("<ud>>", TokenType::kUserDefined);
  add("<unk>", TokenType::kUnknown);
  add("[PAD]", TokenType::kUnused);
  v.merges = std::move(merges);
  v.eos_id = static_cast<int32_t>(v.tokens.size()) - 6;  // <|end|>
  return v;
}

std::unique_ptr<Tokenizer> Make(std::vector<std::string> merges) {
  absl::StatusOr<std::unique_ptr<Tokenizer>> tok = Tokenizer::Create(HandVocab(std::move(merges)));
  EXPECT_TRUE(tok.ok()) << tok.status();
  return tok.ok() ? *std::move(tok) : nullptr;
}

class HandVocabTest : public testing::Test {
 protected:
  int32_t Id(std::string_view text) {
    const int32_t id = tok_->FindToken(text);
    EXPECT_GE(id, 0) << text;
    return id;
  }
  Ids Encode(std::string_view text, bool parse_special = false) {
    return tok_->Encode(text, parse_special);
  }
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(HandVocabTest, LowestRankMergesFirstWhateverItsPosition) {
  tok_ = Make({"b c", "a b"});
  EXPECT_EQ(Encode("abc"), (Ids{Id("a"), Id("bc")}));
  tok_ = Make({"a b", "b c"});
  EXPECT_EQ(Encode("abc"), (Ids{Id("ab"), Id("c")}));
}

TEST_F(HandVocabTest, EqualRanksMergeLeftmostFirst) {
  tok_ = Make({"a a"});
  EXPECT_EQ(Encode("aaa"), (Ids{Id("aa"), Id("a")}));
  EXPECT_EQ(Encode("aaaaa"), (Ids{Id("aa"), Id("aa"), Id("a")}));
  tok_ = Make({"a a", "aa aa"});
  EXPECT_EQ(Encode("aaaaa"), (Ids{Id("aaaa"), Id("a")}));
}

TEST_F(HandVocabTest, MergedSymbolsMergeAgain) {
  tok_ = Make({"a b", "ab c"});
  EXPECT_EQ(Encode("abc"), (Ids{Id("abc")}));
  tok_ = Make({"a b"});  // no "ab c": stops at ab + c
  EXPECT_EQ(Encode("abc"), (Ids{Id("ab"), Id("c")}));
}

TEST_F(HandVocabTest, MergesWorkOnMappedBytes) {
  tok_ = Make({"\xC4\xA0 a", "\xC3\x83 \xC2\xA9"});  // "Ġ a", "Ã ©"
  EXPECT_EQ(Encode(" a"), (Ids{Id("\xC4\xA0" "a")}));
  EXPECT_EQ(Encode("\xC3\xA9"), (Ids{Id("\xC3\x83\xC2\xA9")}));  // "é" is one token
  tok_ = Make({});
  EXPECT_EQ(Encode("\xC3\xA9"), (Ids{0xC3, 0xA9}));  // one id per byte here
  EXPECT_EQ(Encode(" a"), (Ids{' ', 'a'}));
}

TEST_F(HandVocabTest, MergeResultOutsideTheVocabFallsBackToBytes) {
  tok_ = Make({"x y"});  // "xy" is not a token
  EXPECT_EQ(Encode("xy"), (Ids{'x', 'y'}));
}

TEST_F(HandVocabTest, InvalidUtf8IsEncodedBytewise) {
  tok_ = Make({});
  EXPECT_EQ(Encode("a\xFF\xC3"), (Ids{'a', 0xFF, 0xC3}));
  EXPECT_EQ(tok_->Decode(Encode("a\xFF\xC3")), "a\xFF\xC3");
}

TEST_F(HandVocabTest, ControlTokensNeedParseSpecial) {
  tok_ = Make({});
  EXPECT_EQ(Encode("a<|end|>b", /*parse_special=*/true), (Ids{'a', Id("<|end|>"), 'b'}));
  const Ids plain = Encode("a<|end|>b", /*parse_special=*/false);
  EXPECT_EQ(plain.size(), 9u);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), Id("<|end|>")), 0);
  EXPECT_EQ(tok_->Decode(plain), "a<|end|>b");
  EXPECT_EQ(Encode("<unk>", true), (Ids{Id("<unk>")}));
  EXPECT_NE(Encode("<unk>", false), (Ids{Id("<unk>")}));
}

TEST_F(HandVocabTest, UserDefinedTokensAlwaysMatchLongestFirst) {
  tok_ = Make({});
  EXPECT_EQ(Encode("<ud>", false), (Ids{Id("<ud>")}));
  EXPECT_EQ(Encode("x<ud>>y", false), (Ids{'x', Id("<ud>>"), 'y'}));
  EXPECT_EQ(Encode("<ud><ud>", false), (Ids{Id("<ud>"), Id("<ud>")}));
  // Text beside a special token is pre-tokenized on its own: " b" keeps its space.
  EXPECT_EQ(Encode("<ud> b", false), (Ids{Id("<ud>"), ' ', 'b'}));
}

TEST_F(HandVocabTest, UnusedTokensNeverMatch) {
  tok_ = Make({});
  const Ids ids = Encode("[PAD]", true);
  EXPECT_EQ(ids.size(), 5u);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), Id("[PAD]")), 0);
}

TEST_F(HandVocabTest, EmptyInputGivesNoIds) {
  tok_ = Make({});
  EXPECT_TRUE(Encode("", true).empty());
}

TEST_F(HandVocabTest, DecodeRendersByTokenType) {
  tok_ = Make({});
  EXPECT_EQ(tok_->TokenBytes(' '), " ");
  EXPECT_EQ(tok_->TokenBytes('\n'), "\n");
  EXPECT_EQ(tok_->TokenBytes(Id("<|end|>")), "");
  EXPECT_EQ(tok_->TokenBytes(Id("<|end|>"), /*render_special=*/true), "<|end|>");
  EXPECT_EQ(tok_->TokenBytes(Id("<unk>")), "");
  EXPECT_EQ(tok_->TokenBytes(Id("<ud>")), "<ud>");
  EXPECT_EQ(tok_->TokenBytes(Id("[PAD]")), "");
  EXPECT_EQ(tok_->TokenBytes(Id("[PAD]"), true), "");
  EXPECT_EQ(tok_->TokenBytes(-1), "");
  EXPECT_EQ(tok_->TokenBytes(tok_->vocab_size()), "");
  EXPECT_EQ(tok_->Decode({'h', 'i', Id("<|end|>")}), "hi");
  EXPECT_EQ(tok_->Decode({'h', 'i', Id("<|end|>")}, true), "hi<|end|>");
}

TEST_F(HandVocabTest, StreamDecoderHoldsBackPartialCharacters) {
  tok_ = Make({});
  StreamDecoder stream(*tok_);
  EXPECT_EQ(stream.Push('a'), "a");
  EXPECT_EQ(stream.Push(0xC3), "");
  EXPECT_EQ(stream.Push(0xA9), "\xC3\xA9");
  EXPECT_EQ(stream.Push(0xF0), "");
  EXPECT_EQ(stream.Push(0x9F), "");
  EXPECT_EQ(stream.Push(0xA6), "");
  EXPECT_EQ(stream.Push(0x99), "\xF0\x9F\xA6\x99");
  EXPECT_EQ(stream.Flush(), "");
  EXPECT_EQ(stream.Push(0xE6), "");
  EXPECT_EQ(stream.Flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(stream.Flush(), "");
  // An invalid byte is not held back.
  EXPECT_EQ(stream.Push(0xFF), "\xFF");
}

TEST_F(HandVocabTest, EogIsEosPlusKnownTexts) {
  tok_ = Make({});
  EXPECT_EQ(tok_->eog_ids(), (Ids{Id("<|end|>"), Id("<|im_end|>")}));
  EXPECT_TRUE(tok_->IsEog(Id("<|im_end|>")));
  EXPECT_FALSE(tok_->IsEog(Id("<ud>")));
  EXPECT_FALSE(tok_->IsEog(-1));
}

TEST(TokenizerCreateTest, AcceptsQwen2FamilyPreTokenizers) {
  for (const char* pre : {"qwen2", "deepseek-r1-qwen"}) {
    Vocab v = HandVocab({"a b"});
    v.pre = pre;
    EXPECT_TRUE(Tokenizer::Create(std::move(v)).ok()) << pre;
  }
}

TEST(TokenizerCreateTest, RejectsOtherModelsNamingThem) {
  Vocab v = HandVocab({});
  v.model = "llama";
  absl::Status s = Tokenizer::Create(std::move(v)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("'llama'"), std::string::npos) << s;

  v = HandVocab({});
  v.pre = "qwen35";
  s = Tokenizer::Create(std::move(v)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("'qwen35'"), std::string::npos) << s;
}

TEST(TokenizerCreateTest, RejectsMalformedVocabularies) {
  Vocab v = HandVocab({});
  v.token_types.pop_back();
  EXPECT_EQ(Tokenizer::Create(std::move(v)).status().code(), absl::StatusCode::kInvalidArgument);

  v = HandVocab({"a b", "ab"});
  absl::Status s = Tokenizer::Create(std::move(v)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("merge 1"), std::string::npos) << s;

  v = HandVocab({" ab"});  // the space at byte 0 does not separate
  EXPECT_EQ(Tokenizer::Create(std::move(v)).status().code(), absl::StatusCode::kInvalidArgument);

  for (int32_t bad : {-2, 100000}) {
    v = HandVocab({});
    v.eos_id = bad;
    EXPECT_EQ(Tokenizer::Create(std::move(v)).status().code(),
              absl::StatusCode::kInvalidArgument) << bad;
    v = HandVocab({});
    v.bos_id = bad;
    EXPECT_EQ(Tokenizer::Create(std::move(v)).status().code(),
              absl::StatusCode::kInvalidArgument) << bad;
    v = HandVocab({});
    v.pad_id = bad;
    EXPECT_EQ(Tokenizer::Create(std::move(v)).status().code(),
              absl::StatusCode::kInvalidArgument) << bad;
  }
}

// GGUF's and the bundle's strings are UTF-8: a token, merge or chat
// template that is not is named (a bundle holding one would not parse).
TEST(TokenizerCreateTest, RejectsStringsThatAreNotUtf8) {
  Vocab v = HandVocab({});
  v.tokens[260] = "a\xff";
  absl::Status s = Tokenizer::Create(std::move(v)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "token 260 is not valid UTF-8");
  v = HandVocab({"a b", "a\xc3 b"});
  s = Tokenizer::Create(std::move(v)).status();
  EXPECT_EQ(s.message(), "tokenizer merge 1 is not valid UTF-8");
  v = HandVocab({});
  v.chat_template = "{{ x }}\xed\xa0\x80";  // a surrogate
  s = Tokenizer::Create(std::move(v)).status();
  EXPECT_EQ(s.message(), "the chat template is not valid UTF-8");
}

// EncodePrompt puts BOS first only where the vocabulary says add_bos.
TEST(TokenizerCreateTest, EncodePromptAddsBosWhereTheVocabularySays) {
  Vocab v = HandVocab({});
  v.bos_id = 258;
  std::unique_ptr<Tokenizer> plain = *Tokenizer::Create(v);
  EXPECT_EQ(plain->EncodePrompt("ab", false), plain->Encode("ab", false));
  v.add_bos = true;
  std::unique_ptr<Tokenizer> bos = *Tokenizer::Create(v);
  Ids want = {258};
  for (int32_t id : bos->Encode("ab", false)) want.push_back(id);
  EXPECT_EQ(bos->EncodePrompt("ab", false), want);
}

TEST(TokenizerCreateTest, NamesEmptyTokens) {
  Vocab v = HandVocab({});
  v.tokens[5] = "";
  absl::StatusOr<std::unique_ptr<Tokenizer>> tok = Tokenizer::Create(std::move(v));
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_EQ((*tok)->vocab().tokens[5], "[EMPTY_5]");
  EXPECT_EQ((*tok)->FindToken("[EMPTY_5]"), 5);
}

TEST(BpeMergesTest, SplitsAtFirstSpaceAfterByteZero) {
  absl::StatusOr<BpeMerges> m = BpeMerges::Create({"a b", "  x", "a b c", "a b"});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->Rank("a", "b"), 0);  // a repeated pair keeps its first rank
  EXPECT_EQ(m->Rank(" ", "x"), 1);
  EXPECT_EQ(m->Rank("a", "b c"), 2);
  EXPECT_EQ(m->Rank("b", "a"), -1);
}

TEST(SplitSpecialTokensTest, CutsEveryOccurrenceInCandidateOrder) {
  const std::vector<SpecialToken> candidates = {
      {1, "<ab>", false}, {2, "<a>", true}, {3, "b", false}};
  auto ids = [](const std::vector<Fragment>& fs) {
    std::vector<std::pair<int32_t, std::string>> out;
    for (const Fragment& f : fs) out.emplace_back(f.id, std::string(f.text));
    return out;
  };
  using V = std::vector<std::pair<int32_t, std::string>>;
  EXPECT_EQ(ids(SplitSpecialTokens("x<ab><a>yb", candidates, true)),
            (V{{-1, "x"}, {1, "<ab>"}, {2, "<a>"}, {-1, "y"}, {3, "b"}}));
  EXPECT_EQ(ids(SplitSpecialTokens("x<ab><a>yb", candidates, false)),
            (V{{-1, "x"}, {1, "<ab>"}, {-1, "<a>y"}, {3, "b"}}));
  EXPECT_TRUE(SplitSpecialTokens("", candidates, true).empty());
}

}  // namespace
}  // namespace kiln::tokenizer
