// kiln run: one prompt in, generated text streamed out.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/tokenizer/chat_template.h"
#include "runtime/commands/commands.h"
#include "runtime/commands/session.h"
#include "support/command_line.h"
#include "support/npy.h"
#include "support/output_path.h"
#include "support/status_macros.h"

ABSL_FLAG(std::string, prompt, "", "prompt text (-p)");
ABSL_FLAG(std::string, tokens, "", "prompt as token ids, e.g. 1,2,3 (instead of --prompt)");
ABSL_FLAG(std::string, dump_logits, "", "write float32 logits [prompt + generated, vocab] to this .npy");
ABSL_FLAG(bool, chat, false, "render the prompt as one ChatML user turn");
ABSL_FLAG(bool, ignore_eos, false, "keep generating past end-of-generation tokens");

namespace kiln::runtime {
namespace {

constexpr char kRunUsageHead[] = R"(usage: kiln run -b X.kiln -m X.gguf -p "text" -n 64

Runs one prompt through the compiled model on the GPU and streams the
generated text to stdout (status and speed go to stderr). Greedy unless
--temp is given.

  -p, --prompt T        prompt text
  --tokens 1,2,3        prompt as token ids instead (the generated ids are printed as a line)
  --chat                render the prompt as a ChatML user turn (--think=false: no thinking)
  --dump-logits F       write logits [prompt + generated, vocab] as float32 .npy;
                        row i holds the logits after feeding token i
  --ignore-eos          do not stop at end-of-generation tokens
)";

int Fail(const absl::Status& s) { return FailCommand("kiln", "run", s); }

}  // namespace

int RunRun(const std::vector<std::string>& args) {
  static const std::string usage = std::string(kRunUsageHead) + ModelFlagsHelp() + kSamplingFlagsHelp;
  ParsedArgs parsed = ParseCommandArgs("kiln", "run", args, usage.c_str(), JoinFlags({kModelFlags, kSamplingFlags, {"prompt", "tokens", "chat", "think", "dump_logits", "ignore_eos"}}));
  if (parsed.exit_code) return *parsed.exit_code;
  if (!parsed.positional.empty())
    return Fail(UsageError("unexpected argument '" + parsed.positional[0] + "' (quote the prompt: -p \"...\")"));
  const int64_t n_predict = NPredictFlag();
  if (n_predict < -1) return Fail(absl::InvalidArgumentError("--n-predict must be -1 or more"));
  const std::string dump_path = absl::GetFlag(FLAGS_dump_logits);
  if (absl::Status s = CheckOutputPath("--dump-logits", dump_path, {absl::GetFlag(FLAGS_bundle), absl::GetFlag(FLAGS_model)});
      !s.ok())
    return Fail(s);
  if (absl::Status s = CheckPromptFlags(absl::GetFlag(FLAGS_prompt), absl::GetFlag(FLAGS_tokens), absl::GetFlag(FLAGS_chat),
                                         absl::GetFlag(FLAGS_think));
      !s.ok())
    return Fail(s);
  const bool ids_mode = !absl::GetFlag(FLAGS_tokens).empty();
  // Token ids that do not parse are a usage error, found before any file is opened.
  std::vector<int32_t> ids_flag;
  if (ids_mode) {
    absl::StatusOr<std::vector<int32_t>> ids = ParseTokenList(absl::GetFlag(FLAGS_tokens));
    if (!ids.ok()) return Fail(ids.status());
    ids_flag = *std::move(ids);
  }
  absl::StatusOr<Sampler> sampler = SamplerFromFlags(SamplingDefaults{0.0f, 0.95f});
  if (!sampler.ok()) return Fail(sampler.status());

  // The prompt is built and checked before the GPU is touched.
  std::vector<int32_t> prompt;
  auto fits = [&](int64_t context) {
    return static_cast<int64_t>(prompt.size()) <= context
               ? absl::OkStatus()
               : absl::InvalidArgumentError(absl::StrCat("the prompt has ", prompt.size(),
                                                         " tokens, more than the context of ", context,
                                                         "; rerun with a larger --ctx-size"));
  };
  auto build_prompt = [&](const Manifest& m, const tokenizer::Tokenizer& tok) -> absl::Status {
    if (ids_mode) {
      prompt = ids_flag;
    } else {
      std::string text = absl::GetFlag(FLAGS_prompt);
      const bool chat = absl::GetFlag(FLAGS_chat);
      if (chat) {
        tokenizer::ChatOptions co;
        co.enable_thinking = absl::GetFlag(FLAGS_think);
        text = tokenizer::RenderChat({{"user", text}}, co);
      }
      prompt = tok.EncodePrompt(text, /*parse_special=*/chat);
    }
    if (prompt.empty()) return absl::InvalidArgumentError("empty prompt (use -p TEXT or --tokens 1,2,3)");
    for (int32_t id : prompt)
      if (id >= m.config().n_vocab())
        return absl::InvalidArgumentError(
            absl::StrCat("token id ", id, " is outside the vocabulary of ", m.config().n_vocab()));
    const int64_t ctx_flag = absl::GetFlag(FLAGS_ctx_size), limit = m.config().context_length();
    return fits(ctx_flag > 0 ? std::min(ctx_flag, limit) : limit);
  };
  absl::StatusOr<Session> session = OpenSession(nullptr, build_prompt);
  if (!session.ok()) return Fail(session.status());
  PrintSampling(*sampler);
  Executor& ex = *session->executor;
  const tokenizer::Tokenizer& tok = *session->tokenizer;
  // The context the executor chose may be smaller (the GPU's memory).
  if (absl::Status s = fits(ex.context()); !s.ok()) return Fail(s);

  std::vector<float> dump;
  const bool dumping = !dump_path.empty();
  auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<StepResult> first = ex.Prefill(prompt, PromptLogits(*sampler, dumping));
  if (!first.ok()) return Fail(first.status());
  const double prompt_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (dumping) dump = first->logits;

  tokenizer::StreamDecoder stream(tok);
  GenerateOptions go;
  go.n_predict = n_predict;
  go.stop_at_eog = !absl::GetFlag(FLAGS_ignore_eos);
  go.dump = dumping ? &dump : nullptr;
  t0 = std::chrono::steady_clock::now();
  absl::StatusOr<Generated> gen = Generate(ex, *sampler, tok, *first, go, [&](int32_t id) {
    if (ids_mode) return;
    std::fputs(stream.Push(id).c_str(), stdout);
    std::fflush(stdout);
  });
  const double decode_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!gen.ok()) {
    std::fputs(stream.Flush().c_str(), stdout);
    std::fputs("\n", stdout);
    return Fail(gen.status());
  }
  if (ids_mode) {
    std::printf("%s\n", absl::StrJoin(gen->ids, " ").c_str());
  } else {
    std::fputs(stream.Flush().c_str(), stdout);
    std::fputs("\n", stdout);
  }
  std::fflush(stdout);
  if (gen->context_full) std::fprintf(stderr, "kiln: stopped: the context of %lld tokens is full\n", static_cast<long long>(ex.context()));
  if (dumping) {
    const int64_t rows = static_cast<int64_t>(dump.size()) / ex.n_vocab();
    absl::Status s = WriteNpyF32(dump_path, {rows, ex.n_vocab()}, dump);
    if (!s.ok()) return Fail(s);
  }
  std::fprintf(stderr, "kiln: %s\n", SpeedLine(static_cast<int64_t>(prompt.size()), prompt_s, gen->fed, decode_s).c_str());
  return 0;
}

}  // namespace kiln::runtime
