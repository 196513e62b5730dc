// JsonQuote (support/json_writer.h): escapes, and valid UTF-8 out for any bytes in.
#include "support/json_writer.h"

#include "gtest/gtest.h"

namespace kiln {
namespace {

TEST(JsonQuoteTest, EscapesAndKeepsWellFormedUtf8) {
  EXPECT_EQ(JsonQuote("a\"b\\c\n\t\x01"), "\"a\\\"b\\\\c\\n\\t\\u0001\"");
  EXPECT_EQ(JsonQuote("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
}

TEST(JsonQuoteTest, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  EXPECT_EQ(JsonQuote("\xc3"), "\"\\ufffd\"");                 // a character's first byte alone
  EXPECT_EQ(JsonQuote("\xa9x"), "\"\\ufffdx\"");               // a continuation byte alone
  EXPECT_EQ(JsonQuote("\xc0\xaf"), "\"\\ufffd\\ufffd\"");      // overlong
  EXPECT_EQ(JsonQuote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // a surrogate
  EXPECT_EQ(JsonQuote("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // past U+10FFFF
  EXPECT_EQ(JsonQuote("\xe2\x82"), "\"\\ufffd\\ufffd\"");      // cut short
}

}  // namespace
}  // namespace kiln
