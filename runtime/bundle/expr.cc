#include "runtime/bundle/expr.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::runtime {

absl::Status CheckExprWellFormed(const Expr& e) {
  if (e.t() < 0 || e.p() < 0 || e.c() < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("expression ", ExprToString(e), " has a negative coefficient"));
  // A negative constant is allowed when the T and C terms cover it at their
  // least values (T >= 1 and C >= 1 wherever they appear): e.g. the offset
  // (T - 1) * row of a step's last row.
  if (e.constant() < 0 && (e.t() > 0 || e.c() > 0 ? e.constant() + e.t() + e.c() < 0 : true))
    return absl::InvalidArgumentError(absl::StrCat("expression ", ExprToString(e),
                                                   " has a negative constant its T and C terms do not cover"));
  if (e.div() < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("expression ", ExprToString(e), " has a negative divisor ", e.div()));
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Evaluate(const Expr& e, const ExprEnv& env) {
  if (absl::Status s = CheckExprWellFormed(e); !s.ok()) return s;
  if (env.t < 0 || env.p < 0 || env.c < 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot evaluate ", ExprToString(e), " at negative T=", env.t, " P=", env.p, " C=", env.c));
  int64_t sum = e.constant();
  const int64_t terms[3][2] = {{e.t(), env.t}, {e.p(), env.p}, {e.c(), env.c}};
  for (const auto& [coef, value] : terms) {
    int64_t product;
    if (__builtin_mul_overflow(coef, value, &product) || __builtin_add_overflow(sum, product, &sum))
      return absl::InvalidArgumentError(absl::StrCat("expression ", ExprToString(e),
                                                     " overflows int64 at T=", env.t, " P=", env.p,
                                                     " C=", env.c));
  }
  if (sum < 0)
    return absl::InvalidArgumentError(absl::StrCat("expression ", ExprToString(e), " is negative at T=", env.t,
                                                   " P=", env.p, " C=", env.c));
  const int64_t div = e.div() > 1 ? e.div() : 1;
  // sum >= 0 and div >= 1: ceil without the (sum + div - 1) overflow.
  return sum / div + (sum % div != 0 ? 1 : 0);
}

std::string ExprToString(const Expr& e) {
  std::vector<std::string> terms;
  const std::pair<int64_t, const char*> symbols[3] = {{e.t(), "T"}, {e.p(), "P"}, {e.c(), "C"}};
  for (const auto& [coef, name] : symbols) {
    if (coef == 0) continue;
    terms.push_back(coef == 1 ? std::string(name) : absl::StrCat(coef, "*", name));
  }
  if (e.constant() != 0 || terms.empty()) terms.push_back(absl::StrCat(e.constant()));
  std::string sum = absl::StrJoin(terms, " + ");
  if (e.div() == 0 || e.div() == 1) return sum;
  if (terms.size() > 1) sum = absl::StrCat("(", sum, ")");
  return absl::StrCat("ceil(", sum, "/", e.div(), ")");
}

Expr MakeExpr(int64_t constant, int64_t t, int64_t p, int64_t c, int64_t div) {
  Expr e;
  e.set_constant(constant);
  e.set_t(t);
  e.set_p(p);
  e.set_c(c);
  e.set_div(div);
  return e;
}

}  // namespace kiln::runtime
