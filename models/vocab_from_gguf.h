// Moves a tokenizer vocabulary between GGUF metadata (tokenizer.ggml.*,
// spec/tokenizer.md §1) and tokenizer::Vocab.
#ifndef KILN_MODELS_VOCAB_FROM_GGUF_H_
#define KILN_MODELS_VOCAB_FROM_GGUF_H_

#include "absl/status/statusor.h"
#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"
#include "models/tokenizer/vocab.h"

namespace kiln::models {

// Reads the tokenizer keys; errors name the missing or mistyped key.
absl::StatusOr<tokenizer::Vocab> ReadVocab(const gguf::GgufFile& file);

// Adds the tokenizer keys the HF converter writes, in its order.
void AddVocabKeys(const tokenizer::Vocab& vocab, gguf::GgufWriter& writer);

}  // namespace kiln::models

#endif  // KILN_MODELS_VOCAB_FROM_GGUF_H_
