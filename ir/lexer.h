// Tokens of the IR text form (internal to the parser). Positions are 1-based
// line and column; `//` starts a comment that runs to the end of the line.
#ifndef KILN_IR_LEXER_H_
#define KILN_IR_LEXER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::ir {

enum class TokenKind : uint8_t {
  kEof,
  kError,
  kIdent,   // f32, matmul, weight, T, inf
  kLocal,   // %name (text without the %)
  kGlobal,  // @name (text without the @)
  kInt,
  kFloat,
  kString,  // text is the decoded contents
  kLParen,
  kRParen,
  kLBrace,
  kRBrace,
  kLBracket,
  kRBracket,
  kComma,
  kColon,
  kEqual,
  kArrow,
  kCaret,
};

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::string text;  // kError: the message
  int line = 1;
  int col = 1;
  int64_t int_value = 0;
  float float_value = 0;
};

// Splits `src` into tokens ending with kEof, or with a kError token at the
// first malformed one.
std::vector<Token> Tokenize(std::string_view src);

std::string_view TokenKindName(TokenKind kind);  // "')'", "identifier", ...

}  // namespace kiln::ir

#endif  // KILN_IR_LEXER_H_
