// Checks a KernelSpec against everything its emitter relies on (schedule
// ranges, shapes, shared memory, register caps) before any code or ABI is
// derived from it. LLVM-free.
#ifndef KILN_COMPILER_CODEGEN_KERNEL_VALIDATION_H_
#define KILN_COMPILER_CODEGEN_KERNEL_VALIDATION_H_

#include "absl/status/status.h"
#include "compiler/codegen/kernel_abi.h"
#include "compiler/codegen/kernel_spec.h"

namespace kiln::codegen {

// Errors are InvalidArgument and name the kernel.
absl::Status ValidateKernelSpec(const KernelSpec& spec, const Target& target);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_KERNEL_VALIDATION_H_
