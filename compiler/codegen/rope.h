// NEOX RoPE (spec/qwen3-model.md §3.4) for the kernels that rotate q and k:
// kQkNormRopeStore and kAttentionDecode with rope_fused. Internal to
// compiler/codegen.
//
// Precision: f_i = base^(-2i/D) (with linear or YaRN scaling folded in:
// RopeFrequencies) is a table of doubles computed on the host with pow(); theta = p * table[i] is formed in f64 and reduced to [-pi, pi] in
// f64 (Cody-Waite with a two-part 2*pi), then sin.approx/cos.approx.f32 run
// on the reduced angle: absolute error about 1e-6 at every position, where
// an all-fp32 theta (as in llama.cpp or HF) is off by up to ~2e-3 rad at
// position 40k.
#ifndef KILN_COMPILER_CODEGEN_ROPE_H_
#define KILN_COMPILER_CODEGEN_ROPE_H_

#include <utility>

#include "compiler/codegen/kernel_builder.h"

namespace kiln::codegen {

// cos and sin of theta_i = p * f_i (RopeFrequencies: base^(-2i/D), scaled
// as spec.rope_scaling says), times spec.rope_scaling.mscale.
struct RopeAngle {
  llvm::Value* cos = nullptr;
  llvm::Value* sin = nullptr;
};

class Rope {
 public:
  // Adds the kernel's frequency table (RopeFrequencies: spec.head_dim / 2
  // doubles) to the module.
  explicit Rope(KernelBuilder& kb);

  // Pair i's angle at position p (i32). It depends on neither the row nor
  // anything a kernel writes, so a kernel may form it before
  // griddepcontrol.wait (the table is .const: lanes reading their own
  // entries take the constant cache one address at a time).
  RopeAngle Angle(llvm::Value* p, llvm::Value* i);
  // Pair i = (x_i, x_{i+D/2}) of a head rotated by its angle:
  //   (y0 cos - y1 sin, y0 sin + y1 cos).
  std::pair<llvm::Value*, llvm::Value*> Apply(const RopeAngle& a, llvm::Value* y0, llvm::Value* y1);
  std::pair<llvm::Value*, llvm::Value*> Rotate(llvm::Value* p, llvm::Value* i, llvm::Value* y0, llvm::Value* y1) {
    return Apply(Angle(p, i), y0, y1);
  }

 private:
  KernelBuilder& kb_;
  float mscale_;  // spec.rope_scaling.mscale
  llvm::Value* inv_freq_;
};

// Element i of a K or V cache row (f16 or f32, spec.kv_f16) = v.
void StoreCacheElement(KernelBuilder& kb, llvm::Value* row, llvm::Value* i, llvm::Value* v);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_ROPE_H_
