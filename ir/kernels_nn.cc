// Interpreter kernels of the model ops: embed, matmul, rms_norm, rope,
// attention, argmax (spec/qwen3-model.md §3).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "ir/kernels.h"
#include "models/gguf/ggml_type.h"
#include "models/quant/dequantize.h"
#include "models/quant/float16.h"
#include "support/parallel_for.h"
#include "support/status_macros.h"

namespace kiln::ir {
namespace {

// Dot product of float vectors accumulated in double, in eight interleaved
// lanes combined pairwise: a fixed order, so results do not depend on the
// thread count or the batch size, that the compiler can vectorize without
// reassociating. Double accumulation keeps the oracle within rounding of the
// CPU reference forward (models/reference_forward.cc) however long the rows.
float Dot(const float* a, const float* b, int64_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; ++l) acc[l] += static_cast<double>(a[k + l]) * static_cast<double>(b[k + l]);
  for (int l = 0; k < n; ++k, ++l) acc[l] += static_cast<double>(a[k]) * static_cast<double>(b[k]);
  return static_cast<float>(((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])));
}

// Collects the first error of parallel workers.
class FirstError {
 public:
  void Update(absl::Status s) {
    if (s.ok()) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (status_.ok()) status_ = std::move(s);
  }
  absl::Status status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  std::mutex mu_;
  absl::Status status_;
};

}  // namespace

absl::Status EvalEmbed(EvalContext& ctx) {
  const HostTensor& table = *ctx.operands[0];
  ASSIGN_OR_RETURN(const std::vector<int32_t> ids, ctx.operands[1]->ToInts());
  HostTensor& y = ctx.Output(0);
  const int64_t rows = table.num_rows(), width = table.row_length();
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    if (id < 0 || id >= rows)
      return absl::OutOfRangeError(absl::StrCat("embed: token id ", id, " is out of range [0, ", rows, ")"));
    RETURN_IF_ERROR(table.ReadRow(id, y.floats().data() + i * width));
  }
  return absl::OkStatus();
}

// Planar Q8_0: W[m, k] = float(qs[m, k]) * d[m, k / 32], the same products
// as dequantizing the original 34-byte blocks (spec/quant-formats.md §2),
// so results equal the 2-operand form on the unsplit weight bit for bit.
absl::Status EvalPlanarQ8_0MatMul(EvalContext& ctx, const float* x) {
  const HostTensor& qs = *ctx.operands[1];
  std::vector<float> d_scratch;
  ASSIGN_OR_RETURN(const float* d, FloatsOf(*ctx.operands[2], d_scratch));
  ASSIGN_OR_RETURN(const std::vector<int32_t> q, qs.ToInts());
  HostTensor& y = ctx.Output(0);
  const int64_t K = qs.row_length(), M = qs.num_rows(), B = K / 32;
  const int64_t R = K == 0 ? 0 : ctx.operands[0]->num_elements() / K;
  float* out = y.floats().data();
  ParallelFor(M, ctx.threads, [&](int64_t begin, int64_t end) {
    std::vector<float> row(K);
    for (int64_t m = begin; m < end; ++m) {
      for (int64_t k = 0; k < K; ++k) row[k] = d[m * B + k / 32] * static_cast<float>(q[m * K + k]);
      for (int64_t r = 0; r < R; ++r) out[r * M + m] = Dot(x + r * K, row.data(), K);
    }
  });
  return absl::OkStatus();
}

// Planar Q6_K: each row's blocks reassembled from the data plane (208
// bytes a block) and the d plane, then dequantized as the original 210-byte
// blocks (spec/quant-formats.md §7): the 2-operand form's numbers exactly.
absl::Status EvalPlanarQ6_KMatMul(EvalContext& ctx, const float* x) {
  const HostTensor& data = *ctx.operands[1];
  std::vector<float> d_scratch;
  ASSIGN_OR_RETURN(const float* d, FloatsOf(*ctx.operands[2], d_scratch));
  HostTensor& y = ctx.Output(0);
  const int64_t K = data.row_length(), M = data.num_rows(), B = K / 256;
  const int64_t R = K == 0 ? 0 : ctx.operands[0]->num_elements() / K;
  const uint8_t* planes = data.bytes().data();
  float* out = y.floats().data();
  FirstError error;
  ParallelFor(M, ctx.threads, [&](int64_t begin, int64_t end) {
    std::vector<float> row(K);
    std::vector<uint8_t> blocks(static_cast<size_t>(B * 210));
    for (int64_t m = begin; m < end; ++m) {
      for (int64_t b = 0; b < B; ++b) {
        std::memcpy(blocks.data() + b * 210, planes + (m * B + b) * 208, 208);
        const uint16_t h = quant::FloatToHalf(d[m * B + b]);  // d holds f16 values: exact
        std::memcpy(blocks.data() + b * 210 + 208, &h, 2);
      }
      absl::Status s = quant::Dequantize(gguf::GgmlType::kQ6_K, blocks, absl::MakeSpan(row));
      if (!s.ok()) {
        error.Update(std::move(s));
        return;
      }
      for (int64_t r = 0; r < R; ++r) out[r * M + m] = Dot(x + r * K, row.data(), K);
    }
  });
  return error.status();
}

