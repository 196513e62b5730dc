#include "compiler/codegen/emitters.h"
namespace kiln::codegen {
absl::Status EmitAttentionPrefill(KernelBuilder& kb) { return absl::UnimplementedError("todo"); }
}  // namespace kiln::codegen
