// A small byte-level BPE vocabulary for the "tiny" synthetic preset: the 256
// byte symbols, merges learned from a fixed English paragraph, and Qwen3's
// added tokens with their real texts and types.
#ifndef KILN_MODELS_TINY_VOCAB_H_
#define KILN_MODELS_TINY_VOCAB_H_

#include "models/tokenizer/vocab.h"

namespace kiln::models {

tokenizer::Vocab TinyVocab();

}  // namespace kiln::models

#endif  // KILN_MODELS_TINY_VOCAB_H_
