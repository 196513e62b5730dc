// Evaluation and printing of manifest Exprs: the small non-negative integer
// expressions  ceil((constant + t*T + p*P + c*C) / max(div, 1))  that size
// buffers and grids (runtime/manifest.proto, docs/bundle.md "Expr").
#ifndef KILN_RUNTIME_BUNDLE_EXPR_H_
#define KILN_RUNTIME_BUNDLE_EXPR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/manifest.pb.h"

namespace kiln::runtime {

// The values of the step's symbols.
struct ExprEnv {
  int64_t t = 0;  // T: tokens in this step
  int64_t p = 0;  // P: start position of the step
  int64_t c = 0;  // C: max context the runtime was started with
};

// Checks the shape of `e` alone: every coefficient is non-negative, the
// constant too unless the T and C terms cover it at T = C = 1 (the offset
// (T - 1) * row of a step's last row), div is non-negative. With that, the
// value never decreases when T, P or C grow, which is what lets the
// validator bound it once.
absl::Status CheckExprWellFormed(const Expr& e);

// Evaluates `e` at `env`. InvalidArgument if `e` is not well-formed, an env
// value is negative, or an intermediate overflows int64.
absl::StatusOr<int64_t> Evaluate(const Expr& e, const ExprEnv& env);

// "4096", "T", "ceil(T/64)", "ceil((2048*C + 64)/256)", "P + 1".
std::string ExprToString(const Expr& e);

// Builds an Expr; the defaults make a constant.
Expr MakeExpr(int64_t constant, int64_t t = 0, int64_t p = 0, int64_t c = 0, int64_t div = 0);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_BUNDLE_EXPR_H_
