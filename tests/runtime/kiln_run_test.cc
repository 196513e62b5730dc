// `kiln run`, `kiln chat`, `kiln devices`, `kiln bench` and `kiln profile`,
// in process, on the toy bundle (toy_bundle.h) written to real .kiln and
// .gguf files. CPU tests (CI): usage, argument errors (bench's and profile's
// context checks included) and the "no GPU" message. GPU tests (suite
// KilnRunGpuTest, CTest label `gpu`): the streamed text, --tokens,
// --dump-logits, host-side sampling and multi-turn chat with KV reuse, each
// checked against the CPU model and the same tokenizer; bench's and
// profile's tables and JSON against the toy's plans.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/bundle_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/tokenizer/chat_template.h"
#include "models/tokenizer/tokenizer.h"
#include "runtime/commands/commands.h"
#include "runtime/sampler.h"
#include "runtime/vocab_from_manifest.h"
#include "support/npy.h"
#include "tests/runtime/json_test_util.h"
#include "tests/runtime/toy_bundle.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace toy;  // NOLINT

constexpr int kV = kTokenizerVocab;

struct Output {
  int code;
  std::string out, err;
};

// Sets every flag of the kiln commands back to its default, so one test's
// flags never leak into the next (absl::FlagSaver logs every restore).
void ResetKilnFlags() {
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (flag->Filename().find("runtime/commands/") == std::string::npos) continue;
    std::string error;
    ASSERT_TRUE(flag->ParseFrom(flag->DefaultValue(), &error)) << name << ": " << error;
  }
}

// Runs a kiln command in process, capturing stdout and stderr.
Output Kiln(int (*command)(const std::vector<std::string>&), std::vector<std::string> args,
            const std::string& stdin_text = "") {
  ResetKilnFlags();
  std::istringstream in(stdin_text);
  std::streambuf* old_in = std::cin.rdbuf(in.rdbuf());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  Output o;
  o.code = command(args);
  std::fflush(stdout);
  std::fflush(stderr);
  o.out = ::testing::internal::GetCapturedStdout();
  o.err = ::testing::internal::GetCapturedStderr();
  std::cin.rdbuf(old_in);
  return o;
}

class KilnRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/kiln_run_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    ToyOptions o;
    o.vocab = kV;
    o.context = 256;
    bundle_ = MakeToyBundle(o);
    std::vector<compiler::SectionInput> sections;
    for (const ToyImage& i : bundle_.images) sections.push_back({i.kind, i.target, i.bytes});
    kiln_path_ = dir_ + "/toy.kiln";
    gguf_path_ = dir_ + "/toy.gguf";
    absl::Status s = compiler::WriteBundle(kiln_path_, bundle_.manifest, sections);
    ASSERT_TRUE(s.ok()) << s;
    std::vector<uint8_t> gguf = ToyGgufBytes(kV);
    FILE* f = std::fopen(gguf_path_.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(gguf.data(), 1, gguf.size(), f), gguf.size());
    std::fclose(f);
    absl::StatusOr<tokenizer::Vocab> vocab = VocabFromManifest(bundle_.manifest.tokenizer());
    ASSERT_TRUE(vocab.ok()) << vocab.status();
    absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> tok = tokenizer::Tokenizer::Create(*vocab);
    ASSERT_TRUE(tok.ok()) << tok.status();
    tok_ = std::move(*tok);
  }
  void TearDown() override {
    for (const std::string& p : {kiln_path_, gguf_path_, dir_ + "/logits.npy"}) std::remove(p.c_str());
    rmdir(dir_.c_str());
  }
  // Rewrites the bundle with read-byte figures: the logits kernel reads 1000
  // weight bytes, the store kernel 4 KV bytes per position.
  void StateReadBytes() {
    bundle_.manifest.mutable_kernels(kLogitsKernel)->set_bytes_read(1000);
    *bundle_.manifest.mutable_kernels(kStore)->mutable_bytes_read_per_position() = E(4);
    std::vector<compiler::SectionInput> sections;
    for (const ToyImage& i : bundle_.images) sections.push_back({i.kind, i.target, i.bytes});
    absl::Status s = compiler::WriteBundle(kiln_path_, bundle_.manifest, sections);
    ASSERT_TRUE(s.ok()) << s;
  }
  std::vector<std::string> Files(std::vector<std::string> more) {
    std::vector<std::string> args = {"-b", kiln_path_, "-m", gguf_path_, "--allow-ptx-jit"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }

  // What `kiln run` must generate: the CPU model fed `prompt`, then `n`
  // tokens chosen by `sampler` (greedy: the argmax), stopping at an EOG id.
  // `rows` gets every fed token's logits.
  std::vector<int32_t> Expected(ToyModel& cpu, const std::vector<int32_t>& prompt, int n, Sampler& sampler,
                                std::vector<float>* rows = nullptr, bool feed_last = false) {
    std::vector<float> last;
    for (int32_t t : prompt) {
      last = cpu.Feed(t);
      if (rows) rows->insert(rows->end(), last.begin(), last.end());
    }
    std::vector<int32_t> out;
    for (int i = 0; i < n; ++i) {
      const int32_t id = sampler.greedy() ? Argmax(last) : sampler.Sample(last);
      out.push_back(id);
      const bool stop = tok_->IsEog(id);
      if ((stop || i + 1 == n) && !feed_last) break;
      last = cpu.Feed(id);
      if (rows) rows->insert(rows->end(), last.begin(), last.end());
      if (stop) break;
    }
    return out;
  }
  std::string Text(const std::vector<int32_t>& ids) {
    tokenizer::StreamDecoder d(*tok_);
    std::string s;
    for (int32_t id : ids) s += d.Push(id);
    return s + d.Flush();
  }
  static Sampler Greedy() { return *Sampler::Create({}); }

  std::string dir_, kiln_path_, gguf_path_;
  ToyBundle bundle_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
};

