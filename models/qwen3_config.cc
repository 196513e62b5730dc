#include "models/qwen3_config.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "models/qwen3_tensors.h"
#include "models/quant/dequantize.h"
#include "support/status_macros.h"

namespace kiln::models {
namespace {

using gguf::GgufFile;
using gguf::Value;

// Integer key: any integer width is accepted (spec/gguf-format.md §4); a
// per-layer array must be uniform, since kiln compiles one layer shape.
absl::StatusOr<std::optional<int64_t>> IntKey(const GgufFile& f, const std::string& key) {
  const Value* v = f.Find(key);
  if (v == nullptr) return std::optional<int64_t>();
  if (const gguf::Array* a = v->AsArray()) {
    std::optional<int64_t> first;
    for (const Value& e : a->elements) {
      std::optional<int64_t> x = e.AsInt();
      if (!x) return absl::InvalidArgumentError(absl::StrCat("key '", key, "' is an array of ",
                                                             std::string(gguf::ValueTypeName(a->element_type)),
                                                             ", expected integers"));
      if (first && *first != *x)
        return absl::UnimplementedError(absl::StrCat(
            "key '", key, "' varies per layer (", *first, " vs ", *x,
            "); kiln supports only uniform layers"));
      first = x;
    }
    if (!first) return absl::InvalidArgumentError(absl::StrCat("key '", key, "' is an empty array"));
    return first;
  }
  std::optional<int64_t> x = v->AsInt();
  if (!x)
    return absl::InvalidArgumentError(absl::StrCat("key '", key, "' has type ",
                                                   std::string(gguf::ValueTypeName(v->type())),
                                                   ", expected an integer"));
  return x;
}

absl::StatusOr<int64_t> RequiredPositive(const GgufFile& f, const std::string& key) {
  ASSIGN_OR_RETURN(std::optional<int64_t> x, IntKey(f, key));
  if (!x) return absl::InvalidArgumentError(absl::StrCat("missing required key '", key, "'"));
  if (*x <= 0 || *x > (int64_t{1} << 31))
    return absl::InvalidArgumentError(absl::StrCat("key '", key, "' = ", *x, " is out of range"));
  return *x;
}

absl::StatusOr<int64_t> OptionalPositive(const GgufFile& f, const std::string& key, int64_t dflt) {
  ASSIGN_OR_RETURN(std::optional<int64_t> x, IntKey(f, key));
  if (!x) return dflt;
  if (*x <= 0 || *x > (int64_t{1} << 31))
    return absl::InvalidArgumentError(absl::StrCat("key '", key, "' = ", *x, " is out of range"));
  return *x;
}

absl::StatusOr<std::optional<double>> FloatKey(const GgufFile& f, const std::string& key) {
  const Value* v = f.Find(key);
  if (v == nullptr) return std::optional<double>();
  std::optional<double> x = v->AsFloat();
  if (!x)
    return absl::InvalidArgumentError(absl::StrCat("key '", key, "' has type ",
                                                   std::string(gguf::ValueTypeName(v->type())),
                                                   ", expected a float"));
  return x;
}

absl::StatusOr<float> FloatOr(const GgufFile& f, const std::string& key, float dflt) {
  ASSIGN_OR_RETURN(std::optional<double> x, FloatKey(f, key));
  return x ? static_cast<float>(*x) : dflt;
}

absl::Status Contradiction(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("contradictory Qwen3 metadata: ", what));
}

}  // namespace

YarnRamp YarnRampOf(const Qwen3Config& c) {
  auto corr_dim = [&](float beta) {
    return static_cast<float>(c.head_dim) *
           std::log(static_cast<float>(c.rope_orig_context) / (beta * 2.0f * static_cast<float>(M_PI))) /
           (2.0f * std::log(c.rope_base));
  };
  YarnRamp r;
  r.low = std::max(0.0f, std::floor(corr_dim(c.yarn_beta_fast)));
  r.high = std::min(static_cast<float>(c.head_dim - 1), std::ceil(corr_dim(c.yarn_beta_slow)));
  // The ln s term belongs to the frequency mix: with ext_factor 0 (no
  // extrapolated dims) llama.cpp's rope kernel leaves it out and applies
  // attn_factor alone.
  r.mscale = c.yarn_attn_factor * (c.yarn_ext_factor != 0.0f ? 1.0f + 0.1f * std::log(c.rope_factor) : 1.0f);
  return r;
}

