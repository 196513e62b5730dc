// kCopyRows (load plan): source row i (row_bytes bytes) goes to destination
// row dst_row0 + (i / group_rows) * group_stride + i % group_rows. With
// group_rows = rows that is a plain offset (Q/K/V concatenation); with
// group_rows = pair_group and group_stride = 2*pair_group it interleaves
// gate and up rows for kSiluMulPairs (dst_row0 = 0 for gate, pair_group for
// up). group_rows <= 0 means one group. One block per row, the widest
// access row_bytes allows (16 bytes when it is a multiple of 16).
#include "compiler/codegen/emitters.h"
#include "compiler/codegen/kernel_plans.h"

namespace kiln::codegen {

using llvm::Value;

absl::Status EmitCopyRows(KernelBuilder& kb) {
  const KernelSpec& spec = kb.spec();
  auto& b = kb.b();
  int width = 16;
  while (spec.row_bytes % width != 0) width /= 2;
  llvm::Type* ty = width == 16  ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(kb.I32(), 4))
                   : width == 8 ? kb.I64()
                   : width == 4 ? kb.I32()
                   : width == 2 ? kb.I16()
                                : kb.I8();
  kb.GridDependencyWait();
  Value* i = kb.Ctaid(0);
  Value* rows = kb.Param("rows");
  kb.If(b.CreateICmpSLT(i, rows), [&] {
    Value* gr = kb.Param("group_rows");
    gr = b.CreateSelect(b.CreateICmpSGT(gr, kb.I32c(0)), gr, rows);
    Value* dst_row = b.CreateAdd(kb.Param("dst_row0"),
                                 b.CreateAdd(b.CreateMul(b.CreateUDiv(i, gr), kb.Param("group_stride")),
                                             b.CreateURem(i, gr)));
    Value* src = kb.Gep(kb.Param("src"), b.CreateMul(b.CreateZExt(i, kb.I64()), kb.I64c(spec.row_bytes)));
    Value* dst = kb.Gep(kb.Param("dst"), b.CreateMul(b.CreateSExt(dst_row, kb.I64()), kb.I64c(spec.row_bytes)));
    kb.For(kb.Tid(), kb.I32c(spec.row_bytes / width), kb.I32c(spec.elementwise.threads), [&](Value* j) {
      Value* off = b.CreateMul(b.CreateZExt(j, kb.I64()), kb.I64c(width));
      kb.Store(kb.LoadInput(ty, kb.Gep(src, off), width), kb.Gep(dst, off), width);
    });
  });
  kb.GridDependencyLaunchDependents();
  kb.Finish();
  return absl::OkStatus();
}

}  // namespace kiln::codegen
