// kPackQ8_0 (load plan): GGUF Q8_0 rows [rows][cols/32 blocks of 34 bytes]
// -> the planar layout kMatVec reads: an int8 plane qs[rows][cols] (rows
// 16-byte aligned) and an f16 scale plane d[rows][cols/32]
// (spec/quant-formats.md §2). One block per row; a thread per Q8_0 block.
#include "compiler/codegen/emitters.h"
#include "compiler/codegen/kernel_plans.h"

namespace kiln::codegen {

using llvm::Value;

absl::Status EmitPackQ8_0(KernelBuilder& kb) {
  const KernelSpec& spec = kb.spec();
  auto& b = kb.b();
  const int64_t nb = spec.cols / 32;
  kb.GridDependencyWait();
  Value* r = kb.Ctaid(0);
  kb.If(b.CreateICmpSLT(r, kb.Param("rows")), [&] {
    Value* r64 = b.CreateZExt(r, kb.I64());
    Value* src = kb.Gep(kb.Param("src"), b.CreateMul(r64, kb.I64c(nb * 34)));
    Value* qs = kb.Gep(kb.Param("qs"), b.CreateMul(r64, kb.I64c(spec.cols)));
    Value* d = kb.Gep(kb.Param("d"), b.CreateMul(r64, kb.I64c(nb * 2)));
    kb.For(kb.Tid(), kb.I32c(nb), kb.I32c(spec.elementwise.threads), [&](Value* blk) {
      Value* blk64 = b.CreateZExt(blk, kb.I64());
      Value* in = kb.Gep(src, b.CreateMul(blk64, kb.I64c(34)));
      std::vector<Value*> half;
      for (int i = 0; i < 17; ++i) half.push_back(kb.LoadNc(kb.I16(), kb.Gep(in, int64_t{2} * i), 2));
      kb.Store(half[0], kb.Gep(d, b.CreateShl(blk64, kb.I64c(1))), 2);
      for (int v = 0; v < 2; ++v) {
        Value* vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(kb.I32(), 4));
        for (int j = 0; j < 4; ++j) {
          int k = 1 + 8 * v + 2 * j;
          Value* w = kb.Prmt(b.CreateZExt(half[k], kb.I32()), b.CreateZExt(half[k + 1], kb.I32()), 0x5410u);
          vec = b.CreateInsertElement(vec, w, uint64_t(j));
        }
        kb.Store(vec, kb.Gep(qs, b.CreateAdd(b.CreateShl(blk64, kb.I64c(5)), kb.I64c(16 * v))), 16);
      }
    });
  });
  kb.GridDependencyLaunchDependents();
  kb.Finish();
  return absl::OkStatus();
}

}  // namespace kiln::codegen
