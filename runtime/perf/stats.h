// Order statistics of timing samples, as `kiln bench` and `kiln profile`
// report them.
#ifndef KILN_RUNTIME_PERF_STATS_H_
#define KILN_RUNTIME_PERF_STATS_H_

#include <utility>
#include <vector>

namespace kiln::runtime {

// The q-quantile (0 <= q <= 1) of `samples` by linear interpolation between
// the closest ranks (numpy's default, "linear"): q = 0.5 is the median, q = 1
// the maximum. 0 for no samples.
double Percentile(std::vector<double> samples, double q);

inline double Median(std::vector<double> samples) { return Percentile(std::move(samples), 0.5); }

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_PERF_STATS_H_
