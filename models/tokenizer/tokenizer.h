// Byte-level BPE tokenizer with the qwen2 pre-tokenizer (spec/tokenizer.md §3),
// decoding (§4) and the end-of-generation set (§6). Links only Abseil, so the
// runtime uses it without the compiler.
#ifndef KILN_MODELS_TOKENIZER_TOKENIZER_H_
#define KILN_MODELS_TOKENIZER_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "models/tokenizer/vocab.h"

namespace kiln::tokenizer {

class Tokenizer {
 public:
  // Validates the vocabulary (model "gpt2", pre "qwen2"-family, sizes match,
  // merges well-formed, special ids in range) and builds the lookup tables.
  // An unsupported model or pre-tokenizer is Unimplemented naming it; other
  // defects are InvalidArgument naming the token or merge. Empty token texts
  // become "[EMPTY_<id>]" as llama.cpp loads them (§1).
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Create(Vocab vocab);
  ~Tokenizer();

  // `parse_special`: CONTROL tokens in the text become their ids (use for
  // rendered chat templates); USER_DEFINED tokens always do.
  // Nothing is prepended or appended (add_bos/add_eos are off for Qwen, §3.5).
  // Thread-safe: the tokenizer is immutable after Create().
  std::vector<int32_t> Encode(std::string_view text, bool parse_special) const;
  // What a model is fed for `text` at the start of a sequence: the BOS token
  // first where the vocabulary says add_bos (not Qwen3's own GGUFs), then
  // Encode(text). kiln run, kiln chat and kilnc reference feed this.
  std::vector<int32_t> EncodePrompt(std::string_view text, bool parse_special) const;
  // Bytes of one token (§4): NORMAL maps back through §3.3, USER_DEFINED is
  // its literal text, CONTROL/UNKNOWN are "" unless `render_special`, UNUSED,
  // BYTE and out-of-range ids are "". Bytes may end inside a UTF-8 character.
  std::string TokenBytes(int32_t id, bool render_special = false) const;
  std::string Decode(const std::vector<int32_t>& ids, bool render_special = false) const;

  int32_t vocab_size() const;
  const Vocab& vocab() const;
  // Looks a token up by its exact text; -1 if absent.
  int32_t FindToken(std::string_view text) const;
  // End-of-generation ids: EOS plus the tokens spec/tokenizer.md §6 lists.
  const std::vector<int32_t>& eog_ids() const;
  bool IsEog(int32_t id) const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Streaming detokenizer: feeds token bytes and returns only complete UTF-8
// sequences, holding back a partial character until its last byte arrives.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, bool render_special = false)
      : tok_(tok), render_special_(render_special) {}
  std::string Push(int32_t id);
  std::string Flush();  // whatever remains (invalid partials as U+FFFD)

 private:
  const Tokenizer& tok_;
  bool render_special_;
  std::string pending_;  // an incomplete UTF-8 sequence, at most 3 bytes
};

}  // namespace kiln::tokenizer

#endif  // KILN_MODELS_TOKENIZER_TOKENIZER_H_
