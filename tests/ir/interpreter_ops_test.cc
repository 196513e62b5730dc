// Interpreter numerics per op against straightforward double-precision
// references on fresh random inputs (the seed is printed on failure).
// Interpreter outputs start poisoned (NaN), and tests poison the states they
// expect an op to leave partly untouched.
#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "gtest/gtest.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "models/quant/dequantize.h"
#include "models/quant/float16.h"
#include "models/quant/quantize.h"

namespace kiln::ir {
namespace {

using gguf::GgmlType;

class Rng {
 public:
  Rng() : seed_(std::random_device{}()), gen_(seed_) {}
  uint32_t seed() const { return seed_; }
  std::vector<float> Normal(size_t n, float scale = 1.0f) {
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(gen_);
    return v;
  }
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen_); }

 private:
  uint32_t seed_;
  std::mt19937 gen_;
};

// max |got - want| / max |want|, and +inf if `got` has a NaN.
double RelError(const std::vector<float>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double err = 0, norm = 1e-30;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (std::isnan(got[i])) return std::numeric_limits<double>::infinity();
    err = std::max(err, std::abs(got[i] - want[i]));
    norm = std::max(norm, std::abs(want[i]));
  }
  return err / norm;
}

HostTensor F32(std::vector<int64_t> dims, std::vector<float> v) {
  return HostTensor::FromFloats(DType::kF32, std::move(dims), std::move(v));
}
HostTensor I32(std::vector<int64_t> dims, std::vector<int32_t> v) {
  return HostTensor::FromInts(DType::kI32, std::move(dims), std::move(v));
}

// Encodes `values` ([rows, cols] row-major) as `type` and returns the bytes
// and the dequantized values the interpreter will see.
std::vector<uint8_t> Encode(GgmlType type, const std::vector<float>& values, std::vector<float>& decoded) {
  std::vector<uint8_t> bytes(quant::RowBytes(type, static_cast<int64_t>(values.size())));
  EXPECT_TRUE(quant::Quantize(type, values, absl::MakeSpan(bytes)).ok());
  decoded.resize(values.size());
  EXPECT_TRUE(quant::Dequantize(type, bytes, absl::MakeSpan(decoded)).ok());
  return bytes;
}

std::unique_ptr<Interpreter> MakeInterpreter(const Module& m, const WeightSource& w, int64_t ctx = 0,
                                             int threads = 0) {
  auto interp = Interpreter::Create(m, w, {.max_context = ctx, .threads = threads});
  EXPECT_TRUE(interp.ok()) << interp.status();
  return interp.ok() ? *std::move(interp) : nullptr;
}

std::vector<float> RunOne(Interpreter& interp, std::vector<HostTensor> args) {
  auto out = interp.Run("f", std::move(args));
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok() || out->empty()) return {};
  auto v = (*out)[0].ToFloats();
  return v.ok() ? *v : std::vector<float>{};
}

// y = x W^T for each weight type, against a double dot product with the
// dequantized weights.
TEST(InterpreterOps, MatMul) {
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0,
                        GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K}) {
    Rng rng;
    SCOPED_TRACE(absl::StrCat(std::string(gguf::TypeName(type)), " seed ", rng.seed()));
    const int64_t T = 5, K = 512, M = 37;
    std::vector<float> wd;
    std::vector<uint8_t> wb = Encode(type, rng.Normal(M * K, 0.05f), wd);
    const std::vector<float> x = rng.Normal(T * K);
    Module m;
    Value* w = m.AddWeight("w", {*DTypeFromGgml(type), {M, K}}, "w.weight");
    Function* f = m.AddFunction("f");
    Builder b(f);
    b.Return({b.MatMul(b.AddArg({DType::kF32, {Dim::T(), K}}, "x"), w)});
    MemoryWeightSource ws;
    ws.Add("w.weight", type, {K, M}, wb);
    auto interp = MakeInterpreter(m, ws);
    std::vector<double> want(T * M);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t r = 0; r < M; ++r) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(x[t * K + k]) * wd[r * K + k];
        want[t * M + r] = acc;
      }
    EXPECT_LT(RelError(RunOne(*interp, {F32({T, K}, x)}), want), 2e-6);
  }
}

