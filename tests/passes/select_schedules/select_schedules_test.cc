// Golden tests of passes/select-schedules (select_schedules.kir against
// select_schedules.expected.kir; see tests/passes/fuse/golden.h).
#include "passes/select_schedules.h"

#include "gtest/gtest.h"
#include "tests/passes/fuse/golden.h"

namespace kiln::passes {
namespace {

TEST(SelectSchedules, Golden) {
  const std::string dir = KILN_SELECT_SCHEDULES_TESTDATA;
  testing::RunGoldenFile<SelectSchedulesPass>(dir + "/select_schedules.kir",
                                              dir + "/select_schedules.expected.kir");
}

}  // namespace
}  // namespace kiln::passes
