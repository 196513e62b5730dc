// Plain C++ versions of every kernel family on host memory, with exactly the
// kernels' parameter semantics (pointer arguments in the ABI's order and
// meaning, docs/codegen.md). The oracle for GPU numerics tests: weights are
// dequantized exactly (models/quant), sums are accumulated in double, RoPE
// angles and softmax are computed in double, caches are rounded to f16 when
// spec.kv_f16. Compare with a per-family tolerance (f16 tensor-core GEMMs
// and ex2.approx softmax are not bit-exact).
#ifndef KILN_COMPILER_CODEGEN_REFERENCE_KERNELS_H_
#define KILN_COMPILER_CODEGEN_REFERENCE_KERNELS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "compiler/codegen/kernel_spec.h"

namespace kiln::codegen::reference {

// Row `row` of a [rows][cols] weight in `format`'s device layout, as floats.
// `w` is the GGUF bytes, or the first plane of a planar format (kQ8_0Planar's
// int8 plane, kQ6_KPlanar's blocks without d), whose f16 scale plane is
// `w_scales`.
absl::Status DequantizeRow(WeightFormat format, const void* w, const void* w_scales, int64_t cols, int64_t row,
                           float* out);

// kMatVec and kGemm: out[t, m] = epilogue(sum_k W[m, k] * prologue(x)[t, k]).
// `extra` is kSiluMulWith's gate input [T, rows] (else unused).
absl::Status MatVec(const KernelSpec& spec, const void* w, const void* w_scales, const float* x,
                    const float* norm_w, float* out, int32_t T, const float* extra = nullptr);
absl::Status Embed(const KernelSpec& spec, const void* table, const int32_t* tokens, float* out, int32_t T);
absl::Status QkNormRopeStore(const KernelSpec& spec, const float* qkv, const float* q_norm, const float* k_norm,
                             const int32_t* pos, void* k_cache, void* v_cache, float* q_out, int32_t T);
// `partial` and `counter` are the kernel's scratch; the reference needs
// neither.
absl::Status AttentionDecode(const KernelSpec& spec, const float* q, const void* k_cache, const void* v_cache,
                             const int32_t* pos, float* out);
// rope_fused kAttentionDecode: QkNormRopeStore for the one token at pos[0]
// (into the caches), then AttentionDecode on its q.
absl::Status AttentionDecodeFused(const KernelSpec& spec, const float* qkv, const float* q_norm, const float* k_norm,
                                  const int32_t* pos, void* k_cache, void* v_cache, float* out);
absl::Status AttentionPrefill(const KernelSpec& spec, const float* q, const void* k_cache, const void* v_cache,
                              const int32_t* pos, float* out, int32_t T);
// spec.rows rows of `cols` logits.
absl::Status Argmax(const KernelSpec& spec, const float* logits, int32_t* out, int32_t cols);
absl::Status PackQ8_0(const KernelSpec& spec, const void* src, void* qs, void* d, int32_t rows);
// GGUF Q6_K rows -> kQ6_KPlanar's planes (qs: the blocks without d; d).
absl::Status PackQ6_K(const KernelSpec& spec, const void* src, void* qs, void* d, int32_t rows);
absl::Status CopyRows(const KernelSpec& spec, const void* src, void* dst, int32_t rows, int32_t dst_row0,
                      int32_t group_rows, int32_t group_stride);

}  // namespace kiln::codegen::reference

#endif  // KILN_COMPILER_CODEGEN_REFERENCE_KERNELS_H_
