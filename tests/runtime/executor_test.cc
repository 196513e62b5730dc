// The executor and its preflight checks. CPU tests (CI): the GGUF binding,
// the kernel-image choice, buffer sizes and the out-of-memory message, the
// decode-graph rule, and a clean "no GPU" failure. GPU tests (suite
// ExecutorGpuTest, CTest label `gpu`): a toy bundle of hand-written PTX is
// run end to end against a CPU model of the same arithmetic, exactly.
#include "runtime/executor.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/gguf/gguf_writer.h"
#include "runtime/bundle/bundle_format.h"
#include "runtime/bundle/expr.h"
#include "runtime/bundle/validator.h"
#include "runtime/preflight.h"
#include "runtime/sampler.h"
#include "runtime/vocab_from_manifest.h"
#include "tests/runtime/toy_bundle.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using namespace toy;  // NOLINT: the toy bundle is what these tests are about

constexpr int kV = 16;
constexpr int kContext = 64;
constexpr int kMaxTokens = 8;

// ------------------------------------------------------------ CPU tests

TEST(ToyBundleTest, PassesTheBundleValidator) {
  ToyBundle tb = MakeToyBundle();
  EXPECT_TRUE(ValidateManifest(tb.manifest, tb.file.size()).ok()) << ValidateManifest(tb.manifest, tb.file.size());
  ToyOptions last_only;
  last_only.last_only = true;
  ToyBundle tb2 = MakeToyBundle(last_only);
  EXPECT_TRUE(ValidateManifest(tb2.manifest, tb2.file.size()).ok());
}

TEST(BindingTest, MatchingGgufPasses) {
  ToyBundle tb = MakeToyBundle();
  std::vector<uint8_t> bytes = ToyGgufBytes(kV, "toy.weight", gguf::GgmlType::kF32, {kV, kV}, /*extra_tensor=*/true);
  EXPECT_TRUE(CheckBinding(tb.manifest, *ParseGguf(bytes)).ok());
}

TEST(BindingTest, TrailingOnesInTheShapeDoNotMatter) {
  ToyBundle tb = MakeToyBundle();
  tb.manifest.mutable_bindings(0)->add_dims(1);
  std::vector<uint8_t> bytes = ToyGgufBytes();
  EXPECT_TRUE(CheckBinding(tb.manifest, *ParseGguf(bytes)).ok());
}

TEST(BindingTest, MissingTensorIsNamed) {
  ToyBundle tb = MakeToyBundle();
  std::vector<uint8_t> bytes = ToyGgufBytes(kV, "renamed.weight");
  absl::Status s = CheckBinding(tb.manifest, *ParseGguf(bytes));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith("tensor 'toy.weight' is missing from toy.gguf; the bundle expects F32 [16, 16]"));
}

TEST(BindingTest, OtherTypeIsNamed) {
  ToyBundle tb = MakeToyBundle();
  std::vector<uint8_t> bytes = ToyGgufBytes(kV, "toy.weight", gguf::GgmlType::kF16);
  absl::Status s = CheckBinding(tb.manifest, *ParseGguf(bytes));
  EXPECT_THAT(std::string(s.message()), StartsWith("tensor 'toy.weight' is F16 in toy.gguf, the bundle expects F32"));
}

TEST(BindingTest, OtherShapeIsNamed) {
  ToyBundle tb = MakeToyBundle();
  std::vector<uint8_t> bytes = ToyGgufBytes(kV, "toy.weight", gguf::GgmlType::kF32, {kV, 2 * kV});
  absl::Status s = CheckBinding(tb.manifest, *ParseGguf(bytes));
  EXPECT_THAT(std::string(s.message()), StartsWith("tensor 'toy.weight' has shape [16, 32] in toy.gguf, the bundle expects [16, 16]"));
}

TEST(BindingTest, TheFirstMismatchInBindingOrderIsReported) {
  ToyBundle tb = MakeToyBundle();
  // Bind a second tensor before the first; both differ from the file.
  TensorBinding first = tb.manifest.bindings(0);
  first.set_name("other.weight");  // F32 [32] in the file
  first.clear_dims();
  first.add_dims(64);
  *tb.manifest.mutable_bindings()->Add() = tb.manifest.bindings(0);
  *tb.manifest.mutable_bindings(0) = first;
  std::vector<uint8_t> bytes = ToyGgufBytes(kV, "toy.weight", gguf::GgmlType::kF16, {kV, kV}, /*extra_tensor=*/true);
  absl::Status s = CheckBinding(tb.manifest, *ParseGguf(bytes));
  EXPECT_THAT(std::string(s.message()), StartsWith("tensor 'other.weight' has shape [32]"));
}

