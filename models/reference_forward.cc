#include "models/reference_forward.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "models/qwen3_tensors.h"
#include "models/quant/dequantize.h"
#include "models/quant/float16.h"
#include "support/parallel_for.h"
#include "support/status_macros.h"

namespace kiln::models {
namespace {

// A weight matrix [rows, cols] left in its file encoding; rows are
// dequantized on use (spec/gguf-format.md §7: row m starts at m * row_bytes).
struct Matrix {
  gguf::GgmlType type;
  const uint8_t* data;
  int64_t rows;
  int64_t cols;
  uint64_t row_bytes;
};

struct Layer {
  std::vector<float> attn_norm, q_norm, k_norm, ffn_norm;
  Matrix wq, wk, wv, wo, gate, up, down;
};

}  // namespace

struct ReferenceModel::State {
  Qwen3Config c;
  ReferenceOptions opt;
  Matrix embd, output;
  std::vector<float> output_norm;
  std::vector<Layer> layers;
  // KV cache per layer: [position][kv_dim], grown as positions advance.
  std::vector<std::vector<float>> k_cache, v_cache;
  int64_t pos = 0;
};

namespace {

absl::StatusOr<Matrix> GetMatrix(const gguf::GgufFile& f, const std::string& name) {
  const gguf::TensorInfo* t = f.FindTensor(name);
  if (t == nullptr) return absl::InvalidArgumentError(absl::StrCat("missing tensor '", name, "'"));
  Matrix m{t->type, f.TensorData(*t).data(), t->dim(1), t->dim(0),
           quant::RowBytes(t->type, t->dim(0))};
  return m;
}

absl::StatusOr<std::vector<float>> GetVector(const gguf::GgufFile& f, const std::string& name) {
  const gguf::TensorInfo* t = f.FindTensor(name);
  if (t == nullptr) return absl::InvalidArgumentError(absl::StrCat("missing tensor '", name, "'"));
  std::vector<float> v(t->num_elements());
  RETURN_IF_ERROR(quant::Dequantize(t->type, f.TensorData(*t), absl::MakeSpan(v)));
  return v;
}

void DequantRow(const Matrix& m, int64_t row, std::vector<float>& buf) {
  buf.resize(m.cols);
  // Sizes were validated when the file was checked; the status cannot fail.
  (void)quant::Dequantize(m.type, {m.data + row * m.row_bytes, m.row_bytes}, absl::MakeSpan(buf));
}

// y[t][m] = sum_k W[m][k] * x[t][k] for x [T, cols] -> y [T, rows].
// Dot products accumulate in double so the summation order barely matters.
void MatMul(const Matrix& w, const std::vector<float>& x, int64_t T, std::vector<float>& y,
            int threads) {
  y.assign(T * w.rows, 0.0f);
  ParallelFor(w.rows, threads, [&](int64_t begin, int64_t end) {
    std::vector<float> row;
    for (int64_t m = begin; m < end; ++m) {
      DequantRow(w, m, row);
      for (int64_t t = 0; t < T; ++t) {
        const float* xt = x.data() + t * w.cols;
        double acc = 0;
        for (int64_t k = 0; k < w.cols; ++k) acc += static_cast<double>(row[k]) * xt[k];
        y[t * w.rows + m] = static_cast<float>(acc);
      }
    }
  });
}

// RMSNorm over consecutive groups of w.size() values (spec/qwen3-model.md §3.1).
void RmsNorm(std::vector<float>& x, const std::vector<float>& w, float eps) {
  const size_t n = w.size();
  for (size_t g = 0; g + n <= x.size(); g += n) {
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += static_cast<double>(x[g + i] * x[g + i]);
    float ms = static_cast<float>(sum / static_cast<double>(n));
    float r = 1.0f / std::sqrt(ms + eps);
    for (size_t i = 0; i < n; ++i) x[g + i] = (x[g + i] * r) * w[i];
  }
}

// Rotation angles of one position (spec/qwen3-model.md §3.4), incl. scaling.
void RopeAngles(const Qwen3Config& c, int64_t p, std::vector<float>& cos_out,
                std::vector<float>& sin_out) {
  const int64_t half = c.head_dim / 2;
  cos_out.resize(half);
  sin_out.resize(half);
  const float theta_scale = std::pow(c.rope_base, -2.0f / static_cast<float>(c.head_dim));
  const float freq_scale = 1.0f / c.rope_factor;
  const YarnRamp yarn = c.rope_scaling == RopeScaling::kYarn ? YarnRampOf(c) : YarnRamp{};
  float theta = static_cast<float>(p);
  for (int64_t i = 0; i < half; ++i) {
    float angle = theta;
    if (c.rope_scaling == RopeScaling::kLinear) {
      angle = theta * freq_scale;
    } else if (c.rope_scaling == RopeScaling::kYarn) {
      float y = (static_cast<float>(i) - yarn.low) / std::max(0.001f, yarn.high - yarn.low);
      float ramp = 1.0f - std::min(1.0f, std::max(0.0f, y));
      float mix = ramp * c.yarn_ext_factor;
      angle = theta * freq_scale * (1.0f - mix) + theta * mix;
    }
    cos_out[i] = std::cos(angle) * yarn.mscale;
    sin_out[i] = std::sin(angle) * yarn.mscale;
    theta *= theta_scale;
  }
}

// NEOX rotation of each head of `x` (pairs i, i + D/2).
void Rope(float* x, int64_t heads, int64_t D, const std::vector<float>& cs,
          const std::vector<float>& sn) {
  for (int64_t h = 0; h < heads; ++h) {
    float* v = x + h * D;
    for (int64_t i = 0; i < D / 2; ++i) {
      float a = v[i], b = v[i + D / 2];
      v[i] = a * cs[i] - b * sn[i];
      v[i + D / 2] = a * sn[i] + b * cs[i];
    }
  }
}

float Silu(float z) { return z / (1.0f + std::exp(-z)); }

}  // namespace

absl::StatusOr<std::unique_ptr<ReferenceModel>> ReferenceModel::Create(const gguf::GgufFile& f,
                                                                        const Qwen3Config& c,
                                                                        ReferenceOptions opt) {
  RETURN_IF_ERROR(CheckQwen3Tensors(f, c));
  auto s = std::make_unique<State>();
  s->c = c;
  if (opt.threads <= 0) opt.threads = DefaultThreads();
  if (opt.max_context <= 0) opt.max_context = c.context_length;
  s->opt = opt;
  ASSIGN_OR_RETURN(s->embd, GetMatrix(f, "token_embd.weight"));
  ASSIGN_OR_RETURN(s->output, GetMatrix(f, c.output_tensor()));
  ASSIGN_OR_RETURN(s->output_norm, GetVector(f, "output_norm.weight"));
  for (int64_t i = 0; i < c.n_layer; ++i) {
    Layer l;
    ASSIGN_OR_RETURN(l.attn_norm, GetVector(f, LayerTensor(i, "attn_norm")));
    ASSIGN_OR_RETURN(l.q_norm, GetVector(f, LayerTensor(i, "attn_q_norm")));
    ASSIGN_OR_RETURN(l.k_norm, GetVector(f, LayerTensor(i, "attn_k_norm")));
    ASSIGN_OR_RETURN(l.ffn_norm, GetVector(f, LayerTensor(i, "ffn_norm")));
    ASSIGN_OR_RETURN(l.wq, GetMatrix(f, LayerTensor(i, "attn_q")));
    ASSIGN_OR_RETURN(l.wk, GetMatrix(f, LayerTensor(i, "attn_k")));
    ASSIGN_OR_RETURN(l.wv, GetMatrix(f, LayerTensor(i, "attn_v")));
    ASSIGN_OR_RETURN(l.wo, GetMatrix(f, LayerTensor(i, "attn_output")));
    ASSIGN_OR_RETURN(l.gate, GetMatrix(f, LayerTensor(i, "ffn_gate")));
    ASSIGN_OR_RETURN(l.up, GetMatrix(f, LayerTensor(i, "ffn_up")));
    ASSIGN_OR_RETURN(l.down, GetMatrix(f, LayerTensor(i, "ffn_down")));
    s->layers.push_back(std::move(l));
  }
  s->k_cache.resize(c.n_layer);
  s->v_cache.resize(c.n_layer);
  return std::unique_ptr<ReferenceModel>(new ReferenceModel(std::move(s)));
}

ReferenceModel::ReferenceModel(std::unique_ptr<State> s) : s_(std::move(s)) {}
ReferenceModel::~ReferenceModel() = default;
void ReferenceModel::Reset() {
  s_->pos = 0;
  for (auto& k : s_->k_cache) k.clear();
  for (auto& v : s_->v_cache) v.clear();
}
int64_t ReferenceModel::position() const { return s_->pos; }
const Qwen3Config& ReferenceModel::config() const { return s_->c; }

absl::StatusOr<std::vector<float>> ReferenceModel::Forward(absl::Span<const int32_t> tokens) {
  const Qwen3Config& c = s_->c;
  const int64_t T = static_cast<int64_t>(tokens.size());
  const int64_t P = s_->pos;
  const int threads = s_->opt.threads;
  if (T == 0) return absl::InvalidArgumentError("no tokens to run");
  if (P + T > s_->opt.max_context)
    return absl::InvalidArgumentError(absl::StrCat("context full: positions ", P, "..", P + T - 1,
                                                   " exceed the context size ", s_->opt.max_context));
  for (int32_t tok : tokens)
    if (tok < 0 || tok >= c.n_vocab)
      return absl::InvalidArgumentError(absl::StrCat("token id ", tok, " is outside the vocabulary [0, ", c.n_vocab, ")"));

  const int64_t E = c.n_embd, D = c.head_dim, H = c.n_head, HKV = c.n_head_kv;
  std::vector<float> x(T * E), row;
  for (int64_t t = 0; t < T; ++t) {
    DequantRow(s_->embd, tokens[t], row);
    std::copy(row.begin(), row.end(), x.begin() + t * E);
  }
  std::vector<std::vector<float>> cosv(T), sinv(T);
  for (int64_t t = 0; t < T; ++t) RopeAngles(c, P + t, cosv[t], sinv[t]);

  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  std::vector<float> h, q, k, v, o, proj, g, u;
  for (int64_t li = 0; li < c.n_layer; ++li) {
    const Layer& L = s_->layers[li];
    h = x;
    RmsNorm(h, L.attn_norm, c.rms_eps);
    MatMul(L.wq, h, T, q, threads);
    MatMul(L.wk, h, T, k, threads);
    MatMul(L.wv, h, T, v, threads);
    RmsNorm(q, L.q_norm, c.rms_eps);
    RmsNorm(k, L.k_norm, c.rms_eps);
    for (int64_t t = 0; t < T; ++t) {
      Rope(q.data() + t * H * D, H, D, cosv[t], sinv[t]);
      Rope(k.data() + t * HKV * D, HKV, D, cosv[t], sinv[t]);
    }
    auto& kc = s_->k_cache[li];
    auto& vc = s_->v_cache[li];
    kc.resize((P + T) * HKV * D);
    vc.resize((P + T) * HKV * D);
    for (int64_t i = 0; i < T * HKV * D; ++i) {
      float kk = k[i], vv = v[i];
      if (s_->opt.kv_f16) {
        kk = quant::HalfToFloat(quant::FloatToHalf(kk));
        vv = quant::HalfToFloat(quant::FloatToHalf(vv));
      }
      kc[P * HKV * D + i] = kk;
      vc[P * HKV * D + i] = vv;
    }
    // Causal GQA attention (spec/qwen3-model.md §3.5-§3.6).
    o.assign(T * H * D, 0.0f);
    ParallelFor(T * H, threads, [&](int64_t begin, int64_t end) {
      std::vector<float> s;
      for (int64_t th = begin; th < end; ++th) {
        const int64_t t = th / H, hh = th % H, kvh = hh / (H / HKV);
        const int64_t n = P + t + 1;
        const float* qv = q.data() + (t * H + hh) * D;
        s.resize(n);
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < n; ++j) {
          const float* kv = kc.data() + (j * HKV + kvh) * D;
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += static_cast<double>(qv[d]) * kv[d];
          s[j] = static_cast<float>(dot) * scale;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) {
          s[j] = std::exp(s[j] - mx);
          sum += s[j];
        }
        float* ov = o.data() + (t * H + hh) * D;
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < n; ++j) acc += static_cast<double>(s[j]) * vc[(j * HKV + kvh) * D + d];
          ov[d] = static_cast<float>(acc / sum);
        }
      }
    });
    MatMul(L.wo, o, T, proj, threads);
    for (int64_t i = 0; i < T * E; ++i) x[i] += proj[i];

    h = x;
    RmsNorm(h, L.ffn_norm, c.rms_eps);
    MatMul(L.gate, h, T, g, threads);
    MatMul(L.up, h, T, u, threads);
    for (size_t i = 0; i < g.size(); ++i) g[i] = Silu(g[i]) * u[i];
    MatMul(L.down, g, T, proj, threads);
    for (int64_t i = 0; i < T * E; ++i) x[i] += proj[i];
  }
  RmsNorm(x, s_->output_norm, c.rms_eps);
  std::vector<float> logits;
  MatMul(s_->output, x, T, logits, threads);
  s_->pos += T;
  return logits;
}

int32_t Argmax(absl::Span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = static_cast<int32_t>(i);
  return best;
}

}  // namespace kiln::models
