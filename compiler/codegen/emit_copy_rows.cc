#include "compiler/codegen/emitters.h"
namespace kiln::codegen {
absl::Status EmitCopyRows(KernelBuilder& kb) { return absl::UnimplementedError("todo"); }
}  // namespace kiln::codegen
