#include "compiler/codegen/reference_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "compiler/codegen/kernel_abi.h"
#include "models/gguf/ggml_type.h"
#include "models/quant/dequantize.h"
#include "models/quant/float16.h"

namespace kiln::codegen::reference {
namespace {

using gguf::GgmlType;

absl::Status Check(const KernelSpec& spec, Family a, Family b = Family::kEmbed) {
  if (spec.family != a && !(b != Family::kEmbed && spec.family == b))
    return absl::InvalidArgumentError(
        absl::StrCat("reference: kernel '", spec.name, "' is a ", FamilyName(spec.family), " kernel"));
  return absl::OkStatus();
}

double Silu(double z) { return z / (1.0 + std::exp(-z)); }

float CacheLoad(const void* cache, bool f16, int64_t index) {
  if (f16) {
    uint16_t h;
    std::memcpy(&h, static_cast<const uint8_t*>(cache) + 2 * index, 2);
    return quant::HalfToFloat(h);
  }
  float f;
  std::memcpy(&f, static_cast<const uint8_t*>(cache) + 4 * index, 4);
  return f;
}

void CacheStore(void* cache, bool f16, int64_t index, float v) {
  if (f16) {
    uint16_t h = quant::FloatToHalf(v);
    std::memcpy(static_cast<uint8_t*>(cache) + 2 * index, &h, 2);
  } else {
    std::memcpy(static_cast<uint8_t*>(cache) + 4 * index, &v, 4);
  }
}

// One query row of attention over cache positions 0..last: softmax in
// double of scale * q.k, then the weighted sum of V.
void AttendOne(const KernelSpec& spec, const float* q, const void* k_cache, const void* v_cache, int64_t kvh,
               int64_t last, float* out) {
  const int64_t D = spec.head_dim, row = spec.n_head_kv * D;
  std::vector<double> s(static_cast<size_t>(last + 1));
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j <= last; ++j) {
    double dot = 0;
    for (int64_t d = 0; d < D; ++d) dot += double(q[d]) * CacheLoad(k_cache, spec.kv_f16, j * row + kvh * D + d);
    s[size_t(j)] = dot * spec.attn_scale;
    mx = std::max(mx, s[size_t(j)]);
  }
  double den = 0;
  for (double& v : s) {
    v = std::exp(v - mx);
    den += v;
  }
  for (int64_t d = 0; d < D; ++d) {
    double acc = 0;
    for (int64_t j = 0; j <= last; ++j) acc += s[size_t(j)] * CacheLoad(v_cache, spec.kv_f16, j * row + kvh * D + d);
    out[d] = static_cast<float>(acc / den);
  }
}

}  // namespace

absl::Status DequantizeRow(WeightFormat format, const void* w, const void* w_scales, int64_t cols, int64_t row,
                           float* out) {
  const int64_t row_bytes = WeightRowBytes(format, cols);
  const uint8_t* src = static_cast<const uint8_t*>(w) + row * row_bytes;
  const uint8_t* scales = static_cast<const uint8_t*>(w_scales) + row * ScaleRowBytes(format, cols);
  if (format == WeightFormat::kQ8_0Planar) {
    for (int64_t i = 0; i < cols; ++i) {
      uint16_t h;
      std::memcpy(&h, scales + (i / 32) * 2, 2);
      out[i] = quant::HalfToFloat(h) * static_cast<float>(static_cast<int8_t>(src[i]));
    }
    return absl::OkStatus();
  }
  if (format == WeightFormat::kQ6_KPlanar) {
    // Reassemble the GGUF blocks (208 bytes, then d) and decode those.
    std::vector<uint8_t> blocks(static_cast<size_t>(cols / 256 * 210));
    for (int64_t b = 0; b < cols / 256; ++b) {
      std::memcpy(blocks.data() + b * 210, src + b * 208, 208);
      std::memcpy(blocks.data() + b * 210 + 208, scales + b * 2, 2);
    }
    return quant::Dequantize(GgmlType::kQ6_K, blocks, absl::MakeSpan(out, static_cast<size_t>(cols)));
  }
  GgmlType type = GgmlType::kF32;
  switch (format) {
    case WeightFormat::kF32: type = GgmlType::kF32; break;
    case WeightFormat::kF16: type = GgmlType::kF16; break;
    case WeightFormat::kBF16: type = GgmlType::kBF16; break;
    case WeightFormat::kQ8_0: type = GgmlType::kQ8_0; break;
    case WeightFormat::kQ4_0: type = GgmlType::kQ4_0; break;
    case WeightFormat::kQ4_K: type = GgmlType::kQ4_K; break;
    case WeightFormat::kQ5_K: type = GgmlType::kQ5_K; break;
    case WeightFormat::kQ6_K: type = GgmlType::kQ6_K; break;
    case WeightFormat::kQ8_0Planar:
    case WeightFormat::kQ6_KPlanar: break;
  }
  return quant::Dequantize(type, absl::MakeConstSpan(src, static_cast<size_t>(row_bytes)),
                           absl::MakeSpan(out, static_cast<size_t>(cols)));
}

