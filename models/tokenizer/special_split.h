// Special-token splitting (spec/tokenizer.md §3.1): cuts the exact texts of
// CONTROL / USER_DEFINED / UNKNOWN tokens out of the raw text before the
// pre-tokenizer runs, e.g. "a<|im_end|>b" -> "a" | 151645 | "b".
#ifndef KILN_MODELS_TOKENIZER_SPECIAL_SPLIT_H_
#define KILN_MODELS_TOKENIZER_SPECIAL_SPLIT_H_

#include <cstdint>
#include <string_view>
#include <vector>

namespace kiln::tokenizer {

struct SpecialToken {
  int32_t id;
  std::string_view text;      // non-empty, raw (not byte-level mapped)
  bool needs_parse_special;   // CONTROL / UNKNOWN: only with parse_special
};

struct Fragment {
  int32_t id;              // the matched token, or -1 for raw text
  std::string_view text;   // the matched or raw bytes of the input
};

// `candidates` must be ordered longest text first. Each candidate in turn
// replaces every occurrence (first occurrence first, non-overlapping) of its
// text inside the still-raw fragments. Raw fragments are never empty.
std::vector<Fragment> SplitSpecialTokens(std::string_view text,
                                         const std::vector<SpecialToken>& candidates,
                                         bool parse_special);

}  // namespace kiln::tokenizer

#endif  // KILN_MODELS_TOKENIZER_SPECIAL_SPLIT_H_
