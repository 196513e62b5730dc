// Which GGUF metadata keys a bundle records (Manifest.model_keys, written by
// kilnc's lowering) and kiln compares with the GGUF it runs: the model's
// `qwen3.*` hyper-parameters, some of which are compiled into the kernels.
#ifndef KILN_RUNTIME_BUNDLE_MODEL_KEYS_H_
#define KILN_RUNTIME_BUNDLE_MODEL_KEYS_H_

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace kiln::runtime {

inline bool IsModelKey(absl::string_view key) { return absl::StartsWith(key, "qwen3."); }

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_BUNDLE_MODEL_KEYS_H_
