#include "compiler/lower/join_matvecs.h"

#include <utility>

namespace kiln::compiler {

using codegen::Family;

bool CanJoin(const codegen::KernelSpec& a, const codegen::KernelSpec& b) {
  return a.family == Family::kMatVec && b.family == Family::kMatVec && a.matvec.threads == b.matvec.threads &&
         a.matvec.blocks_per_sm == b.matvec.blocks_per_sm && a.matvec.k_split == b.matvec.k_split &&
         a.matvec.max_tokens == b.matvec.max_tokens;
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
