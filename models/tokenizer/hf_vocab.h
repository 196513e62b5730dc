// Builds a Vocab from Hugging Face tokenizer files the way the HF->GGUF
// converter fills tokenizer.ggml.* (spec/tokenizer.md §1-§2), so tests and
// tools can use a real vocabulary without a GGUF file. Links protobuf (JSON
// parsing), which is why it is its own library, kiln_hf_vocab.
#ifndef KILN_MODELS_TOKENIZER_HF_VOCAB_H_
#define KILN_MODELS_TOKENIZER_HF_VOCAB_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "models/tokenizer/vocab.h"

namespace kiln::tokenizer {

// Reads tokenizer.json (a BPE model with the qwen2 pre-tokenizer regex) and
// tokenizer_config.json:
//  * tokens by id: model.vocab (NORMAL), then added_tokens (CONTROL if
//    "special" or the text looks special, e.g. "<|...|>", else USER_DEFINED);
//    missing ids up to `vocab_size` become "[PAD<id>]" UNUSED (`vocab_size`
//    <= 0: no padding; smaller than the highest id + 1: InvalidArgument);
//  * merges "A B" (from [A, B] pairs or the older "A B" strings);
//  * eos/pad/bos from eos_token/pad_token/bos_token, bos falling back to
//    "<|endoftext|>" (Qwen's config.json bos_token_id) when bos_token is null;
//  * add_bos_token and chat_template.
// Errors name the file and the offending key; a non-BPE model or another
// pre-tokenizer is Unimplemented.
absl::StatusOr<Vocab> VocabFromHfJson(const std::string& tokenizer_json_path,
                                      const std::string& tokenizer_config_path,
                                      int32_t vocab_size);

}  // namespace kiln::tokenizer

#endif  // KILN_MODELS_TOKENIZER_HF_VOCAB_H_
