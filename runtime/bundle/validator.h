// Whole-manifest validation, run before the runtime makes any driver call
// (IREE's habit): after it passes, every index is in range, every Expr
// evaluates without overflow inside its limit at every T, P, C the runtime
// may use, and every launch matches its kernel. docs/bundle.md "Validation"
// lists the rules; each error names the plan, launch, kernel, buffer, binding
// or section at fault.
#ifndef KILN_RUNTIME_BUNDLE_VALIDATOR_H_
#define KILN_RUNTIME_BUNDLE_VALIDATOR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "runtime/bundle/expr.h"
#include "runtime/manifest.pb.h"

namespace kiln::runtime {

// Limits (sm_90: 1024 threads and 227 KiB of dynamic shared memory a block).
inline constexpr int64_t kMaxSizeExclusive = int64_t{1} << 40;  // bytes and offsets
inline constexpr int64_t kMaxI32Exclusive = int64_t{1} << 31;   // grids and i32 args
inline constexpr uint64_t kMaxThreadsPerBlock = 1024;
inline constexpr uint32_t kMaxSharedBytes = 232448;
inline constexpr uint32_t kMaxBufferAlignment = 4096;
inline constexpr size_t kMaxTensorDims = 4;

// The T every buffer size is evaluated at: the largest max_tokens of the
// plans (buffers are allocated once, for the largest step).
int64_t AllocationTokens(const Manifest& m);

// The environment the runtime sizes buffers with for a chosen max context C
// (1 <= C <= config.context_length): T = AllocationTokens(m), P = 0.
ExprEnv BufferEnv(const Manifest& m, int64_t context);

// "section 2 (CUBIN sm_90)": how errors name a section.
std::string DescribeSection(const Section& s, int index);

// InvalidArgument naming the first violated rule; OK if the manifest is safe
// to execute. `file_size` is the size of the bundle file holding the sections.
absl::Status ValidateManifest(const Manifest& m, uint64_t file_size);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_BUNDLE_VALIDATOR_H_
