// A small, realistic, valid bundle manifest (a one-layer tiny Qwen3 with two
// GGUF tensors, two kernels and all three plans) for the bundle tests, the
// fuzzer's seed corpus and anyone needing a bundle that the validator accepts.
#ifndef KILN_TESTS_RUNTIME_TEST_MANIFEST_H_
#define KILN_TESTS_RUNTIME_TEST_MANIFEST_H_

#include <cstdint>
#include <vector>

#include "compiler/bundle_writer.h"
#include "runtime/manifest.pb.h"

namespace kiln::testing {

// Section table of MakeValidManifest(): PTX at 4096 (1000 bytes), CUBIN at
// 5120 (300 bytes), in a file of kValidFileSize bytes.
inline constexpr uint64_t kValidFileSize = 5420;

// Buffer indices of MakeValidManifest().
enum TestBuffer : uint32_t {
  kEmbdGguf = 0,
  kNormGguf,
  kWeights,
  kKvCache,
  kArena,
  kTokens,
  kPosition,
  kLogits,
  kSampled
};
// Kernel indices.
enum TestKernel : uint32_t { kRepack = 0, kStep = 1 };

runtime::Manifest MakeValidManifest();

// Kernel images to write with it: PTX text and a fake cubin for sm_90.
std::vector<compiler::SectionInput> MakeSectionInputs();

}  // namespace kiln::testing

#endif  // KILN_TESTS_RUNTIME_TEST_MANIFEST_H_
