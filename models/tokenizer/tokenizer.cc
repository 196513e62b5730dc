#include "models/tokenizer/tokenizer.h"

#include <algorithm>
#include <array>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "models/tokenizer/bpe.h"
#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/pretokenize.h"
#include "models/tokenizer/special_split.h"
#include "models/tokenizer/utf8.h"
#include "support/status_macros.h"

namespace kiln::tokenizer {
namespace {

// tokenizer.ggml.pre values that select the qwen2 regex (spec §1).
constexpr std::string_view kQwen2PreNames[] = {"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2"};

// Texts whose tokens end generation besides EOS (spec §6, the subset that
// exists in Qwen vocabularies).
constexpr std::string_view kEogTexts[] = {"<|im_end|>", "<|endoftext|>", "<|fim_pad|>",
                                          "<|repo_name|>", "<|file_sep|>"};

absl::Status CheckSpecialId(const char* what, int32_t id, size_t n) {
  if (id == -1 || (id >= 0 && static_cast<size_t>(id) < n)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("tokenizer ", what, " id ", id,
                                                 " is outside the vocabulary of ", n, " tokens"));
}

absl::Status Validate(const Vocab& v) {
  if (v.model != "gpt2") {
    return absl::UnimplementedError(absl::StrCat(
        "tokenizer model '", v.model, "' is not supported (only 'gpt2' byte-level BPE)"));
  }
  if (std::find(std::begin(kQwen2PreNames), std::end(kQwen2PreNames), v.pre) ==
      std::end(kQwen2PreNames)) {
    return absl::UnimplementedError(absl::StrCat(
        "pre-tokenizer '", v.pre, "' is not supported (only the qwen2 family)"));
  }
  if (v.tokens.empty()) return absl::InvalidArgumentError("tokenizer has no tokens");
  if (v.tokens.size() != v.token_types.size()) {
    return absl::InvalidArgumentError(absl::StrCat("tokenizer has ", v.tokens.size(),
                                                   " tokens but ", v.token_types.size(),
                                                   " token types"));
  }
  if (v.tokens.size() > static_cast<size_t>(INT32_MAX)) {
    return absl::InvalidArgumentError("tokenizer has more tokens than int32 ids");
  }
  for (size_t i = 0; i < v.token_types.size(); ++i) {
    const int32_t t = static_cast<int32_t>(v.token_types[i]);
    if (t < static_cast<int32_t>(TokenType::kNormal) || t > static_cast<int32_t>(TokenType::kByte)) {
      return absl::InvalidArgumentError(absl::StrCat("token ", i, " \"", v.tokens[i],
                                                     "\" has unknown token type ", t));
    }
  }
  // GGUF strings are UTF-8 (so are the bundle's, which protobuf checks):
  // a byte-level BPE vocabulary is printable text throughout.
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (!IsValidUtf8(v.tokens[i]))
      return absl::InvalidArgumentError(absl::StrCat("token ", i, " is not valid UTF-8"));
  for (size_t i = 0; i < v.merges.size(); ++i)
    if (!IsValidUtf8(v.merges[i]))
      return absl::InvalidArgumentError(absl::StrCat("tokenizer merge ", i, " is not valid UTF-8"));
  if (!IsValidUtf8(v.chat_template)) return absl::InvalidArgumentError("the chat template is not valid UTF-8");
  RETURN_IF_ERROR(CheckSpecialId("BOS", v.bos_id, v.tokens.size()));
  RETURN_IF_ERROR(CheckSpecialId("EOS", v.eos_id, v.tokens.size()));
  RETURN_IF_ERROR(CheckSpecialId("padding", v.pad_id, v.tokens.size()));
  return absl::OkStatus();
}

bool IsSplitCandidate(TokenType t) {
  return t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown;
}

}  // namespace

struct Tokenizer::Impl {
  Vocab vocab;
  BpeMerges merges;
  // Views into vocab.tokens, which never changes after construction.
  absl::flat_hash_map<std::string_view, int32_t> token_ids;
  std::vector<SpecialToken> specials;  // longest text first (§3.1)
  std::vector<int32_t> eog_ids;        // sorted, unique

  int32_t Find(std::string_view text) const {
    auto it = token_ids.find(text);
    return it == token_ids.end() ? -1 : it->second;
  }

