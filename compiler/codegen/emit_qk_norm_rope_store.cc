// kQkNormRopeStore (spec/qwen3-model.md §3.3, §3.4): for token t and head h
// of block (t, h): RMSNorm over the head (eps, shared q_norm / k_norm
// weights), then NEOX RoPE at position p = pos[0] + t on pairs (i, i + D/2):
//   theta_i = p * base^(-2i/D)
//   x'_i = x_i cos - x_{i+D/2} sin,   x'_{i+D/2} = x_i sin + x_{i+D/2} cos.
// Query heads go to q_out[t]; key heads go to k_cache row p, with the
// matching value head (not normalized, not rotated) to v_cache row p.
// RoPE angles and their precision: rope.h.
#include "compiler/codegen/emitters.h"
#include "compiler/codegen/kernel_plans.h"
#include "compiler/codegen/rope.h"

namespace kiln::codegen {

using llvm::Value;

absl::Status EmitQkNormRopeStore(KernelBuilder& kb) {
  const KernelSpec& spec = kb.spec();
  auto& b = kb.b();
  const int64_t D = spec.head_dim, H2 = D / 2;
  const int64_t nq = spec.n_head, nkv = spec.n_head_kv;
  const int64_t qkv_row = (nq + 2 * nkv) * D;
  const int NT = spec.elementwise.threads, NW = NT / kWarp;
  const int eb = spec.kv_f16 ? 2 : 4;

  Rope rope(kb);

  Value* smem = kb.StaticShared(int64_t{4} * NW + 16);
  Value* tid = kb.Tid();
  Value* t = kb.Ctaid(0);
  Value* h = kb.Ctaid(1);
  kb.GridDependencyWait();
  Value* pos = kb.LoadInput(kb.I32(), kb.Param("pos"), 4);
  Value* p = b.CreateAdd(pos, t);
  Value* is_q = b.CreateICmpSLT(h, kb.I32c(nq));
  Value* t64 = b.CreateZExt(t, kb.I64());
  // This head's D inputs and its norm weight.
  Value* src_elem = b.CreateAdd(b.CreateMul(t64, kb.I64c(qkv_row)), b.CreateMul(b.CreateZExt(h, kb.I64()), kb.I64c(D)));
  Value* src = kb.Gep(kb.Param("qkv"), b.CreateShl(src_elem, kb.I64c(2)));
  Value* w = b.CreateSelect(is_q, kb.Param("q_norm"), kb.Param("k_norm"));
  auto elem = [&](Value* base, Value* i, Value* plus) {
    Value* idx = plus == nullptr ? i : b.CreateAdd(i, plus);
    return kb.Gep(base, b.CreateShl(b.CreateZExt(idx, kb.I64()), kb.I64c(2)));
  };

  // Sum of squares over the head.
  Value* ss = kb.Var(kb.F32(), kb.F32c(0.0f), "ss");
  kb.For(tid, kb.I32c(D), kb.I32c(NT), [&](Value* i) {
    Value* x = kb.LoadInput(kb.F32(), elem(src, i, nullptr), 4);
    kb.Set(ss, kb.Fma(x, x, kb.Get(ss)));
  });
  Value* part = kb.WarpSum(kb.Get(ss));
  Value* lane = b.CreateAnd(tid, kb.I32c(31));
  Value* warp = b.CreateLShr(tid, kb.I32c(5));
  kb.If(b.CreateICmpEQ(lane, kb.I32c(0)), [&] { kb.Store(part, kb.Gep(smem, b.CreateShl(warp, kb.I32c(2))), 4); });
  kb.Barrier();
  Value* total = nullptr;
  for (int i = 0; i < NW; ++i) {
    Value* v = kb.Load(kb.F32(), kb.Gep(smem, int64_t{4} * i), 4);
    total = total == nullptr ? v : b.CreateFAdd(total, v);
  }
  Value* r = b.CreateFDiv(kb.F32c(1.0f),
                          kb.Sqrt(b.CreateFAdd(b.CreateFDiv(total, kb.F32c(static_cast<float>(D))), kb.F32c(spec.eps))));

  Value* half_d = kb.I32c(H2);
  Value* q_out_row = kb.Gep(kb.Param("q_out"), b.CreateShl(b.CreateAdd(b.CreateMul(t64, kb.I64c(nq * D)),
                                                                       b.CreateMul(b.CreateZExt(h, kb.I64()), kb.I64c(D))),
                                                           kb.I64c(2)));
  Value* kh = b.CreateSub(h, kb.I32c(nq));
  Value* cache_elem = b.CreateAdd(b.CreateMul(b.CreateSExt(p, kb.I64()), kb.I64c(nkv * D)),
                                  b.CreateMul(b.CreateSExt(kh, kb.I64()), kb.I64c(D)));
  Value* k_row = kb.Gep(kb.Param("k_cache"), b.CreateMul(cache_elem, kb.I64c(eb)));
  Value* v_row = kb.Gep(kb.Param("v_cache"), b.CreateMul(cache_elem, kb.I64c(eb)));
  // The value head of KV head kh sits nkv heads after the key head.
  Value* v_src = kb.Gep(src, kb.I64c(nkv * D * 4));

  kb.For(tid, half_d, kb.I32c(NT), [&](Value* i) {
    Value* x0 = kb.LoadInput(kb.F32(), elem(src, i, nullptr), 4);
    Value* x1 = kb.LoadInput(kb.F32(), elem(src, i, half_d), 4);
    Value* y0 = b.CreateFMul(b.CreateFMul(x0, r), kb.Load(kb.F32(), elem(w, i, nullptr), 4));
    Value* y1 = b.CreateFMul(b.CreateFMul(x1, r), kb.Load(kb.F32(), elem(w, i, half_d), 4));
    const std::pair<Value*, Value*> o = rope.Rotate(p, i, y0, y1);
    kb.IfElse(
        is_q,
        [&] {
          kb.Store(o.first, elem(q_out_row, i, nullptr), 4);
          kb.Store(o.second, elem(q_out_row, i, half_d), 4);
        },
        [&] {
          StoreCacheElement(kb, k_row, i, o.first);
          StoreCacheElement(kb, k_row, b.CreateAdd(i, half_d), o.second);
          StoreCacheElement(kb, v_row, i, kb.LoadInput(kb.F32(), elem(v_src, i, nullptr), 4));
          StoreCacheElement(kb, v_row, b.CreateAdd(i, half_d), kb.LoadInput(kb.F32(), elem(v_src, i, half_d), 4));
        });
  });
  kb.GridDependencyLaunchDependents();
  kb.Finish();
  return absl::OkStatus();
}

}  // namespace kiln::codegen