bool HaveDriver() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

// ------------------------------------------------------------ CPU tests

TEST_F(KilnRunTest, HelpPrintsUsageAndSucceeds) {
  Output o = Kiln(RunRun, {"--help"});
  EXPECT_EQ(o.code, 0);
  EXPECT_THAT(o.out, StartsWith("usage: kiln run -b X.kiln -m X.gguf"));
  EXPECT_THAT(o.out, HasSubstr("--allow-ptx-jit"));
  o = Kiln(RunChat, {"-h"});
  EXPECT_EQ(o.code, 0);
  EXPECT_THAT(o.out, HasSubstr("--think / --no-think"));
}

TEST_F(KilnRunTest, UsageErrorsExit2AndNameTheFlag) {
  Output o = Kiln(RunRun, {"-b", kiln_path_, "-m", gguf_path_, "--bogus"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "kiln run: error: unknown flag '--bogus' (see --help)\n");
  o = Kiln(RunProfile, Files({"--depths", "4000"}));  // bench's flag, not profile's
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "kiln profile: error: unknown flag '--depths' (see --help)\n");
  o = Kiln(RunRun, {"-b", kiln_path_, "-m", gguf_path_, "--flagfile", kiln_path_});
  EXPECT_EQ(o.code, 2);
  o = Kiln(RunRun, {"-b", kiln_path_, "-m", gguf_path_, "-n"});
  EXPECT_EQ(o.err, "kiln run: error: flag '-n' needs a value\n");
  o = Kiln(RunChat, {"-m", gguf_path_, "--no-think"});  // a negated bool flag parses
  EXPECT_EQ(o.err, "kiln chat: error: no bundle given (use -b X.kiln)\n");
  o = Kiln(RunChat, {"-b", kiln_path_, "-m", gguf_path_, "--no-think", "--think=maybe"});
  EXPECT_EQ(o.code, 2);
  EXPECT_THAT(o.err, HasSubstr("bad value 'maybe' for flag '--think'"));
  // A value that starts with '-' is the value, not a flag: past parsing.
  o = Kiln(RunRun, {"-b", kiln_path_, "-m", gguf_path_, "-p", "- a - b --help", "--top-p", "0"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kiln run: error: --top-p must be in (0, 1], got 0\n");
}

TEST_F(KilnRunTest, MissingInputsAreOneLineErrors) {
  // A required input missing is a usage error (exit 2); a file that cannot
  // be read is not (exit 1).
  Output o = Kiln(RunRun, {"-m", gguf_path_, "-p", "hi"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "kiln run: error: no bundle given (use -b X.kiln)\n");
  o = Kiln(RunRun, {"-b", kiln_path_, "-p", "hi"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "kiln run: error: no model given (use -m X.gguf)\n");
  o = Kiln(RunChat, {"-b", dir_ + "/nope.kiln", "-m", gguf_path_});
  EXPECT_EQ(o.code, 1);
  EXPECT_THAT(o.err, StartsWith("kiln chat: error: "));
  EXPECT_THAT(o.err, HasSubstr(absl::StrCat(dir_, "/nope.kiln")));
  o = Kiln(RunRun, {"-b", kiln_path_, "-m", gguf_path_, "-p", "hi", "--top-p", "0"});
  EXPECT_EQ(o.err, "kiln run: error: --top-p must be in (0, 1], got 0\n");
  o = Kiln(RunRun, {"-b", kiln_path_, "-m", gguf_path_, "-p", "a", "--tokens", "1"});
  EXPECT_EQ(o.code, 2);
  EXPECT_THAT(o.err, HasSubstr("give either --prompt or --tokens"));
  // The prompt flags are usage errors found before any file is opened.
  o = Kiln(RunRun, {"-b", dir_ + "/nope.kiln", "-m", gguf_path_});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "kiln run: error: no prompt (use -p TEXT or --tokens 1,2,3)\n");
  o = Kiln(RunRun, {"-b", dir_ + "/nope.kiln", "-m", gguf_path_, "--tokens", "1,x"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "kiln run: error: bad token id 'x' in --tokens\n");
  o = Kiln(RunRun, {"-b", dir_ + "/nope.kiln", "-m", gguf_path_, "--tokens", "1", "--chat"});
  EXPECT_EQ(o.code, 2);
  EXPECT_THAT(o.err, HasSubstr("--chat renders a text prompt"));
}

TEST_F(KilnRunTest, BenchAndProfileHelpAndArgumentErrors) {
  Output o = Kiln(RunBench, {"--help"});
  EXPECT_EQ(o.code, 0);
  EXPECT_THAT(o.out, StartsWith("usage: kiln bench -b X.kiln -m X.gguf"));
  EXPECT_THAT(o.out, HasSubstr("--depths D,.."));
  EXPECT_THAT(o.out, HasSubstr("--ctx-size"));
  o = Kiln(RunProfile, {"-h"});
  EXPECT_EQ(o.code, 0);
  EXPECT_THAT(o.out, HasSubstr("--by kernel|family"));
  o = Kiln(RunBench, Files({"--depths", "0,x"}));
  EXPECT_EQ(o.code, 2);  // not a number: a usage error
  EXPECT_EQ(o.err, "kiln bench: error: bad value 'x' in --depths: want integers >= 0 separated by commas\n");
  o = Kiln(RunBench, Files({"--depths", "0,,4096"}));
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "kiln bench: error: --depths '0,,4096' has an empty item between commas\n");
  o = Kiln(RunBench, Files({"--steps", "0"}));
  EXPECT_THAT(o.err, HasSubstr("--steps 0 must be at least 1"));
  o = Kiln(RunProfile, Files({"--by", "layer"}));
  EXPECT_EQ(o.err, "kiln profile: error: --by layer: want kernel or family\n");
  o = Kiln(RunBench, Files({"--reps", "0"}));
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "kiln bench: error: --reps 0 must be at least 1\n");
  o = Kiln(RunProfile, Files({"--depth", "-3"}));
  EXPECT_EQ(o.err, "kiln profile: error: --depth -3 is negative\n");
  // bench and profile size the context to what they measure.
  EXPECT_THAT(Kiln(RunProfile, {"--help"}).out, HasSubstr("(default: what the measurements need)"));
  EXPECT_THAT(Kiln(RunRun, {"--help"}).out, HasSubstr("(default: the model's)"));
  // Checked against the bundle before the GPU is touched: the toy model's
  // context is 256 tokens, its prefill chunk 8.
  o = Kiln(RunBench, Files({"--depths", "0,1000", "--prompt-lengths", "8"}));
  EXPECT_EQ(o.code, 1);
  EXPECT_THAT(o.err, HasSubstr("need a context of 1132 tokens, more than the model's context length 256"));
  o = Kiln(RunBench, Files({"--depths", "0", "--prompt-lengths", "300"}));
  EXPECT_THAT(o.err, HasSubstr("prompts of up to 300 tokens and 4 + 128 decode steps from depth 0 need a "
                               "context of 300 tokens"));
  o = Kiln(RunBench, Files({"--depths", "0", "--prompt-lengths", "8", "-c", "40"}));
  EXPECT_THAT(o.err, HasSubstr("need a context of 132 tokens; --ctx-size 40 is less"));
  o = Kiln(RunProfile, Files({"--prompt-length", "9"}));
  EXPECT_EQ(o.err, "kiln profile: error: --prompt-length 9 exceeds the prefill plan's chunk of 8 tokens\n");
  o = Kiln(RunProfile, Files({"--depth", "200"}));
  EXPECT_THAT(o.err, HasSubstr("more than the model's context length 256"));
}

TEST_F(KilnRunTest, WithoutAGpuTheErrorSaysSo) {
  if (HaveDriver()) GTEST_SKIP() << "this machine has an NVIDIA driver";
  Output o = Kiln(RunRun, Files({"-p", "ab", "-n", "4"}));
  EXPECT_EQ(o.code, 1);
  EXPECT_THAT(o.err, HasSubstr("kiln run: error: no NVIDIA driver found (libcuda.so.1 not loadable"));
  EXPECT_EQ(o.out, "");
  o = Kiln(RunDevices, {});
  EXPECT_EQ(o.code, 1);
  EXPECT_THAT(o.err, StartsWith("kiln devices: error: no NVIDIA driver found"));
  o = Kiln(RunDevices, {"extra"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "kiln devices: error: unexpected argument 'extra'\n");
  o = Kiln(RunBench, Files({"--depths", "0", "--prompt-lengths", "8"}));
  EXPECT_THAT(o.err, StartsWith("kiln bench: error: no NVIDIA driver found"));
  o = Kiln(RunProfile, Files({}));
  EXPECT_THAT(o.err, StartsWith("kiln profile: error: no NVIDIA driver found"));
}

// ------------------------------------------------------------ GPU tests

using KilnRunGpuTest = KilnRunTest;

TEST_F(KilnRunGpuTest, StreamsTheGreedyText) {
  Output o = Kiln(RunRun, Files({"-p", "ab", "-n", "12"}));
  ASSERT_EQ(o.code, 0) << o.err;
  ToyModel cpu(kV);
  Sampler greedy = Greedy();
  std::vector<int32_t> want = Expected(cpu, tok_->Encode("ab", false), 12, greedy);
  EXPECT_EQ(o.out, Text(want) + "\n");
  EXPECT_THAT(o.err, HasSubstr("kiln: GPU 0: "));
  EXPECT_THAT(o.err, HasSubstr("kiln: prompt 2 tokens in "));
  std::fprintf(stderr, "%s", o.err.c_str());  // the status lines, for the log
}

TEST_F(KilnRunGpuTest, TokensInIdsOut) {
  Output o = Kiln(RunRun, Files({"--tokens", "1,2,3", "-n", "9"}));
  ASSERT_EQ(o.code, 0) << o.err;
  ToyModel cpu(kV);
  Sampler greedy = Greedy();
  EXPECT_EQ(o.out, absl::StrJoin(Expected(cpu, {1, 2, 3}, 9, greedy), " ") + "\n");
}

TEST_F(KilnRunGpuTest, StopsAtAnEndOfGenerationToken) {
  // The argmax is the running sum mod V: after 200 + 58 it is 258, <|im_end|>.
  std::vector<int32_t> prompt = {200, 58};
  Output o = Kiln(RunRun, Files({"--tokens", "200,58", "-n", "10"}));
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "258\n");
  o = Kiln(RunRun, Files({"--tokens", "200,58", "-n", "3", "--ignore-eos"}));
  ToyModel cpu(kV);
  std::vector<float> last;
  for (int32_t t : prompt) last = cpu.Feed(t);
  std::vector<int32_t> want;
  for (int i = 0; i < 3; ++i) {
    want.push_back(Argmax(last));
    last = cpu.Feed(want.back());
  }
  EXPECT_EQ(o.out, absl::StrJoin(want, " ") + "\n");
}

TEST_F(KilnRunGpuTest, DumpLogitsHasARowPerFedToken) {
  const std::string npy = dir_ + "/logits.npy";
  Output o = Kiln(RunRun, Files({"-p", "hello", "-n", "6", "--dump-logits", npy}));
  ASSERT_EQ(o.code, 0) << o.err;
  ToyModel cpu(kV);
  Sampler greedy = Greedy();
  std::vector<float> rows;
  std::vector<int32_t> prompt = tok_->Encode("hello", false);
  std::vector<int32_t> ids = Expected(cpu, prompt, 6, greedy, &rows, /*feed_last=*/true);
  absl::StatusOr<NpyArray> got = ReadNpyF32(npy);
  ASSERT_TRUE(got.ok()) << got.status();
  const int64_t n_rows = static_cast<int64_t>(prompt.size() + ids.size());
  EXPECT_THAT(got->shape, ::testing::ElementsAre(n_rows, kV));
  EXPECT_EQ(got->data, rows);
}

TEST_F(KilnRunGpuTest, HostSamplingIsReproducibleFromTheSeed) {
  // temp 50 flattens the toy's 100-logit spike, so the draw matters.
  std::vector<std::string> flags = {"--tokens", "7", "-n", "24", "--temp", "50", "--seed", "7"};
  Output a = Kiln(RunRun, Files(flags)), b = Kiln(RunRun, Files(flags));
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  ToyModel cpu(kV);
  absl::StatusOr<Sampler> sampler = Sampler::Create({50.0f, 20, 0.95f, 7});
  ASSERT_TRUE(sampler.ok());
  std::vector<int32_t> want = Expected(cpu, {7}, 24, *sampler);
  EXPECT_EQ(a.out, absl::StrJoin(want, " ") + "\n");
  EXPECT_THAT(a.err, HasSubstr("sampling with temp 50.00, top-k 20, top-p 0.95, seed 7"));
}

TEST_F(KilnRunGpuTest, ChatReusesTheCacheAndMatchesAFreshPrefill) {
  Output o = Kiln(RunChat, Files({"--no-think", "--temp", "0", "-n", "6", "--system", "be brief"}),
                  "ab\n\ncd\n/reset\nab\n/exit\nnot read\n");
  ASSERT_EQ(o.code, 0) << o.err;
  // The CPU side renders the whole conversation each turn and feeds it all
  // from position 0: the executor's prefix reuse must not change a thing.
  tokenizer::ChatOptions co;
  co.enable_thinking = false;
  std::vector<tokenizer::ChatMessage> messages = {{"system", "be brief"}};
  std::string want;
  auto turn = [&](const std::string& user) {
    messages.push_back({"user", user});
    ToyModel cpu(kV);
    Sampler greedy = Greedy();
    std::vector<int32_t> ids = Expected(cpu, tok_->Encode(tokenizer::RenderChat(messages, co), true), 6, greedy);
    if (tok_->IsEog(ids.back())) ids.pop_back();
    messages.push_back({"assistant", tok_->Decode(ids)});
    want += Text(ids) + "\n";
  };
  turn("ab");
  turn("cd");
  messages = {{"system", "be brief"}};
  turn("ab");
  EXPECT_EQ(o.out, want);
  EXPECT_THAT(o.err, HasSubstr("kiln: conversation reset"));
}

TEST_F(KilnRunGpuTest, LongGreedyRunMatchesAndReportsItsSpeed) {
  // 240 graph replays with no host writes: the speed line is the runtime's
  // per-token overhead on four tiny kernels.
  Output o = Kiln(RunRun, Files({"--tokens", "1", "-n", "240", "--ignore-eos"}));
  ASSERT_EQ(o.code, 0) << o.err;
  ToyModel cpu(kV);
  std::vector<float> last = cpu.Feed(1);
  std::vector<int32_t> want;
  for (int i = 0; i < 240; ++i) {
    want.push_back(Argmax(last));
    if (i + 1 < 240) last = cpu.Feed(want.back());
  }
  EXPECT_EQ(o.out, absl::StrJoin(want, " ") + "\n");
  std::fprintf(stderr, "%s", o.err.c_str());
}

TEST_F(KilnRunGpuTest, BenchJsonHasEveryMeasurementAndTheToysCounts) {
  StateReadBytes();
  Output o = Kiln(RunBench, Files({"--prompt-lengths", "8,20", "--depths", "0,40", "--steps", "16", "--reps", "2",
                                   "--json"}));
  ASSERT_EQ(o.code, 0) << o.err;
  std::fprintf(stderr, "%s", o.out.c_str());
  google::protobuf::Struct s = ParseJson(o.out);
  EXPECT_EQ(Field(s, "context").number_value(), 60);  // depth 40 + 4 warm-up + 16 timed steps
  EXPECT_EQ(Field(s, "kernels_per_token").number_value(), 4);  // 3 decode launches + the step advance
  EXPECT_TRUE(Field(s, "bytes_known").bool_value());
  EXPECT_TRUE(Field(s, "decode_ahead").bool_value());
  EXPECT_GT(Field(s, "probe_gb_per_s").number_value(), 100);
  EXPECT_GT(Field(s, "startup_to_first_token_ms").number_value(), 0);
  EXPECT_EQ(Field(s, "ttft_prompt_tokens").number_value(), 8);
  const double first = Field(s, "first_ttft_ms").number_value(), second = Field(s, "second_ttft_ms").number_value();
  EXPECT_GT(first, 0);
  EXPECT_GT(second, 0);
  EXPECT_LT(first, 5 * second + 50) << "the first request paid for something the warm-up should have done";
  const auto& prefill = Field(s, "prefill").list_value().values();
  ASSERT_EQ(prefill.size(), 2);
  EXPECT_EQ(Field(prefill[1].struct_value(), "tokens").number_value(), 20);
  EXPECT_GT(Field(prefill[1].struct_value(), "tok_per_s").number_value(), 0);
  const auto& decode = Field(s, "decode").list_value().values();
  ASSERT_EQ(decode.size(), 2);
  for (int i = 0; i < 2; ++i) {
    const google::protobuf::Struct& d = decode[i].struct_value();
    const double depth = i == 0 ? 0 : 40;
    EXPECT_EQ(Field(d, "depth").number_value(), depth);
    EXPECT_EQ(Field(d, "steps").number_value(), 16);
    // Greedy decode through the graph: nothing but the launch and the
    // wait (the argmax arrives in mapped memory).
    EXPECT_EQ(Field(d, "host_launches_per_token").number_value(), 1);
    EXPECT_EQ(Field(d, "host_syncs_per_token").number_value(), 1);
    EXPECT_EQ(Field(d, "host_copies_per_token").number_value(), 0);
    EXPECT_GT(Field(d, "tok_per_s").number_value(), 0);
    EXPECT_GT(Field(d, "kernel_ms_per_token").number_value(), 0);
    EXPECT_EQ(Field(d, "weight_bytes_per_token").number_value(), 1000);
    // Middle timed position depth + 4 + 8 attends to depth + 13 positions.
    EXPECT_EQ(Field(d, "kv_bytes_per_token").number_value(), 4 * (depth + 13));
    EXPECT_GT(Field(d, "gb_per_s").number_value(), 0);
    EXPECT_GT(Field(d, "probe_percent").number_value(), 0);
  }
  o = Kiln(RunBench, Files({"--prompt-lengths", "8", "--depths", "0", "--steps", "8", "--no-decode-ahead"}));
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("kiln bench on NVIDIA "));
  EXPECT_THAT(o.out, HasSubstr("% of probe"));
  EXPECT_THAT(o.out, HasSubstr("one step at a time (--no-decode-ahead)"));
  std::fprintf(stderr, "%s", o.out.c_str());
}

TEST_F(KilnRunGpuTest, ProfileRowsAddUpToThePlans) {
  StateReadBytes();
  Output o = Kiln(RunProfile, Files({"--depth", "5", "--steps", "8", "--json"}));
  ASSERT_EQ(o.code, 0) << o.err;
  google::protobuf::Struct s = ParseJson(o.out);
  for (const char* step : {"decode", "prefill"}) {
    const google::protobuf::Struct& t = Field(s, step).struct_value();
    EXPECT_EQ(Field(t, "launches_per_step").number_value(), 3) << step;
    double count = 0, ms = 0;
    for (const auto& row : Field(t, "kernels").list_value().values()) {
      count += Field(row.struct_value(), "count").number_value();
      ms += Field(row.struct_value(), "total_ms").number_value();
      EXPECT_GT(Field(row.struct_value(), "p50_us").number_value(), 0);
    }
    EXPECT_EQ(count, 3) << step;
    EXPECT_NEAR(ms, Field(t, "kernel_ms_per_step").number_value(), 1e-3) << step;
    EXPECT_GT(Field(t, "wall_ms_per_step").number_value(), 0) << step;
  }
  EXPECT_EQ(Field(Field(s, "decode").struct_value(), "steps_profiled").number_value(), 8);
  EXPECT_EQ(Field(Field(s, "prefill").struct_value(), "tokens").number_value(), 8);  // the plan's chunk

  o = Kiln(RunProfile, Files({"--steps", "4", "--by", "family"}));
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("decode step (T=1, P="));
  EXPECT_THAT(o.out, HasSubstr("prefill chunk (T=8, P=0)"));
  EXPECT_THAT(o.out, HasSubstr("\ntoy "));
  std::fprintf(stderr, "%s", o.out.c_str());
}

TEST_F(KilnRunGpuTest, DevicesListsTheGpu) {
  Output o = Kiln(RunDevices, {});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_THAT(o.out, StartsWith("CUDA driver 13."));
  EXPECT_THAT(o.out, HasSubstr("  0: NVIDIA "));
}

}  // namespace
}  // namespace kiln::runtime
