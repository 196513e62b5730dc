// kQkNormRopeStore (spec/qwen3-model.md §3.3, §3.4): for token t and head h
// of block (t, h): RMSNorm over the head (eps, shared q_norm / k_norm
// weights), then NEOX RoPE at position p = pos[0] + t on pairs (i, i + D/2):
//   theta_i = p * base^(-2i/D)
//   x'_i = x_i cos - x_{i+D/2} sin,   x'_{i+D/2} = x_i sin + x_{i+D/2} cos.
// Query heads go to q_out[t]; key heads go to k_cache row p, with the
// matching value head (not normalized, not rotated) to v_cache row p.
//
// Precision: base^(-2i/D) is a table of doubles computed on the host with
// pow(); theta = p * table[i] is formed in f64 and reduced to [-pi, pi] in
// f64 (Cody-Waite with a two-part 2*pi), then sin.approx/cos.approx.f32 run
// on the reduced angle: absolute error about 1e-6 at every position, where
// an all-fp32 theta (as in llama.cpp or HF) is off by up to ~2e-3 rad at
// position 40k.
#include <cmath>

#include "compiler/codegen/emitters.h"
#include "compiler/codegen/kernel_plans.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

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

  std::vector<double> table(static_cast<size_t>(H2));
  for (int64_t i = 0; i < H2; ++i)
    table[static_cast<size_t>(i)] = std::pow(static_cast<double>(spec.rope_base), -2.0 * static_cast<double>(i) / D);
  llvm::Constant* init = llvm::ConstantDataArray::get(kb.ctx(), llvm::ArrayRef<double>(table));
  auto* inv_freq = new llvm::GlobalVariable(kb.module(), init->getType(), true, llvm::GlobalValue::InternalLinkage,
                                            init, spec.name + "_inv_freq", nullptr,
                                            llvm::GlobalValue::NotThreadLocal, 4);
  inv_freq->setAlignment(llvm::Align(8));

  Value* smem = kb.StaticShared(int64_t{4} * NW + 16);
  Value* tid = kb.Tid();
  Value* t = kb.Ctaid(0);
  Value* h = kb.Ctaid(1);
  kb.GridDependencyWait();
  Value* pos = kb.Load(kb.I32(), kb.Param("pos"), 4);
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
    Value* x = kb.Load(kb.F32(), elem(src, i, nullptr), 4);
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
  Value* pd = b.CreateSIToFP(p, b.getDoubleTy());
  const double kTwoPiHi = 6.283185307179586;                 // double(2*pi)
  const double kTwoPiLo = 2.4492935982947064e-16;            // 2*pi - kTwoPiHi
  const double kInvTwoPi = 0.15915494309189535;
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
  auto store_cache = [&](Value* row, Value* i, Value* v) {
    Value* off = b.CreateMul(b.CreateZExt(i, kb.I64()), kb.I64c(eb));
    if (spec.kv_f16)
      kb.Store(kb.FloatToHalf(v), kb.Gep(row, off), 2);
    else
      kb.Store(v, kb.Gep(row, off), 4);
  };

  kb.For(tid, half_d, kb.I32c(NT), [&](Value* i) {
    Value* x0 = kb.Load(kb.F32(), elem(src, i, nullptr), 4);
    Value* x1 = kb.Load(kb.F32(), elem(src, i, half_d), 4);
    Value* y0 = b.CreateFMul(b.CreateFMul(x0, r), kb.Load(kb.F32(), elem(w, i, nullptr), 4));
    Value* y1 = b.CreateFMul(b.CreateFMul(x1, r), kb.Load(kb.F32(), elem(w, i, half_d), 4));
    Value* f = b.CreateLoad(b.getDoubleTy(), b.CreateGEP(b.getDoubleTy(), inv_freq, {b.CreateZExt(i, kb.I64())}));
    Value* theta = b.CreateFMul(pd, f);
    Value* k = b.CreateIntrinsic(llvm::Intrinsic::rint, {b.getDoubleTy()},
                                 {b.CreateFMul(theta, llvm::ConstantFP::get(b.getDoubleTy(), kInvTwoPi))});
    Value* nk = b.CreateFNeg(k);
    Value* red = b.CreateIntrinsic(llvm::Intrinsic::fma, {b.getDoubleTy()},
                                   {nk, llvm::ConstantFP::get(b.getDoubleTy(), kTwoPiHi), theta});
    red = b.CreateIntrinsic(llvm::Intrinsic::fma, {b.getDoubleTy()},
                            {nk, llvm::ConstantFP::get(b.getDoubleTy(), kTwoPiLo), red});
    Value* a = b.CreateFPTrunc(red, kb.F32());
    Value* c = b.CreateIntrinsic(llvm::Intrinsic::nvvm_cos_approx_f, {}, {a});
    Value* s = b.CreateIntrinsic(llvm::Intrinsic::nvvm_sin_approx_f, {}, {a});
    Value* o0 = b.CreateFSub(b.CreateFMul(y0, c), b.CreateFMul(y1, s));
    Value* o1 = b.CreateFAdd(b.CreateFMul(y0, s), b.CreateFMul(y1, c));
    kb.IfElse(
        is_q,
        [&] {
          kb.Store(o0, elem(q_out_row, i, nullptr), 4);
          kb.Store(o1, elem(q_out_row, i, half_d), 4);
        },
        [&] {
          store_cache(k_row, i, o0);
          store_cache(k_row, b.CreateAdd(i, half_d), o1);
          store_cache(v_row, i, kb.Load(kb.F32(), elem(v_src, i, nullptr), 4));
          store_cache(v_row, b.CreateAdd(i, half_d), kb.Load(kb.F32(), elem(v_src, i, half_d), 4));
        });
  });
  kb.GridDependencyLaunchDependents();
  kb.Finish();
  return absl::OkStatus();
}

}  // namespace kiln::codegen
