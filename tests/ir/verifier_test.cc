// Verifier errors name the rule and the op's printed line; every case is
// paired with the corrected module, on which the verifier does not fire.
#include "ir/verifier.h"

#include <string>

#include "gtest/gtest.h"
#include "ir/builder.h"
#include "ir/parser.h"

namespace kiln::ir {
namespace {

absl::Status VerifyText(const std::string& text) {
  auto m = ParseModule(text);
  if (!m.ok()) return m.status();
  return Verify(**m);
}

struct Case {
  const char* name;
  std::string bad;
  std::string good;
  std::string error;  // the whole message, or its first line when it ends in '\n'
};

const std::string kWeights =
    "weight @w : q8_0[8, 1024] = \"w\"\n"
    "weight @n : f32[1024] = \"n\"\n"
    "state @kc : f16[C, 32]\n"
    "state @vc : f16[C, 32]\n\n";

std::string Func(const std::string& body, const std::string& results = "f32[T, 8]") {
  return kWeights + "func @f(%h: f32[T, 1024], %q: f32[T, 4, 16], %kv: f32[T, 32], %pos: i32[1]) -> (" +
         results + ") {\n" + body + "}\n";
}

std::vector<Case> Cases() {
  return {
      {"MatMulInnerDim",
       kWeights +
           "func @f(%h: f32[T, 512]) -> (f32[T, 8]) {\n  %y = matmul(%h, @w) : f32[T, 8]\n  return(%y)\n}\n",
       kWeights +
           "func @f(%h: f32[T, 1024]) -> (f32[T, 8]) {\n  %y = matmul(%h, @w) : f32[T, 8]\n  return(%y)\n}\n",
       "error: operand 1 of 'matmul' has shape q8_0[8, 1024], expected inner dim 512\n"
       "  %y = matmul(%h, @w) : f32[T, 8]  // line 7"},
      {"DeclaredResultType", Func("  %y = matmul(%h, @w) : f32[T, 9]\n  return(%y)\n", "f32[T, 9]"),
       Func("  %y = matmul(%h, @w) : f32[T, 8]\n  return(%y)\n"),
       "error: result 0 of 'matmul' is declared f32[T, 9], but its operands give f32[T, 8]\n"
       "  %y = matmul(%h, @w) : f32[T, 9]  // line 7"},
      {"MissingAttribute", Func("  %y = rms_norm(%h, @n) : f32[T, 1024]\n  return(%y)\n", "f32[T, 1024]"),
       Func("  %y = rms_norm(%h, @n) {eps = 1e-06} : f32[T, 1024]\n  return(%y)\n", "f32[T, 1024]"),
       "error: 'rms_norm' needs attribute 'eps' (float)\n"},
      {"AttributeKind",
       Func("  %y = rms_norm(%h, @n) {eps = 1} : f32[T, 1024]\n  return(%y)\n", "f32[T, 1024]"),
       Func("  %y = rms_norm(%h, @n) {eps = 1.0} : f32[T, 1024]\n  return(%y)\n", "f32[T, 1024]"),
       "error: attribute 'eps' of 'rms_norm' is int, expected float\n"},
      {"UnknownAttribute",
       Func("  %y = rms_norm(%h, @n) {eps = 1.0, epsilon = 1.0} : f32[T, 1024]\n  return(%y)\n",
            "f32[T, 1024]"),
       Func("  %y = rms_norm(%h, @n) {eps = 1.0} : f32[T, 1024]\n  return(%y)\n", "f32[T, 1024]"),
       "error: unknown attribute 'epsilon' on 'rms_norm'\n"},
      {"OperandCount", Func("  %y = silu(%h, %h) : f32[T, 1024]\n  return(%y)\n", "f32[T, 1024]"),
       Func("  %y = silu(%h) : f32[T, 1024]\n  return(%y)\n", "f32[T, 1024]"),
       "error: 'silu' takes 1 operands, got 2\n"},
      {"ElementwiseTypes", Func("  %y = add(%h, %kv) : f32[T, 1024]\n  return(%y)\n", "f32[T, 1024]"),
       Func("  %y = add(%h, %h) : f32[T, 1024]\n  return(%y)\n", "f32[T, 1024]"),
       "error: operand 1 of 'add' has type f32[T, 32], expected f32[T, 1024]\n"},
      {"WritesAWeight",
       Func("  %0 = matmul(%h, @w) : f32[T, 8]\n  kv_store(%kv, %kv, @kc, @n, %pos)\n  return(%0)\n"),
       Func("  %0 = matmul(%h, @w) : f32[T, 8]\n  kv_store(%kv, %kv, @kc, @vc, %pos)\n  return(%0)\n"),
       "error: operand 3 of 'kv_store' is written, so must be a state, got @n\n"
       "  kv_store(%kv, %kv, @kc, @n, %pos)  // line 8"},
      {"KvStoreWidth",
       Func("  kv_store(%h, %kv, @kc, @vc, %pos)\n  %0 = matmul(%h, @w) : f32[T, 8]\n  return(%0)\n"),
       Func("  kv_store(%kv, %kv, @kc, @vc, %pos)\n  %0 = matmul(%h, @w) : f32[T, 8]\n  return(%0)\n"),
       "error: operand 0 of 'kv_store' has shape f32[T, 1024], expected [T, ...] with rows of 32 elements "
       "(the cache "
       "width)\n"},
      {"AttentionHeads",
       Func("  %o = attention(%q, @kc, @vc, %pos) {n_kv_heads = 3, scale = 0.25} : f32[T, 4, 16]\n"
            "  return(%o)\n",
            "f32[T, 4, 16]"),
       Func("  %o = attention(%q, @kc, @vc, %pos) {n_kv_heads = 2, scale = 0.25} : f32[T, 4, 16]\n"
            "  return(%o)\n",
            "f32[T, 4, 16]"),
       "error: attribute 'n_kv_heads' of 'attention' is 3, expected a divisor of the 4 query heads\n"},
      {"RopeOddDim",
       Func("  %r = reshape(%kv) : f32[T, 32, 1]\n  %o = rope(%r, %pos) {base = 10000.0} : f32[T, 32, 1]\n  "
            "return(%o)\n",
            "f32[T, 32, 1]"),
       Func("  %r = reshape(%kv) : f32[T, 2, 16]\n  %o = rope(%r, %pos) {base = 10000.0} : f32[T, 2, 16]\n  "
            "return(%o)\n",
            "f32[T, 2, 16]"),
       "error: operand 0 of 'rope' has shape f32[T, 32, 1], expected [T, heads, head_dim] with an even "
       "static "
       "head_dim\n"},
      {"ReshapeCount", Func("  %r = reshape(%kv) : f32[T, 2, 15]\n  return(%r)\n", "f32[T, 2, 15]"),
       Func("  %r = reshape(%kv) : f32[T, 2, 16]\n  return(%r)\n", "f32[T, 2, 16]"),
       "error: operand 0 of 'reshape' has shape f32[T, 32], expected as many elements as f32[T, 2, 15]\n"},
      {"ReturnTypes", Func("  %y = matmul(%h, @w) : f32[T, 8]\n  return(%y)\n", "f32[T, 7]"),
       Func("  %y = matmul(%h, @w) : f32[T, 8]\n  return(%y)\n"),
       "error: operand 0 of 'return' has type f32[T, 8], @f declares f32[T, 7]\n"
       "  return(%y)  // line 8"},
      {"NoReturn", Func("  %y = matmul(%h, @w) : f32[T, 8]\n"),
       Func("  %y = matmul(%h, @w) : f32[T, 8]\n  return(%y)\n"),
       "error: function @f does not end in 'return'"},
      {"TerminatorInTheMiddle", Func("  return(%h)\n  %y = matmul(%h, @w) : f32[T, 8]\n  return(%y)\n"),
       Func("  %y = matmul(%h, @w) : f32[T, 8]\n  return(%y)\n"),
       "error: 'return' must be the last op of its block\n  return(%h)  // line 7"},
      {"KernelIsolatedFromAbove",
       Func("  %y = kernel(%h) : f32[T, 8] {\n  ^(%a: f32[T, 1024]):\n    %m = matmul(%h, @w) : f32[T, 8]\n"
            "    yield(%m)\n  }\n  return(%y)\n"),
       Func("  %y = kernel(%h) : f32[T, 8] {\n  ^(%a: f32[T, 1024]):\n    %m = matmul(%a, @w) : f32[T, 8]\n"
            "    yield(%m)\n  }\n  return(%y)\n"),
       "error: operand 0 of 'matmul' (%h) is not defined before this op in this kernel region\n"
       "  %m = matmul(%h, @w) : f32[T, 8]  // line 9"},
      {"KernelAnchor",
       Func("  %y = kernel(%h) {anchor = 1} : f32[T, 8] {\n  ^(%a: f32[T, 1024]):\n    %m = matmul(%a, @w) : "
            "f32[T, 8]\n"
            "    yield(%m)\n  }\n  return(%y)\n"),
       Func("  %y = kernel(%h) {anchor = 0} : f32[T, 8] {\n  ^(%a: f32[T, 1024]):\n    %m = matmul(%a, @w) : "
            "f32[T, 8]\n"
            "    yield(%m)\n  }\n  return(%y)\n"),
       "error: attribute 'anchor' of 'kernel' is 1, expected an op index in [0, 1)\n"},
      {"KernelYieldTypes",
       Func("  %y = kernel(%h) : f32[T, 8] {\n  ^(%a: f32[T, 1024]):\n    yield(%a)\n  }\n  return(%y)\n"),
       Func("  %y = kernel(%h) : f32[T, 1024] {\n  ^(%a: f32[T, 1024]):\n    yield(%a)\n  }\n  return(%y)\n",
            "f32[T, 1024]"),
       "error: result 0 of 'kernel' is declared f32[T, 8], but its operands give f32[T, 1024]\n"},
      {"ReturnInKernel",
       Func("  %y = kernel(%h) : f32[T, 1024] {\n  ^(%a: f32[T, 1024]):\n    return(%a)\n  }\n  return(%y)\n",
            "f32[T, 1024]"),
       Func("  %y = kernel(%h) : f32[T, 1024] {\n  ^(%a: f32[T, 1024]):\n    yield(%a)\n  }\n  return(%y)\n",
            "f32[T, 1024]"),
       "error: 'return' inside a kernel region\n  return(%a)  // line 9"},
      {"WeightWithSymbolicDim", "weight @w : f32[T, 4] = \"w\"\n", "weight @w : f32[8, 4] = \"w\"\n",
       "error: weight @w has type f32[T, 4], expected static dims"},
      {"QuantizedRowLength", "weight @w : q4_k[8, 128] = \"w\"\n", "weight @w : q4_k[8, 256] = \"w\"\n",
       "error: weight @w has type q4_k[8, 128], whose last dim must be a multiple of 256 (the q4_k block)"},
      {"StateWithT", "state @s : f16[T, 4]\n", "state @s : f16[C, 4]\n",
       "error: state @s has type f16[T, 4], expected static dims or C"},
  };
}

TEST(Verifier, ErrorsNameTheOpLine) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    absl::Status good = VerifyText(c.good);
    EXPECT_TRUE(good.ok()) << "fires on valid IR: " << good;
    absl::Status bad = VerifyText(c.bad);
    ASSERT_FALSE(bad.ok()) << "does not fire";
    EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
    std::string got(bad.message());
    if (!c.error.empty() && c.error.back() == '\n') {
      got = got.substr(0, got.find('\n') + 1);
    }
    EXPECT_EQ(got, c.error);
  }
}