// The toy tensor with `keys` (qwen3.* or others) and, optionally, an
// output.weight.
std::unique_ptr<gguf::GgufFile> GgufWithKeys(std::vector<std::pair<std::string, gguf::Value>> keys,
                                             bool output_weight = false) {
  gguf::GgufWriter w;
  w.AddKey("general.architecture", gguf::Value::Str("qwen3"));
  for (auto& [k, v] : keys) w.AddKey(k, std::move(v));
  w.AddTensorBytes("toy.weight", {kV, kV}, gguf::GgmlType::kF32, std::vector<uint8_t>(kV * kV * 4, 0));
  if (output_weight) w.AddTensorBytes("output.weight", {kV, kV}, gguf::GgmlType::kF32, std::vector<uint8_t>(kV * kV * 4, 0));
  absl::StatusOr<std::vector<uint8_t>> bytes = w.WriteToMemory();
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return ParseGguf(*bytes);
}

TEST(BindingTest, TheModelKeysMustMatchTheCompiledOnes) {
  ToyBundle tb = MakeToyBundle();
  auto key = [&](const char* k, const char* v) {
    ModelKey* mk = tb.manifest.add_model_keys();
    mk->set_key(k);
    mk->set_value(v);
  };
  // As kilnc writes them: the GGUF value's ExactString.
  key("qwen3.block_count", gguf::Value::U32(2).ExactString().c_str());
  key("qwen3.rope.freq_base", gguf::Value::F32(1e6f).ExactString().c_str());
  auto check = [&](std::vector<std::pair<std::string, gguf::Value>> keys) {
    return CheckBinding(tb.manifest, *GgufWithKeys(std::move(keys)));
  };
  EXPECT_TRUE(check({{"qwen3.block_count", gguf::Value::U32(2)}, {"qwen3.rope.freq_base", gguf::Value::F32(1e6f)},
                     {"general.name", gguf::Value::Str("renamed")}})
                  .ok());
  absl::Status s = check({{"qwen3.block_count", gguf::Value::U32(2)}, {"qwen3.rope.freq_base", gguf::Value::F32(2.0f)}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "metadata 'qwen3.rope.freq_base' is 2 in toy.gguf, the bundle was compiled with 1e+06 "
                         "(is this GGUF the model the bundle was compiled for?)");
  s = check({{"qwen3.block_count", gguf::Value::U32(2)}});
  EXPECT_THAT(std::string(s.message()), StartsWith("metadata 'qwen3.rope.freq_base' is missing from toy.gguf; the "
                                                   "bundle was compiled with 1e+06"));
  s = check({{"qwen3.block_count", gguf::Value::U32(2)}, {"qwen3.rope.freq_base", gguf::Value::F32(1e6f)},
             {"qwen3.rope.scaling.type", gguf::Value::Str("yarn")}});
  EXPECT_THAT(std::string(s.message()), StartsWith("metadata 'qwen3.rope.scaling.type' in toy.gguf was not in the "
                                                   "GGUF the bundle was compiled from"));
  // Bundles made before model_keys compare nothing.
  tb.manifest.clear_model_keys();
  EXPECT_TRUE(check({{"qwen3.rope.freq_base", gguf::Value::F32(2.0f)}}).ok());
}

TEST(BindingTest, AnOutputWeightUnderTiedEmbeddingsIsRefused) {
  ToyBundle tb = MakeToyBundle();
  tb.manifest.mutable_config()->set_tied_embeddings(true);
  EXPECT_TRUE(CheckBinding(tb.manifest, *GgufWithKeys({})).ok());
  absl::Status s = CheckBinding(tb.manifest, *GgufWithKeys({}, /*output_weight=*/true));
  EXPECT_THAT(std::string(s.message()), StartsWith("toy.gguf has 'output.weight', but the bundle was compiled for a "
                                                   "model without one"));
  tb.manifest.mutable_config()->set_tied_embeddings(false);
  EXPECT_TRUE(CheckBinding(tb.manifest, *GgufWithKeys({}, /*output_weight=*/true)).ok());
}

Manifest WithSections(std::vector<std::pair<Section::Kind, std::string>> sections) {
  Manifest m;
  for (const auto& [kind, target] : sections) {
    Section* s = m.add_sections();
    s->set_kind(kind);
    s->set_target(target);
  }
  return m;
}

TEST(SectionTest, ACubinForTheExactTargetIsChosen) {
  Manifest m = WithSections({{Section::PTX, "sm_80"}, {Section::CUBIN, "sm_80"}, {Section::CUBIN, "sm_90"}});
  absl::StatusOr<SectionChoice> c = SelectSections(m, {"NVIDIA H200", 90}, false);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->jit);
  EXPECT_EQ(c->target, "sm_90");
  EXPECT_THAT(c->sections, ::testing::ElementsAre(2));
  // sm_90a runs on 9.0 alone.
  c = SelectSections(WithSections({{Section::CUBIN, "sm_90a"}}), {"NVIDIA H200", 90}, false);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->target, "sm_90a");
}

