// The back half of `kilnc compile`: lower-to-kernels, codegen (PTX, and a
// cubin when ptxas is installed), write-bundle.
#ifndef KILN_COMPILER_BUNDLE_COMPILER_H_
#define KILN_COMPILER_BUNDLE_COMPILER_H_

#include <string>

#include "absl/status/status.h"
#include "ir/ir.h"
#include "models/gguf/gguf_file.h"
#include "models/qwen3_config.h"

namespace kiln::compiler {

struct BundleOptions {
  std::string target = "sm_90";
  std::string dump_dir;           // also gets every kernel's .ll and .ptx
  int64_t max_prefill_tokens = 512;
  bool cubin = true;              // assemble with ptxas when it is installed
  bool programmatic_launch = true;  // where the target has griddepcontrol (sm_90)
  bool concurrent_launches = true;  // LowerOptions::concurrent_launches
  bool join_matvecs = true;         // LowerOptions::join_matvecs
};

struct BundleSummary {
  int kernels = 0;                // distinct kernels compiled
  int load_launches = 0, prefill_launches = 0, decode_launches = 0;
  bool has_cubin = false;
};

absl::StatusOr<BundleSummary> CompileBundle(const ir::Module& module, const gguf::GgufFile& file,
                                            const models::Qwen3Config& config, const BundleOptions& options,
                                            const std::string& output);

}  // namespace kiln::compiler

#endif  // KILN_COMPILER_BUNDLE_COMPILER_H_
