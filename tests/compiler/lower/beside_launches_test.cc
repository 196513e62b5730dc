// PairBesideLaunches (compiler/lower/beside_launches.h): which neighbours
// of a plan become pairs, and which of a pair goes beside the other.
#include "compiler/lower/beside_launches.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::compiler {
namespace {

// A manifest whose kernel k reads bytes[k], and a plan launching kernels
// `order` in turn.
struct Fixture {
  runtime::Manifest m;
  runtime::Plan plan;
  Fixture(const std::vector<uint64_t>& bytes, const std::vector<uint32_t>& order) {
    for (uint64_t b : bytes) m.add_kernels()->set_bytes_read(b);
    for (uint32_t k : order) plan.add_launches()->set_kernel(k);
  }
  std::vector<uint32_t> Kernels() const {
    std::vector<uint32_t> out;
    for (const auto& l : plan.launches()) out.push_back(l.kernel());
    return out;
  }
  std::vector<bool> Beside() const {
    std::vector<bool> out;
    for (const auto& l : plan.launches()) out.push_back(l.beside_next());
    return out;
  }
};

TEST(BesideLaunchesTest, TheSmallerOfTwoAdjacentPartsGoesFirstBesideTheLarger) {
  // launches: norm-free stand-ins for down, QK (4 MB), V (1 MB), attention.
  Fixture f({100, 4000000, 1000000, 10}, {0, 1, 2, 3});
  ASSERT_TRUE(PairBesideLaunches(f.m, f.plan, {2, 1}).ok());
  EXPECT_EQ(f.Kernels(), (std::vector<uint32_t>{0, 2, 1, 3}));
  EXPECT_EQ(f.Beside(), (std::vector<bool>{false, true, false, false}));
}

TEST(BesideLaunchesTest, AnAlreadySmallerFirstPartKeepsTheOrder) {
  Fixture f({100, 1000000, 4000000, 10}, {0, 1, 2, 3});
  ASSERT_TRUE(PairBesideLaunches(f.m, f.plan, {1, 2}).ok());
  EXPECT_EQ(f.Kernels(), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(f.Beside(), (std::vector<bool>{false, true, false, false}));
}

TEST(BesideLaunchesTest, PartsThatAreNotNeighboursStayApart) {
  Fixture f({1, 2, 3, 4}, {0, 1, 2, 3});
  ASSERT_TRUE(PairBesideLaunches(f.m, f.plan, {0, 2}).ok());
  EXPECT_EQ(f.Beside(), (std::vector<bool>{false, false, false, false}));
}

TEST(BesideLaunchesTest, ThreeSeparatePartsMakeOnePairAndOneAlone) {
  // q, k and v apart: (q, k) pair; v, the next of nothing, stays on the
  // main stream (a launch that is a pair's next is never paired again).
  Fixture f({30, 20, 10, 5}, {0, 1, 2, 3});
  ASSERT_TRUE(PairBesideLaunches(f.m, f.plan, {0, 1, 2}).ok());
  EXPECT_EQ(f.Kernels(), (std::vector<uint32_t>{1, 0, 2, 3}));
  EXPECT_EQ(f.Beside(), (std::vector<bool>{true, false, false, false}));
}

TEST(BesideLaunchesTest, TwoLayersMakeTwoPairs) {
  Fixture f({10, 40}, {0, 1, 0, 1});
  ASSERT_TRUE(PairBesideLaunches(f.m, f.plan, {0, 1, 2, 3}).ok());
  EXPECT_EQ(f.Beside(), (std::vector<bool>{true, false, true, false}));
}

TEST(BesideLaunchesTest, TheNextOfAnEarlierPairIsNotPairedAgain) {
  // Launch 1 already runs beside launch 2: parts 2 and 3 stay apart.
  Fixture f({10, 20, 30, 40}, {0, 1, 2, 3});
  f.plan.mutable_launches(1)->set_beside_next(true);
  ASSERT_TRUE(PairBesideLaunches(f.m, f.plan, {2, 3}).ok());
  EXPECT_EQ(f.Beside(), (std::vector<bool>{false, true, false, false}));
}

TEST(BesideLaunchesTest, APartOutsideThePlanIsAnInternalErrorNamingIt) {
  Fixture f({1, 2}, {0, 1});
  for (int bad : {2, -1}) {
    absl::Status s = PairBesideLaunches(f.m, f.plan, {0, bad});
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
    EXPECT_THAT(s.message(), ::testing::HasSubstr(absl::StrCat("launch ", bad, " to pair is outside the plan's 2 launches")));
    EXPECT_EQ(f.Beside(), (std::vector<bool>{false, false}));
  }
}

}  // namespace
}  // namespace kiln::compiler
