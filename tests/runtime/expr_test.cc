// Tests for runtime/bundle/expr.h: evaluation (ceil division, overflow) and
// printing.
#include "runtime/bundle/expr.h"

#include <cstdint>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(ExprTest, ConstantIgnoresSymbols) {
  EXPECT_EQ(*Evaluate(MakeExpr(4096), {7, 8, 9}), 4096);
  EXPECT_EQ(*Evaluate(Expr(), {7, 8, 9}), 0);
}

TEST(ExprTest, LinearInEachSymbol) {
  EXPECT_EQ(*Evaluate(MakeExpr(0, 1), {5, 0, 0}), 5);
  EXPECT_EQ(*Evaluate(MakeExpr(1, 0, 1), {0, 9, 0}), 10);
  EXPECT_EQ(*Evaluate(MakeExpr(64, 0, 0, 2048), {0, 0, 4096}), 2048 * 4096 + 64);
  EXPECT_EQ(*Evaluate(MakeExpr(1, 2, 3, 4), {10, 100, 1000}), 1 + 20 + 300 + 4000);
}

TEST(ExprTest, DivisionRoundsUp) {
  const Expr ceil_t_64 = MakeExpr(0, 1, 0, 0, 64);
  EXPECT_EQ(*Evaluate(ceil_t_64, {0, 0, 0}), 0);
  EXPECT_EQ(*Evaluate(ceil_t_64, {1, 0, 0}), 1);
  EXPECT_EQ(*Evaluate(ceil_t_64, {64, 0, 0}), 1);
  EXPECT_EQ(*Evaluate(ceil_t_64, {65, 0, 0}), 2);
  EXPECT_EQ(*Evaluate(ceil_t_64, {128, 0, 0}), 2);
}

TEST(ExprTest, DivisorZeroAndOneMeanNoDivision) {
  EXPECT_EQ(*Evaluate(MakeExpr(7, 0, 0, 0, 0), {}), 7);
  EXPECT_EQ(*Evaluate(MakeExpr(7, 0, 0, 0, 1), {}), 7);
}

TEST(ExprTest, CeilingAtTheTopOfTheRangeDoesNotOverflow) {
  // (kMax + div - 1) would overflow; the evaluator must not compute it.
  EXPECT_EQ(*Evaluate(MakeExpr(kMax, 0, 0, 0, 2), {}), kMax / 2 + 1);
  EXPECT_EQ(*Evaluate(MakeExpr(kMax, 0, 0, 0, kMax), {}), 1);
}

TEST(ExprTest, ProductOverflowIsAnError) {
  absl::StatusOr<int64_t> v = Evaluate(MakeExpr(0, 0, 0, int64_t{1} << 40), {0, 0, 1 << 24});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(v.status().message(), HasSubstr("overflows"));
  EXPECT_THAT(v.status().message(), HasSubstr("C=16777216"));
  // One step below the overflow is fine.
  EXPECT_TRUE(Evaluate(MakeExpr(0, 0, 0, int64_t{1} << 39), {0, 0, 1 << 23}).ok());
}

TEST(ExprTest, SumOverflowIsAnError) {
  EXPECT_TRUE(Evaluate(MakeExpr(kMax - 1, 1), {1, 0, 0}).ok());
  absl::StatusOr<int64_t> v = Evaluate(MakeExpr(kMax, 1), {1, 0, 0});
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("overflows"));
}

TEST(ExprTest, NegativeCoefficientsAndDivisorAreRejected) {
  EXPECT_TRUE(Evaluate(MakeExpr(1, 2, 3, 4, 5), {1, 1, 1}).ok());
  for (const Expr& e : {MakeExpr(0, -1), MakeExpr(0, 0, -1), MakeExpr(0, 0, 0, -1)}) {
    absl::StatusOr<int64_t> v = Evaluate(e, {1, 1, 1});
    ASSERT_FALSE(v.ok()) << ExprToString(e);
    EXPECT_THAT(v.status().message(), HasSubstr("negative coefficient"));
  }
  // A negative constant only where T and C terms cover it at T = C = 1.
  for (const Expr& e : {MakeExpr(-1), MakeExpr(-3, 2)}) {
    absl::StatusOr<int64_t> v = Evaluate(e, {1, 1, 1});
    ASSERT_FALSE(v.ok()) << ExprToString(e);
    EXPECT_THAT(v.status().message(), HasSubstr("negative constant its T and C terms do not cover"));
  }
  EXPECT_TRUE(Evaluate(MakeExpr(-2, 2), {1, 1, 1}).ok());
  absl::StatusOr<int64_t> v = Evaluate(MakeExpr(1, 0, 0, 0, -2), {});
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("negative divisor -2"));
}

TEST(ExprTest, NegativeConstantCoveredByTIsAllowed) {
  // (T - 1) * 400: the offset of a step's last row.
  const Expr last_row = MakeExpr(-400, 400);
  EXPECT_TRUE(CheckExprWellFormed(last_row).ok());
  EXPECT_EQ(*Evaluate(last_row, {1, 0, 0}), 0);
  EXPECT_EQ(*Evaluate(last_row, {5, 0, 0}), 1600);
  // Not covered at T = 1, or no T term at all: rejected.
  EXPECT_FALSE(CheckExprWellFormed(MakeExpr(-401, 400)).ok());
  EXPECT_FALSE(CheckExprWellFormed(MakeExpr(-1)).ok());
  // Evaluated where it would be negative (T = 0): an error, not a wrap.
  absl::StatusOr<int64_t> v = Evaluate(last_row, {0, 0, 0});
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("is negative"));
}

TEST(ExprTest, NegativeEnvironmentIsRejected) {
  EXPECT_TRUE(Evaluate(MakeExpr(0, 1), {0, 0, 0}).ok());
  EXPECT_FALSE(Evaluate(MakeExpr(0, 1), {-1, 0, 0}).ok());
  EXPECT_FALSE(Evaluate(MakeExpr(0), {0, -1, 0}).ok());
  EXPECT_FALSE(Evaluate(MakeExpr(0), {0, 0, -1}).ok());
}

TEST(ExprTest, ToString) {
  EXPECT_EQ(ExprToString(Expr()), "0");
  EXPECT_EQ(ExprToString(MakeExpr(4096)), "4096");
  EXPECT_EQ(ExprToString(MakeExpr(0, 1)), "T");
  EXPECT_EQ(ExprToString(MakeExpr(1, 0, 1)), "P + 1");
  EXPECT_EQ(ExprToString(MakeExpr(0, 1, 0, 0, 64)), "ceil(T/64)");
  EXPECT_EQ(ExprToString(MakeExpr(64, 0, 0, 2048, 256)), "ceil((2048*C + 64)/256)");
  EXPECT_EQ(ExprToString(MakeExpr(3, 2, 5, 7, 1)), "2*T + 5*P + 7*C + 3");
  EXPECT_EQ(ExprToString(MakeExpr(100, 0, 0, 0, 3)), "ceil(100/3)");
  EXPECT_EQ(ExprToString(MakeExpr(0, -2)), "-2*T");
}

}  // namespace
}  // namespace kiln::runtime