absl::StatusOr<Qwen3Config> ReadQwen3Config(const GgufFile& f) {
  const Value* arch_v = f.Find("general.architecture");
  if (arch_v == nullptr) return absl::InvalidArgumentError("missing required key 'general.architecture'");
  const std::string* arch = arch_v->AsString();
  if (arch == nullptr) return absl::InvalidArgumentError("key 'general.architecture' is not a string");
  if (*arch == "qwen3moe")
    return absl::UnimplementedError("architecture 'qwen3moe' (mixture of experts) is not supported yet; kiln compiles dense 'qwen3'");
  if (*arch != "qwen3")
    return absl::UnimplementedError(absl::StrCat("architecture '", *arch, "' is not supported; kiln compiles 'qwen3'"));
  const std::string p = "qwen3.";
  Qwen3Config c;
  ASSIGN_OR_RETURN(c.n_layer, RequiredPositive(f, p + "block_count"));
  // Before anything sized by it: a Qwen3 layer has 11 tensors.
  if (c.n_layer > static_cast<int64_t>(f.tensors().size()) / 11)
    return absl::InvalidArgumentError(absl::StrCat("key '", p, "block_count' = ", c.n_layer, ", but the file has only ",
                                                   f.tensors().size(), " tensors (a Qwen3 layer has 11)"));
  ASSIGN_OR_RETURN(c.n_embd, RequiredPositive(f, p + "embedding_length"));
  ASSIGN_OR_RETURN(c.context_length, RequiredPositive(f, p + "context_length"));
  ASSIGN_OR_RETURN(c.n_ff, RequiredPositive(f, p + "feed_forward_length"));
  ASSIGN_OR_RETURN(c.n_head, RequiredPositive(f, p + "attention.head_count"));
  ASSIGN_OR_RETURN(c.n_head_kv, OptionalPositive(f, p + "attention.head_count_kv", c.n_head));
  ASSIGN_OR_RETURN(c.head_dim, OptionalPositive(f, p + "attention.key_length", c.n_embd / c.n_head));
  ASSIGN_OR_RETURN(int64_t value_len, OptionalPositive(f, p + "attention.value_length", c.head_dim));
  ASSIGN_OR_RETURN(int64_t n_rot, OptionalPositive(f, p + "rope.dimension_count", c.head_dim));
  ASSIGN_OR_RETURN(std::optional<double> eps, FloatKey(f, p + "attention.layer_norm_rms_epsilon"));
  if (!eps) return absl::InvalidArgumentError(absl::StrCat("missing required key '", p, "attention.layer_norm_rms_epsilon'"));
  if (!(*eps > 0 && *eps < 1)) return absl::InvalidArgumentError(absl::StrCat("key '", p, "attention.layer_norm_rms_epsilon' = ", *eps, " is out of range"));
  c.rms_eps = static_cast<float>(*eps);
  ASSIGN_OR_RETURN(c.rope_base, FloatOr(f, p + "rope.freq_base", 10000.0f));
  if (!(c.rope_base > 1.0f) || !std::isfinite(c.rope_base))
    return absl::InvalidArgumentError(absl::StrCat("key '", p, "rope.freq_base' = ", c.rope_base, " must be finite and > 1"));

  if (value_len != c.head_dim)
    return Contradiction(absl::StrCat("attention.value_length ", value_len, " != attention.key_length ", c.head_dim));
  if (n_rot != c.head_dim)
    return absl::UnimplementedError(absl::StrCat("partial rotary embedding (rope.dimension_count ", n_rot,
                                                 " != key_length ", c.head_dim, ") is not supported"));
  if (c.head_dim % 2 != 0) return Contradiction(absl::StrCat("head dimension ", c.head_dim, " is odd"));
  if (c.n_head % c.n_head_kv != 0)
    return Contradiction(absl::StrCat("attention.head_count ", c.n_head, " is not a multiple of head_count_kv ", c.n_head_kv));

  // Rope scaling (spec/qwen3-model.md §3.4).
  const Value* st = f.Find(p + "rope.scaling.type");
  std::string scaling = "none";
  if (st != nullptr) {
    if (st->AsString() == nullptr) return absl::InvalidArgumentError(absl::StrCat("key '", p, "rope.scaling.type' is not a string"));
    scaling = *st->AsString();
  }
  ASSIGN_OR_RETURN(std::optional<double> factor, FloatKey(f, p + "rope.scaling.factor"));
  c.rope_factor = factor ? static_cast<float>(*factor) : 1.0f;
  if (!(c.rope_factor > 0) || !std::isfinite(c.rope_factor))
    return absl::InvalidArgumentError(absl::StrCat("key '", p, "rope.scaling.factor' = ", c.rope_factor, " must be finite and > 0"));
  if (scaling == "none" || (scaling == "linear" && c.rope_factor == 1.0f)) {
    c.rope_scaling = RopeScaling::kNone;
  } else if (scaling == "linear") {
    c.rope_scaling = RopeScaling::kLinear;
  } else if (scaling == "yarn") {
    c.rope_scaling = RopeScaling::kYarn;
    ASSIGN_OR_RETURN(c.rope_orig_context, OptionalPositive(f, p + "rope.scaling.original_context_length", c.context_length));
    ASSIGN_OR_RETURN(c.yarn_ext_factor, FloatOr(f, p + "rope.scaling.yarn_ext_factor", 1.0f));
    ASSIGN_OR_RETURN(c.yarn_attn_factor, FloatOr(f, p + "rope.scaling.yarn_attn_factor", 1.0f));
    ASSIGN_OR_RETURN(c.yarn_beta_fast, FloatOr(f, p + "rope.scaling.yarn_beta_fast", 32.0f));
    ASSIGN_OR_RETURN(c.yarn_beta_slow, FloatOr(f, p + "rope.scaling.yarn_beta_slow", 1.0f));
    for (const auto& [key, v] : {std::pair<const char*, float>{"yarn_ext_factor", c.yarn_ext_factor},
                                 {"yarn_attn_factor", c.yarn_attn_factor}, {"yarn_beta_fast", c.yarn_beta_fast},
                                 {"yarn_beta_slow", c.yarn_beta_slow}})
      if (!std::isfinite(v))
        return absl::InvalidArgumentError(absl::StrCat("key '", p, "rope.scaling.", key, "' = ", v, " is not finite"));
    // Its magnitude multiplies cos and sin: a sign flip or zero is no scaling.
    if (!(c.yarn_attn_factor > 0))
      return absl::InvalidArgumentError(
          absl::StrCat("key '", p, "rope.scaling.yarn_attn_factor' = ", c.yarn_attn_factor, " must be > 0"));
  } else {
    return absl::UnimplementedError(absl::StrCat("rope scaling type '", scaling, "' is not supported"));
  }
  ASSIGN_OR_RETURN(std::optional<bool> causal_opt, [&]() -> absl::StatusOr<std::optional<bool>> {
    const Value* v = f.Find(p + "attention.causal");
    if (v == nullptr) return std::optional<bool>();
    std::optional<bool> b = v->AsBool();
    if (!b) return absl::InvalidArgumentError(absl::StrCat("key '", p, "attention.causal' is not a bool"));
    return b;
  }());
  if (causal_opt && !*causal_opt)
    return absl::UnimplementedError("non-causal attention (embedding models) is not supported");

  const Value* toks = f.Find("tokenizer.ggml.tokens");
  if (toks == nullptr || toks->AsArray() == nullptr || toks->AsArray()->element_type != gguf::ValueType::kString)
    return absl::InvalidArgumentError("missing key 'tokenizer.ggml.tokens' (an array of strings): the vocabulary size comes from it");
  c.n_vocab = static_cast<int64_t>(toks->AsArray()->elements.size());
  if (c.n_vocab == 0) return absl::InvalidArgumentError("key 'tokenizer.ggml.tokens' is empty");
  ASSIGN_OR_RETURN(std::optional<int64_t> vocab_key, IntKey(f, p + "vocab_size"));
  if (vocab_key && *vocab_key != c.n_vocab)
    return Contradiction(absl::StrCat(p, "vocab_size ", *vocab_key, " != ", c.n_vocab, " entries in tokenizer.ggml.tokens"));
  c.tied_embeddings = f.FindTensor("output.weight") == nullptr;
  return c;
}

