#include "compiler/lower/join_matvecs.h"

#include <utility>

#include "compiler/codegen/kernel_abi.h"
#include "compiler/codegen/kernel_validation.h"

namespace kiln::compiler {

using codegen::Family;

bool CanJoin(const codegen::KernelSpec& a, const codegen::KernelSpec& b, const codegen::Target& target) {
  codegen::KernelSpec join;
  join.name = "join";  // validation wants an identifier; Launch names the kernel
  join.family = Family::kMatVecJoin;
  join.parts = {a, b};
  return codegen::ValidateKernelSpec(join, target).ok();
}

MatVecLaunch Join(MatVecLaunch a, MatVecLaunch b) {
  MatVecLaunch j;
  j.spec.family = Family::kMatVecJoin;
  j.spec.parts = {std::move(a.spec), std::move(b.spec)};
  j.args = std::move(a.args);
  j.args.insert(j.args.end(), b.args.begin(), b.args.end());
  j.tokens = std::move(a.tokens);
  j.read = {a.read.bytes + b.read.bytes, a.read.per_position + b.read.per_position};
  return j;
}

}  // namespace kiln::compiler