TEST(SectionTest, AnotherGpuNeedsAllowPtxJit) {
  Manifest m = WithSections({{Section::PTX, "sm_80"}, {Section::CUBIN, "sm_90"}});
  absl::StatusOr<SectionChoice> c = SelectSections(m, {"NVIDIA GeForce RTX 4090", 89}, false);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(c.status().message()),
              StartsWith("bundle built for sm_90, this GPU is NVIDIA GeForce RTX 4090 (sm_89); rerun with "
                         "--allow-ptx-jit to JIT the PTX (sm_80)"));
  c = SelectSections(m, {"NVIDIA GeForce RTX 4090", 89}, true);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->jit);
  EXPECT_EQ(c->target, "sm_80");
  EXPECT_THAT(c->sections, ::testing::ElementsAre(0));
}

TEST(SectionTest, TheHighestPtxTheGpuCanJitIsChosen) {
  Manifest m = WithSections({{Section::PTX, "sm_80"}, {Section::PTX, "sm_90a"}, {Section::PTX, "sm_89"},
                             {Section::PTX, "sm_100"}});
  absl::StatusOr<SectionChoice> c = SelectSections(m, {"NVIDIA H200", 90}, true);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->target, "sm_90a");
  c = SelectSections(m, {"NVIDIA L4", 89}, true);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->target, "sm_89");
  // Only PTX: even the exact target needs the flag (it is a JIT).
  c = SelectSections(m, {"NVIDIA H200", 90}, false);
  EXPECT_THAT(std::string(c.status().message()), StartsWith("bundle has no cubin, only PTX for sm_80, sm_90a, sm_89, sm_100, "
                                               "this GPU is NVIDIA H200 (sm_90); rerun with --allow-ptx-jit"));
}

TEST(SectionTest, NothingUsableSaysToRecompile) {
  Manifest m = WithSections({{Section::PTX, "sm_90"}, {Section::CUBIN, "sm_90"}});
  absl::StatusOr<SectionChoice> c = SelectSections(m, {"NVIDIA A100-SXM4-80GB", 80}, true);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "bundle built for sm_90, this GPU is NVIDIA A100-SXM4-80GB (sm_80), and the bundle has no PTX this GPU "
            "can JIT (PTX for sm_90); recompile the bundle with kilnc for sm_80");
}