absl::Status EvalMatMul(EvalContext& ctx) {
  std::vector<float> x_scratch;
  ASSIGN_OR_RETURN(const float* x, FloatsOf(*ctx.operands[0], x_scratch));
  if (ctx.operands.size() == 3)
    return ctx.operands[1]->dtype() == DType::kQ6_KData ? EvalPlanarQ6_KMatMul(ctx, x) : EvalPlanarQ8_0MatMul(ctx, x);
  const HostTensor& w = *ctx.operands[1];
  HostTensor& y = ctx.Output(0);
  const int64_t K = w.row_length(), M = w.num_rows();
  const int64_t R = K == 0 ? 0 : ctx.operands[0]->num_elements() / K;
  float* out = y.floats().data();
  FirstError error;
  // One weight row at a time, dequantized once and applied to every input row.
  ParallelFor(M, ctx.threads, [&](int64_t begin, int64_t end) {
    std::vector<float> row(K);
    for (int64_t m = begin; m < end; ++m) {
      const float* wr = nullptr;
      if (w.storage() == HostTensor::Storage::kFloat) {
        wr = w.floats().data() + m * K;
      } else {
        absl::Status s = w.ReadRow(m, row.data());
        if (!s.ok()) {
          error.Update(std::move(s));
          return;
        }
        wr = row.data();
      }
      for (int64_t r = 0; r < R; ++r) out[r * M + m] = Dot(x + r * K, wr, K);
    }
  });
  return error.status();
}

absl::Status EvalRmsNorm(EvalContext& ctx) {
  std::vector<float> xs, ws;
  ASSIGN_OR_RETURN(const float* x, FloatsOf(*ctx.operands[0], xs));
  ASSIGN_OR_RETURN(const float* w, FloatsOf(*ctx.operands[1], ws));
  const float eps = ctx.op.GetFloat("eps");
  HostTensor& y = ctx.Output(0);
  const int64_t n = ctx.operands[0]->row_length(), rows = ctx.operands[0]->num_rows();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y.floats().data() + r * n;
    // Squares in float, their sum in double, the mean converted to float
    // (spec/qwen3-model.md §3.1, as llama.cpp's CPU rms_norm).
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(xr[i] * xr[i]);
    const float ms = static_cast<float>(sum / static_cast<double>(n));
    const float scale = 1.0f / std::sqrt(ms + eps);
    for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] * scale) * w[i];
  }
  return absl::OkStatus();
}

