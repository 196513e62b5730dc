// UTF-8 decoding that keeps each character's byte extent, so callers can cut
// the original text; invalid bytes become one-byte units instead of errors
// (the pre-tokenizer passes them on to the byte-level mapping, spec §3.3).
#ifndef KILN_MODELS_TOKENIZER_UTF8_H_
#define KILN_MODELS_TOKENIZER_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::tokenizer {

// Code point given to a unit made of one invalid byte: outside Unicode, so it
// is neither letter, number nor whitespace.
inline constexpr char32_t kInvalidUnit = 0x110000;

struct Utf8Unit {
  char32_t cp;      // code point, or kInvalidUnit
  uint32_t offset;  // first byte in the text
  uint32_t size;    // 1-4 bytes
};

// Strict decoding (no overlongs, surrogates or values above U+10FFFF): every
// byte of `text` lands in exactly one unit, in order.
std::vector<Utf8Unit> DecodeUtf8(std::string_view text);

// Whether `text` is well-formed UTF-8 throughout (DecodeUtf8 gives no
// kInvalidUnit).
bool IsValidUtf8(std::string_view text);

// Length of the longest prefix of `bytes` that does not end inside a
// well-formed but incomplete multi-byte sequence (what a streaming decoder may
// emit now). Invalid bytes count as complete.
size_t CompleteUtf8Prefix(std::string_view bytes);

}  // namespace kiln::tokenizer

#endif  // KILN_MODELS_TOKENIZER_UTF8_H_