// A manifest shaped like Qwen3-8B Q8_0 for the memory arithmetic: 8.7 GB of
// GGUF tensors, the same packed, 147456 bytes of f16 KV per token (times
// `kv_scale`, to make the KV cache dominate).
Manifest EightBLike(int64_t kv_scale = 1) {
  Manifest m;
  m.mutable_config()->set_context_length(40960);
  m.mutable_prefill()->set_max_tokens(512);
  m.mutable_decode()->set_max_tokens(1);
  AddBuffer(m, "gguf", Buffer::GGUF_TENSOR, E(8'700'000'000));
  AddBuffer(m, "packed", Buffer::WEIGHT, E(8'700'000'000));
  AddBuffer(m, "kv", Buffer::KV_CACHE, E(0, 0, 0, 147456 * kv_scale));
  AddBuffer(m, "arena", Buffer::ACTIVATION, E(1 << 20, 4 * 12288));
  AddBuffer(m, "logits", Buffer::IO, E(0, 151936 * 4));
  m.mutable_buffers(2)->set_alignment(4096);
  Launch* l = m.mutable_load()->add_launches();
  AddBufferArg(*l, 0);
  AddBufferArg(*l, 1);
  return m;
}

TEST(MemoryTest, BuffersAreSizedAtTheContextAndTheLargestStep) {
  Manifest m = EightBLike();
  absl::StatusOr<MemoryPlan> p = PlanMemory(m, 4096);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->buffer_bytes[2], 147456ull * 4096 + 4096 - 256);  // alignment slack
  EXPECT_EQ(p->buffer_bytes[3], (1u << 20) + 4 * 12288 * 512ull);
  EXPECT_EQ(p->buffer_bytes[4], 151936 * 4 * 512ull);
  EXPECT_THAT(p->during_load, ::testing::ElementsAre(true, true, false, false, false));
  EXPECT_EQ(p->load_bytes, p->buffer_bytes[0] + p->buffer_bytes[1]);
  EXPECT_EQ(p->run_bytes, p->buffer_bytes[1] + p->buffer_bytes[2] + p->buffer_bytes[3] + p->buffer_bytes[4]);
  EXPECT_EQ(p->peak_bytes, std::max(p->load_bytes, p->run_bytes) + kMemoryHeadroom);
}

TEST(MemoryTest, TheLoadPlansScratchIsAllocatedForLoad) {
  Manifest m = EightBLike();
  AddBufferArg(*m.mutable_load()->mutable_launches(0), 3);  // load uses the arena
  absl::StatusOr<MemoryPlan> p = PlanMemory(m, 4096);
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(p->during_load, ::testing::ElementsAre(true, true, false, true, false));
}

TEST(MemoryTest, FittingIsOk) {
  Manifest m = EightBLike();
  absl::StatusOr<MemoryPlan> p = PlanMemory(m, 40960);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(CheckMemoryFits(m, *p, p->peak_bytes, "NVIDIA H200").ok());
  EXPECT_FALSE(CheckMemoryFits(m, *p, p->peak_bytes - 1, "NVIDIA H200").ok());
}

TEST(MemoryTest, TooLittleMemorySuggestsTheLargestContextThatFits) {
  Manifest m = EightBLike(/*kv_scale=*/4);  // the KV cache dominates: 33 GB at 40960
  absl::StatusOr<MemoryPlan> p = PlanMemory(m, 40960);
  ASSERT_TRUE(p.ok());
  ASSERT_GT(p->run_bytes, p->load_bytes);
  const uint64_t free = 24'000'000'000;
  absl::Status s = CheckMemoryFits(m, *p, free, "NVIDIA GeForce RTX 4090");
  ASSERT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), StartsWith(absl::StrCat("context 40960 needs ", FormatBytes(p->peak_bytes),
                                                   " of GPU memory, 24.0 GB free on NVIDIA GeForce RTX 4090; "
                                                   "rerun with --ctx-size ")));
  // The suggestion fits and is within one rounding step (256) of the limit.
  const std::string key = "rerun with --ctx-size ";
  const size_t at = s.message().find(key);
  ASSERT_NE(at, absl::string_view::npos) << s.message();
  const int64_t suggested = std::atoll(std::string(s.message().substr(at + key.size())).c_str());
  EXPECT_EQ(suggested % 256, 0);
  EXPECT_LE(PlanMemory(m, suggested)->peak_bytes, free);
  EXPECT_GT(PlanMemory(m, suggested + 256)->peak_bytes, free);
}

TEST(MemoryTest, WhenTheWeightsAloneDoNotFitItSaysSo) {
  Manifest m = EightBLike();
  absl::StatusOr<MemoryPlan> p = PlanMemory(m, 4096);
  ASSERT_TRUE(p.ok());
  absl::Status s = CheckMemoryFits(m, *p, 12'000'000'000, "NVIDIA T4");
  EXPECT_THAT(std::string(s.message()), HasSubstr("the peak is while loading"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("even --ctx-size 1 does not fit"));
}

TEST(MemoryTest, FormatBytes) {
  EXPECT_EQ(FormatBytes(12'345'678'901), "12.3 GB");
  EXPECT_EQ(FormatBytes(9'100'000'000), "9.1 GB");
  EXPECT_EQ(FormatBytes(512ull << 20), "536.9 MB");
}

TEST(ContextTest, DefaultIsTheModelsAndItIsBounded) {
  Manifest m = EightBLike();
  EXPECT_EQ(*ChooseContext(m, 0), 40960);
  EXPECT_EQ(*ChooseContext(m, 4096), 4096);
  EXPECT_THAT(std::string(ChooseContext(m, 50000).status().message()),
              HasSubstr("--ctx-size 50000 exceeds the model's context length 40960"));
  EXPECT_FALSE(ChooseContext(m, -1).ok());
}

TEST(DecodeGraphTest, DecodeMustNotDependOnP) {
  EXPECT_TRUE(CheckDecodeGraphable(MakeToyBundle().manifest).ok());
  ToyOptions o;
  o.decode_reads_p = true;
  absl::Status s = CheckDecodeGraphable(MakeToyBundle(o).manifest);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith("decode launch 0 (kernel 'toy_store'): arg 2 offset = 4*P depends on P"));
}

TEST(VocabTest, ManifestTokenizerBecomesAVocab) {
  Tokenizer t;
  t.set_model("gpt2");
  t.set_pre("qwen2");
  t.add_tokens("a");
  t.add_token_types(1);
  t.add_tokens("<|im_end|>");
  t.add_token_types(3);
  t.add_merges("a a");
  t.set_bos_id(-1);
  t.set_eos_id(1);
  t.set_pad_id(-1);
  t.set_chat_template("{{ x }}");
  absl::StatusOr<tokenizer::Vocab> v = VocabFromManifest(t);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_THAT(v->tokens, ::testing::ElementsAre("a", "<|im_end|>"));
  EXPECT_THAT(v->token_types, ::testing::ElementsAre(tokenizer::TokenType::kNormal, tokenizer::TokenType::kControl));
  EXPECT_EQ(v->eos_id, 1);
  EXPECT_EQ(v->bos_id, -1);
  EXPECT_EQ(v->chat_template, "{{ x }}");
  t.set_token_types(1, 9);
  EXPECT_THAT(std::string(VocabFromManifest(t).status().message()), HasSubstr("token 1 has type 9"));
  t.add_token_types(1);
  EXPECT_THAT(std::string(VocabFromManifest(t).status().message()), HasSubstr("3 token types for 2 tokens"));
}

bool HaveDriver() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

TEST(ExecutorTest, WithoutAGpuCreateFailsCleanly) {
  if (HaveDriver()) GTEST_SKIP() << "this machine has an NVIDIA driver";
  ToyBundle tb = MakeToyBundle();
  std::vector<uint8_t> bytes = ToyGgufBytes();
  std::unique_ptr<gguf::GgufFile> file = ParseGguf(bytes);
  absl::StatusOr<std::unique_ptr<Executor>> e = Executor::Create(tb.manifest, tb.sections(), *file, {});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(e.status().message()), StartsWith("no NVIDIA driver found"));
}

TEST(ExecutorTest, TheBindingIsCheckedBeforeTheDriverIsTouched) {
  ToyBundle tb = MakeToyBundle();
  std::vector<uint8_t> bytes = ToyGgufBytes(kV, "toy.weight", gguf::GgmlType::kF16);
  std::unique_ptr<gguf::GgufFile> file = ParseGguf(bytes);
  absl::StatusOr<std::unique_ptr<Executor>> e = Executor::Create(tb.manifest, tb.sections(), *file, {});
  EXPECT_THAT(std::string(e.status().message()), StartsWith("tensor 'toy.weight' is F16"));
  ExecutorOptions big;
  big.context = kContext + 1;
  bytes = ToyGgufBytes();
  file = ParseGguf(bytes);
  e = Executor::Create(tb.manifest, tb.sections(), *file, big);
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("exceeds the model's context length 64"));
}

// ------------------------------------------------------------ GPU tests

class ExecutorGpuTest : public ::testing::Test {
 protected:
  absl::StatusOr<std::unique_ptr<Executor>> Create(const ToyBundle& tb, ExecutorOptions o = {}) {
    o.show_progress = false;
    gguf_bytes_ = ToyGgufBytes();
    file_ = ParseGguf(gguf_bytes_);
    return Executor::Create(tb.manifest, tb.sections(), *file_, o);
  }
  static ExecutorOptions Jit() {
    ExecutorOptions o;
    o.allow_ptx_jit = true;
    return o;
  }

  std::vector<uint8_t> gguf_bytes_;
  std::unique_ptr<gguf::GgufFile> file_;
};

void ExpectRow(const std::vector<float>& got, size_t row, const std::vector<float>& want, const std::string& what) {
  ASSERT_GE(got.size(), (row + 1) * kV) << what;
  for (int v = 0; v < kV; ++v) ASSERT_EQ(got[row * kV + v], want[v]) << what << ", column " << v;
}

TEST_F(ExecutorGpuTest, PrefillAndGreedyDecodeMatchTheCpuModelExactly) {
  ToyBundle tb = MakeToyBundle();
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb, Jit());
  ASSERT_TRUE(e.ok()) << e.status();
  Executor& ex = **e;
  EXPECT_EQ(ex.context(), kContext);
  EXPECT_TRUE(ex.sections().jit);
  EXPECT_EQ(ex.sections().target, ex.device().supports_pdl() ? "sm_90" : "sm_80");

  ToyModel cpu;
  const std::vector<int32_t> prompt = {3, 5, 7};
  absl::StatusOr<StepResult> r = ex.Prefill(prompt, Logits::kAll);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows, 3);
  std::vector<float> last;
  for (size_t i = 0; i < prompt.size(); ++i) {
    last = cpu.Feed(prompt[i]);
    ExpectRow(r->logits, i, last, absl::StrCat("prompt row ", i));
  }
  EXPECT_EQ(r->argmax, Argmax(last));
  EXPECT_EQ(ex.position(), 3);

  // Greedy: feed the device's argmax back; after the first step nothing is
  // written from the host, so this checks the graph's own step advance.
  int32_t next = r->argmax;
  for (int step = 0; step < 40; ++step) {
    absl::StatusOr<StepResult> d = ex.Decode(next, step % 2 ? Logits::kLast : Logits::kNone);
    ASSERT_TRUE(d.ok()) << d.status();
    last = cpu.Feed(next);
    if (step % 2) ExpectRow(d->logits, 0, last, absl::StrCat("decode step ", step));
    else EXPECT_TRUE(d->logits.empty());
    ASSERT_EQ(d->argmax, Argmax(last)) << "decode step " << step;
    next = d->argmax;
  }
  EXPECT_EQ(ex.position(), 43);
}

// DecodeGreedy queues each step before the host waits for the one before:
// the tokens must be the CPU model's, a stop must leave the position at the
// last token seen (the step queued past it forgotten), and whatever comes
// next must see the right token and position.
TEST_F(ExecutorGpuTest, GreedyDecodingAheadMatchesTheCpuModelAndStopsCleanly) {
  ToyBundle tb = MakeToyBundle();
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb, Jit());
  ASSERT_TRUE(e.ok()) << e.status();
  Executor& ex = **e;
  ToyModel cpu;
  absl::StatusOr<StepResult> r = ex.Prefill(std::vector<int32_t>{3, 5, 7}, Logits::kNone);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<float> last;
  for (int32_t t : {3, 5, 7}) last = cpu.Feed(t);
  ASSERT_EQ(r->argmax, Argmax(last));

  // The CPU model follows each token as it arrives: it is fed the token
  // the step was fed, and its argmax must be the step's.
  int32_t next = r->argmax;
  std::vector<int32_t> seen;
  auto follow = [&](int32_t id) {
    last = cpu.Feed(next);
    EXPECT_EQ(id, Argmax(last)) << "step " << seen.size();
    seen.push_back(id);
    next = id;
    return true;
  };
  // 20 steps run through.
  ex.ResetCounters();
  absl::StatusOr<int64_t> ran = ex.DecodeGreedy(next, 20, follow);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(*ran, 20);
  EXPECT_EQ(seen.size(), 20u);
  EXPECT_EQ(ex.position(), 23);
  EXPECT_EQ(ex.counters().launches, 20);  // no step past the last
  EXPECT_EQ(ex.counters().syncs, 20);
  // The position and the token, written once after the prefill; the
  // argmaxes arrive in mapped memory.
  EXPECT_EQ(ex.counters().copies, 2);

  // A stop after 5 steps: the sixth, already queued, is forgotten (and
  // waited for). The run before left the device's token and position as
  // the host knows them: nothing is written.
  int calls = 0;
  ex.ResetCounters();
  ran = ex.DecodeGreedy(next, 1000, [&](int32_t id) { return follow(id) && ++calls < 5; });
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(*ran, 5);
  EXPECT_EQ(ex.position(), 28);
  EXPECT_EQ(ex.counters().launches, 6);
  EXPECT_EQ(ex.counters().syncs, 6);
  EXPECT_EQ(ex.counters().copies, 0);
  // The device ran one step further; the next step must still be fed at 28.
  absl::StatusOr<StepResult> d = ex.Decode(next, Logits::kLast);
  ASSERT_TRUE(d.ok()) << d.status();
  last = cpu.Feed(next);
  ExpectRow(d->logits, 0, last, "the step after a stop");
  next = d->argmax;
  EXPECT_EQ(ex.position(), 29);

  // A host-chosen token (not the device's argmax) starts a greedy run too.
  ASSERT_TRUE(ex.Rewind(25).ok());
  cpu.Rewind(25);
  next = (Argmax(last) + 1) % kV;
  ran = ex.DecodeGreedy(next, 3, follow);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(*ran, 3);
  EXPECT_EQ(ex.position(), 28);
  // It ended at max_steps with no step past it, so the device holds the
  // token and position: one step of one, then a Decode, write nothing.
  ex.ResetCounters();
  ran = ex.DecodeGreedy(next, 1, follow);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(*ran, 1);
  d = ex.Decode(next, Logits::kNone);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->argmax, Argmax(cpu.Feed(next)));
  next = d->argmax;
  EXPECT_EQ(ex.position(), 30);
  EXPECT_EQ(ex.counters().launches, 2);
  EXPECT_EQ(ex.counters().syncs, 2);
  EXPECT_EQ(ex.counters().copies, 0);

  EXPECT_EQ(ex.DecodeGreedy(next, 0, [](int32_t) { return true; }).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(ex.DecodeGreedy(kV, 1, [](int32_t) { return true; }).status().message()),
              HasSubstr("outside the vocabulary"));
}

