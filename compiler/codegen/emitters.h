// The kernel emitters, one per family (one .cc each). Each builds the body of
// the kernel KernelBuilder created from a validated spec; everything about
// the shape of the work comes from the spec's schedule. Internal to
// compiler/codegen.
#ifndef KILN_COMPILER_CODEGEN_EMITTERS_H_
#define KILN_COMPILER_CODEGEN_EMITTERS_H_

#include "absl/status/status.h"
#include "compiler/codegen/kernel_builder.h"

namespace kiln::codegen {

absl::Status EmitMatVec(KernelBuilder& kb);
absl::Status EmitMatVecJoin(KernelBuilder& kb);
absl::Status EmitGemm(KernelBuilder& kb);
absl::Status EmitEmbed(KernelBuilder& kb);
absl::Status EmitQkNormRopeStore(KernelBuilder& kb);
absl::Status EmitAttentionDecode(KernelBuilder& kb);
absl::Status EmitAttentionPrefill(KernelBuilder& kb);
absl::Status EmitArgmax(KernelBuilder& kb);
absl::Status EmitPackQ8_0(KernelBuilder& kb);
absl::Status EmitPackQ6_K(KernelBuilder& kb);
absl::Status EmitCopyRows(KernelBuilder& kb);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_EMITTERS_H_
