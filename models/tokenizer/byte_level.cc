#include "models/tokenizer/byte_level.h"

#include <array>

#include "models/tokenizer/utf8.h"

namespace kiln::tokenizer {
namespace {

// Bytes that keep their own value as code point (§3.3).
constexpr bool IsSelfMapped(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

constexpr char32_t kFirstShifted = 0x100;
constexpr int kNumShifted = 68;  // 0x00-0x20, 0x7F-0xA0, 0xAD

struct Tables {
  std::array<char32_t, 256> to_cp{};
  // Code points 0..0x143 cover every mapped value; -1 marks "no byte".
  std::array<int16_t, kFirstShifted + kNumShifted> to_byte{};
};

constexpr Tables BuildTables() {
  Tables t;
  for (int16_t& b : t.to_byte) b = -1;
  char32_t next = kFirstShifted;
  for (int b = 0; b < 256; ++b) {
    const char32_t cp = IsSelfMapped(b) ? static_cast<char32_t>(b) : next++;
    t.to_cp[b] = cp;
    t.to_byte[cp] = static_cast<int16_t>(b);
  }
  return t;
}

constexpr Tables kTables = BuildTables();
static_assert(kTables.to_cp[' '] == 0x120 && kTables.to_cp['\n'] == 0x10A);
static_assert(kTables.to_cp[0xAD] == 0x143 && kTables.to_byte[0x142] == 0xA0);

void AppendUnkMarker(std::string_view bytes, std::string& out) {
  out += "[UNK_BYTE_0x";
  constexpr char kHex[] = "0123456789abcdef";
  for (char c : bytes) {
    out += kHex[static_cast<uint8_t>(c) >> 4];
    out += kHex[static_cast<uint8_t>(c) & 0xF];
  }
  out += "]";
}

}  // namespace

char32_t ByteToCodePoint(uint8_t b) { return kTables.to_cp[b]; }

std::string ByteToSymbol(uint8_t b) {
  std::string out;
  AppendByteLevel(std::string_view(reinterpret_cast<const char*>(&b), 1), out);
  return out;
}

int CodePointToByte(char32_t cp) {
  return cp < kTables.to_byte.size() ? kTables.to_byte[cp] : -1;
}

void AppendByteLevel(std::string_view bytes, std::string& out) {
  // Mapped code points are below U+0800: one or two UTF-8 bytes.
  for (char c : bytes) {
    const char32_t cp = kTables.to_cp[static_cast<uint8_t>(c)];
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
}

std::string ByteLevelDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const Utf8Unit& u : DecodeUtf8(text)) {
    const int b = u.cp == kInvalidUnit ? -1 : CodePointToByte(u.cp);
    if (b >= 0) {
      out += static_cast<char>(b);
    } else {
      AppendUnkMarker(text.substr(u.offset, u.size), out);
    }
  }
  return out;
}

}  // namespace kiln::tokenizer