TEST_F(ExecutorGpuTest, GreedyDecodingAheadEndsAtTheEndOfTheContext) {
  ToyBundle tb = MakeToyBundle();
  ExecutorOptions o = Jit();
  o.context = 12;
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb, o);
  ASSERT_TRUE(e.ok()) << e.status();
  Executor& ex = **e;
  ToyModel cpu;
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8};
  absl::StatusOr<StepResult> r = ex.Prefill(prompt, Logits::kNone);
  ASSERT_TRUE(r.ok()) << r.status();
  for (int32_t t : prompt) cpu.Feed(t);
  int32_t next = r->argmax;
  int calls = 0;
  absl::StatusOr<int64_t> ran = ex.DecodeGreedy(next, 1000, [&](int32_t id) {
    EXPECT_EQ(id, Argmax(cpu.Feed(next))) << "step " << calls;
    next = id;
    ++calls;
    return true;
  });
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(*ran, 4);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(ex.position(), 12);
  absl::Status s = ex.DecodeGreedy(next, 1, [](int32_t) { return true; }).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("the context of 12 tokens is full"));
}

TEST_F(ExecutorGpuTest, HostChosenTokensAndRewindAreFedCorrectly) {
  ToyBundle tb = MakeToyBundle();
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb, Jit());
  ASSERT_TRUE(e.ok()) << e.status();
  Executor& ex = **e;
  ToyModel cpu;
  ASSERT_TRUE(ex.Prefill(std::vector<int32_t>{1, 2}, Logits::kNone).ok());
  cpu.Feed(1);
  cpu.Feed(2);
  // Not the argmax: the host must write the token (a sampled step).
  for (int32_t t : {9, 9, 0, 15, 4}) {
    absl::StatusOr<StepResult> d = ex.Decode(t, Logits::kLast);
    ASSERT_TRUE(d.ok()) << d.status();
    ExpectRow(d->logits, 0, cpu.Feed(t), absl::StrCat("token ", t));
  }
  // Rewind into the prompt and continue with prefill, then decode.
  ASSERT_TRUE(ex.Rewind(1).ok());
  cpu.Rewind(1);
  absl::StatusOr<StepResult> r = ex.Prefill(std::vector<int32_t>{11, 12, 13}, Logits::kLast);
  ASSERT_TRUE(r.ok()) << r.status();
  cpu.Feed(11);
  cpu.Feed(12);
  std::vector<float> last = cpu.Feed(13);
  ExpectRow(r->logits, 0, last, "prefill after rewind");
  absl::StatusOr<StepResult> d = ex.Decode(r->argmax, Logits::kLast);
  ASSERT_TRUE(d.ok()) << d.status();
  ExpectRow(d->logits, 0, cpu.Feed(r->argmax), "decode after rewind");
  EXPECT_FALSE(ex.Rewind(ex.position() + 1).ok());
  // Reset starts over at position 0.
  ex.Reset();
  cpu.Rewind(0);
  r = ex.Prefill(std::vector<int32_t>{6}, Logits::kLast);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectRow(r->logits, 0, cpu.Feed(6), "after reset");
}

