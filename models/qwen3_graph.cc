#include "models/qwen3_graph.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "ir/builder.h"
#include "ir/verifier.h"
#include "models/qwen3_tensors.h"
#include "support/status_macros.h"

namespace kiln::models {
namespace {

using ir::Builder;
using ir::Dim;
using ir::DType;
using ir::Value;

struct LayerWeights {
  Value *attn_norm, *wq, *wk, *wv, *q_norm, *k_norm, *wo, *ffn_norm, *gate, *up, *down;
  Value *k_cache, *v_cache;
};

struct Weights {
  Value* embd;
  Value* output;
  Value* output_norm;
  std::vector<LayerWeights> layers;
};

// RoPE parameters as the kernels use them (spec/qwen3-model.md §3.4): the
// YaRN ramp bounds and magnitude are precomputed here so the IR holds the
// exact numbers.
ir::RopeParams RopeOf(const Qwen3Config& c) {
  ir::RopeParams p;
  p.base = c.rope_base;
  if (c.rope_scaling == RopeScaling::kNone) return p;
  p.freq_scale = 1.0f / c.rope_factor;
  if (c.rope_scaling == RopeScaling::kYarn) {
    const YarnRamp r = YarnRampOf(c);
    p.ext_factor = c.yarn_ext_factor;
    p.ramp_low = r.low;
    p.ramp_high = r.high;
    p.mscale = r.mscale;
  }
  return p;
}

// The transformer stack on embeddings x [rows, E]; returns the residual
// stream after the last layer (before the final norm). `rows` is T for
// prefill and 1 for decode.
Value* Stack(Builder& b, const Qwen3Config& c, const Weights& w, Value* x, Value* pos, Dim rows) {
  const ir::RopeParams rope = RopeOf(c);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const LayerWeights& L = w.layers[i];
    const std::string l = absl::StrCat("l", i, ".");
    Value* h = b.RmsNorm(x, L.attn_norm, c.rms_eps, l + "attn_in");
    Value* q = b.MatMul(h, L.wq, l + "q");
    Value* k = b.MatMul(h, L.wk, l + "k");
    Value* v = b.MatMul(h, L.wv, l + "v");
    q = b.Reshape(q, {rows, c.n_head, c.head_dim}, l + "q_heads");
    k = b.Reshape(k, {rows, c.n_head_kv, c.head_dim}, l + "k_heads");
    q = b.RmsNorm(q, L.q_norm, c.rms_eps, l + "q_normed");
    k = b.RmsNorm(k, L.k_norm, c.rms_eps, l + "k_normed");
    q = b.Rope(q, pos, rope, l + "q_rot");
    k = b.Rope(k, pos, rope, l + "k_rot");
    b.KvStore(k, v, L.k_cache, L.v_cache, pos);
    Value* o = b.Attention(q, L.k_cache, L.v_cache, pos, c.n_head_kv, scale, l + "attn");
    o = b.Reshape(o, {rows, c.q_dim()}, l + "attn_flat");
    x = b.Add(x, b.MatMul(o, L.wo, l + "attn_out"), l + "resid_attn");
    h = b.RmsNorm(x, L.ffn_norm, c.rms_eps, l + "ffn_in");
    Value* act = b.Mul(b.Silu(b.MatMul(h, L.gate, l + "gate"), l + "gate_act"),
                       b.MatMul(h, L.up, l + "up"), l + "ffn_act");
    x = b.Add(x, b.MatMul(act, L.down, l + "ffn_out"), l + "resid_ffn");
  }
  return x;
}

// The logits of hidden rows x: the final norm, then the LM head.
Value* Logits(Builder& b, const Qwen3Config& c, const Weights& w, Value* x) {
  return b.MatMul(b.RmsNorm(x, w.output_norm, c.rms_eps, "final_norm"), w.output, "logits");
}

}  // namespace

absl::StatusOr<DType> IrDTypeOf(gguf::GgmlType type) {
  switch (type) {
    case gguf::GgmlType::kF32: return DType::kF32;
    case gguf::GgmlType::kF16: return DType::kF16;
    case gguf::GgmlType::kBF16: return DType::kBF16;
    case gguf::GgmlType::kQ8_0: return DType::kQ8_0;
    case gguf::GgmlType::kQ4_0: return DType::kQ4_0;
    case gguf::GgmlType::kQ4_K: return DType::kQ4_K;
    case gguf::GgmlType::kQ5_K: return DType::kQ5_K;
    case gguf::GgmlType::kQ6_K: return DType::kQ6_K;
    default:
      return absl::UnimplementedError(
          absl::StrCat("tensor type ", std::string(gguf::TypeName(type)), " has no IR type"));
  }
}