TEST(InterpreterOps, MatMulIsIndependentOfThreadsAndBatch) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const int64_t K = 300, M = 29;
  Module m;
  Value* w = m.AddWeight("w", {DType::kF32, {M, K}}, "w");
  Function* f = m.AddFunction("f");
  Builder b(f);
  b.Return({b.MatMul(b.AddArg({DType::kF32, {Dim::T(), K}}, "x"), w)});
  MemoryWeightSource ws;
  ws.AddF32("w", {K, M}, rng.Normal(M * K));
  const std::vector<float> x = rng.Normal(4 * K);
  auto one = MakeInterpreter(m, ws, 0, 1);
  auto three = MakeInterpreter(m, ws, 0, 3);
  const std::vector<float> a = RunOne(*one, {F32({4, K}, x)});
  EXPECT_EQ(a, RunOne(*three, {F32({4, K}, x)}));
  // Row 2 alone gives the same bits as in the batch.
  const std::vector<float> row2 =
      RunOne(*three, {F32({1, K}, std::vector<float>(x.begin() + 2 * K, x.begin() + 3 * K))});
  EXPECT_EQ(row2, std::vector<float>(a.begin() + 2 * M, a.begin() + 3 * M));
}

TEST(InterpreterOps, Embed) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const int64_t V = 50, E = 64, T = 7;
  std::vector<float> table;
  std::vector<uint8_t> bytes = Encode(GgmlType::kQ8_0, rng.Normal(V * E), table);
  Module m;
  Value* w = m.AddWeight("emb", {DType::kQ8_0, {V, E}}, "token_embd.weight");
  Function* f = m.AddFunction("f");
  Builder b(f);
  b.Return({b.Embed(w, b.AddArg({DType::kI32, {Dim::T()}}, "ids"))});
  MemoryWeightSource ws;
  ws.Add("token_embd.weight", GgmlType::kQ8_0, {E, V}, bytes);
  auto interp = MakeInterpreter(m, ws);
  std::vector<int32_t> ids(T);
  for (int32_t& id : ids) id = rng.Int(0, V - 1);
  ids[0] = V - 1;
  std::vector<double> want;
  for (int32_t id : ids)
    for (int64_t e = 0; e < E; ++e) want.push_back(table[id * E + e]);
  EXPECT_EQ(RelError(RunOne(*interp, {I32({T}, ids)}), want), 0.0);
  auto bad = interp->Run("f", {I32({1}, {static_cast<int32_t>(V)})});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(bad.status().message().find("token id 50 is out of range [0, 50)"), absl::string_view::npos)
      << bad.status();
}

// RMSNorm over the last dim, for activations [T, N] and per-head [T, H, D].
TEST(InterpreterOps, RmsNorm) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{6, 96}, std::vector<int64_t>{3, 4, 32}}) {
    Rng rng;
    SCOPED_TRACE(rng.seed());
    const int64_t n = dims.back();
    int64_t total = 1;
    for (int64_t d : dims) total *= d;
    const float eps = 1e-6f;
    const std::vector<float> x = rng.Normal(total, 3.0f), w = rng.Normal(n);
    Module m;
    Value* wv = m.AddWeight("n", {DType::kF32, {n}}, "n");
    Function* f = m.AddFunction("f");
    Builder b(f);
    Shape shape;
    for (int64_t d : dims) shape.push_back(d);
    b.Return({b.RmsNorm(b.AddArg({DType::kF32, shape}, "x"), wv, eps)});
    MemoryWeightSource ws;
    ws.AddF32("n", {n}, w);
    auto interp = MakeInterpreter(m, ws);
    std::vector<double> want(total);
    for (int64_t r = 0; r < total / n; ++r) {
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[r * n + i]) * x[r * n + i];
      const double scale = 1.0 / std::sqrt(ss / n + eps);
      for (int64_t i = 0; i < n; ++i) want[r * n + i] = x[r * n + i] * scale * w[i];
    }
    EXPECT_LT(RelError(RunOne(*interp, {F32(dims, x)}), want), 1e-6);
  }
}

