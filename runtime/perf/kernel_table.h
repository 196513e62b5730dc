// `kiln profile`'s table: the per-launch GPU times of profiled steps
// (Executor::ProfileDecode / ProfilePrefill) gathered per kernel or per
// kernel family, with the bytes each reads (runtime/perf/read_bytes.h), its
// time percentiles and its share of the step's wall time.
#ifndef KILN_RUNTIME_PERF_KERNEL_TABLE_H_
#define KILN_RUNTIME_PERF_KERNEL_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/manifest.pb.h"
#include "support/json_writer.h"

namespace kiln::runtime {

// A kernel's family: Kernel.family when the bundle sets it, else the name
// without the shape and index suffixes kilnc appends
// ("matvec_q8_0_planar_4096x4096_3" -> "matvec_q8_0_planar").
std::string KernelFamily(const Kernel& k);

enum class GroupBy { kKernel, kFamily };

// The step the samples come from, for the bytes read.
struct StepShape {
  int64_t tokens = 1;    // T
  int64_t position = 0;  // P (of a typical profiled step)
  int64_t context = 0;   // C
};

struct KernelRow {
  std::string name;             // the kernel (or, grouped by family, the family)
  std::string family;
  int64_t per_step = 0;         // launches in one step
  double ms_per_step = 0;       // their GPU time in one step, mean over the steps
  double p50_us = 0, p90_us = 0, max_us = 0;  // one launch, over every launch profiled
  uint64_t bytes_per_step = 0;  // weights + KV cache they read in one step
  double gb_per_s = 0;          // bytes / time (0: the bundle states no bytes)
  double wall_percent = 0;      // ms_per_step / the step's wall time
};

struct KernelTable {
  std::string title;  // "decode step", "prefill chunk"
  StepShape shape;
  int64_t steps = 0;               // steps profiled
  int64_t launches_per_step = 0;   // the plan's launches (sum of per_step)
  double kernel_ms_per_step = 0;   // every launch's time, summed
  double wall_ms_per_step = 0;     // the same step on the normal path
  std::vector<KernelRow> rows;     // most time first; ties by name
};

// `launch_us[s][i]` is launch i of `plan` (a plan of `m`) in profiled step
// s. InvalidArgument when a step's sample count is not the plan's launch
// count or there are no steps.
absl::StatusOr<KernelTable> BuildKernelTable(const Manifest& m, const Plan& plan, std::string title,
                                             const StepShape& shape, const std::vector<std::vector<double>>& launch_us,
                                             double wall_ms_per_step, GroupBy group);

// A title line, then one aligned row per kernel and a total row.
std::string FormatKernelTable(const KernelTable& t);
// The same data as one JSON object.
void WriteKernelTableJson(const KernelTable& t, JsonWriter& w);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_PERF_KERNEL_TABLE_H_
