// In-graph attribution of a decode step (`kiln profile --attribution`):
// the step's wall time through the decode graph, once as compiled and once
// for each kernel with all of its launches swapped for perfect reads of
// the bytes they read (the launch floor's read kernel, launch_floor.h),
// the rest as compiled. What the step saves is what that kernel costs in
// the graph beyond a perfect memory-bound kernel in its place: unlike the
// eager per-launch times of the profile's table, it counts the overlap of
// programmatic launch, and unlike the launch floor it isolates one kernel.
// The swapped steps compute wrong values (a swapped kernel's outputs keep
// their last values); only their time is used.
#ifndef KILN_RUNTIME_PERF_ATTRIBUTION_H_
#define KILN_RUNTIME_PERF_ATTRIBUTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/executor.h"
#include "runtime/manifest.pb.h"
#include "runtime/perf/bandwidth_probe.h"
#include "support/json_writer.h"

namespace kiln::runtime {

// The launches of `plan` (a plan of `m`) by kernel, in the order each
// kernel first launches. InvalidArgument for a launch naming no kernel.
struct LaunchGroup {
  std::string kernel;        // Kernel.name
  std::vector<int> launches;  // indices into plan.launches
};
absl::StatusOr<std::vector<LaunchGroup>> GroupLaunchesByKernel(const Manifest& m, const Plan& plan);

struct AttributionRow {
  std::string kernel;
  int64_t per_step = 0;     // launches in one step
  uint64_t bytes = 0;       // what they read in one step
  double ms_per_token = 0;  // the step with them swapped
};

struct Attribution {
  int64_t depth = 0;           // context depth decoded from
  int64_t steps = 0;           // timed steps per measurement
  int64_t position = 0;        // the timed steps' middle position (bytes read)
  double compiled_ms = 0;      // the step as compiled, same measurement
  std::vector<AttributionRow> rows;  // most saved first; ties by name
  double saved_ms(const AttributionRow& r) const { return compiled_ms - r.ms_per_token; }
};

// Decodes from `depth` (warmup then `steps` greedy steps, as RunDecode)
// through the compiled graph and through one swapped graph per kernel of
// the decode plan; the swapped reads come from `ring` (PrepareReadBuffer's,
// each kernel's launches back to back in it). Restores the compiled graph
// before returning, also on failure (`probe` and `ring` must outlive the
// call, which they do as arguments). FailedPrecondition when the ring is
// smaller than one launch's read.
absl::StatusOr<Attribution> MeasureAttribution(Executor& ex, const Manifest& m, const ReadProbeKernel& probe,
                                               const ReadBuffer& ring, int64_t depth, int64_t warmup,
                                               int64_t steps);

// A title line, then the compiled step and one row per kernel.
std::string FormatAttribution(const Attribution& a);
void WriteAttributionJson(const Attribution& a, JsonWriter& w);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_PERF_ATTRIBUTION_H_