absl::StatusOr<std::unique_ptr<ir::Module>> BuildQwen3Module(const gguf::GgufFile& file,
                                                             const Qwen3Config& c,
                                                             const GraphOptions& options) {
  RETURN_IF_ERROR(CheckQwen3Tensors(file, c));
  auto m = std::make_unique<ir::Module>();
  // Weights, in file-independent (llama-quantize) order. IR shapes are
  // row-major: GGUF ne = [K, M] is [M, K] here.
  auto add_weight = [&](const std::string& gguf_name) -> absl::StatusOr<Value*> {
    const gguf::TensorInfo* t = file.FindTensor(gguf_name);
    ASSIGN_OR_RETURN(DType dt, IrDTypeOf(t->type));
    // Trailing ne dims of 1 may or may not be stored (spec/gguf-format.md
    // §5): a norm [256, 1] is [256], an embedding [256, 371, 1] [371, 256].
    std::vector<int64_t> ne = t->dims;
    while (ne.size() > 1 && ne.back() == 1) ne.pop_back();
    ir::Shape shape;
    for (int d = static_cast<int>(ne.size()) - 1; d >= 0; --d) shape.push_back(ne[d]);
    std::string sym = gguf_name.substr(0, gguf_name.size() - std::string(".weight").size());
    return m->AddWeight(sym, {dt, shape}, gguf_name);
  };
  Weights w;
  ASSIGN_OR_RETURN(w.embd, add_weight("token_embd.weight"));
  if (c.tied_embeddings) {
    w.output = w.embd;
  } else {
    ASSIGN_OR_RETURN(w.output, add_weight("output.weight"));
  }
  ASSIGN_OR_RETURN(w.output_norm, add_weight("output_norm.weight"));
  for (int64_t i = 0; i < c.n_layer; ++i) {
    LayerWeights L;
    ASSIGN_OR_RETURN(L.attn_norm, add_weight(LayerTensor(i, "attn_norm")));
    ASSIGN_OR_RETURN(L.wq, add_weight(LayerTensor(i, "attn_q")));
    ASSIGN_OR_RETURN(L.wk, add_weight(LayerTensor(i, "attn_k")));
    ASSIGN_OR_RETURN(L.wv, add_weight(LayerTensor(i, "attn_v")));
    ASSIGN_OR_RETURN(L.q_norm, add_weight(LayerTensor(i, "attn_q_norm")));
    ASSIGN_OR_RETURN(L.k_norm, add_weight(LayerTensor(i, "attn_k_norm")));
    ASSIGN_OR_RETURN(L.wo, add_weight(LayerTensor(i, "attn_output")));
    ASSIGN_OR_RETURN(L.ffn_norm, add_weight(LayerTensor(i, "ffn_norm")));
    ASSIGN_OR_RETURN(L.gate, add_weight(LayerTensor(i, "ffn_gate")));
    ASSIGN_OR_RETURN(L.up, add_weight(LayerTensor(i, "ffn_up")));
    ASSIGN_OR_RETURN(L.down, add_weight(LayerTensor(i, "ffn_down")));
    L.k_cache = m->AddState(absl::StrCat("k_cache.", i), {options.kv_dtype, {Dim::C(), c.kv_dim()}});
    L.v_cache = m->AddState(absl::StrCat("v_cache.", i), {options.kv_dtype, {Dim::C(), c.kv_dim()}});
    w.layers.push_back(L);
  }

  {  // load: empty until pack-weights moves layout work into it.
    Builder b(m->AddFunction("load"));
    b.Return({});
    RETURN_IF_ERROR(b.status());
  }
  {
    Builder b(m->AddFunction("prefill"));
    Value* tokens = b.AddArg({DType::kI32, {Dim::T()}}, "tokens");
    Value* pos = b.AddArg({DType::kI32, {1}}, "pos");
    Value* x = b.Embed(w.embd, tokens, "x");
    Value* h = Stack(b, c, w, x, pos, Dim::T());
    if (options.prefill_last_logits) h = b.LastRow(h, "last_token");
    b.Return({Logits(b, c, w, h)});
    RETURN_IF_ERROR(b.status());
  }
  {
    Builder b(m->AddFunction("decode"));
    Value* token = b.AddArg({DType::kI32, {1}}, "token");
    Value* pos = b.AddArg({DType::kI32, {1}}, "pos");
    Value* x = b.Embed(w.embd, token, "x");
    Value* logits = Logits(b, c, w, Stack(b, c, w, x, pos, 1));
    b.Return({logits, b.Argmax(logits, "next")});
    RETURN_IF_ERROR(b.status());
  }
  RETURN_IF_ERROR(ir::Verify(*m));
  return m;
}

}  // namespace kiln::models
