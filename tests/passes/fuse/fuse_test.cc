// Golden tests of passes/fuse (tests/passes/fuse/fuse.kir against
// fuse.expected.kir; see golden.h).
#include "passes/fuse.h"

#include "gtest/gtest.h"
#include "tests/passes/fuse/golden.h"

namespace kiln::passes {
namespace {

TEST(Fuse, Golden) {
  const std::string dir = KILN_FUSE_TESTDATA;
  testing::RunGoldenFile<FusePass>(dir + "/fuse.kir", dir + "/fuse.expected.kir");
}

}  // namespace
}  // namespace kiln::passes