// NEOX RoPE, plain and YaRN. The fp32 angles are part of the op's
// definition (spec/qwen3-model.md §3.4: theta by repeated fp32
// multiplication, then the YaRN mix), so the reference forms them the same
// way and does cos, sin and the rotation in double.
TEST(InterpreterOps, Rope) {
  for (bool yarn : {false, true}) {
    Rng rng;
    SCOPED_TRACE(absl::StrCat(yarn ? "yarn" : "plain", " seed ", rng.seed()));
    const int64_t T = 4, H = 3, D = 32, P = rng.Int(0, 2000);
    RopeParams rp;
    rp.base = 1e6f;
    if (yarn) {
      rp.freq_scale = 0.25f;
      rp.ext_factor = 1.0f;
      rp.mscale = 1.1386294f;
      rp.ramp_low = 3.0f;
      rp.ramp_high = 11.0f;
    }
    const std::vector<float> x = rng.Normal(T * H * D);
    Module m;
    Function* f = m.AddFunction("f");
    Builder b(f);
    Value* xa = b.AddArg({DType::kF32, {Dim::T(), H, D}}, "x");
    b.Return({b.Rope(xa, b.AddArg({DType::kI32, {1}}, "pos"), rp)});
    MemoryWeightSource ws;
    auto interp = MakeInterpreter(m, ws);
    std::vector<double> want(T * H * D);
    const float theta_scale = std::pow(rp.base, -2.0f / D);
    for (int64_t t = 0; t < T; ++t) {
      float theta = static_cast<float>(P + t);
      for (int64_t i = 0; i < D / 2; ++i, theta *= theta_scale) {
        float angle = theta * rp.freq_scale;
        if (yarn) {
          const float y =
              (static_cast<float>(i) - rp.ramp_low) / std::max(0.001f, rp.ramp_high - rp.ramp_low);
          const float mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * rp.ext_factor;
          angle = theta * rp.freq_scale * (1.0f - mix) + theta * mix;
        }
        const double c = std::cos(static_cast<double>(angle)) * rp.mscale;
        const double s = std::sin(static_cast<double>(angle)) * rp.mscale;
        for (int64_t h = 0; h < H; ++h) {
          const int64_t o = (t * H + h) * D;
          want[o + i] = x[o + i] * c - x[o + i + D / 2] * s;
          want[o + i + D / 2] = x[o + i] * s + x[o + i + D / 2] * c;
        }
      }
    }
    EXPECT_LT(RelError(RunOne(*interp, {F32({T, H, D}, x), I32({1}, {static_cast<int32_t>(P)})}), want),
              2e-6);
  }
}

// Causal GQA attention over an f16 cache whose rows past P+T-1 are NaN:
// a query that reads past its position shows.
TEST(InterpreterOps, Attention) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const int64_t T = 3, H = 4, KV = 2, D = 16, C = 32, P = rng.Int(0, C - T);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  Module m;
  Value* kc = m.AddState("kc", {DType::kF16, {Dim::C(), KV * D}});
  Value* vc = m.AddState("vc", {DType::kF16, {Dim::C(), KV * D}});
  Function* f = m.AddFunction("f");
  Builder b(f);
  Value* q = b.AddArg({DType::kF32, {Dim::T(), H, D}}, "q");
  b.Return({b.Attention(q, kc, vc, b.AddArg({DType::kI32, {1}}, "pos"), KV, scale)});
  MemoryWeightSource ws;
  auto interp = MakeInterpreter(m, ws, C);
  for (const char* name : {"kc", "vc"}) {
    std::vector<float>& cache = interp->state(name)->floats();
    std::vector<float> v = rng.Normal(cache.size(), 2.0f);
    for (size_t i = 0; i < cache.size(); ++i)
      cache[i] = static_cast<int64_t>(i) / (KV * D) < P + T ? quant::HalfToFloat(quant::FloatToHalf(v[i]))
                                                            : std::numeric_limits<float>::quiet_NaN();
  }
  const std::vector<float> qv = rng.Normal(T * H * D);
  const std::vector<float>& K = interp->state("kc")->floats();
  const std::vector<float>& V = interp->state("vc")->floats();
  std::vector<double> want(T * H * D);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kvh = h / (H / KV), n = P + t + 1;
      std::vector<double> s(n);
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d)
          dot += static_cast<double>(qv[(t * H + h) * D + d]) * K[j * KV * D + kvh * D + d];
        s[j] = dot * scale;
        mx = std::max(mx, s[j]);
      }
      for (double& e : s) sum += (e = std::exp(e - mx));
      for (int64_t d = 0; d < D; ++d) {
        double acc = 0;
        for (int64_t j = 0; j < n; ++j) acc += s[j] * V[j * KV * D + kvh * D + d];
        want[(t * H + h) * D + d] = acc / sum;
      }
    }
  EXPECT_LT(RelError(RunOne(*interp, {F32({T, H, D}, qv), I32({1}, {static_cast<int32_t>(P)})}), want), 2e-6);
  auto past_end = interp->Run("f", {F32({T, H, D}, qv), I32({1}, {static_cast<int32_t>(C - 1)})});
  EXPECT_EQ(past_end.status().code(), absl::StatusCode::kOutOfRange) << past_end.status();
}

