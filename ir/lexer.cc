// Tokenizer of the IR text form.
#include "ir/lexer.h"

#include <charconv>
#include <limits>

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"

namespace kiln::ir {
namespace {

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameChar(char c) { return IsIdentStart(c) || IsDigit(c) || c == '.'; }
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  std::vector<Token> Run() {
    std::vector<Token> out;
    while (true) {
      Token t = Next();
      const bool stop = t.kind == TokenKind::kEof || t.kind == TokenKind::kError;
      out.push_back(std::move(t));
      if (stop) return out;
    }
  }

 private:
  char Peek(size_t ahead = 0) const { return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0'; }
  void Advance() {
    if (src_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  bool AtEnd() const { return pos_ >= src_.size(); }

  void SkipSpaceAndComments() {
    while (!AtEnd()) {
      char c = Peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        Advance();
      } else if (c == '/' && Peek(1) == '/') {
        while (!AtEnd() && Peek() != '\n') Advance();
      } else {
        return;
      }
    }
  }

  Token Make(TokenKind kind, std::string text = "") {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.line = start_line_;
    t.col = start_col_;
    return t;
  }

  Token Error(std::string message) { return Make(TokenKind::kError, std::move(message)); }

  Token Next() {
    SkipSpaceAndComments();
    start_line_ = line_;
    start_col_ = col_;
    if (AtEnd()) return Make(TokenKind::kEof);
    const char c = Peek();
    switch (c) {
      case '(':
        Advance();
        return Make(TokenKind::kLParen);
      case ')':
        Advance();
        return Make(TokenKind::kRParen);
      case '{':
        Advance();
        return Make(TokenKind::kLBrace);
      case '}':
        Advance();
        return Make(TokenKind::kRBrace);
      case '[':
        Advance();
        return Make(TokenKind::kLBracket);
      case ']':
        Advance();
        return Make(TokenKind::kRBracket);
      case ',':
        Advance();
        return Make(TokenKind::kComma);
      case ':':
        Advance();
        return Make(TokenKind::kColon);
      case '=':
        Advance();
        return Make(TokenKind::kEqual);
      case '^':
        Advance();
        return Make(TokenKind::kCaret);
      case '"':
        return LexString();
      case '%':
      case '@': {
        Advance();
        std::string name;
        while (IsNameChar(Peek())) {
          name += Peek();
          Advance();
        }
        if (name.empty()) return Error(absl::StrCat("expected a name after '", std::string(1, c), "'"));
        return Make(c == '%' ? TokenKind::kLocal : TokenKind::kGlobal, std::move(name));
      }
      case '-':
        if (Peek(1) == '>') {
          Advance();
          Advance();
          return Make(TokenKind::kArrow);
        }
        if (Peek(1) == 'i' && Peek(2) == 'n' && Peek(3) == 'f' && !IsNameChar(Peek(4))) {
          for (int i = 0; i < 4; ++i) Advance();
          Token t = Make(TokenKind::kFloat, "-inf");
          t.float_value = -std::numeric_limits<float>::infinity();
          return t;
        }
        if (IsDigit(Peek(1))) return LexNumber();
        Advance();
        return Error("expected a number or '->' after '-'");
      default:
        break;
    }
    if (IsDigit(c)) return LexNumber();
    if (IsIdentStart(c)) {
      std::string word;
      while (IsNameChar(Peek())) {
        word += Peek();
        Advance();
      }
      return Make(TokenKind::kIdent, std::move(word));
    }
    return Error(absl::StrCat("unexpected character '", std::string(1, c), "'"));
  }

  Token LexNumber() {
    const size_t begin = pos_;
    bool is_float = false;
    if (Peek() == '-') Advance();
    while (IsDigit(Peek())) Advance();
    if (Peek() == '.' && IsDigit(Peek(1))) {
      is_float = true;
      Advance();
      while (IsDigit(Peek())) Advance();
    }
    if (Peek() == 'e' || Peek() == 'E') {
      size_t k = 1;
      if (Peek(1) == '+' || Peek(1) == '-') k = 2;
      if (IsDigit(Peek(k))) {
        is_float = true;
        for (size_t i = 0; i < k; ++i) Advance();
        while (IsDigit(Peek())) Advance();
      }
    }
    if (IsIdentStart(Peek())) return Error("expected a number");
    std::string_view text = src_.substr(begin, pos_ - begin);
    Token t = Make(is_float ? TokenKind::kFloat : TokenKind::kInt, std::string(text));
    const char* first = text.data();
    const char* last = text.data() + text.size();
    if (is_float) {
      auto r = std::from_chars(first, last, t.float_value);
      if (r.ec != std::errc() || r.ptr != last)
        return Error(absl::StrCat("float out of range: ", ToAbsl(text)));
    } else {
      auto r = std::from_chars(first, last, t.int_value);
      if (r.ec != std::errc() || r.ptr != last)
        return Error(absl::StrCat("integer out of range: ", ToAbsl(text)));
    }
    return t;
  }

  Token LexString() {
    Advance();  // opening quote
    std::string s;
    while (true) {
      if (AtEnd() || Peek() == '\n') return Error("expected '\"' to end the string");
      char c = Peek();
      Advance();
      if (c == '"') break;
      if (c != '\\') {
        s += c;
        continue;
      }
      char e = Peek();
      if (AtEnd()) return Error("expected '\"' to end the string");
      Advance();
      switch (e) {
        case '"':
          s += '"';
          break;
        case '\\':
          s += '\\';
          break;
        case 'n':
          s += '\n';
          break;
        case 't':
          s += '\t';
          break;
        case 'x': {
          int hi = HexValue(Peek()), lo = HexValue(Peek(1));
          if (hi < 0 || lo < 0) return Error("expected two hex digits after '\\x'");
          Advance();
          Advance();
          s += static_cast<char>(hi * 16 + lo);
          break;
        }
        default:
          return Error(absl::StrCat("unknown escape '\\", std::string(1, e), "'"));
      }
    }
    return Make(TokenKind::kString, std::move(s));
  }

  std::string_view src_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
  int start_line_ = 1, start_col_ = 1;
};

}  // namespace

std::vector<Token> Tokenize(std::string_view src) { return Lexer(src).Run(); }

std::string_view TokenKindName(TokenKind kind) {
  switch (kind) {
    case TokenKind::kEof:
      return "end of input";
    case TokenKind::kError:
      return "error";
    case TokenKind::kIdent:
      return "identifier";
    case TokenKind::kLocal:
      return "%name";
    case TokenKind::kGlobal:
      return "@name";
    case TokenKind::kInt:
      return "integer";
    case TokenKind::kFloat:
      return "float";
    case TokenKind::kString:
      return "string";
    case TokenKind::kLParen:
      return "'('";
    case TokenKind::kRParen:
      return "')'";
    case TokenKind::kLBrace:
      return "'{'";
    case TokenKind::kRBrace:
      return "'}'";
    case TokenKind::kLBracket:
      return "'['";
    case TokenKind::kRBracket:
      return "']'";
    case TokenKind::kComma:
      return "','";
    case TokenKind::kColon:
      return "':'";
    case TokenKind::kEqual:
      return "'='";
    case TokenKind::kArrow:
      return "'->'";
    case TokenKind::kCaret:
      return "'^'";
  }
  return "?";
}

}  // namespace kiln::ir
