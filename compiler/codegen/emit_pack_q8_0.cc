#include "compiler/codegen/emitters.h"
namespace kiln::codegen {
absl::Status EmitPackQ8_0(KernelBuilder& kb) { return absl::UnimplementedError("todo"); }
}  // namespace kiln::codegen
