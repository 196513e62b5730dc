// Recursive-descent parser of the IR text form.
//
//   module    := (weight | state | func)*
//   weight    := 'weight' @name ':' type '=' string
//   state     := 'state' @name ':' type
//   func      := 'func' @name '(' [arg (',' arg)*] ')' ['->' '(' [type (',' type)*] ')'] '{' op* '}'
//   arg       := %name ':' type
//   op        := [%name (',' %name)* '='] mnemonic '(' [value (',' value)*] ')' [attrs]
//                [':' type (',' type)*] region*
//   region    := '{' '^' '(' [arg (',' arg)*] ')' ':' op* '}'
//   attrs     := '{' [ident '=' attr (',' ident '=' attr)*] '}'
//   attr      := int | float | inf | nan | string | '[' [int (',' int)*] ']' | type | attrs
//   type      := dtype '[' [dim (',' dim)*] ']'      dim := int | T | P | C
#include "ir/parser.h"

#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ir/absl_compat.h"
#include "ir/lexer.h"
#include "support/status_macros.h"

namespace kiln::ir {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text), tokens_(Tokenize(text)) {}

  absl::StatusOr<std::unique_ptr<Module>> Run() {
    auto module = std::make_unique<Module>();
    module_ = module.get();
    // A lexical error ends the token list; the parser reports it (with the
    // lexer's message) when it reaches it, as no rule accepts a kError token.
    while (Tok().kind != TokenKind::kEof) {
      if (IsKeyword("weight")) {
        RETURN_IF_ERROR(ParseWeight());
      } else if (IsKeyword("state")) {
        RETURN_IF_ERROR(ParseState());
      } else if (IsKeyword("func")) {
        RETURN_IF_ERROR(ParseFunction());
      } else {
        return Error(Tok(), "expected 'weight', 'state' or 'func'");
      }
    }
    return module;
  }

 private:
  // ---- tokens ----
  const Token& Tok() const { return tokens_[pos_]; }
  const Token& PeekTok(size_t ahead = 1) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  void Advance() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool IsKeyword(std::string_view word) const {
    return Tok().kind == TokenKind::kIdent && Tok().text == word;
  }
  bool Consume(TokenKind kind) {
    if (Tok().kind != kind) return false;
    Advance();
    return true;
  }

  absl::Status Error(const Token& at, absl::string_view message) const {
    // A lexical error at this point explains itself better than the parser.
    const bool lexical = at.kind == TokenKind::kError;
    std::vector<absl::string_view> lines = absl::StrSplit(ToAbsl(text_), '\n');
    std::string source =
        at.line - 1 < static_cast<int>(lines.size()) ? std::string(lines[at.line - 1]) : std::string();
    return absl::InvalidArgumentError(absl::StrCat(at.line, ":", at.col, ": ",
                                                   lexical ? absl::string_view(at.text) : message, "\n  ",
                                                   source, "\n  ", std::string(at.col - 1, ' '), "^"));
  }
  absl::Status Expect(TokenKind kind, absl::string_view what) {
    if (Consume(kind)) return absl::OkStatus();
    return Error(Tok(), absl::StrCat("expected ", what, ", got ", Describe(Tok())));
  }
  // "identifier 'return'", "'%x'", "')'", "end of input".
  static std::string Describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::kLocal:
        return absl::StrCat("'%", t.text, "'");
      case TokenKind::kGlobal:
        return absl::StrCat("'@", t.text, "'");
      case TokenKind::kIdent:
      case TokenKind::kInt:
      case TokenKind::kFloat:
        return absl::StrCat(ToAbsl(TokenKindName(t.kind)), " '", t.text, "'");
      default:
        return std::string(ToAbsl(TokenKindName(t.kind)));
    }
  }

  // ---- types and attributes ----
  absl::StatusOr<TensorType> ParseType() {
    if (Tok().kind != TokenKind::kIdent) return Error(Tok(), "expected a type such as f32[T, 1024]");
    std::optional<DType> dtype = ParseDType(Tok().text);
    if (!dtype) return Error(Tok(), absl::StrCat("expected a dtype, got '", Tok().text, "'"));
    Advance();
    TensorType type{*dtype, {}};
    RETURN_IF_ERROR(Expect(TokenKind::kLBracket, "'[' after the dtype"));
    if (Consume(TokenKind::kRBracket)) return type;
    do {
      if (Tok().kind == TokenKind::kInt) {
        if (Tok().int_value < 0) return Error(Tok(), "expected a non-negative dim");
        type.shape.push_back(Dim(Tok().int_value));
      } else if (Tok().kind == TokenKind::kIdent && ParseSymbol(Tok().text)) {
        type.shape.push_back(Dim::Sym(*ParseSymbol(Tok().text)));
      } else {
        return Error(Tok(), "expected a dim (an integer, T, P or C)");
      }
      Advance();
    } while (Consume(TokenKind::kComma));
    RETURN_IF_ERROR(Expect(TokenKind::kRBracket, "',' or ']' in the shape"));
    return type;
  }

  absl::StatusOr<Attribute> ParseAttrValue() {
    const Token& t = Tok();
    switch (t.kind) {
      case TokenKind::kInt: {
        Attribute a = Attribute::Int(t.int_value);
        Advance();
        return a;
      }
      case TokenKind::kFloat: {
        Attribute a = Attribute::Float(t.float_value);
        Advance();
        return a;
      }
      case TokenKind::kString: {
        Attribute a = Attribute::String(t.text);
        Advance();
        return a;
      }
      case TokenKind::kLBracket: {
        Advance();
        std::vector<int64_t> ints;
        if (!Consume(TokenKind::kRBracket)) {
          do {
            if (Tok().kind != TokenKind::kInt) return Error(Tok(), "expected an integer in the list");
            ints.push_back(Tok().int_value);
            Advance();
          } while (Consume(TokenKind::kComma));
          RETURN_IF_ERROR(Expect(TokenKind::kRBracket, "',' or ']' in the list"));
        }
        return Attribute::Ints(std::move(ints));
      }
      case TokenKind::kLBrace: {
        ASSIGN_OR_RETURN(AttrDict d, ParseAttrDict());
        return Attribute::Dict(std::move(d));
      }
      case TokenKind::kIdent:
        if (t.text == "inf" || t.text == "nan") {
          Attribute a = Attribute::Float(t.text == "inf" ? std::numeric_limits<float>::infinity()
                                                         : std::numeric_limits<float>::quiet_NaN());
          Advance();
          return a;
        }
        if (ParseDType(t.text)) {
          ASSIGN_OR_RETURN(TensorType type, ParseType());
          return Attribute::Type(std::move(type));
        }
        break;
      default:
        break;
    }
    return Error(t, "expected an attribute value (int, float, string, [ints], type or {dict})");
  }

  absl::StatusOr<AttrDict> ParseAttrDict() {
    RETURN_IF_ERROR(Expect(TokenKind::kLBrace, "'{'"));
    AttrDict dict;
    if (Consume(TokenKind::kRBrace)) return dict;
    do {
      if (Tok().kind != TokenKind::kIdent) return Error(Tok(), "expected an attribute name");
      const Token name = Tok();
      if (dict.Find(name.text) != nullptr)
        return Error(name, absl::StrCat("duplicate attribute '", name.text, "'"));
      Advance();
      RETURN_IF_ERROR(Expect(TokenKind::kEqual, "'=' after the attribute name"));
      ASSIGN_OR_RETURN(Attribute value, ParseAttrValue());
      dict.Set(name.text, std::move(value));
    } while (Consume(TokenKind::kComma));
    RETURN_IF_ERROR(Expect(TokenKind::kRBrace, "',' or '}' in the attributes"));
    return dict;
  }

  // ---- globals ----
  absl::StatusOr<std::string> ParseNewGlobalName() {
    if (Tok().kind != TokenKind::kGlobal) return Error(Tok(), "expected an @name");
    if (module_->FindGlobal(Tok().text) != nullptr || module_->FindFunction(Tok().text) != nullptr)
      return Error(Tok(), absl::StrCat("redefinition of @", Tok().text));
    std::string name = Tok().text;
    Advance();
    return name;
  }

  absl::Status ParseWeight() {
    Advance();
    ASSIGN_OR_RETURN(std::string name, ParseNewGlobalName());
    RETURN_IF_ERROR(Expect(TokenKind::kColon, "':' before the weight's type"));
    ASSIGN_OR_RETURN(TensorType type, ParseType());
    RETURN_IF_ERROR(Expect(TokenKind::kEqual, "'=' and the GGUF tensor name"));
    if (Tok().kind != TokenKind::kString) return Error(Tok(), "expected the GGUF tensor name as a string");
    module_->AddWeight(std::move(name), std::move(type), Tok().text);
    Advance();
    return absl::OkStatus();
  }

  absl::Status ParseState() {
    Advance();
    ASSIGN_OR_RETURN(std::string name, ParseNewGlobalName());
    RETURN_IF_ERROR(Expect(TokenKind::kColon, "':' before the state's type"));
    ASSIGN_OR_RETURN(TensorType type, ParseType());
    module_->AddState(std::move(name), std::move(type));
    return absl::OkStatus();
  }

  // ---- functions, ops, regions ----
  absl::Status Define(const Token& at, Value* v) {
    if (!defined_.insert(at.text).second) return Error(at, absl::StrCat("redefinition of %", at.text));
    scopes_.back()[at.text] = v;
    return absl::OkStatus();
  }

  absl::StatusOr<Value*> ParseUse() {
    const Token& t = Tok();
    if (t.kind == TokenKind::kGlobal) {
      Value* g = module_->FindGlobal(t.text);
      if (g == nullptr) return Error(t, absl::StrCat("use of undeclared global @", t.text));
      Advance();
      return g;
    }
    if (t.kind != TokenKind::kLocal) return Error(t, "expected a value (%name or @name)");
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(t.text);
      if (found != it->end()) {
        Advance();
        return found->second;
      }
    }
    return Error(t, absl::StrCat("use of undefined value %", t.text));
  }

  absl::Status ParseArgs(Block& block) {
    RETURN_IF_ERROR(Expect(TokenKind::kLParen, "'(' before the arguments"));
    if (Consume(TokenKind::kRParen)) return absl::OkStatus();
    do {
      if (Tok().kind != TokenKind::kLocal) return Error(Tok(), "expected an argument %name");
      const Token name = Tok();
      Advance();
      RETURN_IF_ERROR(Expect(TokenKind::kColon, "':' after the argument name"));
      ASSIGN_OR_RETURN(TensorType type, ParseType());
      RETURN_IF_ERROR(Define(name, block.AddArg(std::move(type), name.text)));
    } while (Consume(TokenKind::kComma));
    return Expect(TokenKind::kRParen, "',' or ')' after the arguments");
  }

  absl::Status ParseFunction() {
    Advance();
    ASSIGN_OR_RETURN(std::string name, ParseNewGlobalName());
    Function* f = module_->AddFunction(std::move(name));
    defined_.clear();
    scopes_.assign(1, {});
    RETURN_IF_ERROR(ParseArgs(f->body()));
    if (Consume(TokenKind::kArrow)) {
      RETURN_IF_ERROR(Expect(TokenKind::kLParen, "'(' before the result types"));
      std::vector<TensorType> results;
      if (!Consume(TokenKind::kRParen)) {
        do {
          ASSIGN_OR_RETURN(TensorType t, ParseType());
          results.push_back(std::move(t));
        } while (Consume(TokenKind::kComma));
        RETURN_IF_ERROR(Expect(TokenKind::kRParen, "',' or ')' after the result types"));
      }
      f->set_result_types(std::move(results));
    }
    RETURN_IF_ERROR(Expect(TokenKind::kLBrace, "'{' to open the function body"));
    while (!Consume(TokenKind::kRBrace)) RETURN_IF_ERROR(ParseOp(f->body()));
    return absl::OkStatus();
  }

  bool AtRegion() const { return Tok().kind == TokenKind::kLBrace && PeekTok().kind == TokenKind::kCaret; }

  absl::Status ParseOp(Block& block) {
    const Token start = Tok();
    if (start.kind == TokenKind::kEof) return Error(start, "expected an op or '}'");
    std::vector<Token> result_names;
    if (Tok().kind == TokenKind::kLocal) {
      do {
        if (Tok().kind != TokenKind::kLocal) return Error(Tok(), "expected a result %name");
        result_names.push_back(Tok());
        Advance();
      } while (Consume(TokenKind::kComma));
      RETURN_IF_ERROR(Expect(TokenKind::kEqual, "'=' after the result names"));
    }
    if (Tok().kind != TokenKind::kIdent) return Error(Tok(), "expected an op name");
    const Token mnemonic = Tok();
    const OpInfo* info = LookupOp(mnemonic.text);
    if (info == nullptr) return Error(mnemonic, absl::StrCat("unknown op '", mnemonic.text, "'"));
    Advance();
    RETURN_IF_ERROR(Expect(TokenKind::kLParen, absl::StrCat("'(' after '", mnemonic.text, "'")));
    std::vector<Value*> operands;
    if (!Consume(TokenKind::kRParen)) {
      do {
        ASSIGN_OR_RETURN(Value * v, ParseUse());
        operands.push_back(v);
      } while (Consume(TokenKind::kComma));
      RETURN_IF_ERROR(Expect(TokenKind::kRParen, "',' or ')' after the operands"));
    }
    AttrDict attrs;
    if (Tok().kind == TokenKind::kLBrace && !AtRegion()) {
      ASSIGN_OR_RETURN(attrs, ParseAttrDict());
    }
    std::vector<TensorType> types;
    if (!result_names.empty()) {
      RETURN_IF_ERROR(Expect(TokenKind::kColon, "':' and the result types"));
      do {
        ASSIGN_OR_RETURN(TensorType t, ParseType());
        types.push_back(std::move(t));
      } while (Consume(TokenKind::kComma));
      if (types.size() != result_names.size())
        return Error(start,
                     absl::StrCat("expected ", result_names.size(), " result types, got ", types.size()));
    } else if (Tok().kind == TokenKind::kColon) {
      return Error(Tok(), "expected no result types for an op without results");
    }
    auto op = std::make_unique<Op>(info->kind, std::move(operands), types, std::move(attrs));
    op->set_line(start.line);
    Op* raw = block.Append(std::move(op));
    while (AtRegion()) RETURN_IF_ERROR(ParseRegion(*raw));
    if (raw->num_regions() != info->num_regions)
      return Error(Tok(), absl::StrCat("expected ", info->num_regions, " region(s) for '",
                                       ToAbsl(info->mnemonic), "', got ", raw->num_regions()));
    // Results become visible after the op (and its regions).
    for (size_t i = 0; i < result_names.size(); ++i) {
      raw->result(static_cast<int>(i))->set_name(result_names[i].text);
      RETURN_IF_ERROR(Define(result_names[i], raw->result(static_cast<int>(i))));
    }
    return absl::OkStatus();
  }

  absl::Status ParseRegion(Op& op) {
    Advance();  // '{'
    RETURN_IF_ERROR(Expect(TokenKind::kCaret, "'^' to start the region"));
    Block* region = op.AddRegion();
    scopes_.emplace_back();
    RETURN_IF_ERROR(ParseArgs(*region));
    RETURN_IF_ERROR(Expect(TokenKind::kColon, "':' after the region arguments"));
    while (!Consume(TokenKind::kRBrace)) RETURN_IF_ERROR(ParseOp(*region));
    scopes_.pop_back();
    return absl::OkStatus();
  }

  std::string_view text_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  Module* module_ = nullptr;
  absl::flat_hash_set<std::string> defined_;  // every local name of the function
  std::vector<absl::flat_hash_map<std::string, Value*>> scopes_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Module>> ParseModule(std::string_view text) { return Parser(text).Run(); }

}  // namespace kiln::ir