// kv_store writes rows P..P+T-1 rounded to f16 and leaves the (poisoned)
// other rows alone; k comes per head [T, KV, D], v flat [T, KV*D].
TEST(InterpreterOps, KvStore) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const int64_t T = 3, KV = 2, D = 8, C = 10, P = rng.Int(0, C - T);
  Module m;
  Value* kc = m.AddState("kc", {DType::kF16, {Dim::C(), KV * D}});
  Value* vc = m.AddState("vc", {DType::kF16, {Dim::C(), KV * D}});
  Function* f = m.AddFunction("f");
  Builder b(f);
  Value* k = b.AddArg({DType::kF32, {Dim::T(), KV, D}}, "k");
  Value* v = b.AddArg({DType::kF32, {Dim::T(), KV * D}}, "v");
  b.KvStore(k, v, kc, vc, b.AddArg({DType::kI32, {1}}, "pos"));
  b.Return({});
  MemoryWeightSource ws;
  auto interp = MakeInterpreter(m, ws, C);
  for (const char* name : {"kc", "vc"})
    for (float& e : interp->state(name)->floats()) e = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> kv = rng.Normal(T * KV * D), vv = rng.Normal(T * KV * D);
  auto out =
      interp->Run("f", {F32({T, KV, D}, kv), F32({T, KV * D}, vv), I32({1}, {static_cast<int32_t>(P)})});
  ASSERT_TRUE(out.ok()) << out.status();
  for (int which = 0; which < 2; ++which) {
    const std::vector<float>& cache = interp->state(which == 0 ? "kc" : "vc")->floats();
    const std::vector<float>& src = which == 0 ? kv : vv;
    for (int64_t row = 0; row < C; ++row)
      for (int64_t i = 0; i < KV * D; ++i) {
        const float got = cache[row * KV * D + i];
        if (row >= P && row < P + T) {
          EXPECT_EQ(got, quant::HalfToFloat(quant::FloatToHalf(src[(row - P) * KV * D + i])));
        } else {
          EXPECT_TRUE(std::isnan(got)) << "row " << row << " was written";
        }
      }
  }
  auto overflow =
      interp->Run("f", {F32({T, KV, D}, kv), F32({T, KV * D}, vv), I32({1}, {static_cast<int32_t>(C - 1)})});
  EXPECT_EQ(overflow.status().code(), absl::StatusCode::kOutOfRange) << overflow.status();
}

TEST(InterpreterOps, Elementwise) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const int64_t n = 257;
  const std::vector<float> a = rng.Normal(n, 4.0f), c = rng.Normal(n, 4.0f);
  for (OpKind kind : {OpKind::kSilu, OpKind::kMul, OpKind::kAdd}) {
    Module m;
    Function* f = m.AddFunction("f");
    Builder b(f);
    Value* x = b.AddArg({DType::kF32, {n}}, "a");
    Value* y = b.AddArg({DType::kF32, {n}}, "b");
    b.Return({b.Create(kind, kind == OpKind::kSilu ? std::vector<Value*>{x} : std::vector<Value*>{x, y})
                  ->result()});
    MemoryWeightSource ws;
    auto interp = MakeInterpreter(m, ws);
    std::vector<double> want(n);
    for (int64_t i = 0; i < n; ++i) {
      const double p = a[i], q = c[i];
      want[i] = kind == OpKind::kSilu ? p / (1.0 + std::exp(-p)) : kind == OpKind::kMul ? p * q : p + q;
    }
    // Per element: each result is one rounding (a few for silu) from the truth.
    const std::vector<float> got = RunOne(*interp, {F32({n}, a), F32({n}, c)});
    ASSERT_EQ(got.size(), want.size());
    for (int64_t i = 0; i < n; ++i)
      EXPECT_LE(std::abs(got[i] - want[i]), 4e-7 * std::abs(want[i]) + 1e-30)
          << GetOpInfo(kind).mnemonic << " " << i;
  }
}

TEST(InterpreterOps, Bf16ResultsAreRounded) {
  Module m;
  Function* f = m.AddFunction("f");
  Builder b(f);
  Value* x = b.AddArg({DType::kBF16, {3}}, "a");
  b.Return({b.Add(x, x)});
  MemoryWeightSource ws;
  auto interp = MakeInterpreter(m, ws);
  auto out = interp->Run("f", {HostTensor::FromFloats(DType::kBF16, {3}, {1.0f, 1.00390625f, 3.0f})});
  ASSERT_TRUE(out.ok()) << out.status();
  // Inputs round to bf16 (1.00390625 -> 1.0), and so do results.
  EXPECT_EQ((*out)[0].floats(), (std::vector<float>{2.0f, 2.0f, 6.0f}));
}

