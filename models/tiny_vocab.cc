#include "models/tiny_vocab.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "models/tokenizer/byte_level.h"

namespace kiln::models {
namespace {

constexpr int kMerges = 230;

// Training text for the tiny vocabulary's merges.
constexpr const char* kCorpus =
    "The quick brown fox jumps over the lazy dog. A compiler turns a program into "
    "another program that does the same thing faster. The model reads the prompt, "
    "then it writes one token after another until it is done. Hello world! How are "
    "you today? I think that the answer is in the question, and the question is in "
    "the answer. There are many ways to write a kernel, and most of them are slow. "
    "We measure the time of each step, and we keep the fastest one. Memory bandwidth "
    "is the limit when the weights are read once for every token that is generated. "
    "Thinking about the problem first is better than writing code at once.";

// The 26 added tokens of Qwen3 (spec/tokenizer.md §2) with their types.
struct Added {
  const char* text;
  tokenizer::TokenType type;
};
constexpr Added kAdded[] = {
    {"<|endoftext|>", tokenizer::TokenType::kControl},
    {"<|im_start|>", tokenizer::TokenType::kControl},
    {"<|im_end|>", tokenizer::TokenType::kControl},
    {"<|object_ref_start|>", tokenizer::TokenType::kControl},
    {"<|object_ref_end|>", tokenizer::TokenType::kControl},
    {"<|box_start|>", tokenizer::TokenType::kControl},
    {"<|box_end|>", tokenizer::TokenType::kControl},
    {"<|quad_start|>", tokenizer::TokenType::kControl},
    {"<|quad_end|>", tokenizer::TokenType::kControl},
    {"<|vision_start|>", tokenizer::TokenType::kControl},
    {"<|vision_end|>", tokenizer::TokenType::kControl},
    {"<|vision_pad|>", tokenizer::TokenType::kControl},
    {"<|image_pad|>", tokenizer::TokenType::kControl},
    {"<|video_pad|>", tokenizer::TokenType::kControl},
    {"<tool_call>", tokenizer::TokenType::kUserDefined},
    {"</tool_call>", tokenizer::TokenType::kUserDefined},
    {"<|fim_prefix|>", tokenizer::TokenType::kControl},
    {"<|fim_middle|>", tokenizer::TokenType::kControl},
    {"<|fim_suffix|>", tokenizer::TokenType::kControl},
    {"<|fim_pad|>", tokenizer::TokenType::kControl},
    {"<|repo_name|>", tokenizer::TokenType::kControl},
    {"<|file_sep|>", tokenizer::TokenType::kControl},
    {"<tool_response>", tokenizer::TokenType::kUserDefined},
    {"</tool_response>", tokenizer::TokenType::kUserDefined},
    {"<think>", tokenizer::TokenType::kUserDefined},
    {"</think>", tokenizer::TokenType::kUserDefined},
};

// Words with their leading space, each a list of byte-level symbols.
std::vector<std::vector<std::string>> CorpusWords() {
  std::vector<std::vector<std::string>> words;
  std::vector<std::string> cur;
  for (const char* p = kCorpus; *p; ++p) {
    if (*p == ' ' && !cur.empty()) {
      words.push_back(cur);
      cur.clear();
    }
    cur.push_back(tokenizer::ByteToSymbol(static_cast<uint8_t>(*p)));
  }
  if (!cur.empty()) words.push_back(cur);
  return words;
}

}  // namespace

tokenizer::Vocab TinyVocab() {
  tokenizer::Vocab v;
  v.model = "gpt2";
  v.pre = "qwen2";
  // Byte symbols in GPT-2 order: the self-mapped bytes first, then the rest
  // (spec/tokenizer.md §2), so ids match the real vocabulary's first 256.
  for (int pass = 0; pass < 2; ++pass)
    for (int b = 0; b < 256; ++b) {
      bool self = tokenizer::ByteToCodePoint(static_cast<uint8_t>(b)) == static_cast<char32_t>(b);
      if (self == (pass == 0)) v.tokens.push_back(tokenizer::ByteToSymbol(static_cast<uint8_t>(b)));
    }
  // Classic BPE training: repeatedly merge the most frequent adjacent pair
  // (ties: the lexicographically smallest pair, for determinism).
  auto words = CorpusWords();
  for (int m = 0; m < kMerges; ++m) {
    std::map<std::pair<std::string, std::string>, int> counts;
    for (const auto& w : words)
      for (size_t i = 0; i + 1 < w.size(); ++i) ++counts[{w[i], w[i + 1]}];
    const std::pair<std::string, std::string>* best = nullptr;
    int best_count = 1;
    for (const auto& [pair, count] : counts)
      if (count > best_count) {
        best = &pair;
        best_count = count;
      }
    if (best == nullptr) break;
    const auto pair = *best;
    v.merges.push_back(pair.first + " " + pair.second);
    v.tokens.push_back(pair.first + pair.second);
    for (auto& w : words) {
      std::vector<std::string> merged;
      for (size_t i = 0; i < w.size(); ++i) {
        if (i + 1 < w.size() && w[i] == pair.first && w[i + 1] == pair.second) {
          merged.push_back(pair.first + pair.second);
          ++i;
        } else {
          merged.push_back(w[i]);
        }
      }
      w = std::move(merged);
    }
  }
  v.token_types.assign(v.tokens.size(), tokenizer::TokenType::kNormal);
  for (const Added& a : kAdded) {
    v.tokens.push_back(a.text);
    v.token_types.push_back(a.type);
  }
  const int32_t first_added = static_cast<int32_t>(v.tokens.size()) - 26;
  v.bos_id = first_added;      // <|endoftext|>
  v.eos_id = first_added + 2;  // <|im_end|>
  v.pad_id = first_added;
  v.chat_template =
      "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + "
      "'<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- "
      "'<|im_start|>assistant\\n' }}{%- endif %}";
  return v;
}

}  // namespace kiln::models
