// GPT-2 byte-level mapping (spec/tokenizer.md §3.3): every byte is shown as
// one printable code point, so BPE tokens and merges are plain text.
// Bytes 0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF map to themselves; the other 68
// bytes, in increasing order, map to U+0100..U+0143 (space -> U+0120 'Ġ').
#ifndef KILN_MODELS_TOKENIZER_BYTE_LEVEL_H_
#define KILN_MODELS_TOKENIZER_BYTE_LEVEL_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::tokenizer {

// The code point byte `b` maps to.
char32_t ByteToCodePoint(uint8_t b);

// The same as UTF-8 text: the one-character symbol of byte `b` ("Ġ" for ' ').
std::string ByteToSymbol(uint8_t b);

// The byte that maps to `cp`, or -1 if no byte does.
int CodePointToByte(char32_t cp);

// Appends the mapped form (UTF-8) of raw `bytes` to `out`.
void AppendByteLevel(std::string_view bytes, std::string& out);

// Inverse mapping of a token text (§4): each code point back to its byte. A
// code point outside the table becomes the marker "[UNK_BYTE_0x<hex>]" with
// the hex of its UTF-8 bytes; a byte that is not valid UTF-8 likewise.
std::string ByteLevelDecode(std::string_view text);

}  // namespace kiln::tokenizer

#endif  // KILN_MODELS_TOKENIZER_BYTE_LEVEL_H_
