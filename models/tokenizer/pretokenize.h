// The qwen2 pre-tokenizer (spec/tokenizer.md §3.2): splits one raw-text
// fragment into the pieces that BPE then encodes independently.
//
// It executes the regex
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|
//   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// as the 7 operational rules of §3.2 on code points, e.g.
//   "a  \n  b" -> "a" | "  \n" | " " | " b".
// Bytes that are not valid UTF-8 act as one symbol character each (neither
// letter, number nor whitespace) and stay in the pieces unchanged.
#ifndef KILN_MODELS_TOKENIZER_PRETOKENIZE_H_
#define KILN_MODELS_TOKENIZER_PRETOKENIZE_H_

#include <string_view>
#include <vector>

namespace kiln::tokenizer {

// Pieces are consecutive, non-empty views into `text` that cover it exactly.
// The end of `text` acts as end of input (special-token fragments are split
// separately, §3.2).
std::vector<std::string_view> PreTokenizeQwen2(std::string_view text);

}  // namespace kiln::tokenizer

#endif  // KILN_MODELS_TOKENIZER_PRETOKENIZE_H_
