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

absl::StatusOr<LaunchFloor> MeasureLaunchFloor(const cuda::Context& ctx, const std::vector<uint64_t>& launch_bytes,
                                               const ProbeOptions& o) {
  if (o.reps < 1 || o.warmup < 0) return absl::InvalidArgumentError("the launch floor needs reps >= 1, warmup >= 0");
  RETURN_IF_ERROR(ctx.MakeCurrent());
  ASSIGN_OR_RETURN(cuda::MemoryInfo mem, ctx.GetMemoryInfo());
  const uint64_t ring = ProbeBytes(mem.free, o);
  if (ring == 0)
    return absl::FailedPreconditionError(absl::StrCat("the launch floor needs ", FormatBytes(kMinProbeBytes),
                                                      " of GPU memory to read, ", FormatBytes(mem.free), " is free on ",
                                                      ctx.device().name));
  absl::StatusOr<std::vector<uint64_t>> offsets = RingOffsets(launch_bytes, ring);
  if (!offsets.ok()) return absl::FailedPreconditionError(offsets.status().message());
  ASSIGN_OR_RETURN(ReadProbeKernel kernel, ReadProbeKernel::Load(ctx, ctx.device().supports_pdl()));
  ASSIGN_OR_RETURN(cuda::DeviceBuffer src, cuda::DeviceBuffer::Allocate(ctx, ring));
  ASSIGN_OR_RETURN(std::unique_ptr<cuda::Stream> stream, cuda::Stream::Create(ctx));
  ASSIGN_OR_RETURN(std::unique_ptr<cuda::Event> start, cuda::Event::Create(ctx, CU_EVENT_DEFAULT));
  ASSIGN_OR_RETURN(std::unique_ptr<cuda::Event> end, cuda::Event::Create(ctx, CU_EVENT_DEFAULT));
  RETURN_IF_ERROR(stream->Memset(src.ptr(), 1, ring));  // backs every page

  LaunchFloor r;
  r.launches = static_cast<int>(launch_bytes.size());
  r.programmatic = kernel.programmatic();
  ASSIGN_OR_RETURN(std::unique_ptr<cuda::Graph> graph, stream->Capture([&]() -> absl::Status {
    for (size_t i = 0; i < launch_bytes.size(); ++i) {
      RETURN_IF_ERROR(kernel.Launch(*stream, src.ptr() + (*offsets)[i], launch_bytes[i]));
      r.bytes += launch_bytes[i];
    }
    return absl::OkStatus();
  }));
  RETURN_IF_ERROR(graph->Instantiate(*stream));
  for (int i = 0; i < o.warmup; ++i) RETURN_IF_ERROR(graph->Launch(*stream));
  std::vector<double> ms;
  for (int i = 0; i < o.reps; ++i) {
    RETURN_IF_ERROR(start->Record(*stream));
    RETURN_IF_ERROR(graph->Launch(*stream));
    RETURN_IF_ERROR(end->Record(*stream));
    RETURN_IF_ERROR(end->Synchronize());
    ASSIGN_OR_RETURN(float t, cuda::Event::ElapsedMs(*start, *end));
    ms.push_back(t);
  }
  r.median_ms = Median(ms);
  return r;
}

}  // namespace kiln::runtime
