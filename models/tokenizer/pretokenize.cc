#include "models/tokenizer/pretokenize.h"

#include <cstddef>

#include "models/tokenizer/unicode_tables.h"
#include "models/tokenizer/utf8.h"

namespace kiln::tokenizer {
namespace {

// Character classes of §3.2 over decoded units. `kEnd` stands for "no
// character" past the end of the fragment and belongs to no class.
constexpr char32_t kEnd = 0xFFFFFFFF;

bool IsCrLf(char32_t c) { return c == '\r' || c == '\n'; }
bool IsLetterCp(char32_t c) { return c != kEnd && IsLetter(c); }
bool IsNumberCp(char32_t c) { return c != kEnd && IsNumber(c); }
bool IsSpaceCp(char32_t c) { return c != kEnd && IsWhitespace(c); }
// [^\s\p{L}\p{N}]: punctuation, symbols, marks, controls and invalid bytes.
bool IsSymbolCp(char32_t c) {
  return c != kEnd && !IsWhitespace(c) && !IsLetter(c) && !IsNumber(c);
}

char32_t AsciiLower(char32_t c) { return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c; }

class Splitter {
 public:
  explicit Splitter(std::string_view text) : text_(text), units_(DecodeUtf8(text)) {}

  std::vector<std::string_view> Run() {
    std::vector<std::string_view> pieces;
    size_t pos = 0;
    while (pos < units_.size()) {
      const size_t len = PieceLength(pos);
      const size_t begin = units_[pos].offset;
      const size_t end = pos + len < units_.size() ? units_[pos + len].offset : text_.size();
      pieces.push_back(text_.substr(begin, end - begin));
      pos += len;
    }
    return pieces;
  }

 private:
  char32_t At(size_t i) const { return i < units_.size() ? units_[i].cp : kEnd; }

  // Number of units of the piece starting at `pos` (always >= 1): the first
  // alternative of the regex that matches, in the order of §3.2's rules.
  size_t PieceLength(size_t pos) const {
    const char32_t c = At(pos);

    // 1. Contraction: ' followed by s, t, m, d, re, ve or ll, ASCII any case.
    if (c == '\'') {
      const char32_t c1 = AsciiLower(At(pos + 1));
      const char32_t c2 = AsciiLower(At(pos + 2));
      if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
      if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
        return 3;
      }
    }

    // 2. Word: an optional non-letter, non-number, non-CR/LF prefix, then letters.
    if (!IsCrLf(c) && !IsNumberCp(c) && (IsLetterCp(c) || IsLetterCp(At(pos + 1)))) {
      size_t end = pos + 1;
      while (IsLetterCp(At(end))) ++end;
      return end - pos;
    }

    // 3. Number: a single code point; digits are never grouped.
    if (IsNumberCp(c)) return 1;

    // 4. Symbol run: optional U+0020, symbols, then any CR/LF characters.
    {
      size_t end = c == ' ' ? pos + 1 : pos;
      if (IsSymbolCp(At(end))) {
        while (IsSymbolCp(At(end))) ++end;
        while (IsCrLf(At(end))) ++end;
        return end - pos;
      }
    }

    // Rules 5-7 see the maximal whitespace run at pos (c is whitespace here:
    // letters, numbers and symbols were taken above).
    size_t run_end = pos;
    size_t last_crlf_end = 0;  // one past the last CR/LF in the run, if any
    while (IsSpaceCp(At(run_end))) {
      if (IsCrLf(At(run_end))) last_crlf_end = run_end + 1;
      ++run_end;
    }
    const size_t run = run_end - pos;
    if (run == 0) return 1;  // unreachable by construction; never stall

    // 5. The run contains CR/LF: the piece ends after the last of them.
    if (last_crlf_end != 0) return last_crlf_end - pos;

    // 6. Run followed by a non-space: leave its last char to prefix the next piece.
    if (run > 1 && run_end < units_.size()) return run - 1;

    // 7. Anything else: the whole run.
    return run;
  }

  std::string_view text_;
  std::vector<Utf8Unit> units_;
};

}  // namespace

std::vector<std::string_view> PreTokenizeQwen2(std::string_view text) {
  return Splitter(text).Run();
}

}  // namespace kiln::tokenizer
