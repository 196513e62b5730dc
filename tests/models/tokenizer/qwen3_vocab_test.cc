// The tokenizer with the real Qwen3 vocabulary (fetched by
// tools/fetch_tokenizer.sh): every test vector of spec §7, special ids (§2,
// §5), the EOG set (§6), decoding and streaming (§4). Fails, never skips,
// when the vocabulary is missing.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "models/tokenizer/chat_template.h"
#include "models/tokenizer/hf_vocab.h"
#include "models/tokenizer/tokenizer.h"

namespace kiln::tokenizer {
namespace {

using Ids = std::vector<int32_t>;

constexpr int32_t kQwen3VocabSize = 151936;

std::string SourceDir() {
  const char* env = std::getenv("KILN_SOURCE_DIR");
  return env != nullptr ? env : KILN_DEFAULT_SOURCE_DIR;
}

class Qwen3VocabTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = SourceDir() + "/third_party/tokenizer-qwen3/models/";
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<Vocab> vocab =
        VocabFromHfJson(dir + "tokenizer.json", dir + "tokenizer_config.json", kQwen3VocabSize);
    const auto loaded = std::chrono::steady_clock::now();
    if (!vocab.ok()) {
      *status_ = absl::Status(vocab.status().code(),
                              absl::StrCat(vocab.status().message(),
                                           "\n  -> run tools/fetch_tokenizer.sh to fetch the "
                                           "Qwen3 vocabulary"));
      return;
    }
    absl::StatusOr<std::unique_ptr<Tokenizer>> tok = Tokenizer::Create(*std::move(vocab));
    if (!tok.ok()) {
      *status_ = tok.status();
      return;
    }
    tok_ = tok->release();
    const auto created = std::chrono::steady_clock::now();
    std::cout << "[   INFO   ] VocabFromHfJson " << std::chrono::duration<double>(loaded - start).count()
              << " s, Tokenizer::Create "
              << std::chrono::duration<double>(created - loaded).count() << " s\n";
  }
  static void TearDownTestSuite() {
    delete tok_;
    tok_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(status_->ok()) << *status_; }

  static int32_t Id(std::string_view text) { return tok_->FindToken(text); }

  static inline Tokenizer* tok_ = nullptr;
  static inline absl::Status* const status_ = new absl::Status();
};

struct Vector {
  std::string input;
  Ids ids;
};

// spec/tokenizer.md §7, every row (rows with two inputs are two entries).
TEST_F(Qwen3VocabTest, SpecTestVectors) {
  const std::vector<Vector> vectors = {
      {" ", {220}},
      {"  ", {256}},
      {"   ", {262}},
      {"\t", {197}},
      {"\n", {198}},
      {"\n\n", {271}},
      {"\n\n\n", {1406}},
      {"\t\n", {1572}},
      {"Hello world", {9707, 1879}},
      {" Hello world", {21927, 1879}},
      {"Hello World", {9707, 4337}},
      {" Hello World!", {21927, 4337, 0}},
      {"Hello, world!", {9707, 11, 1879, 0}},
      {"Hello", {9707}},
      {" Hello", {21927}},
      {"  Hello", {220, 21927}},
      {"   Hello", {256, 21927}},
      {"    Hello\n    Hello", {262, 21927, 198, 262, 21927}},
      {" (", {320}},
      {"\n =", {198, 284}},
      {"' era", {6, 11385}},
      {"!!!!!!", {17085, 2928}},
      {"3", {18}},
      {"33", {18, 18}},
      {"333", {18, 18, 18}},
      {"ied 4 \u00BD months", {1122, 220, 19, 220, 26062, 3951}},
      {" this is \U0001F999.cpp", {419, 374, 11162, 99, 247, 13, 10821}},
      {"w048 7tuijk dsdfhu", {86, 15, 19, 23, 220, 22, 83, 1963, 41808, 11472, 2940, 16739}},
      {"Hello, y'all! How are you \U0001F601 ?\u6211\u60F3\u5728apple\u5DE5\u4F5C1314151\u5929\uFF5E",
       {9707, 11, 379, 64848, 0, 2585, 525, 498, 26525, 223, 937, 104100, 18493, 22377, 99257, 16,
        18, 16, 19, 16, 20, 16, 35727, 21216}},
      {" discards", {2560, 2347}},
      {"", {}},
  };
  for (const Vector& v : vectors) {
    EXPECT_EQ(tok_->Encode(v.input, /*parse_special=*/false), v.ids) << "input: \"" << v.input << "\"";
    EXPECT_EQ(tok_->Encode(v.input, /*parse_special=*/true), v.ids) << "input: \"" << v.input << "\"";
    EXPECT_EQ(tok_->Decode(v.ids), v.input);
  }
}