TEST(InterpreterOps, ArgmaxTakesTheFirstOfTies) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const int64_t R = 4, n = 100;
  std::vector<float> x = rng.Normal(R * n);
  std::vector<int32_t> want(R);
  for (int64_t r = 0; r < R; ++r) {
    const int a = rng.Int(0, n - 1), c = rng.Int(0, n - 1);
    x[r * n + a] = x[r * n + c] = 100.0f;
    want[r] = std::min(a, c);
  }
  Module m;
  Function* f = m.AddFunction("f");
  Builder b(f);
  b.Return({b.Argmax(b.AddArg({DType::kF32, {R, n}}, "x"))});
  MemoryWeightSource ws;
  auto interp = MakeInterpreter(m, ws);
  auto out = interp->Run("f", {F32({R, n}, x)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{R, 1}));
  EXPECT_EQ((*out)[0].ints(), want);
}

// `load` copies a quantized weight into a state and converts an f32 weight
// into an f16 state; later calls read the states; a kernel region computes
// what its ops compute unfused; reshape keeps the elements.
TEST(InterpreterOps, LoadStoreReshapeKernel) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const int64_t K = 64, M = 8;
  std::vector<float> wd;
  std::vector<uint8_t> wb = Encode(GgmlType::kQ8_0, rng.Normal(M * K), wd);
  const std::vector<float> bias = rng.Normal(M);
  Module m;
  Value* w = m.AddWeight("w", {DType::kQ8_0, {M, K}}, "w");
  Value* bw = m.AddWeight("bias", {DType::kF32, {1, M}}, "bias");
  Value* packed = m.AddState("w.packed", {DType::kQ8_0, {M, K}});
  Value* bias16 = m.AddState("bias.f16", {DType::kF16, {1, M}});
  {
    Builder b(m.AddFunction("load"));
    b.Store(w, packed);
    b.Store(bw, bias16);
    b.Return({});
  }
  {
    Builder b(m.AddFunction("f"));
    Value* x = b.AddArg({DType::kF32, {1, K / 2, 2}}, "x");
    Value* flat = b.Reshape(x, {1, K});
    Op* k = b.Kernel({flat}, {{DType::kF32, {1, M}}}, {{"anchor", Attribute::Int(0)}});
    Builder kb(k->region());
    Value* y = kb.MatMul(k->region()->arg(0), packed);
    kb.Yield({kb.Add(y, bw)});
    b.Return({k->result()});
    EXPECT_TRUE(b.status().ok() && kb.status().ok()) << b.status() << kb.status();
  }
  MemoryWeightSource ws;
  ws.Add("w", GgmlType::kQ8_0, {K, M}, wb);
  ws.AddF32("bias", {M}, bias);
  auto interp = MakeInterpreter(m, ws);
  for (float& e : interp->state("bias.f16")->floats()) e = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE(interp->Run("load", {}).ok());
  for (int64_t r = 0; r < M; ++r)
    EXPECT_EQ(interp->state("bias.f16")->floats()[r], quant::HalfToFloat(quant::FloatToHalf(bias[r])));
  EXPECT_TRUE(interp->state("w.packed")->bytes() == absl::MakeConstSpan(wb));
  const std::vector<float> x = rng.Normal(K);
  std::vector<double> want(M);
  for (int64_t r = 0; r < M; ++r) {
    double acc = 0;
    for (int64_t i = 0; i < K; ++i) acc += static_cast<double>(x[i]) * wd[r * K + i];
    want[r] = acc + bias[r];
  }
  EXPECT_LT(RelError(RunOne(*interp, {F32({1, K / 2, 2}, x)}), want), 2e-6);
}

