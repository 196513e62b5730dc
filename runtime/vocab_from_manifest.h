// Builds the tokenizer's vocabulary from the bundle manifest's Tokenizer
// message (the runtime never reads tokenizer keys from the GGUF: the bundle
// carries what it was compiled with).
#ifndef KILN_RUNTIME_VOCAB_FROM_MANIFEST_H_
#define KILN_RUNTIME_VOCAB_FROM_MANIFEST_H_

#include "absl/status/statusor.h"
#include "models/tokenizer/vocab.h"
#include "runtime/manifest.pb.h"

namespace kiln::runtime {

// InvalidArgument if token_types and tokens differ in length or a type is
// outside 1..6 (tokenizer.md §1); Tokenizer::Create checks the rest.
absl::StatusOr<tokenizer::Vocab> VocabFromManifest(const Tokenizer& t);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_VOCAB_FROM_MANIFEST_H_
