// The qwen2 pre-tokenizer against every split example of spec §3.2, plus one
// case per rule and the handling of invalid UTF-8.
#include "models/tokenizer/pretokenize.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kiln::tokenizer {
namespace {

std::vector<std::string> Split(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view p : PreTokenizeQwen2(text)) out.emplace_back(p);
  return out;
}

using Pieces = std::vector<std::string>;

struct SplitCase {
  std::string input;
  Pieces pieces;
};

// spec/tokenizer.md §3.2, "Split examples" table, in order.
TEST(PreTokenizeQwen2Test, SpecSplitTable) {
  const std::vector<SplitCase> cases = {
      {"Hello, world!", {"Hello", ",", " world", "!"}},
      {"don't I'LL we'Re", {"don", "'t", " I", "'LL", " we", "'Re"}},
      {"   Hello", {"  ", " Hello"}},
      {"a  \n  b", {"a", "  \n", " ", " b"}},
      {"x \t\ny", {"x", " \t\n", "y"}},
      {"end   ", {"end", "   "}},
      {"ied 4 \u00BD months", {"ied", " ", "4", " ", "\u00BD", " months"}},
      {" this is \U0001F999.cpp", {" this", " is", " \U0001F999.", "cpp"}},
      {"w048 7tuijk", {"w", "0", "4", "8", " ", "7", "tuijk"}},
  };
  for (const SplitCase& c : cases) EXPECT_EQ(Split(c.input), c.pieces) << c.input;
}

TEST(PreTokenizeQwen2Test, EmptyTextHasNoPieces) { EXPECT_TRUE(Split("").empty()); }

TEST(PreTokenizeQwen2Test, Rule1Contractions) {
  EXPECT_EQ(Split("'s't'm'd're've'll"), (Pieces{"'s", "'t", "'m", "'d", "'re", "'ve", "'ll"}));
  EXPECT_EQ(Split("'S'RE'Ll"), (Pieces{"'S", "'RE", "'Ll"}));
  // Not contractions: other letters, a lone quote, U+2019.
  EXPECT_EQ(Split("'x"), (Pieces{"'x"}));  // rule 2: quote prefixes the word
  EXPECT_EQ(Split("'r"), (Pieces{"'r"}));
  EXPECT_EQ(Split("'"), (Pieces{"'"}));
  EXPECT_EQ(Split("it\u2019s"), (Pieces{"it", "\u2019s"}));
}

TEST(PreTokenizeQwen2Test, Rule2WordTakesOneNonLetterPrefix) {
  EXPECT_EQ(Split("(hello"), (Pieces{"(hello"}));
  EXPECT_EQ(Split("\thello"), (Pieces{"\thello"}));
  EXPECT_EQ(Split("$x"), (Pieces{"$x"}));
  EXPECT_EQ(Split("((hello"), (Pieces{"((", "hello"}));  // rule 4 takes both
  // CR/LF and numbers never prefix a word.
  EXPECT_EQ(Split("\nhello"), (Pieces{"\n", "hello"}));
  EXPECT_EQ(Split("1hello"), (Pieces{"1", "hello"}));
  // A combining mark is not a letter: it ends the word and prefixes the next.
  EXPECT_EQ(Split("cafe\u0301s"), (Pieces{"cafe", "\u0301s"}));
  EXPECT_EQ(Split("\u6211\u60F3\u5728apple"), (Pieces{"\u6211\u60F3\u5728apple"}));
}

TEST(PreTokenizeQwen2Test, Rule3DigitsAreSingle) {
  EXPECT_EQ(Split("333"), (Pieces{"3", "3", "3"}));
  EXPECT_EQ(Split("\u00BD\u00B2"), (Pieces{"\u00BD", "\u00B2"}));
}

TEST(PreTokenizeQwen2Test, Rule4SymbolRunsTakeSpaceAndTrailingNewlines) {
  EXPECT_EQ(Split("!!!!!!"), (Pieces{"!!!!!!"}));
  EXPECT_EQ(Split(" (\n\r\nx"), (Pieces{" (\n\r\n", "x"}));
  EXPECT_EQ(Split("\n ="), (Pieces{"\n", " ="}));
  // Only U+0020 may lead: a tab before symbols stays whitespace.
  EXPECT_EQ(Split("a\t\t=="), (Pieces{"a", "\t", "\t", "=="}));
}

TEST(PreTokenizeQwen2Test, Rules5To7Whitespace) {
  EXPECT_EQ(Split("\n\n\n"), (Pieces{"\n\n\n"}));
  EXPECT_EQ(Split("a\n  \n b"), (Pieces{"a", "\n  \n", " b"}));
  EXPECT_EQ(Split("  \u3000x"), (Pieces{"  ", "\u3000x"}));
  EXPECT_EQ(Split("a \u00A0"), (Pieces{"a", " \u00A0"}));
  EXPECT_EQ(Split(" 1"), (Pieces{" ", "1"}));
  EXPECT_EQ(Split("  1"), (Pieces{" ", " ", "1"}));
}

TEST(PreTokenizeQwen2Test, InvalidUtf8BytesSurviveAsSymbols) {
  // A stray byte behaves like a symbol character: it prefixes a word, joins a
  // symbol run, and is never dropped.
  EXPECT_EQ(Split("\xFFhi"), (Pieces{"\xFFhi"}));
  EXPECT_EQ(Split("a \xC3\xC3!"), (Pieces{"a", " \xC3\xC3!"}));
  EXPECT_EQ(Split("x\xF0\x9F\xA6"), (Pieces{"x", "\xF0\x9F\xA6"}));
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  std::string joined;
  for (std::string_view p : PreTokenizeQwen2(all)) {
    ASSERT_FALSE(p.empty());
    joined += p;
  }
  EXPECT_EQ(joined, all);
}

}  // namespace
}  // namespace kiln::tokenizer