  // BPE-encodes one pre-tokenized piece (§3.3, §3.4).
  void EncodePiece(std::string_view piece, std::string& mapped,
                   std::vector<std::string_view>& symbols, std::vector<int32_t>& ids) const {
    mapped.clear();
    AppendByteLevel(piece, mapped);
    symbols.clear();
    merges.Apply(mapped, symbols);
    for (std::string_view sym : symbols) {
      if (const int32_t id = Find(sym); id >= 0) {
        ids.push_back(id);
        continue;
      }
      // Not a token (impossible in a complete byte-level vocabulary): fall
      // back to the tokens of its single mapped characters, one per byte.
      for (const Utf8Unit& u : DecodeUtf8(sym)) {
        if (const int32_t id = Find(sym.substr(u.offset, u.size)); id >= 0) ids.push_back(id);
      }
    }
  }
};

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Create(Vocab vocab) {
  RETURN_IF_ERROR(Validate(vocab));
  auto impl = std::make_unique<Impl>();
  ASSIGN_OR_RETURN(impl->merges, BpeMerges::Create(vocab.merges));
  impl->vocab = std::move(vocab);
  Vocab& v = impl->vocab;

  impl->token_ids.reserve(v.tokens.size());
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.tokens[i].empty()) v.tokens[i] = absl::StrCat("[EMPTY_", i, "]");
    // A repeated text maps to its last id, as llama.cpp's loader does.
    impl->token_ids.insert_or_assign(v.tokens[i], static_cast<int32_t>(i));
  }

  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const TokenType t = v.token_types[i];
    if (!IsSplitCandidate(t)) continue;
    impl->specials.push_back({static_cast<int32_t>(i), v.tokens[i], t != TokenType::kUserDefined});
  }
  std::stable_sort(impl->specials.begin(), impl->specials.end(),
                   [](const SpecialToken& a, const SpecialToken& b) {
                     return a.text.size() > b.text.size();
                   });

  if (v.eos_id >= 0) impl->eog_ids.push_back(v.eos_id);
  for (std::string_view text : kEogTexts) {
    if (const int32_t id = impl->Find(text); id >= 0) impl->eog_ids.push_back(id);
  }
  std::sort(impl->eog_ids.begin(), impl->eog_ids.end());
  impl->eog_ids.erase(std::unique(impl->eog_ids.begin(), impl->eog_ids.end()),
                      impl->eog_ids.end());

  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::EncodePrompt(std::string_view text, bool parse_special) const {
  std::vector<int32_t> ids;
  if (impl_->vocab.add_bos && impl_->vocab.bos_id >= 0) ids.push_back(impl_->vocab.bos_id);
  const std::vector<int32_t> rest = Encode(text, parse_special);
  ids.insert(ids.end(), rest.begin(), rest.end());
  return ids;
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool parse_special) const {
  std::vector<int32_t> ids;
  std::string mapped;
  std::vector<std::string_view> symbols;
  for (const Fragment& f : SplitSpecialTokens(text, impl_->specials, parse_special)) {
    if (f.id >= 0) {
      ids.push_back(f.id);
      continue;
    }
    for (std::string_view piece : PreTokenizeQwen2(f.text)) {
      impl_->EncodePiece(piece, mapped, symbols, ids);
    }
  }
  return ids;
}

std::string Tokenizer::TokenBytes(int32_t id, bool render_special) const {
  const Vocab& v = impl_->vocab;
  if (id < 0 || static_cast<size_t>(id) >= v.tokens.size()) return "";
  switch (v.token_types[id]) {
    case TokenType::kNormal:
      return ByteLevelDecode(v.tokens[id]);
    case TokenType::kUserDefined:
      return v.tokens[id];
    case TokenType::kControl:
    case TokenType::kUnknown:
      return render_special ? v.tokens[id] : "";
    case TokenType::kUnused:
    case TokenType::kByte:
      return "";
  }
  return "";
}

std::string Tokenizer::Decode(const std::vector<int32_t>& ids, bool render_special) const {
  std::string out;
  for (int32_t id : ids) out += TokenBytes(id, render_special);
  return out;
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->vocab.tokens.size()); }
const Vocab& Tokenizer::vocab() const { return impl_->vocab; }
int32_t Tokenizer::FindToken(std::string_view text) const { return impl_->Find(text); }
const std::vector<int32_t>& Tokenizer::eog_ids() const { return impl_->eog_ids; }

bool Tokenizer::IsEog(int32_t id) const {
  return std::binary_search(impl_->eog_ids.begin(), impl_->eog_ids.end(), id);
}

std::string StreamDecoder::Push(int32_t id) {
  pending_ += tok_.TokenBytes(id, render_special_);
  const size_t complete = CompleteUtf8Prefix(pending_);
  std::string out = pending_.substr(0, complete);
  pending_.erase(0, complete);
  return out;
}

std::string StreamDecoder::Flush() {
  if (pending_.empty()) return "";
  pending_.clear();
  return "\xEF\xBF\xBD";  // U+FFFD for the unfinished character
}

}  // namespace kiln::tokenizer