TEST_F(Qwen3VocabTest, VocabularyLayout) {
  const Vocab& v = tok_->vocab();
  EXPECT_EQ(tok_->vocab_size(), kQwen3VocabSize);
  EXPECT_EQ(v.merges.size(), 151387u);
  EXPECT_EQ(v.bos_id, 151643);
  EXPECT_EQ(v.eos_id, 151645);
  EXPECT_EQ(v.pad_id, 151643);
  EXPECT_FALSE(v.add_bos);
  EXPECT_NE(v.chat_template.find("<|im_start|>"), std::string::npos);
  // §2: the first 256 ids are the byte symbols in GPT-2 order.
  EXPECT_EQ(tok_->TokenBytes(0), "!");
  EXPECT_EQ(tok_->TokenBytes(11), ",");
  EXPECT_EQ(tok_->TokenBytes(15), "0");
  EXPECT_EQ(tok_->TokenBytes(24), "9");
  EXPECT_EQ(tok_->TokenBytes(94), "\xA1");
  EXPECT_EQ(tok_->TokenBytes(106), "\xAE");
  EXPECT_EQ(tok_->TokenBytes(188), std::string(1, '\0'));
  EXPECT_EQ(tok_->TokenBytes(197), "\t");
  EXPECT_EQ(tok_->TokenBytes(198), "\n");
  EXPECT_EQ(tok_->TokenBytes(220), " ");
  EXPECT_EQ(tok_->TokenBytes(221), "\x7F");
  EXPECT_EQ(tok_->TokenBytes(254), "\xA0");
  EXPECT_EQ(tok_->TokenBytes(255), "\xAD");
  for (int32_t id = 0; id < 151643; ++id) {
    ASSERT_EQ(v.token_types[id], TokenType::kNormal) << id;
  }
  // §2: filler entries.
  EXPECT_EQ(v.tokens[151669], "[PAD151669]");
  EXPECT_EQ(v.token_types[151669], TokenType::kUnused);
  EXPECT_EQ(v.tokens[151935], "[PAD151935]");
  EXPECT_EQ(v.token_types[151935], TokenType::kUnused);
  EXPECT_EQ(tok_->TokenBytes(151669), "");
  EXPECT_EQ(tok_->TokenBytes(151669, /*render_special=*/true), "");
  EXPECT_EQ(Id("[PAD151669]"), 151669);
}

TEST_F(Qwen3VocabTest, AddedTokensIdsAndTypes) {
  struct Added {
    int32_t id;
    const char* text;
    TokenType type;
  };
  const TokenType C = TokenType::kControl, U = TokenType::kUserDefined;
  const std::vector<Added> added = {
      {151643, "<|endoftext|>", C},     {151644, "<|im_start|>", C},
      {151645, "<|im_end|>", C},        {151646, "<|object_ref_start|>", C},
      {151647, "<|object_ref_end|>", C}, {151648, "<|box_start|>", C},
      {151649, "<|box_end|>", C},       {151650, "<|quad_start|>", C},
      {151651, "<|quad_end|>", C},      {151652, "<|vision_start|>", C},
      {151653, "<|vision_end|>", C},    {151654, "<|vision_pad|>", C},
      {151655, "<|image_pad|>", C},     {151656, "<|video_pad|>", C},
      {151657, "<tool_call>", U},       {151658, "</tool_call>", U},
      {151659, "<|fim_prefix|>", C},    {151660, "<|fim_middle|>", C},
      {151661, "<|fim_suffix|>", C},    {151662, "<|fim_pad|>", C},
      {151663, "<|repo_name|>", C},     {151664, "<|file_sep|>", C},
      {151665, "<tool_response>", U},   {151666, "</tool_response>", U},
      {151667, "<think>", U},           {151668, "</think>", U},
  };
  for (const Added& a : added) {
    EXPECT_EQ(Id(a.text), a.id) << a.text;
    EXPECT_EQ(tok_->vocab().token_types[a.id], a.type) << a.text;
    EXPECT_EQ(tok_->Encode(a.text, /*parse_special=*/true), (Ids{a.id})) << a.text;
    // §4: CONTROL renders only on request, USER_DEFINED always.
    EXPECT_EQ(tok_->TokenBytes(a.id), a.type == U ? a.text : "") << a.text;
    EXPECT_EQ(tok_->TokenBytes(a.id, /*render_special=*/true), a.text);
  }
}

TEST_F(Qwen3VocabTest, ParseSpecialOffKeepsControlTextButNotUserDefined) {
  const Ids plain = tok_->Encode("<|im_end|>", /*parse_special=*/false);
  EXPECT_GT(plain.size(), 1u);
  for (int32_t id : plain) EXPECT_LT(id, 151643) << "special id in plain text";
  EXPECT_EQ(tok_->Decode(plain), "<|im_end|>");
  EXPECT_EQ(tok_->Encode("<|im_end|>", /*parse_special=*/true), (Ids{151645}));
  // USER_DEFINED tokens are atomic even without parse_special (§3.1).
  EXPECT_EQ(tok_->Encode("<think>", false), (Ids{151667}));
  EXPECT_EQ(tok_->Encode("a</think>b", false), (Ids{64, 151668, 65}));
}

