#include "models/tokenizer/utf8.h"

namespace kiln::tokenizer {
namespace {

bool IsContinuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// Sequence length announced by a lead byte (0 if it cannot start one) and the
// allowed range of the second byte (Unicode 15, Table 3-7, well-formed UTF-8).
struct Lead {
  int length;
  uint8_t second_lo;
  uint8_t second_hi;
};

Lead ClassifyLead(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};  // no surrogates
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};  // at most U+10FFFF
  return {0, 0, 0};
}

// Number of bytes of a well-formed sequence starting at text[pos] that are
// present (a prefix of the full `lead.length`), or 0 if the bytes are invalid.
int MatchedBytes(std::string_view text, size_t pos, const Lead& lead) {
  if (lead.length == 0) return 0;
  int n = 1;
  for (; n < lead.length && pos + n < text.size(); ++n) {
    const uint8_t b = static_cast<uint8_t>(text[pos + n]);
    const bool ok = n == 1 ? (b >= lead.second_lo && b <= lead.second_hi) : IsContinuation(b);
    if (!ok) return 0;
  }
  return n;
}

}  // namespace

std::vector<Utf8Unit> DecodeUtf8(std::string_view text) {
  std::vector<Utf8Unit> units;
  units.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const uint8_t b0 = static_cast<uint8_t>(text[pos]);
    const Lead lead = ClassifyLead(b0);
    if (MatchedBytes(text, pos, lead) != lead.length || lead.length == 0) {
      units.push_back({kInvalidUnit, static_cast<uint32_t>(pos), 1});
      ++pos;
      continue;
    }
    char32_t cp = lead.length == 1 ? b0 : (b0 & (0xFF >> (lead.length + 1)));
    for (int i = 1; i < lead.length; ++i) {
      cp = (cp << 6) | (static_cast<uint8_t>(text[pos + i]) & 0x3F);
    }
    units.push_back({cp, static_cast<uint32_t>(pos), static_cast<uint32_t>(lead.length)});
    pos += lead.length;
  }
  return units;
}

size_t CompleteUtf8Prefix(std::string_view bytes) {
  // An incomplete sequence has at most 3 bytes: find its lead byte.
  const size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const size_t pos = n - back;
    const uint8_t b = static_cast<uint8_t>(bytes[pos]);
    if (IsContinuation(b)) continue;
    const Lead lead = ClassifyLead(b);
    const bool incomplete = lead.length > static_cast<int>(back) &&
                            MatchedBytes(bytes, pos, lead) == static_cast<int>(back);
    return incomplete ? pos : n;
  }
  return n;
}

bool IsValidUtf8(std::string_view text) {
  for (const Utf8Unit& u : DecodeUtf8(text))
    if (u.cp == kInvalidUnit) return false;
  return true;
}

}  // namespace kiln::tokenizer
