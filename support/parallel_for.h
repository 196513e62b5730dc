// Splits [0, n) into contiguous chunks run on up to `threads` std::threads.
// The chunking depends only on (n, threads), so results are deterministic
// whenever each index's work is.
#ifndef KILN_SUPPORT_PARALLEL_FOR_H_
#define KILN_SUPPORT_PARALLEL_FOR_H_

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace kiln {

// Number of worker threads to use by default: the hardware concurrency.
inline int DefaultThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

// Calls fn(begin, end) for disjoint chunks covering [0, n).
template <typename Fn>
void ParallelFor(int64_t n, int threads, Fn&& fn) {
  if (n <= 0) return;
  int64_t t = std::max<int64_t>(1, std::min<int64_t>(threads, n));
  if (t == 1) {
    fn(int64_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(t - 1);
  int64_t chunk = (n + t - 1) / t;
  for (int64_t i = 1; i < t; ++i) {
    int64_t b = i * chunk, e = std::min(n, b + chunk);
    if (b < e) pool.emplace_back([&fn, b, e] { fn(b, e); });
  }
  fn(int64_t{0}, std::min(n, chunk));
  for (auto& th : pool) th.join();
}

}  // namespace kiln

#endif  // KILN_SUPPORT_PARALLEL_FOR_H_
