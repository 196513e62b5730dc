#include "runtime/vocab_from_manifest.h"

#include "absl/strings/str_cat.h"

namespace kiln::runtime {

absl::StatusOr<tokenizer::Vocab> VocabFromManifest(const Tokenizer& t) {
  tokenizer::Vocab v;
  v.model = t.model();
  v.pre = t.pre();
  v.tokens.assign(t.tokens().begin(), t.tokens().end());
  if (t.token_types_size() == 0) {
    v.token_types.assign(v.tokens.size(), tokenizer::TokenType::kNormal);
  } else {
    if (t.token_types_size() != t.tokens_size())
      return absl::InvalidArgumentError(absl::StrCat("bundle tokenizer: ", t.token_types_size(),
                                                     " token types for ", t.tokens_size(), " tokens"));
    for (int i = 0; i < t.token_types_size(); ++i) {
      int32_t type = t.token_types(i);
      if (type < 1 || type > 6)
        return absl::InvalidArgumentError(
            absl::StrCat("bundle tokenizer: token ", i, " has type ", type, ", outside 1..6"));
      v.token_types.push_back(static_cast<tokenizer::TokenType>(type));
    }
  }
  v.merges.assign(t.merges().begin(), t.merges().end());
  v.bos_id = t.bos_id();
  v.eos_id = t.eos_id();
  v.pad_id = t.pad_id();
  v.add_bos = t.add_bos();
  v.chat_template = t.chat_template();
  return v;
}

}  // namespace kiln::runtime