absl::Status MatVec(const KernelSpec& spec, const void* w, const void* w_scales, const float* x, const float* norm_w,
                    float* out, int32_t T, const float* extra) {
  absl::Status s = Check(spec, Family::kMatVec, Family::kGemm);
  if (!s.ok()) return s;
  const int64_t rows = spec.rows, cols = spec.cols;
  const bool int8_x = spec.family == Family::kMatVec && spec.matvec.int8_activations;
  // Prologue: RMSNorm as spec/qwen3-model.md §3.1 (squares summed in double).
  // int8 activations: x * norm_w is quantized per 32 columns as the kernel
  // does (emit_matvec.cc: two int8 levels) and the dot product scaled by
  // the norm factor afterwards.
  std::vector<double> xn(static_cast<size_t>(T) * cols);
  std::vector<double> post(static_cast<size_t>(T), 1.0);
  for (int32_t t = 0; t < T; ++t) {
    const float* xt = x + int64_t{t} * cols;
    double* yt = xn.data() + int64_t{t} * cols;
    float r = 1.0f;
    if (spec.prologue == Prologue::kRmsNorm) {
      double sum = 0;
      for (int64_t k = 0; k < cols; ++k) sum += double(xt[k] * xt[k]);
      r = 1.0f / std::sqrt(static_cast<float>(sum / cols) + spec.eps);
    }
    if (!int8_x) {
      for (int64_t k = 0; k < cols; ++k)
        yt[k] = spec.prologue == Prologue::kRmsNorm ? (xt[k] * r) * norm_w[k] : xt[k];
      continue;
    }
    post[size_t(t)] = r;
    for (int64_t k0 = 0; k0 < cols; k0 += 32) {
      float v[32], amax = 0.0f;
      for (int i = 0; i < 32; ++i) {
        v[i] = spec.prologue == Prologue::kRmsNorm ? xt[k0 + i] * norm_w[k0 + i] : xt[k0 + i];
        amax = std::max(amax, std::fabs(v[i]));
      }
      // Two levels: q1 = round(v / d1), q2 = round(128 (v - d1 q1) / d1),
      // rounding as the kernel does (adding 1.5 * 2^23), fp contraction off.
      const float kMagic = 12582912.0f;
      const float d1 = amax * (1.0f / 127.0f), inv = amax > 0.0f ? 127.0f / amax : 0.0f, inv2 = inv * 128.0f;
      const float d2 = d1 * (1.0f / 128.0f);
      for (int i = 0; i < 32; ++i) {
        const float q1 = (v[i] * inv + kMagic) - kMagic;
        const float r = std::fma(-d1, q1, v[i]);
        const float q2 = (r * inv2 + kMagic) - kMagic;
        yt[k0 + i] = double(d1) * q1 + double(d2) * q2;
      }
    }
  }
  std::vector<double> acc(static_cast<size_t>(T) * rows);
  std::vector<float> wrow(static_cast<size_t>(cols));
  for (int64_t m = 0; m < rows; ++m) {
    s = DequantizeRow(spec.weight, w, w_scales, cols, m, wrow.data());
    if (!s.ok()) return s;
    for (int32_t t = 0; t < T; ++t) {
      const double* xt = xn.data() + int64_t{t} * cols;
      double a = 0;
      for (int64_t k = 0; k < cols; ++k) a += double(wrow[size_t(k)]) * xt[k];
      acc[size_t(int64_t{t} * rows + m)] = a * post[size_t(t)];
    }
  }
  for (int32_t t = 0; t < T; ++t) {
    const double* at = acc.data() + int64_t{t} * rows;
    switch (spec.epilogue) {
      case Epilogue::kStore:
        for (int64_t m = 0; m < rows; ++m) out[int64_t{t} * rows + m] = static_cast<float>(at[m]);
        break;
      case Epilogue::kAddInPlace:
        for (int64_t m = 0; m < rows; ++m)
          out[int64_t{t} * rows + m] = static_cast<float>(out[int64_t{t} * rows + m] + at[m]);
        break;
      case Epilogue::kSiluMulWith:
        for (int64_t m = 0; m < rows; ++m)
          out[int64_t{t} * rows + m] = static_cast<float>(Silu(extra[int64_t{t} * rows + m]) * at[m]);
        break;
      case Epilogue::kSiluMulPairs: {
        // Rows come as groups of pair_group gate rows then pair_group up rows.
        const int64_t pg = spec.pair_group, half = rows / 2;
        for (int64_t j = 0; j < half; ++j) {
          const int64_t gate = (j / pg) * 2 * pg + j % pg;
          out[int64_t{t} * half + j] = static_cast<float>(Silu(at[gate]) * at[gate + pg]);
        }
        break;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Embed(const KernelSpec& spec, const void* table, const int32_t* tokens, float* out, int32_t T) {
  absl::Status s = Check(spec, Family::kEmbed);
  if (!s.ok()) return s;
  for (int32_t t = 0; t < T; ++t) {
    int64_t tok = std::clamp<int64_t>(tokens[t], 0, spec.rows - 1);
    s = DequantizeRow(spec.weight, table, nullptr, spec.cols, tok, out + int64_t{t} * spec.cols);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status QkNormRopeStore(const KernelSpec& spec, const float* qkv, const float* q_norm, const float* k_norm,
                             const int32_t* pos, void* k_cache, void* v_cache, float* q_out, int32_t T) {
  absl::Status s = Check(spec, Family::kQkNormRopeStore);
  if (!s.ok()) return s;
  const int64_t D = spec.head_dim, H2 = D / 2, nq = spec.n_head, nkv = spec.n_head_kv;
  const int64_t qkv_row = (nq + 2 * nkv) * D;
  std::vector<float> y(static_cast<size_t>(D));
  for (int32_t t = 0; t < T; ++t) {
    const int64_t p = int64_t{pos[0]} + t;
    for (int64_t h = 0; h < nq + nkv; ++h) {
      const float* x = qkv + int64_t{t} * qkv_row + h * D;
      const float* w = h < nq ? q_norm : k_norm;
      double sum = 0;
      for (int64_t i = 0; i < D; ++i) sum += double(x[i]) * x[i];
      const float r = 1.0f / std::sqrt(static_cast<float>(sum / D) + spec.eps);
      for (int64_t i = 0; i < D; ++i) y[size_t(i)] = (x[i] * r) * w[i];
      std::vector<float> o(static_cast<size_t>(D));
      for (int64_t i = 0; i < H2; ++i) {
        // Linear / YaRN scaling as the IR's rope op mixes it (ir/kernels_nn.cc).
        const KernelSpec::RopeScaling& rs = spec.rope_scaling;
        const double ramp_y = (double(i) - rs.ramp_low) / std::max(0.001, double(rs.ramp_high) - rs.ramp_low);
        const double mix = rs.ext_factor * (1.0 - std::min(1.0, std::max(0.0, ramp_y)));
        const double unscaled = double(p) * std::pow(double(spec.rope_base), -2.0 * double(i) / double(D));
        const double theta = unscaled * rs.freq_scale * (1.0 - mix) + unscaled * mix;
        const double c = rs.mscale * std::cos(theta), sn = rs.mscale * std::sin(theta);
        o[size_t(i)] = static_cast<float>(y[size_t(i)] * c - y[size_t(i + H2)] * sn);
        o[size_t(i + H2)] = static_cast<float>(y[size_t(i)] * sn + y[size_t(i + H2)] * c);
      }
      if (h < nq) {
        std::copy(o.begin(), o.end(), q_out + int64_t{t} * nq * D + h * D);
      } else {
        const int64_t kh = h - nq, base = p * nkv * D + kh * D;
        const float* v = qkv + int64_t{t} * qkv_row + (nq + nkv) * D + kh * D;
        for (int64_t i = 0; i < D; ++i) {
          CacheStore(k_cache, spec.kv_f16, base + i, o[size_t(i)]);
          CacheStore(v_cache, spec.kv_f16, base + i, v[i]);
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status AttentionDecode(const KernelSpec& spec, const float* q, const void* k_cache, const void* v_cache,
                             const int32_t* pos, float* out) {
  absl::Status s = Check(spec, Family::kAttentionDecode);
  if (!s.ok()) return s;
  const int64_t D = spec.head_dim, G = spec.n_head / spec.n_head_kv;
  // The kernel attends at most max_splits * split_positions positions.
  const int64_t cap = int64_t{spec.attention.max_splits} * spec.attention.split_positions;
  const int64_t last = std::min<int64_t>(pos[0], cap - 1);
  for (int64_t h = 0; h < spec.n_head; ++h) AttendOne(spec, q + h * D, k_cache, v_cache, h / G, last, out + h * D);
  return absl::OkStatus();
}

absl::Status AttentionDecodeFused(const KernelSpec& spec, const float* qkv, const float* q_norm, const float* k_norm,
                                  const int32_t* pos, void* k_cache, void* v_cache, float* out) {
  absl::Status s = Check(spec, Family::kAttentionDecode);
  if (!s.ok()) return s;
  if (!spec.rope_fused)
    return absl::InvalidArgumentError(absl::StrCat("reference: kernel '", spec.name, "' is not rope_fused"));
  KernelSpec rope = spec;
  rope.family = Family::kQkNormRopeStore;
  rope.rope_fused = false;
  std::vector<float> q(static_cast<size_t>(spec.n_head * spec.head_dim));
  s = QkNormRopeStore(rope, qkv, q_norm, k_norm, pos, k_cache, v_cache, q.data(), 1);
  if (!s.ok()) return s;
  return AttentionDecode(spec, q.data(), k_cache, v_cache, pos, out);
}

absl::Status AttentionPrefill(const KernelSpec& spec, const float* q, const void* k_cache, const void* v_cache,
                              const int32_t* pos, float* out, int32_t T) {
  absl::Status s = Check(spec, Family::kAttentionPrefill);
  if (!s.ok()) return s;
  const int64_t D = spec.head_dim, G = spec.n_head / spec.n_head_kv, row = spec.n_head * D;
  for (int32_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < spec.n_head; ++h)
      AttendOne(spec, q + t * row + h * D, k_cache, v_cache, h / G, int64_t{pos[0]} + t, out + t * row + h * D);
  return absl::OkStatus();
}

absl::Status Argmax(const KernelSpec& spec, const float* logits, int32_t* out, int32_t cols) {
  absl::Status s = Check(spec, Family::kArgmax);
  if (!s.ok()) return s;
  for (int64_t r = 0; r < spec.rows; ++r) {
    const float* row = logits + r * cols;
    int32_t best = -1;
    for (int32_t i = 0; i < cols; ++i)
      if (!std::isnan(row[i]) && (best < 0 ? row[i] > -std::numeric_limits<float>::infinity() : row[i] > row[best]))
        best = i;
    out[r] = best < 0 ? 0 : best;
  }
  return absl::OkStatus();
}

absl::Status PackQ8_0(const KernelSpec& spec, const void* src, void* qs, void* d, int32_t rows) {
  absl::Status s = Check(spec, Family::kPackQ8_0);
  if (!s.ok()) return s;
  const int64_t nb = spec.cols / 32;
  const uint8_t* in = static_cast<const uint8_t*>(src);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = in + (r * nb + b) * 34;
      std::memcpy(static_cast<uint8_t*>(d) + (r * nb + b) * 2, blk, 2);
      std::memcpy(static_cast<uint8_t*>(qs) + r * spec.cols + b * 32, blk + 2, 32);
    }
  }
  return absl::OkStatus();
}

absl::Status PackQ6_K(const KernelSpec& spec, const void* src, void* qs, void* d, int32_t rows) {
  absl::Status s = Check(spec, Family::kPackQ6_K);
  if (!s.ok()) return s;
  const int64_t blocks = rows * (spec.cols / 256);
  const uint8_t* in = static_cast<const uint8_t*>(src);
  for (int64_t b = 0; b < blocks; ++b) {
    std::memcpy(static_cast<uint8_t*>(qs) + b * 208, in + b * 210, 208);
    std::memcpy(static_cast<uint8_t*>(d) + b * 2, in + b * 210 + 208, 2);
  }
  return absl::OkStatus();
}

absl::Status CopyRows(const KernelSpec& spec, const void* src, void* dst, int32_t rows, int32_t dst_row0,
                      int32_t group_rows, int32_t group_stride) {
  absl::Status s = Check(spec, Family::kCopyRows);
  if (!s.ok()) return s;
  const int64_t gr = group_rows > 0 ? group_rows : rows;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t dst_row = dst_row0 + (i / gr) * group_stride + i % gr;
    std::memcpy(static_cast<uint8_t*>(dst) + dst_row * spec.row_bytes,
                static_cast<const uint8_t*>(src) + i * spec.row_bytes, static_cast<size_t>(spec.row_bytes));
  }
  return absl::OkStatus();
}

}  // namespace kiln::codegen::reference