TEST(Verifier, BuiltOpsNameTheirLineWithoutSourceLines) {
  Module m;
  Value* w = m.AddWeight("blk.0.attn_q", {DType::kQ8_0, {2048, 1024}}, "blk.0.attn_q.weight");
  Function* f = m.AddFunction("prefill");
  Builder b(f);
  Value* h = b.AddArg({DType::kF32, {Dim::T(), 512}}, "h");
  Value* q = b.MatMul(h, w, "q");
  b.Return({q});
  ASSERT_FALSE(b.status().ok());
  const std::string want =
      "error: operand 1 of 'matmul' has shape q8_0[2048, 1024], expected inner dim 512\n"
      "  %q = matmul(%h, @blk.0.attn_q) : f32[]";
  EXPECT_EQ(std::string(b.status().message()), want);
  absl::Status s = Verify(m);  // the verifier finds the same error
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(std::string(s.message()), want);
}

TEST(Verifier, UseBeforeDefinition) {
  Module m;
  Function* f = m.AddFunction("f");
  Builder b(f);
  Value* x = b.AddArg({DType::kF32, {4}}, "x");
  Value* y = b.Silu(x, "y");
  Value* z = b.Silu(y, "z");
  b.Return({z});
  ASSERT_TRUE(Verify(m).ok());
  // Move %z's op before %y's.
  Block& body = f->body();
  std::unique_ptr<Op> op = body.Remove(z->defining_op());
  body.InsertBefore(y->defining_op(), std::move(op));
  absl::Status s = Verify(m);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(std::string(s.message()),
            "error: operand 0 of 'silu' (%y) is not defined before this op\n  %z = silu(%y) : f32[4]");
}

TEST(Verifier, DuplicateSymbols) {
  Module m;
  m.AddState("s", {DType::kF32, {4}});
  m.AddWeight("s", {DType::kF32, {4}}, "s");
  absl::Status s = Verify(m);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(std::string(s.message()), "error: @s is defined twice");
}

}  // namespace
}  // namespace kiln::ir
