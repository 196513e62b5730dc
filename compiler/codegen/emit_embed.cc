// kEmbed: out[t, :] = dequant(table[tokens[t], :]), exactly as ggml
// dequantizes (bit-identical to models/quant). One block per token; threads
// stride over the row's pieces (weight_decoder.h). Tables are read as
// stored in the GGUF; 2-byte aligned blocks (Q8_0, Q4_0, Q6_K) through
// 2-byte loads, since one row is read once per token.
#include "compiler/codegen/emitters.h"
#include "compiler/codegen/kernel_plans.h"
#include "compiler/codegen/weight_decoder.h"

namespace kiln::codegen {

using llvm::Value;

absl::Status EmitEmbed(KernelBuilder& kb) {
  const KernelSpec& spec = kb.spec();
  auto& b = kb.b();
  WeightDecoder dec(spec.weight);
  const FormatGeometry& g = dec.geometry();
  const int64_t row_bytes = WeightRowBytes(spec.weight, spec.cols);
  const int NT = spec.elementwise.threads;

  kb.GridDependencyWait();
  Value* t = kb.Ctaid(0);
  Value* tok = kb.LoadInput(kb.I32(), kb.Gep(kb.Param("tokens"), b.CreateShl(b.CreateZExt(t, kb.I64()), kb.I64c(2))), 4);
  // An out-of-range id reads row 0 or the last row instead of faulting.
  tok = b.CreateSelect(b.CreateICmpSLT(tok, kb.I32c(0)), kb.I32c(0), tok);
  tok = b.CreateSelect(b.CreateICmpSLT(tok, kb.I32c(spec.rows)), tok, kb.I32c(spec.rows - 1));
  Value* row = kb.Gep(kb.Param("table"), b.CreateMul(b.CreateZExt(tok, kb.I64()), kb.I64c(row_bytes)));
  Value* out_row = kb.Gep(kb.Param("out"), b.CreateMul(b.CreateZExt(t, kb.I64()), kb.I64c(spec.cols * 4)));
  U16Reader reader = [&](Value* block, Value* off) -> Value* {
    Value* byte = b.CreateAdd(b.CreateMul(b.CreateZExt(block, kb.I64()), kb.I64c(g.block_bytes)),
                              b.CreateZExt(off, kb.I64()));
    return kb.LoadNc(kb.I16(), kb.Gep(row, byte), 2);
  };
  kb.For(kb.Tid(), kb.I32c(spec.cols / g.piece_weights), kb.I32c(NT), [&](Value* p) {
    PieceRef ref{row, nullptr, p};
    std::vector<Value*> raw = dec.Load(kb, ref, &reader);
    for (const Segment& s : dec.Decode(kb, ref, raw)) {
      for (const Quad& q : s.quads) {
        std::vector<Value*> w;
        for (int i = 0; i < 4; ++i) w.push_back(dec.ExactWeight(kb, s, q.f[i]));
        kb.Store4xF32(kb.Gep(out_row, b.CreateShl(b.CreateZExt(q.col, kb.I64()), kb.I64c(2))), w);
      }
    }
  });
  kb.GridDependencyLaunchDependents();
  kb.Finish();
  return absl::OkStatus();
}

}  // namespace kiln::codegen
