// Parse errors point at the line and column of the offending token, each
// paired with the corrected text that parses.
#include "ir/parser.h"

#include <string>

#include "gtest/gtest.h"

namespace kiln::ir {
namespace {

struct BadCase {
  const char* name;
  std::string text;      // fails to parse
  std::string fixed;     // the same module with the mistake corrected
  std::string location;  // "line:col"
  std::string message;   // expected prefix after the location
};

const std::string kHeader = "weight @w : f32[8, 4] = \"w\"\n";

std::vector<BadCase> Cases() {
  return {
      {"UnknownTopLevel", "wieght @w : f32[4] = \"w\"\n", "weight @w : f32[4] = \"w\"\n", "1:1",
       "expected 'weight', 'state' or 'func'"},
      {"BadDType", "weight @w : f33[4] = \"w\"\n", "weight @w : f32[4] = \"w\"\n", "1:13",
       "expected a dtype, got 'f33'"},
      {"BadDim", "state @s : f16[X, 4]\n", "state @s : f16[C, 4]\n", "1:16", "expected a dim"},
      {"MissingBinding", "weight @w : f32[4]\nstate @s : f32[4]\n",
       "weight @w : f32[4] = \"w\"\nstate @s : f32[4]\n", "2:1", "expected '=' and the GGUF tensor name"},
      {"MissingParen",
       kHeader +
           "func @f(%x: f32[2, 4]) -> (f32[2, 8]) {\n  %y = matmul(%x, @w : f32[2, 8]\n  return(%y)\n}\n",
       kHeader +
           "func @f(%x: f32[2, 4]) -> (f32[2, 8]) {\n  %y = matmul(%x, @w) : f32[2, 8]\n  return(%y)\n}\n",
       "3:22", "expected ',' or ')' after the operands"},
      {"UnknownOp", "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = sigmoid(%x) : f32[4]\n  return(%y)\n}\n",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = silu(%x) : f32[4]\n  return(%y)\n}\n", "2:8",
       "unknown op 'sigmoid'"},
      {"UndefinedValue", "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = silu(%z) : f32[4]\n  return(%y)\n}\n",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = silu(%x) : f32[4]\n  return(%y)\n}\n", "2:13",
       "use of undefined value %z"},
      {"UndeclaredGlobal",
       "func @f(%x: f32[2, 4]) -> (f32[2, 8]) {\n  %y = matmul(%x, @w) : f32[2, 8]\n  return(%y)\n}\n",
       kHeader +
           "func @f(%x: f32[2, 4]) -> (f32[2, 8]) {\n  %y = matmul(%x, @w) : f32[2, 8]\n  return(%y)\n}\n",
       "2:19", "use of undeclared global @w"},
      {"Redefinition", "func @f(%x: f32[4]) -> (f32[4]) {\n  %x = silu(%x) : f32[4]\n  return(%x)\n}\n",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = silu(%x) : f32[4]\n  return(%y)\n}\n", "2:3",
       "redefinition of %x"},
      {"MissingResultType", "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = silu(%x)\n  return(%y)\n}\n",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = silu(%x) : f32[4]\n  return(%y)\n}\n", "3:3",
       "expected ':' and the result types"},
      {"TooFewResultTypes",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y, %z = silu(%x) : f32[4]\n  return(%y)\n}\n",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = silu(%x) : f32[4]\n  return(%y)\n}\n", "2:3",
       "expected 2 result types, got 1"},
      {"BadAttribute",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = rms_norm(%x, %x) {eps = } : f32[4]\n  return(%y)\n}\n",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = rms_norm(%x, %x) {eps = 1e-06} : f32[4]\n  return(%y)\n}\n",
       "2:32", "expected an attribute value"},
      {"DuplicateAttribute",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = rms_norm(%x, %x) {eps = 1.0, eps = 2.0} : f32[4]\n  "
       "return(%y)\n}\n",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = rms_norm(%x, %x) {eps = 1.0} : f32[4]\n  return(%y)\n}\n",
       "2:37", "duplicate attribute 'eps'"},
      {"UnterminatedString", "weight @w : f32[4] = \"w\n", "weight @w : f32[4] = \"w\"\n", "1:22",
       "expected '\"' to end the string"},
      {"BadCharacter", "state @s : f32[4] $\n", "state @s : f32[4]\n", "1:19", "unexpected character '$'"},
      {"UnknownEscape", "weight @w : f32[4] = \"w\\q\"\n", "weight @w : f32[4] = \"w\\n\"\n", "1:22",
       "unknown escape '\\q'"},
      {"BadHexEscape", "weight @w : f32[4] = \"w\\xZ1\"\n", "weight @w : f32[4] = \"w\\x41\"\n", "1:22",
       "expected two hex digits after '\\x'"},
      {"IntegerOutOfRange", "state @s : f32[99999999999999999999]\n", "state @s : f32[9999]\n", "1:16",
       "integer out of range: 99999999999999999999"},
      {"FloatOutOfRange",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = rms_norm(%x, %x) {eps = 1e99} : f32[4]\n  return(%y)\n}\n",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = rms_norm(%x, %x) {eps = 1e-6} : f32[4]\n  return(%y)\n}\n",
       "2:32", "float out of range: 1e99"},
      {"LoneMinus",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = rms_norm(%x, %x) {eps = -x} : f32[4]\n  return(%y)\n}\n",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = rms_norm(%x, %x) {eps = -1} : f32[4]\n  return(%y)\n}\n",
       "2:32", "expected a number or '->' after '-'"},
      {"ExpectNamesWhatItGot", "state @s : f32[4\n", "state @s : f32[4]\n", "2:1",
       "expected ',' or ']' in the shape, got end of input"},
      {"ExpectNamesTheToken", "weight @w f32[4] = \"w\"\n", "weight @w : f32[4] = \"w\"\n", "1:11",
       "expected ':' before the weight's type, got identifier 'f32'"},
      {"ExpectNamesTheValue", "weight @w @v : f32[4] = \"w\"\n", "weight @w : f32[4] = \"w\"\n", "1:11",
       "expected ':' before the weight's type, got '@v'"},
      {"KernelWithoutRegion",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = kernel(%x) : f32[4]\n  return(%y)\n}\n",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = kernel(%x) : f32[4] {\n  ^(%a: f32[4]):\n    yield(%a)\n  "
       "}\n"
       "  return(%y)\n}\n",
       "3:3", "expected 1 region(s) for 'kernel', got 0"},
      {"RegionValueOutOfScope",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = kernel(%x) : f32[4] {\n  ^(%a: f32[4]):\n    yield(%a)\n  "
       "}\n"
       "  return(%a)\n}\n",
       "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = kernel(%x) : f32[4] {\n  ^(%a: f32[4]):\n    yield(%a)\n  "
       "}\n"
       "  return(%y)\n}\n",
       "6:10", "use of undefined value %a"},
      {"UnclosedFunction", "func @f(%x: f32[4]) {\n  return()\n", "func @f(%x: f32[4]) {\n  return()\n}\n",
       "3:1", "expected an op or '}'"},
  };
}

