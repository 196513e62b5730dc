// kMatVecJoin: several matvecs in one launch (docs/codegen.md "matvec
// join"). The kernel is each part's matvec code in turn, behind a branch
// on the block index: part i owns the blocks after part i - 1's, as many as
// its own launch would have (grid.x), and sees them numbered from 0, its
// own parameters (JoinParamPrefix) and the shared static array. A block
// runs one part, so every part keeps its schedule, barriers and
// griddepcontrol as it is alone; what the join saves is the launch
// boundary between them, and the smaller part's blocks fill the larger's
// tail.
#include "absl/strings/str_cat.h"
#include "compiler/codegen/emitters.h"

namespace kiln::codegen {

absl::Status EmitMatVecJoin(KernelBuilder& kb) {
  const KernelSpec& join = kb.spec();
  auto& b = kb.b();
  llvm::Value* block = kb.Ctaid(0);
  int64_t first = 0;
  for (size_t i = 0; i < join.parts.size(); ++i) {
    const KernelSpec part = JoinPart(join, i);
    absl::StatusOr<KernelAbi> abi = DescribeKernel(part, kb.target());
    if (!abi.ok()) return abi.status();
    const int64_t blocks = abi->grid[0].constant;
    llvm::BasicBlock* body = llvm::BasicBlock::Create(kb.ctx(), absl::StrCat("part", i), kb.function());
    llvm::BasicBlock* next = nullptr;
    if (i + 1 < join.parts.size()) {
      next = llvm::BasicBlock::Create(kb.ctx(), absl::StrCat("after_part", i), kb.function());
      b.CreateCondBr(b.CreateICmpULT(block, kb.I32c(first + blocks)), body, next);
    } else {
      b.CreateBr(body);
    }
    b.SetInsertPoint(body);
    kb.BeginJoinPart(part, first, JoinParamPrefix(i));
    absl::Status s = EmitMatVec(kb);  // ends its blocks with ret
    kb.EndJoinPart();
    if (!s.ok()) return s;
    if (next != nullptr) b.SetInsertPoint(next);
    first += blocks;
  }
  return absl::OkStatus();
}

}  // namespace kiln::codegen
