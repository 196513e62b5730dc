#include "compiler/codegen/emitters.h"
namespace kiln::codegen {
absl::Status EmitArgmax(KernelBuilder& kb) { return absl::UnimplementedError("todo"); }
}  // namespace kiln::codegen