// Every op of the hand-written module runs: random weights of each declared
// type, then load, prefill, decode and a function typed with P.
TEST(Interpreter, RunsTheAllOpsModule) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  std::ifstream in(std::string(KILN_IR_TESTDATA) + "/all_ops.kir");
  std::stringstream text;
  text << in.rdbuf();
  auto m = ParseModule(text.str());
  ASSERT_TRUE(m.ok()) << m.status();
  MemoryWeightSource ws;
  for (const auto& w : (*m)->weights()) {
    const TensorType& t = w->type();
    std::vector<int64_t> ne;
    int64_t n = 1;
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) {
      ne.push_back(d->value());
      n *= d->value();
    }
    const GgmlType type = *GetDTypeInfo(t.dtype).ggml;
    if (t.dtype == DType::kI8) {
      std::vector<uint8_t> bytes(n);
      for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng.Int(0, 255));
      ws.Add(w->binding(), type, ne, bytes);
    } else {
      std::vector<float> decoded;
      ws.Add(w->binding(), type, ne, Encode(type, rng.Normal(n, 0.2f), decoded));
    }
  }
  auto interp = MakeInterpreter(**m, ws, 16);
  ASSERT_TRUE(interp->Run("load", {}).ok());
  EXPECT_EQ(interp->state("codes.u8")->ints()[0],
            static_cast<uint8_t>(ws.Find("codes \"i8\"\tand\\more\x01")->bytes[0]));
  auto all_finite = [](const HostTensor& t) {
    auto v = t.ToFloats();
    if (!v.ok()) return false;
    for (float x : *v)
      if (!std::isfinite(x)) return false;
    return true;
  };
  auto prefill = interp->Run("prefill", {I32({3}, {1, 2, 999}), I32({1}, {0})});
  ASSERT_TRUE(prefill.ok()) << prefill.status();
  ASSERT_EQ(prefill->size(), 2u);
  EXPECT_TRUE(all_finite((*prefill)[0]));
  EXPECT_EQ((*prefill)[1].dims(), (std::vector<int64_t>{3, 1}));
  auto decode = interp->Run("decode", {I32({1}, {7}), I32({1}, {3})});
  ASSERT_TRUE(decode.ok()) << decode.status();
  // P is bound by the argument's dims, or given, and then must agree.
  EXPECT_TRUE(interp->Run("probe", {F32({2, 4}, rng.Normal(8))}).ok());
  EXPECT_FALSE(interp->Run("probe", {F32({2, 4}, rng.Normal(8))}, 3).ok());
  auto probe = interp->Run("probe", {F32({2, 4}, rng.Normal(8))}, 2);
  ASSERT_TRUE(probe.ok()) << probe.status();
  ASSERT_EQ(probe->size(), 2u);
  EXPECT_TRUE(all_finite((*probe)[0]) && all_finite((*probe)[1]));
}

TEST(Interpreter, WeightBindingErrorsNameTheTensor) {
  Module m;
  m.AddWeight("w", {DType::kQ8_0, {8, 64}}, "blk.0.attn_q.weight");
  Builder(m.AddFunction("f")).Return({});
  MemoryWeightSource missing;
  auto a = Interpreter::Create(m, missing);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(a.status().message().find("blk.0.attn_q.weight"), absl::string_view::npos) << a.status();

  MemoryWeightSource wrong_type;
  wrong_type.AddF32("blk.0.attn_q.weight", {64, 8}, std::vector<float>(512));
  auto b = Interpreter::Create(m, wrong_type);
  EXPECT_EQ(b.status().message(), "weight @w : q8_0[8, 64] = \"blk.0.attn_q.weight\": the tensor is F32");

  MemoryWeightSource wrong_shape;
  wrong_shape.Add("blk.0.attn_q.weight", GgmlType::kQ8_0, {8, 64}, std::vector<uint8_t>(8 * 64 / 32 * 34));
  auto c = Interpreter::Create(m, wrong_shape);
  EXPECT_EQ(c.status().message(),
            "weight @w : q8_0[8, 64] = \"blk.0.attn_q.weight\": the tensor has ne = [8, 64]");

  MemoryWeightSource right;
  right.Add("blk.0.attn_q.weight", GgmlType::kQ8_0, {64, 8}, std::vector<uint8_t>(8 * 64 / 32 * 34));
  EXPECT_TRUE(Interpreter::Create(m, right).ok());
}

TEST(Interpreter, ArgumentsAreChecked) {
  Module m;
  Builder b(m.AddFunction("f"));
  Value* x = b.AddArg({DType::kF32, {Dim::T(), 4}}, "x");
  Value* y = b.AddArg({DType::kF32, {Dim::T(), 4}}, "y");
  b.Return({b.Add(x, y)});
  MemoryWeightSource ws;
  auto interp = MakeInterpreter(m, ws);
  auto mismatch = interp->Run("f", {F32({2, 4}, std::vector<float>(8)), F32({3, 4}, std::vector<float>(12))});
  EXPECT_EQ(mismatch.status().message(), "argument 1 of @f (f32[T, 4]) got f32[3, 4]");
  EXPECT_EQ(interp->Run("g", {}).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace kiln::ir
