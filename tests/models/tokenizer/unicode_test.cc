// Character classes (spec §3.2), UTF-8 units and the byte-level map (§3.3).
#include <string>

#include "gtest/gtest.h"
#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/unicode_tables.h"
#include "models/tokenizer/utf8.h"

namespace kiln::tokenizer {
namespace {

TEST(UnicodeTablesTest, LettersAreCategoryL) {
  for (char32_t c : {U'a', U'Z', U'é', U'ß', U'Ω', U'я', U'我', U'ひ', U'ㄱ', U'ʰ' /*Lm*/}) {
    EXPECT_TRUE(IsLetter(c)) << std::hex << static_cast<uint32_t>(c);
  }
  // Marks, digits, punctuation, symbols and spaces are not letters.
  for (char32_t c : {U'\u0301' /*Mn*/, U'\u0903' /*Mc*/, U'1', U'_', U'\'', U' ', U'🦙', U'～'}) {
    EXPECT_FALSE(IsLetter(c)) << std::hex << static_cast<uint32_t>(c);
  }
  EXPECT_FALSE(IsLetter(0x110000));
}

TEST(UnicodeTablesTest, NumbersAreCategoryN) {
  for (char32_t c : {U'0', U'9', U'½', U'²', U'٣', U'Ⅻ' /*Nl*/, U'①'}) {
    EXPECT_TRUE(IsNumber(c)) << std::hex << static_cast<uint32_t>(c);
  }
  for (char32_t c : {U'a', U'.', U' ', U'十' /*Lo*/}) {
    EXPECT_FALSE(IsNumber(c)) << std::hex << static_cast<uint32_t>(c);
  }
}

TEST(UnicodeTablesTest, WhitespaceIsTheSpecSet) {
  for (char32_t c : {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x200A,
                     0x2028, 0x2029, 0x202F, 0x205F, 0x3000}) {
    EXPECT_TRUE(IsWhitespace(c)) << std::hex << static_cast<uint32_t>(c);
  }
  // Not in \s: file/group separators, zero-width space, BOM, letters.
  for (char32_t c : {0x08, 0x0E, 0x1C, 0x1F, 0x200B, 0xFEFF, 0x21, 0x41}) {
    EXPECT_FALSE(IsWhitespace(c)) << std::hex << static_cast<uint32_t>(c);
  }
}

TEST(Utf8Test, DecodesValidAndKeepsInvalidBytesAsUnits) {
  const std::string text = "a\xC3\xA9\xF0\x9F\xA6\x99\xFF\xC3(\xE0\x80\x80\xED\xA0\x80";
  const std::vector<Utf8Unit> u = DecodeUtf8(text);
  ASSERT_EQ(u.size(), 12u);
  EXPECT_EQ(u[0].cp, U'a');
  EXPECT_EQ(u[1].cp, U'é');
  EXPECT_EQ(u[1].size, 2u);
  EXPECT_EQ(u[2].cp, U'🦙');
  EXPECT_EQ(u[2].offset, 3u);
  EXPECT_EQ(u[3].cp, kInvalidUnit);  // 0xFF
  EXPECT_EQ(u[4].cp, kInvalidUnit);  // truncated 0xC3
  EXPECT_EQ(u[5].cp, U'(');
  for (int i = 6; i < 12; ++i) EXPECT_EQ(u[i].cp, kInvalidUnit) << i;  // overlong, surrogate
  EXPECT_EQ(u[11].offset, text.size() - 1);
}

TEST(Utf8Test, CompletePrefixHoldsBackOnlyIncompleteTails) {
  EXPECT_EQ(CompleteUtf8Prefix(""), 0u);
  EXPECT_EQ(CompleteUtf8Prefix("ab"), 2u);
  EXPECT_EQ(CompleteUtf8Prefix(" \xF0"), 1u);
  EXPECT_EQ(CompleteUtf8Prefix(" \xF0\x9F\xA6"), 1u);
  EXPECT_EQ(CompleteUtf8Prefix(" \xF0\x9F\xA6\x99"), 5u);
  EXPECT_EQ(CompleteUtf8Prefix("\xC3"), 0u);
  // Not incomplete but invalid: emitted as is.
  EXPECT_EQ(CompleteUtf8Prefix("\xFF"), 1u);
  EXPECT_EQ(CompleteUtf8Prefix("\xE0\x80"), 2u);
  EXPECT_EQ(CompleteUtf8Prefix("\x9F"), 1u);
}

TEST(ByteLevelTest, MapsAsGpt2BytesToUnicode) {
  EXPECT_EQ(ByteToCodePoint('A'), U'A');
  EXPECT_EQ(ByteToCodePoint(0xE9), U'é');
  EXPECT_EQ(ByteToCodePoint(0x00), 0x100u);
  EXPECT_EQ(ByteToCodePoint(0x09), 0x109u);
  EXPECT_EQ(ByteToCodePoint(0x0A), 0x10Au);
  EXPECT_EQ(ByteToCodePoint(0x0D), 0x10Du);
  EXPECT_EQ(ByteToCodePoint(0x20), 0x120u);
  EXPECT_EQ(ByteToCodePoint(0x7F), 0x121u);
  EXPECT_EQ(ByteToCodePoint(0xA0), 0x142u);
  EXPECT_EQ(ByteToCodePoint(0xAD), 0x143u);
  EXPECT_EQ(ByteToSymbol(' '), "\xC4\xA0");  // "Ġ"
  EXPECT_EQ(ByteToSymbol('A'), "A");
  for (int b = 0; b < 256; ++b) EXPECT_EQ(CodePointToByte(ByteToCodePoint(b)), b);
  EXPECT_EQ(CodePointToByte(0x144), -1);
  EXPECT_EQ(CodePointToByte(0x80), -1);  // 0x80 maps to U+0122, not to itself
}

TEST(ByteLevelTest, RoundTripsEveryByteAndMarksUnknownCharacters) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  std::string mapped;
  AppendByteLevel(all, mapped);
  EXPECT_EQ(ByteLevelDecode(mapped), all);

  std::string hello;
  AppendByteLevel(" hello\n", hello);
  EXPECT_EQ(hello, "\xC4\xA0hello\xC4\x8A");  // "Ġhello" + "Ċ"
  EXPECT_EQ(ByteLevelDecode("a\xE6\x88\x91"), "a[UNK_BYTE_0xe68891]");  // '我' is not a byte
}

}  // namespace
}  // namespace kiln::tokenizer
