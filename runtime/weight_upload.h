// The weight upload: every tensor a bundle binds, copied from the mapped
// GGUF into its device buffer through two pinned staging buffers on two
// streams, so the CPU fills one while the other's DMA runs
// (spec/cuda-driver-api.md §3 recipe).
#ifndef KILN_RUNTIME_WEIGHT_UPLOAD_H_
#define KILN_RUNTIME_WEIGHT_UPLOAD_H_

#include <functional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "models/gguf/gguf_file.h"
#include "runtime/cuda/driver.h"
#include "runtime/manifest.pb.h"

namespace kiln::runtime {

// `m`'s bindings (checked against `file` by CheckBinding) into
// buffer_ptrs[binding.buffer()]. Work queued before on other streams must
// have finished. Draws a progress line when `show_progress`; `log` (may be
// null) gets one line with the size and the rate.
absl::Status UploadWeights(const cuda::Context& ctx, const Manifest& m, const gguf::GgufFile& file,
                           absl::Span<const CUdeviceptr> buffer_ptrs, bool show_progress,
                           const std::function<void(absl::string_view)>& log);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_WEIGHT_UPLOAD_H_
