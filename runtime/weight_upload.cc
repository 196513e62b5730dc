#include "runtime/weight_upload.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/preflight.h"
#include "support/parallel_for.h"
#include "support/progress.h"
#include "support/status_macros.h"

namespace kiln::runtime {
namespace {

using cuda::HostBuffer;

// Staging chunk (spec §3 recipe: 32-128 MiB).
constexpr uint64_t kUploadChunk = uint64_t{64} << 20;
// Threads that copy a chunk from the mapped file into its pinned buffer: one
// thread's page faults held the upload to ~5 GB/s (8B Q8_0 on an H200).
constexpr int kUploadThreads = 8;

// Asks the kernel to read a tensor's pages ahead of the staging memcpy.
void PrefetchPages(absl::Span<const uint8_t> bytes) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t begin = reinterpret_cast<uintptr_t>(bytes.data()) & ~(page - 1);
  uintptr_t end = reinterpret_cast<uintptr_t>(bytes.data()) + bytes.size();
  if (bytes.empty()) return;
  (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_WILLNEED);  // advisory only
}

}  // namespace

absl::Status UploadWeights(const cuda::Context& ctx, const Manifest& m, const gguf::GgufFile& file,
                           absl::Span<const CUdeviceptr> buffer_ptrs, bool show_progress,
                           const std::function<void(absl::string_view)>& log) {
  uint64_t total = 0;
  for (const TensorBinding& b : m.bindings()) total += b.nbytes();
  if (total == 0) return absl::OkStatus();
  // spec/cuda-driver-api.md §3: two pinned buffers and two streams, so the
  // CPU fills one buffer (page faults, disk reads; kUploadThreads threads)
  // while the other's DMA runs.
  const uint64_t chunk = std::min(kUploadChunk, total);
  HostBuffer stage[2];
  std::unique_ptr<cuda::Stream> streams[2];
  std::unique_ptr<cuda::Event> done[2];
  bool in_flight[2] = {false, false};
  for (int b = 0; b < 2; ++b) {
    ASSIGN_OR_RETURN(stage[b], HostBuffer::Allocate(ctx, chunk));
    ASSIGN_OR_RETURN(streams[b], cuda::Stream::Create(ctx));
    ASSIGN_OR_RETURN(done[b], cuda::Event::Create(ctx));
  }
  ProgressLine progress("uploading weights", show_progress);
  auto t0 = std::chrono::steady_clock::now();
  uint64_t done_bytes = 0, k = 0;
  for (const TensorBinding& binding : m.bindings()) {
    const gguf::TensorInfo* t = file.FindTensor(binding.name());
    RET_CHECK(t != nullptr);  // CheckBinding passed
    absl::Span<const uint8_t> src = file.TensorData(*t);
    PrefetchPages(src);
    const CUdeviceptr dst = buffer_ptrs[binding.buffer()];
    for (uint64_t off = 0; off < src.size(); off += chunk, ++k) {
      const int b = static_cast<int>(k & 1);
      const uint64_t n = std::min<uint64_t>(chunk, src.size() - off);
      if (in_flight[b]) RETURN_IF_ERROR(done[b]->Synchronize());  // buffer b's previous DMA is over
      uint8_t* to = stage[b].data();
      const uint8_t* from = src.data() + off;
      ParallelFor(static_cast<int64_t>(n), std::min(kUploadThreads, DefaultThreads()),
                  [&](int64_t begin, int64_t end) { std::memcpy(to + begin, from + begin, end - begin); });
      RETURN_IF_ERROR(WithContext(streams[b]->CopyToDevice(dst + off, stage[b].data(), n),
                                  absl::StrCat("uploading tensor '", binding.name(), "'")));
      RETURN_IF_ERROR(done[b]->Record(*streams[b]));
      in_flight[b] = true;
      done_bytes += n;
      progress.Update(done_bytes, total);
    }
  }
  for (int b = 0; b < 2; ++b) RETURN_IF_ERROR(WithContext(streams[b]->Synchronize(), "uploading weights"));
  progress.Finish();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (log)
    log(absl::StrFormat("uploaded %d tensors, %s in %.2f s (%.2f GB/s)", m.bindings_size(), FormatBytes(total), s,
                        s > 0 ? 1e-9 * static_cast<double>(total) / s : 0.0));
  return absl::OkStatus();
}

}  // namespace kiln::runtime