TEST_F(ExecutorGpuTest, LongPromptsArePrefilledInChunks) {
  ToyBundle tb = MakeToyBundle();
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb, Jit());
  ASSERT_TRUE(e.ok()) << e.status();
  std::vector<int32_t> prompt;
  for (int i = 0; i < 3 * kMaxTokens + 3; ++i) prompt.push_back((i * 7 + 1) % kV);
  ToyModel cpu;
  absl::StatusOr<StepResult> r = (*e)->Prefill(prompt, Logits::kAll);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows, static_cast<int64_t>(prompt.size()));
  std::vector<float> last;
  for (size_t i = 0; i < prompt.size(); ++i) {
    last = cpu.Feed(prompt[i]);
    ExpectRow(r->logits, i, last, absl::StrCat("row ", i));
  }
  EXPECT_EQ(r->argmax, Argmax(last));
  // kLast over chunks: only the final row comes back.
  (*e)->Reset();
  r = (*e)->Prefill(prompt, Logits::kLast);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rows, 1);
  ExpectRow(r->logits, 0, last, "last row");
}

TEST_F(ExecutorGpuTest, OneRowLogitsFallBackToStepsForEveryRow) {
  ToyOptions o;
  o.last_only = true;
  ToyBundle tb = MakeToyBundle(o);
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb, Jit());
  ASSERT_TRUE(e.ok()) << e.status();
  const std::vector<int32_t> prompt = {2, 4, 6, 8, 10};
  ToyModel cpu;
  absl::StatusOr<StepResult> r = (*e)->Prefill(prompt, Logits::kAll);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows, 5);
  for (size_t i = 0; i < prompt.size(); ++i) ExpectRow(r->logits, i, cpu.Feed(prompt[i]), absl::StrCat("row ", i));
  (*e)->Reset();
  cpu.Rewind(0);
  r = (*e)->Prefill(prompt, Logits::kLast);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<float> last;
  for (int32_t t : prompt) last = cpu.Feed(t);
  ExpectRow(r->logits, 0, last, "last row");
  EXPECT_EQ(r->argmax, Argmax(last));
}

