// fuse + select-schedules on the tiny synthetic Qwen3, with and without
// pack-weights: the interpreter gives the same prefill and decode outputs
// before and after (relative error <= 1e-5), every op of prefill/decode but
// reshape and return ends in a kernel, every kernel has a schedule, and a
// decode layer takes at most the 6 kernels a layer that issue #5 budgets.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "models/gguf_weight_source.h"
#include "models/qwen3_config.h"
#include "models/qwen3_graph.h"
#include "passes/fuse.h"
#include "passes/pack_weights.h"
#include "passes/select_schedules.h"
#include "tests/models/test_models.h"

namespace kiln::passes {
namespace {

double RelErr(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

ir::HostTensor Ids(std::vector<int32_t> ids) {
  int64_t n = static_cast<int64_t>(ids.size());
  return ir::HostTensor::FromInts(ir::DType::kI32, {n}, std::move(ids));
}

// The layer a kernel belongs to (from the globals it reads: @blk.N.*,
// @k_cache.N, @v_cache.N), -1 for none; -2 if it reads several layers'.
int LayerOf(const ir::Op& kernel) {
  std::set<int> layers;
  ir::WalkOps(*kernel.region(), [&](const ir::Op* op) {
    for (const ir::Value* v : op->operands()) {
      if (!v->is_global()) continue;
      const std::string& n = v->name();
      for (const char* prefix : {"blk.", "k_cache.", "v_cache."}) {
        if (n.rfind(prefix, 0) == 0) layers.insert(std::atoi(n.c_str() + std::string(prefix).size()));
      }
    }
  });
  if (layers.empty()) return -1;
  return layers.size() == 1 ? *layers.begin() : -2;
}

struct Case {
  models::Recipe recipe;
  bool pack;
  int per_layer_max;  // kernels per decode layer
};

class FuseQwen3 : public ::testing::TestWithParam<Case> {};

TEST_P(FuseQwen3, SameOutputsAllOpsInScheduledKernels) {
  const Case& tc = GetParam();
  models::SynthOptions o;
  o.recipe = tc.recipe;
  o.seed = 5;
  auto f = models::SynthAndOpen(o, "m.gguf");
  ASSERT_NE(f, nullptr);
  models::Qwen3Config c = *models::ReadQwen3Config(*f);
  auto ref_module = models::BuildQwen3Module(*f, c);
  auto module = models::BuildQwen3Module(*f, c);
  ASSERT_TRUE(ref_module.ok() && module.ok()) << module.status();
  ir::Module& m = **module;

  PassContext ctx;
  if (tc.pack) {
    ASSERT_TRUE(PackWeightsPass().Run(m, ctx).ok());
  }
  auto fused = FusePass().Run(m, ctx);
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_TRUE(*fused);
  ASSERT_TRUE(ir::Verify(m).ok()) << ir::Verify(m);
  EXPECT_FALSE(*FusePass().Run(m, ctx)) << "fuse is not idempotent";
  auto scheduled = SelectSchedulesPass().Run(m, ctx);
  ASSERT_TRUE(scheduled.ok()) << scheduled.status();
  ASSERT_TRUE(ir::Verify(m).ok()) << ir::Verify(m);

  for (const char* fn : {"prefill", "decode"}) {
    // Decode runs q/k-norm + RoPE + store inside the attention kernel.
    const bool decode = std::string(fn) == "decode";
    const int fused_attention = decode ? 1 : 0;
    std::map<int, int> per_layer;
    for (const auto& op : m.FindFunction(fn)->body().ops()) {
      const ir::OpKind k = op->kind();
      EXPECT_TRUE(k == ir::OpKind::kKernel || k == ir::OpKind::kReshape || k == ir::OpKind::kReturn)
          << fn << ": left outside a kernel: " << ir::PrintOpLine(*op);
      if (k != ir::OpKind::kKernel) continue;
      EXPECT_NE(op->attr("family"), nullptr) << ir::PrintOpLine(*op);
      EXPECT_NE(op->attr("schedule"), nullptr) << ir::PrintOpLine(*op);
      if (decode && op->attr("family") != nullptr) {
        EXPECT_NE(op->attr("family")->string_value(), "qk_norm_rope_store") << "decode: rope not in the attention";
      }
      per_layer[LayerOf(*op)]++;
    }
    EXPECT_EQ(per_layer.count(-2), 0u) << fn << ": a kernel spans layers";
    EXPECT_EQ(per_layer[-1], decode ? 3 : 2) << fn << ": embed, LM head[, argmax]";
    for (int64_t l = 0; l < c.n_layer; ++l) {
      EXPECT_LE(per_layer[l], tc.per_layer_max - fused_attention) << fn << " layer " << l;
      EXPECT_GE(per_layer[l], 6 - fused_attention) << fn << " layer " << l;
    }
  }
  if (tc.pack && tc.recipe == models::Recipe::kQ8_0) {
    // KILN_FUSE_DUMP=<file> writes the fused module (to read a layer).
    if (const char* dump = std::getenv("KILN_FUSE_DUMP")) std::ofstream(dump) << ir::PrintModule(m);
  }

  models::GgufWeightSource weights(*f);
  auto want = ir::Interpreter::Create(**ref_module, weights, {.max_context = 64, .threads = 2});
  auto got = ir::Interpreter::Create(m, weights, {.max_context = 64, .threads = 2});
  ASSERT_TRUE(want.ok() && got.ok()) << got.status();
  ASSERT_TRUE((*want)->Run("load", {}).ok());
  auto load = (*got)->Run("load", {});
  ASSERT_TRUE(load.ok()) << load.status();
  const std::vector<int32_t> prompt = {3, 14, 15, 92, 65, 35, 89, 79};
  auto a = (*want)->Run("prefill", {Ids(prompt), Ids({0})});
  auto b = (*got)->Run("prefill", {Ids(prompt), Ids({0})});
  ASSERT_TRUE(a.ok() && b.ok()) << b.status();
  EXPECT_LE(RelErr((*b)[0].floats(), (*a)[0].floats()), 1e-5) << "prefill";
  int32_t token = 7;
  for (int step = 0; step < 4; ++step) {
    const int32_t pos = static_cast<int32_t>(prompt.size()) + step;
    auto da = (*want)->Run("decode", {Ids({token}), Ids({pos})});
    auto db = (*got)->Run("decode", {Ids({token}), Ids({pos})});
    ASSERT_TRUE(da.ok() && db.ok()) << db.status();
    EXPECT_LE(RelErr((*db)[0].floats(), (*da)[0].floats()), 1e-5) << "decode at " << pos;
    EXPECT_EQ((*db)[1].ints()[0], (*da)[1].ints()[0]) << "decode at " << pos;
    token = (*da)[1].ints()[0];
  }
}

// Kernels per prefill layer (decode: one fewer, the rope in the attention).
// Packed Q8_0: 6 (5 in decode, under the budget of 6).
// Unpacked: Q, K, V and gate, up stay separate matmuls (9). Q4_K_M packs
// gate/up but keeps Q/K/V separate where attn_v is Q6_K (8).
INSTANTIATE_TEST_SUITE_P(Recipes, FuseQwen3,
                         ::testing::Values(Case{models::Recipe::kQ8_0, true, 6},
                                           Case{models::Recipe::kQ8_0, false, 9},
                                           Case{models::Recipe::kQ4_K_M, true, 8},
                                           Case{models::Recipe::kQ4_K_M, false, 9},
                                           Case{models::Recipe::kF16, true, 6}),
                         [](const auto& info) {
                           return std::string(models::RecipeName(info.param.recipe)) +
                                  (info.param.pack ? "_packed" : "_unpacked");
                         });

// models::GraphOptions::prefill_last_logits: fuse takes the last_row into
// the LM head's kernel (a one-token matvec on the full hidden state, the
// final norm as its prologue), leaves none outside, and the prefill gives
// the last row of the unfused every-row logits.
TEST(FuseQwen3LastLogits, TheLastRowGoesIntoTheLmHeadMatvec) {
  models::SynthOptions o;
  o.recipe = models::Recipe::kQ8_0;
  o.seed = 5;
  auto f = models::SynthAndOpen(o, "m.gguf");
  ASSERT_NE(f, nullptr);
  models::Qwen3Config c = *models::ReadQwen3Config(*f);
  auto ref_module = models::BuildQwen3Module(*f, c);
  auto module = models::BuildQwen3Module(*f, c, {.prefill_last_logits = true});
  ASSERT_TRUE(ref_module.ok() && module.ok()) << module.status();
  ir::Module& m = **module;
  PassContext ctx;
  ASSERT_TRUE(PackWeightsPass().Run(m, ctx).ok());
  ASSERT_TRUE(FusePass().Run(m, ctx).ok());
  ASSERT_TRUE(SelectSchedulesPass().Run(m, ctx).ok());
  ASSERT_TRUE(ir::Verify(m).ok()) << ir::Verify(m);
  const ir::Op* head = nullptr;
  for (const auto& op : m.FindFunction("prefill")->body().ops()) {
    EXPECT_NE(op->kind(), ir::OpKind::kLastRow) << "left outside a kernel";
    if (op->kind() != ir::OpKind::kKernel) continue;
    ir::WalkOps(*op->region(), [&](const ir::Op* inner) {
      if (inner->kind() == ir::OpKind::kLastRow) head = op.get();
    });
  }
  ASSERT_NE(head, nullptr) << ir::PrintModule(m);
  EXPECT_EQ(head->attr("family")->string_value(), "matvec");
  std::vector<ir::OpKind> kinds;
  for (const auto& inner : head->region()->ops()) kinds.push_back(inner->kind());
  EXPECT_EQ(kinds, (std::vector<ir::OpKind>{ir::OpKind::kLastRow, ir::OpKind::kRmsNorm, ir::OpKind::kMatMul,
                                            ir::OpKind::kYield}));

  models::GgufWeightSource weights(*f);
  auto want = ir::Interpreter::Create(**ref_module, weights, {.max_context = 64, .threads = 2});
  auto got = ir::Interpreter::Create(m, weights, {.max_context = 64, .threads = 2});
  ASSERT_TRUE(want.ok() && got.ok()) << got.status();
  ASSERT_TRUE((*want)->Run("load", {}).ok() && (*got)->Run("load", {}).ok());
  const std::vector<int32_t> prompt = {3, 14, 15, 92, 65, 35, 89, 79};
  auto a = (*want)->Run("prefill", {Ids(prompt), Ids({0})});
  auto b = (*got)->Run("prefill", {Ids(prompt), Ids({0})});
  ASSERT_TRUE(a.ok() && b.ok()) << b.status();
  const std::vector<float>& rows = (*a)[0].floats();
  ASSERT_EQ((*b)[0].floats().size(), size_t(c.n_vocab));
  EXPECT_LE(RelErr((*b)[0].floats(), std::vector<float>(rows.end() - c.n_vocab, rows.end())), 1e-5);
}

}  // namespace
}  // namespace kiln::passes