TEST(Parser, ErrorsNameLineAndColumn) {
  for (const BadCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    auto bad = ParseModule(c.text);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string want = c.location + ": " + c.message;
    EXPECT_EQ(std::string(bad.status().message()).substr(0, want.size()), want) << bad.status().message();
    auto good = ParseModule(c.fixed);
    EXPECT_TRUE(good.ok()) << good.status();
  }
}

TEST(Parser, ErrorShowsTheSourceLineAndACaret) {
  auto bad = ParseModule("state @s : f16[X, 4]\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(std::string(bad.status().message()),
            "1:16: expected a dim (an integer, T, P or C)\n  state @s : f16[X, 4]\n                 ^");
}

TEST(Parser, CommentsAndBlankLinesAreIgnored) {
  auto m = ParseModule("// a comment\n\nstate @s : f32[4]  // trailing\n\n");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->states().size(), 1u);
}

TEST(Parser, ParsingDoesNotVerify) {
  // Wrong result type: syntax is fine, the verifier rejects it.
  auto m = ParseModule("func @f(%x: f32[4]) -> (f32[4]) {\n  %y = silu(%x) : f32[5]\n  return(%y)\n}\n");
  EXPECT_TRUE(m.ok()) << m.status();
}

}  // namespace
}  // namespace kiln::ir
