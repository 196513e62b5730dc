// A 2-layer Qwen3-shaped transformer built with the builder (spec/
// qwen3-model.md §3): prefilling all tokens at once and decoding them one by
// one give the same logits, the KV cache carrying the history across calls.
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "models/quant/dequantize.h"
#include "models/quant/quantize.h"

namespace kiln::ir {
namespace {

using gguf::GgmlType;

constexpr int64_t kLayers = 2, kEmbd = 64, kHeads = 4, kKvHeads = 2, kHeadDim = 16, kFf = 128, kVocab = 97;
constexpr int64_t kContext = 16;
constexpr float kEps = 1e-6f;

struct Model {
  Module module;
  MemoryWeightSource weights;
};

// Adds a weight of IR shape [rows, cols] with random values encoded as `type`.
Value* AddWeight(Model& m, std::mt19937& gen, const std::string& name, GgmlType type, int64_t rows,
                 int64_t cols, float scale, float offset = 0.0f) {
  std::normal_distribution<float> d(offset, scale);
  std::vector<float> v(rows * cols);
  for (float& x : v) x = d(gen);
  std::vector<uint8_t> bytes(quant::RowBytes(type, rows * cols));
  EXPECT_TRUE(quant::Quantize(type, v, absl::MakeSpan(bytes)).ok());
  const std::string gguf_name = name + ".weight";
  if (rows == 1) {
    m.weights.Add(gguf_name, type, {cols}, std::move(bytes));
    return m.module.AddWeight(name, {*DTypeFromGgml(type), {cols}}, gguf_name);
  }
  m.weights.Add(gguf_name, type, {cols, rows}, std::move(bytes));
  return m.module.AddWeight(name, {*DTypeFromGgml(type), {rows, cols}}, gguf_name);
}

struct Layer {
  Value *attn_norm, *wq, *wk, *wv, *q_norm, *k_norm, *wo, *ffn_norm, *gate, *up, *down, *k_cache, *v_cache;
};

// The forward pass of spec/qwen3-model.md §3.3 for tokens at positions
// pos[0], pos[0]+1, ...; returns logits [T, vocab].
Value* Forward(Builder& b, Value* tokens, Value* pos, Value* embd, const std::vector<Layer>& layers,
               Value* out_norm, Value* output) {
  const Dim T = tokens->type().shape[0];
  Value* x = b.Embed(embd, tokens, "x");
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& L = layers[i];
    const std::string n = absl::StrCat(i);
    Value* h = b.RmsNorm(x, L.attn_norm, kEps, "h." + n);
    Value* q = b.Reshape(b.MatMul(h, L.wq, "q." + n), {T, kHeads, kHeadDim});
    Value* k = b.Reshape(b.MatMul(h, L.wk, "k." + n), {T, kKvHeads, kHeadDim});
    Value* v = b.MatMul(h, L.wv, "v." + n);
    RopeParams rope;
    rope.base = 10000.0f;
    q = b.Rope(b.RmsNorm(q, L.q_norm, kEps), pos, rope, "q.rope." + n);
    k = b.Rope(b.RmsNorm(k, L.k_norm, kEps), pos, rope, "k.rope." + n);
    b.KvStore(k, v, L.k_cache, L.v_cache, pos);
    Value* o = b.Attention(q, L.k_cache, L.v_cache, pos, kKvHeads,
                           1.0f / std::sqrt(static_cast<float>(kHeadDim)), "attn." + n);
    x = b.Add(x, b.MatMul(b.Reshape(o, {T, kHeads * kHeadDim}), L.wo), "x." + n);
    h = b.RmsNorm(x, L.ffn_norm, kEps, "h.ffn." + n);
    Value* act = b.Mul(b.Silu(b.MatMul(h, L.gate, "gate." + n)), b.MatMul(h, L.up, "up." + n));
    x = b.Add(x, b.MatMul(act, L.down), "x.ffn." + n);
  }
  return b.MatMul(b.RmsNorm(x, out_norm, kEps), output, "logits");
}

std::unique_ptr<Model> BuildModel(uint32_t seed) {
  auto m = std::make_unique<Model>();
  std::mt19937 gen(seed);
  Value* embd = AddWeight(*m, gen, "token_embd", GgmlType::kQ8_0, kVocab, kEmbd, 1.0f);
  std::vector<Layer> layers;
  for (int64_t i = 0; i < kLayers; ++i) {
    const std::string p = absl::StrCat("blk.", i, ".");
    Layer L;
    L.attn_norm = AddWeight(*m, gen, p + "attn_norm", GgmlType::kF32, 1, kEmbd, 0.1f, 1.0f);
    L.wq = AddWeight(*m, gen, p + "attn_q", GgmlType::kQ8_0, kHeads * kHeadDim, kEmbd, 0.15f);
    L.wk = AddWeight(*m, gen, p + "attn_k", GgmlType::kQ4_0, kKvHeads * kHeadDim, kEmbd, 0.15f);
    L.wv = AddWeight(*m, gen, p + "attn_v", GgmlType::kF16, kKvHeads * kHeadDim, kEmbd, 0.15f);
    L.q_norm = AddWeight(*m, gen, p + "attn_q_norm", GgmlType::kF32, 1, kHeadDim, 0.1f, 1.0f);
    L.k_norm = AddWeight(*m, gen, p + "attn_k_norm", GgmlType::kF32, 1, kHeadDim, 0.1f, 1.0f);
    L.wo = AddWeight(*m, gen, p + "attn_output", GgmlType::kQ8_0, kEmbd, kHeads * kHeadDim, 0.15f);
    L.ffn_norm = AddWeight(*m, gen, p + "ffn_norm", GgmlType::kF32, 1, kEmbd, 0.1f, 1.0f);
    L.gate = AddWeight(*m, gen, p + "ffn_gate", GgmlType::kQ8_0, kFf, kEmbd, 0.15f);
    L.up = AddWeight(*m, gen, p + "ffn_up", GgmlType::kBF16, kFf, kEmbd, 0.15f);
    L.down = AddWeight(*m, gen, p + "ffn_down", GgmlType::kQ8_0, kEmbd, kFf, 0.1f);
    L.k_cache =
        m->module.AddState(absl::StrCat("k_cache.", i), {DType::kF16, {Dim::C(), kKvHeads * kHeadDim}});
    L.v_cache =
        m->module.AddState(absl::StrCat("v_cache.", i), {DType::kF16, {Dim::C(), kKvHeads * kHeadDim}});
    layers.push_back(L);
  }
  Value* out_norm = AddWeight(*m, gen, "output_norm", GgmlType::kF32, 1, kEmbd, 0.1f, 1.0f);
  Value* output = AddWeight(*m, gen, "output", GgmlType::kQ8_0, kVocab, kEmbd, 0.3f);
  Builder(m->module.AddFunction("load")).Return({});
  for (bool decode : {false, true}) {
    Builder b(m->module.AddFunction(decode ? "decode" : "prefill"));
    Value* tokens = b.AddArg({DType::kI32, {decode ? Dim(1) : Dim::T()}}, decode ? "token" : "tokens");
    Value* pos = b.AddArg({DType::kI32, {1}}, "pos");
    b.Return({Forward(b, tokens, pos, embd, layers, out_norm, output)});
    EXPECT_TRUE(b.status().ok()) << b.status();
  }
  return m;
}

HostTensor Tokens(std::vector<int32_t> ids) {
  const int64_t n = static_cast<int64_t>(ids.size());
  return HostTensor::FromInts(DType::kI32, {n}, std::move(ids));
}
HostTensor Pos(int32_t p) { return HostTensor::FromInts(DType::kI32, {1}, {p}); }

std::vector<float> Logits(Interpreter& interp, const char* fn, std::vector<int32_t> ids, int32_t pos) {
  auto out = interp.Run(fn, {Tokens(std::move(ids)), Pos(pos)});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0].floats() : std::vector<float>{};
}

double MaxRelDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return std::numeric_limits<double>::infinity();
  double diff = 0, norm = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return std::numeric_limits<double>::infinity();
    diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
    norm = std::max(norm, static_cast<double>(std::abs(a[i])));
  }
  return diff / norm;
}

class MiniTransformer : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    model_ = BuildModel(seed_);
    std::mt19937 gen(seed_ + 1);
    for (int i = 0; i < 9; ++i) tokens_.push_back(static_cast<int32_t>(gen() % kVocab));
  }
  std::unique_ptr<Interpreter> Fresh() {
    auto interp = Interpreter::Create(model_->module, model_->weights, {.max_context = kContext});
    EXPECT_TRUE(interp.ok()) << interp.status();
    if (!interp.ok()) return nullptr;
    EXPECT_TRUE((*interp)->Run("load", {}).ok());
    return *std::move(interp);
  }
  uint32_t seed_;
  std::unique_ptr<Model> model_;
  std::vector<int32_t> tokens_;
};

TEST_F(MiniTransformer, PrefillMatchesTokenByTokenDecode) {
  SCOPED_TRACE(seed_);
  ASSERT_TRUE(Verify(model_->module).ok()) << Verify(model_->module);
  const int64_t n = static_cast<int64_t>(tokens_.size());
  auto all = Fresh();
  const std::vector<float> prefill = Logits(*all, "prefill", tokens_, 0);
  ASSERT_EQ(prefill.size(), static_cast<size_t>(n * kVocab));
  auto step = Fresh();
  for (int64_t t = 0; t < n; ++t) {
    const std::vector<float> row(prefill.begin() + t * kVocab, prefill.begin() + (t + 1) * kVocab);
    const std::vector<float> dec = Logits(*step, "decode", {tokens_[t]}, static_cast<int32_t>(t));
    EXPECT_LE(MaxRelDiff(row, dec), 1e-5) << "position " << t;
  }
  // Prefill of a prefix, then decode, then prefill of the rest continues the same sequence.
  auto mixed = Fresh();
  std::vector<float> got = Logits(*mixed, "prefill", {tokens_.begin(), tokens_.begin() + 4}, 0);
  std::vector<float> d = Logits(*mixed, "decode", {tokens_[4]}, 4);
  got.insert(got.end(), d.begin(), d.end());
  std::vector<float> rest = Logits(*mixed, "prefill", {tokens_.begin() + 5, tokens_.end()}, 5);
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_LE(MaxRelDiff(prefill, got), 1e-5);
}

TEST_F(MiniTransformer, DecodeDependsOnTheCachedHistory) {
  SCOPED_TRACE(seed_);
  auto a = Fresh();
  auto b = Fresh();
  Logits(*a, "prefill", {1, 2, 3}, 0);
  Logits(*b, "prefill", {4, 5, 6}, 0);
  EXPECT_GT(MaxRelDiff(Logits(*a, "decode", {7}, 3), Logits(*b, "decode", {7}, 3)), 1e-3);
}

TEST_F(MiniTransformer, TextRoundTripRunsTheSame) {
  SCOPED_TRACE(seed_);
  const std::string text = PrintModule(model_->module);
  auto parsed = ParseModule(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(PrintModule(**parsed), text);
  auto interp = Interpreter::Create(**parsed, model_->weights, {.max_context = kContext});
  ASSERT_TRUE(interp.ok()) << interp.status();
  EXPECT_EQ(Logits(**interp, "prefill", tokens_, 0), Logits(*Fresh(), "prefill", tokens_, 0));
}

}  // namespace
}  // namespace kiln::ir
