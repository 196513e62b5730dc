// FileCheck over the PTX of kernel specs, for the codegen tests (the
// FileCheck binary is KILN_FILECHECK, LLVM 19's).
#ifndef KILN_TESTS_COMPILER_CODEGEN_FILECHECK_H_
#define KILN_TESTS_COMPILER_CODEGEN_FILECHECK_H_

#include <string>
#include <vector>

#include "compiler/codegen/codegen.h"

namespace kiln::codegen::testing {

// Emits `specs` for `target` and runs FileCheck with `checks` over the PTX:
// a gtest failure with FileCheck's output when it fails; skips the test
// when FileCheck is not installed.
void ExpectFileCheck(const std::vector<KernelSpec>& specs, const Target& target, const std::string& checks);

}  // namespace kiln::codegen::testing

#endif  // KILN_TESTS_COMPILER_CODEGEN_FILECHECK_H_
