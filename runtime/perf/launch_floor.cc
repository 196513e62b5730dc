#include "runtime/perf/launch_floor.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "runtime/perf/stats.h"
#include "runtime/preflight.h"
#include "support/status_macros.h"

namespace kiln::runtime {

absl::StatusOr<std::vector<uint64_t>> RingOffsets(const std::vector<uint64_t>& launch_bytes, uint64_t ring_bytes) {
  std::vector<uint64_t> offsets;
  uint64_t at = 0;
  for (uint64_t b : launch_bytes) {
    if (b > ring_bytes)
      return absl::InvalidArgumentError(absl::StrCat("a launch reads ", FormatBytes(b), ", more than the ",
                                                     FormatBytes(ring_bytes), " ring of the launch floor"));
    if (at + b > ring_bytes) at = 0;
    offsets.push_back(at);
    at += (b + 15) / 16 * 16;
  }
  return offsets;
}

absl::StatusOr<std::vector<LaunchFloor>> MeasureLaunchFloors(const cuda::Context& ctx, const ReadBuffer& ring,
                                                             const std::vector<std::vector<uint64_t>>& sequences,
                                                             const ProbeOptions& o) {
  ASSIGN_OR_RETURN(ReadProbeKernel kernel, ReadProbeKernel::Load(ctx, ctx.device().supports_pdl()));
  const cuda::Stream& stream = *ring.stream;
  std::vector<LaunchFloor> floors;
  for (const std::vector<uint64_t>& launch_bytes : sequences) {
    absl::StatusOr<std::vector<uint64_t>> offsets = RingOffsets(launch_bytes, ring.buffer.size());
    if (!offsets.ok()) return absl::FailedPreconditionError(offsets.status().message());
    LaunchFloor r;
    r.launches = static_cast<int>(launch_bytes.size());
    r.programmatic = kernel.programmatic();
    ASSIGN_OR_RETURN(std::unique_ptr<cuda::Graph> graph, stream.Capture([&]() -> absl::Status {
      for (size_t i = 0; i < launch_bytes.size(); ++i) {
        RETURN_IF_ERROR(kernel.Launch(stream, ring.buffer.ptr() + (*offsets)[i], launch_bytes[i]));
        r.bytes += launch_bytes[i];
      }
      return absl::OkStatus();
    }));
    RETURN_IF_ERROR(graph->Instantiate(stream));
    ASSIGN_OR_RETURN(std::vector<double> ms, TimeLaunches(ctx, stream, o, [&] { return graph->Launch(stream); }));
    r.median_ms = Median(ms);
    floors.push_back(r);
  }
  return floors;
}

}  // namespace kiln::runtime