absl::Status CheckQwen3Tensors(const GgufFile& f, const Qwen3Config& c) {
  // A layer past block_count means the key and the tensors disagree on the
  // model (llama.cpp refuses such files too): running the first layers alone
  // would be a different model.
  for (const gguf::TensorInfo& t : f.tensors()) {
    int64_t layer = -1;
    absl::string_view rest = t.name;
    if (!absl::ConsumePrefix(&rest, "blk.")) continue;
    const size_t dot = rest.find('.');
    if (dot == absl::string_view::npos || !absl::SimpleAtoi(rest.substr(0, dot), &layer)) continue;
    if (layer >= c.n_layer)
      return absl::InvalidArgumentError(absl::StrCat("tensor '", t.name, "' belongs to layer ", layer,
                                                     ", but qwen3.block_count is ", c.n_layer));
  }
  for (const ExpectedTensor& e : ExpectedQwen3Tensors(c)) {
    const gguf::TensorInfo* t = f.FindTensor(e.name);
    if (t == nullptr) return absl::InvalidArgumentError(absl::StrCat("missing tensor '", e.name, "'"));
    // Trailing dims of 1 may or may not be stored (spec/gguf-format.md §5).
    bool same = true;
    for (size_t i = 0; i < std::max(e.dims.size(), t->dims.size()); ++i) {
      int64_t want = i < e.dims.size() ? e.dims[i] : 1;
      if (t->dim(static_cast<int>(i)) != want) same = false;
    }
    if (!same)
      return absl::InvalidArgumentError(absl::StrCat("tensor '", e.name, "' has shape [",
                                                     absl::StrJoin(t->dims, ", "), "], expected [",
                                                     absl::StrJoin(e.dims, ", "), "]"));
    if (!quant::CanDequantize(t->type))
      return absl::UnimplementedError(absl::StrCat("tensor '", e.name, "' has type ",
                                                   std::string(gguf::TypeName(t->type)), ", which kiln does not support"));
    if (e.role == TensorRole::kNorm && t->type != gguf::GgmlType::kF32 &&
        t->type != gguf::GgmlType::kF16 && t->type != gguf::GgmlType::kBF16)
      return absl::UnimplementedError(absl::StrCat("norm tensor '", e.name, "' has quantized type ",
                                                   std::string(gguf::TypeName(t->type))));
  }
  return absl::OkStatus();
}

uint64_t WeightBytesPerToken(const GgufFile& f, const Qwen3Config& c) {
  uint64_t bytes = 0;
  for (const ExpectedTensor& e : ExpectedQwen3Tensors(c)) {
    const gguf::TensorInfo* t = f.FindTensor(e.name);
    if (t == nullptr) continue;
    if (e.role == TensorRole::kEmbedding) {
      bytes += t->nbytes / static_cast<uint64_t>(c.n_vocab);  // one gathered row
      if (c.tied_embeddings) bytes += t->nbytes;            // and the whole LM head
    } else {
      bytes += t->nbytes;
    }
  }
  return bytes;
}

}  // namespace kiln::models