TEST_F(ExecutorGpuTest, AFullContextIsReportedNotOverrun) {
  ToyBundle tb = MakeToyBundle();
  ExecutorOptions o = Jit();
  o.context = 12;
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb, o);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ((*e)->Prefill(std::vector<int32_t>(13, 1), Logits::kNone).status().code(),
            absl::StatusCode::kResourceExhausted);
  absl::StatusOr<StepResult> r = (*e)->Prefill(std::vector<int32_t>(11, 1), Logits::kNone);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE((*e)->Decode(r->argmax, Logits::kNone).ok());
  absl::Status s = (*e)->Decode(0, Logits::kNone).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("the context of 12 tokens is full"));
  ASSERT_TRUE((*e)->Rewind(0).ok());
  EXPECT_THAT(std::string((*e)->Decode(kV, Logits::kNone).status().message()), HasSubstr("outside the vocabulary"));
}

TEST_F(ExecutorGpuTest, PtxOnlyBundleNeedsAllowPtxJit) {
  ToyBundle tb = MakeToyBundle();
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(e.status().message()), StartsWith("bundle has no cubin, only PTX for sm_80, sm_90"));
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("rerun with --allow-ptx-jit"));
}

TEST_F(ExecutorGpuTest, TooLittleMemoryIsReportedAgainstTheRealFreeMemory) {
  ToyOptions o;
  o.kv_bytes_per_token = int64_t{8} << 30;  // 8 GiB a token: 512 GiB at C = 64
  ToyBundle tb = MakeToyBundle(o);
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb, Jit());
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(e.status().message()), StartsWith("context 64 needs "));
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("rerun with --ctx-size "));
}

