// ParallelFor (support/parallel_for.h): the chunks cover [0, n) exactly once,
// whatever the thread count, as the weight upload's sliced copy relies on.
#include "support/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"

namespace kiln {
namespace {

TEST(ParallelForTest, EveryIndexOnceForAnyThreadCount) {
  for (int64_t n : {0, 1, 2, 7, 64, 1000, 4099}) {
    for (int threads : {1, 2, 3, 8, 5000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      for (auto& h : hits) h = 0;
      std::atomic<int> calls{0};
      ParallelFor(n, threads, [&](int64_t begin, int64_t end) {
        EXPECT_LT(begin, end);
        ++calls;
        for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)], 1) << "n " << n << " threads " << threads;
      EXPECT_LE(calls.load(), std::max(1, threads));
      if (n == 0) {
        EXPECT_EQ(calls.load(), 0);
      }
    }
  }
}

TEST(ParallelForTest, SlicedCopyMatchesOneCopy) {
  // The upload's use: one buffer copied in slices by several threads.
  std::vector<uint8_t> src(3 * 1048576 + 13), dst(src.size(), 0xAB);
  std::iota(src.begin(), src.end(), uint8_t{7});
  ParallelFor(static_cast<int64_t>(src.size()), 8,
              [&](int64_t begin, int64_t end) { std::memcpy(dst.data() + begin, src.data() + begin, end - begin); });
  EXPECT_EQ(dst, src);
}

}  // namespace
}  // namespace kiln