TEST_F(Qwen3VocabTest, EndOfGeneration) {
  EXPECT_EQ(tok_->eog_ids(), (Ids{151643, 151645, 151662, 151663, 151664}));
  EXPECT_TRUE(tok_->IsEog(151645));
  EXPECT_FALSE(tok_->IsEog(151644));
  EXPECT_FALSE(tok_->IsEog(151667));
}

TEST_F(Qwen3VocabTest, ChatPromptTokenizesWithSpecialIds) {
  const std::string prompt = RenderChat({{"system", "You are helpful."}, {"user", "Hi"}},
                                        ChatOptions{.add_generation_prompt = true,
                                                    .enable_thinking = false});
  const Ids ids = tok_->Encode(prompt, /*parse_special=*/true);
  ASSERT_GE(ids.size(), 8u);
  EXPECT_EQ(ids.front(), 151644);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 151644), 3);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 151645), 2);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 151667), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 151668), 1);
  EXPECT_EQ(tok_->Decode(ids, /*render_special=*/true), prompt);
}

TEST_F(Qwen3VocabTest, EncodeDecodeRoundTrips) {
  const std::vector<std::string> texts = {
      "The quick brown fox jumps over the lazy dog.",
      "  leading and trailing spaces   ",
      "tabs\tand\r\nCRLF\r\n\r\nlines\n\n\n",
      "Ünïcödé façade — naïve café, Straße, Øre, İstanbul",
      "cafe\u0301 (decomposed, not NFC)",
      "\u6211\u60F3\u5728apple\u5DE5\u4F5C\uFF0C\u4ECA\u5929\u5929\u6C14\u5F88\u597D\u3002",
      "\u65E5\u672C\u8A9E\u306E\u30C6\u30AD\u30B9\u30C8\u3068\u30AB\u30BF\u30AB\u30CA",
      "\uD55C\uAD6D\uC5B4 \uD14D\uC2A4\uD2B8",
      "\u0627\u0644\u0639\u0631\u0628\u064A\u0629 \u05E2\u05D1\u05E8\u05D9\u05EA \u0939\u093F\u0928\u094D\u0926\u0940",
      "emoji \U0001F999\U0001F601\U0001F468\u200D\U0001F469\u200D\U0001F467 flags \U0001F1EF\U0001F1F5",
      "math: \u2211 x\u00B2 \u2264 \u00BD\u03C0, 3.14159e-10, 1,000,000",
      "code: for (int i = 0; i < n; ++i) { x[i] += y[i]; }  // done",
      "it's don't I'LL we'Re y'all",
      "\u00A0nbsp\u3000ideographic\u2028line\u2029para\u0085nel",
      std::string("nul\0byte and \x7F del", 18),
      "invalid \xFF\xFE bytes \xC3( and truncated \xE2\x82",
      "<|im_start|> and <think> literally",
  };
  for (const std::string& t : texts) {
    const Ids ids = tok_->Encode(t, /*parse_special=*/false);
    EXPECT_EQ(tok_->Decode(ids), t) << t;
  }
}

TEST_F(Qwen3VocabTest, StreamDecoderReassemblesSplitEmoji) {
  // §4: the llama's bytes span ids 11162, 99, 247.
  const std::string text = " this is \U0001F999.cpp";
  const Ids ids = tok_->Encode(text, false);
  ASSERT_EQ(ids, (Ids{419, 374, 11162, 99, 247, 13, 10821}));
  StreamDecoder stream(*tok_);
  std::vector<std::string> chunks;
  for (int32_t id : ids) chunks.push_back(stream.Push(id));
  EXPECT_EQ(chunks, (std::vector<std::string>{" this", " is", " ", "", "\U0001F999", ".", "cpp"}));
  EXPECT_EQ(stream.Flush(), "");

  // The same for every text of the round-trip set: chunks are whole characters.
  const std::string mixed = "\u6211\u60F3 \U0001F601\U0001F468\u200D\U0001F469 \u00BD";
  StreamDecoder s2(*tok_);
  std::string joined;
  for (int32_t id : tok_->Encode(mixed, false)) {
    const std::string chunk = s2.Push(id);
    if (!chunk.empty()) {
      const unsigned char last_lead = static_cast<unsigned char>(chunk.back());
      EXPECT_LT(last_lead, 0xC0) << "chunk ends with a lead byte";
    }
    joined += chunk;
  }
  joined += s2.Flush();
  EXPECT_EQ(joined, mixed);
}

TEST_F(Qwen3VocabTest, EncodeIsDeterministicAcrossCalls) {
  const std::string text(5000, 'a');  // one long piece: exercises the merge queue
  const Ids a = tok_->Encode(text, false);
  EXPECT_LT(a.size(), 1000u);
  EXPECT_EQ(tok_->Encode(text, false), a);
  EXPECT_EQ(tok_->Decode(a), text);
}

}  // namespace
}  // namespace kiln::tokenizer
