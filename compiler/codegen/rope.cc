#include "compiler/codegen/rope.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

namespace kiln::codegen {

using llvm::Value;

std::vector<double> RopeFrequencies(const KernelSpec& spec) {
  const int64_t D = spec.head_dim;
  const KernelSpec::RopeScaling& s = spec.rope_scaling;
  std::vector<double> table(static_cast<size_t>(D / 2));
  for (int64_t i = 0; i < D / 2; ++i) {
    const double y = (static_cast<double>(i) - s.ramp_low) / std::max(0.001, double(s.ramp_high) - s.ramp_low);
    const double mix = s.ext_factor * (1.0 - std::clamp(y, 0.0, 1.0));
    table[static_cast<size_t>(i)] = std::pow(static_cast<double>(spec.rope_base), -2.0 * static_cast<double>(i) / D) *
                                    (s.freq_scale * (1.0 - mix) + mix);
  }
  return table;
}

Rope::Rope(KernelBuilder& kb) : kb_(kb), mscale_(kb.spec().rope_scaling.mscale) {
  const KernelSpec& spec = kb.spec();
  const std::vector<double> table = RopeFrequencies(spec);
  llvm::Constant* init = llvm::ConstantDataArray::get(kb.ctx(), llvm::ArrayRef<double>(table));
  auto* g = new llvm::GlobalVariable(kb.module(), init->getType(), true, llvm::GlobalValue::InternalLinkage, init,
                                     spec.name + "_inv_freq", nullptr, llvm::GlobalValue::NotThreadLocal, 4);
  g->setAlignment(llvm::Align(8));
  inv_freq_ = g;
}

RopeAngle Rope::Angle(Value* p, Value* i) {
  auto& b = kb_.b();
  llvm::Type* f64 = b.getDoubleTy();
  auto dc = [&](double v) { return llvm::ConstantFP::get(f64, v); };
  const double kTwoPiHi = 6.283185307179586;       // double(2*pi)
  const double kTwoPiLo = 2.4492935982947064e-16;  // 2*pi - kTwoPiHi
  const double kInvTwoPi = 0.15915494309189535;
  Value* f = b.CreateLoad(f64, b.CreateGEP(f64, inv_freq_, {b.CreateZExt(i, kb_.I64())}));
  Value* theta = b.CreateFMul(b.CreateSIToFP(p, f64), f);
  Value* nk = b.CreateFNeg(b.CreateIntrinsic(llvm::Intrinsic::rint, {f64}, {b.CreateFMul(theta, dc(kInvTwoPi))}));
  Value* red = b.CreateIntrinsic(llvm::Intrinsic::fma, {f64}, {nk, dc(kTwoPiHi), theta});
  red = b.CreateIntrinsic(llvm::Intrinsic::fma, {f64}, {nk, dc(kTwoPiLo), red});
  Value* a = b.CreateFPTrunc(red, kb_.F32());
  Value* c = b.CreateIntrinsic(llvm::Intrinsic::nvvm_cos_approx_f, {}, {a});
  Value* s = b.CreateIntrinsic(llvm::Intrinsic::nvvm_sin_approx_f, {}, {a});
  if (mscale_ != 1.0f) {  // YaRN's magnitude
    c = b.CreateFMul(c, kb_.F32c(mscale_));
    s = b.CreateFMul(s, kb_.F32c(mscale_));
  }
  return {c, s};
}

std::pair<Value*, Value*> Rope::Apply(const RopeAngle& a, Value* y0, Value* y1) {
  auto& b = kb_.b();
  Value *c = a.cos, *s = a.sin;
  return {b.CreateFSub(b.CreateFMul(y0, c), b.CreateFMul(y1, s)), b.CreateFAdd(b.CreateFMul(y0, s), b.CreateFMul(y1, c))};
}

void StoreCacheElement(KernelBuilder& kb, Value* row, Value* i, Value* v) {
  auto& b = kb.b();
  const bool f16 = kb.spec().kv_f16;
  Value* at = kb.Gep(row, b.CreateMul(b.CreateZExt(i, kb.I64()), kb.I64c(f16 ? 2 : 4)));
  if (f16)
    kb.Store(kb.FloatToHalf(v), at, 2);
  else
    kb.Store(v, at, 4);
}

}  // namespace kiln::codegen
