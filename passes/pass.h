// The pass interface (XLA style): a pass is a small class with a kebab-case
// name() equal to its file name and Run(), which rewrites the module in
// place and returns whether it changed anything. Passes are deterministic,
// keep no global state and never print: the pipeline verifies, dumps and
// times them.
#ifndef KILN_PASSES_PASS_H_
#define KILN_PASSES_PASS_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "ir/ir.h"

namespace kiln::passes {

// What passes may know about the compilation beyond the module.
struct PassContext {
  std::string_view target = "sm_90";  // GPU target, for schedule selection
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  // Returns true if the module changed. Errors: InvalidArgument/Unimplemented
  // for input the pass cannot handle (naming the op's line), Internal for bugs.
  virtual absl::StatusOr<bool> Run(ir::Module& module, const PassContext& context) = 0;
};

}  // namespace kiln::passes

#endif  // KILN_PASSES_PASS_H_
