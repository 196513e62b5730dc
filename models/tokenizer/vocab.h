// The token vocabulary of a byte-level BPE model as stored in GGUF metadata
// (spec/tokenizer.md §1-§2): token texts, types, merge ranks, special ids.
#ifndef KILN_MODELS_TOKENIZER_VOCAB_H_
#define KILN_MODELS_TOKENIZER_VOCAB_H_

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::tokenizer {

enum class TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// Everything the tokenizer needs; filled from GGUF keys by the caller
// (models/ reads a GgufFile, the runtime reads the bundle manifest).
struct Vocab {
  std::string model = "gpt2";  // tokenizer.ggml.model
  std::string pre = "qwen2";   // tokenizer.ggml.pre
  std::vector<std::string> tokens;      // byte-level-mapped texts, id = index
  std::vector<TokenType> token_types;   // same length as tokens
  std::vector<std::string> merges;      // "A B", rank = index
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t pad_id = -1;
  bool add_bos = false;
  std::string chat_template;  // may be empty
};

}  // namespace kiln::tokenizer

#endif  // KILN_MODELS_TOKENIZER_VOCAB_H_