absl::Status EvalRope(EvalContext& ctx) {
  std::vector<float> xs;
  ASSIGN_OR_RETURN(const float* x, FloatsOf(*ctx.operands[0], xs));
  const std::vector<int64_t>& dims = ctx.operands[0]->dims();
  const int64_t T = dims[0], H = dims[1], D = dims[2], half = D / 2;
  const int64_t P = PosOf(*ctx.operands[1]);
  const float base = ctx.op.GetFloat("base");
  const float freq_scale = ctx.op.GetFloat("freq_scale", 1.0f);
  const float ext_factor = ctx.op.GetFloat("ext_factor", 0.0f);
  const float mscale = ctx.op.GetFloat("mscale", 1.0f);
  const float low = ctx.op.GetFloat("ramp_low", 0.0f), high = ctx.op.GetFloat("ramp_high", 0.0f);
  HostTensor& y = ctx.Output(0);
  // theta_i = p * base^(-2i/D) by repeated fp32 multiplication, as
  // llama.cpp's CPU rope (spec/qwen3-model.md §3.4); YaRN mixes the scaled
  // and unscaled angle by the ramp (plain RoPE: mix = 0, freq_scale = 1).
  const float theta_scale = std::pow(base, -2.0f / static_cast<float>(D));
  std::vector<float> cs(half), sn(half);
  for (int64_t t = 0; t < T; ++t) {
    float theta = static_cast<float>(P + t);
    for (int64_t i = 0; i < half; ++i) {
      const float ramp_y = (static_cast<float>(i) - low) / std::max(0.001f, high - low);
      const float ramp = 1.0f - std::min(1.0f, std::max(0.0f, ramp_y));
      const float mix = ramp * ext_factor;
      const float angle = theta * freq_scale * (1.0f - mix) + theta * mix;
      cs[i] = std::cos(angle) * mscale;
      sn[i] = std::sin(angle) * mscale;
      theta *= theta_scale;
    }
    for (int64_t h = 0; h < H; ++h) {
      const float* xv = x + (t * H + h) * D;
      float* yv = y.floats().data() + (t * H + h) * D;
      for (int64_t i = 0; i < half; ++i) {
        const float a = xv[i], b = xv[i + half];
        yv[i] = a * cs[i] - b * sn[i];
        yv[i + half] = a * sn[i] + b * cs[i];
      }
    }
  }
  return absl::OkStatus();
}

absl::Status EvalAttention(EvalContext& ctx) {
  std::vector<float> qs, ks, vs;
  ASSIGN_OR_RETURN(const float* q, FloatsOf(*ctx.operands[0], qs));
  ASSIGN_OR_RETURN(const float* kc, FloatsOf(*ctx.operands[1], ks));
  ASSIGN_OR_RETURN(const float* vc, FloatsOf(*ctx.operands[2], vs));
  const std::vector<int64_t>& dims = ctx.operands[0]->dims();
  const int64_t T = dims[0], H = dims[1], D = dims[2];
  const int64_t n_kv = ctx.op.GetInt("n_kv_heads"), group = H / n_kv, width = n_kv * D;
  const int64_t cache_rows = ctx.operands[1]->num_rows();
  const int64_t P = PosOf(*ctx.operands[3]);
  const float scale = ctx.op.GetFloat("scale");
  if (P < 0 || P + T > cache_rows)
    return absl::OutOfRangeError(
        absl::StrCat("attention: positions [", P, ", ", P + T, ") exceed the cache's ", cache_rows, " rows"));
  HostTensor& y = ctx.Output(0);
  float* out = y.floats().data();
  // Query t sits at position P + t and sees cache rows 0..P+t (causal);
  // query head h reads kv head h / (H / n_kv) (spec/qwen3-model.md §3.5).
  ParallelFor(T * H, ctx.threads, [&](int64_t begin, int64_t end) {
    std::vector<float> s;
    std::vector<double> acc(D);
    for (int64_t th = begin; th < end; ++th) {
      const int64_t t = th / H, h = th % H, kvh = h / group, n = P + t + 1;
      const float* qv = q + th * D;
      s.resize(n);
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < n; ++j) {
        s[j] = Dot(qv, kc + j * width + kvh * D, D) * scale;
        mx = std::max(mx, s[j]);
      }
      // Max-subtracted fp32 exponentials; their sum and the weighted sum of
      // V rows accumulate in double.
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        s[j] = std::exp(s[j] - mx);
        sum += s[j];
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = 0; j < n; ++j) {
        const float* vv = vc + j * width + kvh * D;
        const double w = s[j];
        for (int64_t d = 0; d < D; ++d) acc[d] += w * vv[d];
      }
      for (int64_t d = 0; d < D; ++d) out[th * D + d] = static_cast<float>(acc[d] / sum);
    }
  });
  return absl::OkStatus();
}

absl::Status EvalArgmax(EvalContext& ctx) {
  std::vector<float> xs;
  ASSIGN_OR_RETURN(const float* x, FloatsOf(*ctx.operands[0], xs));
  const int64_t n = ctx.operands[0]->row_length(), rows = ctx.operands[0]->num_rows();
  HostTensor& y = ctx.Output(0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i)
      if (x[r * n + i] > x[r * n + best]) best = i;
    y.ints()[r] = static_cast<int32_t>(best);
  }
  return absl::OkStatus();
}

}  // namespace kiln::ir
