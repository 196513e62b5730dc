// Measures the GPU's global-memory read bandwidth with kiln's own read-only
// kernel, so `kiln bench` states decode speed as a fraction of what this GPU
// delivers in the same run (design.md, "The performance model").
#ifndef KILN_RUNTIME_PERF_BANDWIDTH_PROBE_H_
#define KILN_RUNTIME_PERF_BANDWIDTH_PROBE_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "runtime/cuda/driver.h"

namespace kiln::runtime {

struct ProbeOptions {
  uint64_t max_bytes = uint64_t{4} << 30;  // the buffer read per repetition, at most
  double free_fraction = 0.5;              // and at most this part of the free memory
  int warmup = 3;                          // untimed reads first (clocks, TLB)
  int reps = 10;                           // timed reads; the median counts
};

// Below this much the L2 cache (50-60 MB on H100/H200) would serve a real
// part of the reads.
inline constexpr uint64_t kMinProbeBytes = uint64_t{256} << 20;

struct ProbeResult {
  uint64_t bytes = 0;      // read per repetition
  int reps = 0;
  double median_ms = 0;    // of one read of `bytes`
  double best_ms = 0;
  int blocks = 0;          // grid: one full wave
  int threads = 0;         // per block
  double gb_per_s() const { return median_ms > 0 ? 1e-6 * static_cast<double>(bytes) / median_ms : 0.0; }
};

// kiln's read kernel loaded on a context: one launch reads a range with
// 16-byte non-coherent loads, one full wave of blocks striding over it
// (what a perfect memory-bound kernel does). Shared by the bandwidth probe
// and the launch floor (launch_floor.h). `programmatic` (sm_90): the kernel
// starts with griddepcontrol.launch_dependents and griddepcontrol.wait and
// launches programmatically, so the next launch's blocks arrive while it
// runs but read nothing before it has ended, as kiln's kernels launch.
class ReadProbeKernel {
 public:
  static absl::StatusOr<ReadProbeKernel> Load(const cuda::Context& ctx, bool programmatic = false);
  bool programmatic() const { return programmatic_; }
  // Enqueues a read of `bytes` (whole 16-byte vectors are read; a tail is
  // ignored) from `src` on `stream`.
  absl::Status Launch(const cuda::Stream& stream, CUdeviceptr src, uint64_t bytes) const;
  int blocks() const { return blocks_; }
  int threads() const { return threads_; }

 private:
  std::shared_ptr<cuda::Module> module_;
  cuda::Function f_;
  std::shared_ptr<cuda::DeviceBuffer> sink_;
  int blocks_ = 0, threads_ = 0;
  bool programmatic_ = false;
};

// The buffer the probe reads given `free_bytes` of free GPU memory: the
// smaller of max_bytes and free_fraction of it, rounded down to whole MiB;
// 0 when that is below kMinProbeBytes.
uint64_t ProbeBytes(uint64_t free_bytes, const ProbeOptions& options);

// What the probe and the launch floor read: on `ctx`'s GPU, a buffer of
// ProbeBytes of the free memory (every page backed) and a stream, set up
// once for both. `what` names the measurement in errors: FailedPrecondition
// when too little memory is free (naming how much).
struct ReadBuffer {
  cuda::DeviceBuffer buffer;
  std::unique_ptr<cuda::Stream> stream;
};
absl::StatusOr<ReadBuffer> PrepareReadBuffer(const cuda::Context& ctx, const ProbeOptions& options,
                                             const char* what);

// A context of its own on GPU `ordinal` (beside the executor's) and a
// default-sized ReadBuffer on it: what `kiln bench`'s probe and launch floor
// and `kiln profile --attribution` read. Members in that order, so the
// buffer goes before its context.
struct ReadRing {
  ReadRing() = default;
  ReadRing(ReadRing&&) = default;
  // The old buffer goes before the old context (members assign in order).
  ReadRing& operator=(ReadRing&& other) noexcept {
    buffer = ReadBuffer{};
    ctx = std::move(other.ctx);
    buffer = std::move(other.buffer);
    return *this;
  }

  std::unique_ptr<cuda::Context> ctx;
  ReadBuffer buffer;
};
absl::StatusOr<ReadRing> OpenReadRing(int ordinal, const char* what);

// Runs `launch` options.warmup times untimed on `stream`, then options.reps
// times each between two CUDA events; the milliseconds of each timed run.
// InvalidArgument unless reps >= 1 and warmup >= 0.
absl::StatusOr<std::vector<double>> TimeLaunches(const cuda::Context& ctx, const cuda::Stream& stream,
                                                 const ProbeOptions& options,
                                                 absl::FunctionRef<absl::Status()> launch);

// Of `options`, the timing fields count here (warmup, reps); the sizing
// ones (max_bytes, free_fraction) counted when the buffer was prepared.
// Reads `buffer` (PrepareReadBuffer's) `warmup` + `reps` times with 16-byte
// non-coherent loads, one full wave of blocks striding over it, and times
// each timed read with CUDA events. CUDA failures name the call.
absl::StatusOr<ProbeResult> MeasureReadBandwidth(const cuda::Context& ctx, const ReadBuffer& buffer,
                                                 const ProbeOptions& options = {});

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_PERF_BANDWIDTH_PROBE_H_