// The production path: a cubin for exactly this GPU, no JIT. Needs ptxas
// (the CUDA toolkit) on the GPU machine; skipped without it.
TEST_F(ExecutorGpuTest, AnExactCubinLoadsWithoutJit) {
  const char* env = std::getenv("KILN_PTXAS");
  const std::string ptxas = env != nullptr ? env : "/usr/local/cuda/bin/ptxas";
  if (access(ptxas.c_str(), X_OK) != 0) GTEST_SKIP() << "no ptxas at " << ptxas;
  absl::StatusOr<const cuda::Driver*> driver = cuda::Driver::Get();
  ASSERT_TRUE(driver.ok()) << driver.status();
  absl::StatusOr<cuda::DeviceInfo> dev = cuda::GetDeviceInfo(**driver, 0);
  ASSERT_TRUE(dev.ok()) << dev.status();
  const std::string sm = dev->sm();
  char dir[] = "/tmp/kiln_executor_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string ptx_path = absl::StrCat(dir, "/toy.ptx"), cubin_path = absl::StrCat(dir, "/toy.cubin");
  std::ofstream(ptx_path) << ToyPtx(dev->supports_pdl() ? "sm_90" : "sm_80");
  const std::string cmd = absl::StrCat(ptxas, " -arch=", sm, " ", ptx_path, " -o ", cubin_path);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(cubin_path, std::ios::binary);
  std::string cubin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(cubin.empty());
  ToyOptions o;
  o.ptx.clear();
  o.cubins = {{sm, cubin}};
  ToyBundle tb = MakeToyBundle(o);
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb);  // no --allow-ptx-jit
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_FALSE((*e)->sections().jit);
  EXPECT_EQ((*e)->sections().target, sm);
  ToyModel cpu;
  absl::StatusOr<StepResult> r = (*e)->Prefill(std::vector<int32_t>{4, 4}, Logits::kLast);
  ASSERT_TRUE(r.ok()) << r.status();
  cpu.Feed(4);
  ExpectRow(r->logits, 0, cpu.Feed(4), "cubin prefill");
  int32_t next = r->argmax;
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<StepResult> d = (*e)->Decode(next, Logits::kLast);
    ASSERT_TRUE(d.ok()) << d.status();
    ExpectRow(d->logits, 0, cpu.Feed(next), "cubin decode");
    next = d->argmax;
  }
  std::remove(ptx_path.c_str());
  std::remove(cubin_path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace kiln::runtime
