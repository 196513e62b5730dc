// The checks and plans the executor makes before it touches the GPU, kept
// apart so CI (no GPU) tests them: the GGUF binding, the kernel-image choice,
// and the buffer sizes against the GPU's free memory. docs/runtime.md lists
// the messages.
#ifndef KILN_RUNTIME_PREFLIGHT_H_
#define KILN_RUNTIME_PREFLIGHT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/gguf/gguf_file.h"
#include "runtime/manifest.pb.h"

namespace kiln::runtime {

// The GGUF must be the model the bundle was compiled from: the same
// `qwen3.*` metadata (Manifest.model_keys: a hyper-parameter compiled into
// the kernels, such as rope.freq_base, must not differ), no 'output.weight'
// under a bundle with tied embeddings, and every TensorBinding naming a
// tensor of the GGUF with the same type and dims (trailing 1s ignored).
// Fails naming the first difference and how.
absl::Status CheckBinding(const Manifest& m, const gguf::GgufFile& file);

// What the GPU offers, for SelectSections (a cuda::DeviceInfo in kiln).
struct GpuTarget {
  std::string name;  // "NVIDIA H200"
  int cc = 0;        // compute capability as 10*major + minor: 90
};

struct SectionChoice {
  bool jit = false;      // PTX that the driver compiles at load
  std::string target;    // the sections' target, "sm_90"
  std::vector<int> sections;  // indices into Manifest.sections, all of one kind and target
};

// A cubin whose target is exactly the GPU's sm_XY (sm_90a counts for 9.0).
// Otherwise, only with `allow_ptx_jit`, the PTX of the highest target the GPU
// can JIT (target <= the GPU's compute capability). Without it the error
// says what the bundle was built for, what the GPU is, and to rerun with
// --allow-ptx-jit.
absl::StatusOr<SectionChoice> SelectSections(const Manifest& m, const GpuTarget& gpu, bool allow_ptx_jit);

// Bytes kiln keeps free beyond its buffers: CUDA context, modules, graphs,
// local memory for kernel stacks.
inline constexpr uint64_t kMemoryHeadroom = uint64_t{512} << 20;

struct MemoryPlan {
  int64_t context = 0;
  std::vector<uint64_t> buffer_bytes;  // per Manifest.buffers, allocation size (incl. alignment slack)
  std::vector<bool> during_load;       // allocated before the load plan runs
  uint64_t load_bytes = 0;             // GGUF_TENSOR + WEIGHT + whatever the load plan uses
  uint64_t run_bytes = 0;              // everything but GGUF_TENSOR
  uint64_t peak_bytes = 0;             // the larger phase + kMemoryHeadroom
};

// Sizes every buffer at C = `context` (T = the largest plan's max_tokens,
// P = 0; bundle/validator.h BufferEnv). Buffers the load plan does not touch
// (KV cache, activations, IO) are allocated after the GGUF_TENSOR buffers are
// freed, so the peak is the larger of the two phases.
absl::StatusOr<MemoryPlan> PlanMemory(const Manifest& m, int64_t context);

// ResourceExhausted when the plan does not fit in `free_bytes`:
// "context 40960 needs 12.3 GB of GPU memory, 9.1 GB free on NVIDIA X; rerun
// with --ctx-size 16384 or less" (or that even --ctx-size 1 does not fit).
absl::Status CheckMemoryFits(const Manifest& m, const MemoryPlan& plan, uint64_t free_bytes,
                             const std::string& gpu_name);

// The context to run with: `requested` (0 = the model's context_length),
// which must lie in [1, context_length].
absl::StatusOr<int64_t> ChooseContext(const Manifest& m, int64_t requested);

// "12.3 GB" (decimal GB, one decimal; MB below 1 GB).
std::string FormatBytes(uint64_t bytes);

// The decode plan is captured once into a CUDA graph and replayed at every
// position, so no launch's grid or args may depend on P. Fails naming the
// launch.
absl::Status CheckDecodeGraphable(const Manifest& m);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_PREFLIGHT_H_
