// kPackQ6_K (load plan, q6_k_split): GGUF Q6_K rows [rows][cols/256 blocks
// of 210 bytes] -> kQ6_KPlanar's planes: each block's first 208 bytes (ql,
// qh, scales) in the data plane qs [rows][cols/256 x 208] (rows 16-byte
// aligned, which the 2-byte aligned GGUF blocks are not) and its f16 d in
// the d plane [rows][cols/256] (spec/quant-formats.md §7). A thread block
// per row; a thread per 16 bytes of the data plane or per d.
#include "compiler/codegen/emitters.h"
#include "compiler/codegen/kernel_plans.h"

namespace kiln::codegen {

using llvm::Value;

absl::Status EmitPackQ6_K(KernelBuilder& kb) {
  const KernelSpec& spec = kb.spec();
  auto& b = kb.b();
  constexpr int kBlockBytes = 210, kDataBytes = 208, kUnits = kDataBytes / 16;
  const int64_t nb = spec.cols / 256;
  kb.GridDependencyWait();
  Value* r = kb.Ctaid(0);
  kb.If(b.CreateICmpSLT(r, kb.Param("rows")), [&] {
    Value* r64 = b.CreateZExt(r, kb.I64());
    Value* src = kb.Gep(kb.Param("src"), b.CreateMul(r64, kb.I64c(nb * kBlockBytes)));
    Value* data = kb.Gep(kb.Param("qs"), b.CreateMul(r64, kb.I64c(nb * kDataBytes)));
    Value* d = kb.Gep(kb.Param("d"), b.CreateMul(r64, kb.I64c(nb * 2)));
    // Item (block, u): u < kUnits is the block's 16 bytes at 16u; u ==
    // kUnits is its d.
    kb.For(kb.Tid(), kb.I32c(nb * (kUnits + 1)), kb.I32c(spec.elementwise.threads), [&](Value* item) {
      Value* blk64 = b.CreateZExt(b.CreateUDiv(item, kb.I32c(kUnits + 1)), kb.I64());
      Value* u = b.CreateURem(item, kb.I32c(kUnits + 1));
      Value* in = kb.Gep(src, b.CreateMul(blk64, kb.I64c(kBlockBytes)));
      kb.IfElse(
          b.CreateICmpULT(u, kb.I32c(kUnits)),
          [&] {
            Value* at = b.CreateShl(b.CreateZExt(u, kb.I64()), kb.I64c(4));
            std::vector<Value*> half;
            for (int h = 0; h < 8; ++h)
              half.push_back(kb.LoadInput(kb.I16(), kb.Gep(in, b.CreateAdd(at, kb.I64c(2 * h))), 2));
            Value* vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(kb.I32(), 4));
            for (int j = 0; j < 4; ++j) {
              Value* w = kb.Prmt(b.CreateZExt(half[2 * j], kb.I32()), b.CreateZExt(half[2 * j + 1], kb.I32()), 0x5410u);
              vec = b.CreateInsertElement(vec, w, uint64_t(j));
            }
            kb.Store(vec, kb.Gep(data, b.CreateAdd(b.CreateMul(blk64, kb.I64c(kDataBytes)), at)), 16);
          },
          [&] {
            Value* dv = kb.LoadInput(kb.I16(), kb.Gep(in, int64_t{kDataBytes}), 2);
            kb.Store(dv, kb.Gep(d, b.CreateShl(blk64, kb.I64c(1))), 2);
          });
    });
  });
  kb.GridDependencyLaunchDependents();
  kb.Finish();
  return absl::OkStatus();
}

}  // namespace kiln::codegen
