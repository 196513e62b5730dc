// kiln chat: a multi-turn ChatML conversation on stdin/stdout. Each turn
// re-renders the conversation with the Qwen3 template and feeds only the
// tokens after the longest prefix already in the KV cache (as llama.cpp's
// server reuses its prompt cache), so a turn costs its new tokens, plus the
// last reply where the template rewrites it (it drops old reasoning).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "models/tokenizer/chat_template.h"
#include "runtime/commands/commands.h"
#include "runtime/commands/session.h"
#include "support/command_line.h"

ABSL_FLAG(std::string, system, "", "system message for the conversation");

namespace kiln::runtime {
namespace {

constexpr char kChatUsageHead[] = R"(usage: kiln chat -b X.kiln -m X.gguf [--no-think] [--system "..."]

A conversation on stdin: each line is a user turn, the reply streams to
stdout. /reset starts over, /exit (or end of input) quits. The KV cache is
kept between turns: only tokens the cache does not hold yet are fed.
Sampling defaults to Qwen3's recommendation: temp 0.6, top-p 0.95, top-k 20
with thinking; temp 0.7, top-p 0.8 with --no-think.

  --think / --no-think  let the model reason in <think>...</think> first (default on)
  --system TEXT         system message
)";

int Fail(const absl::Status& s) { return FailCommand("kiln", "chat", s); }

size_t CommonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

int RunChat(const std::vector<std::string>& args) {
  static const std::string usage = std::string(kChatUsageHead) + ModelFlagsHelp() + kSamplingFlagsHelp;
  ParsedArgs parsed = ParseCommandArgs("kiln", "chat", args, usage.c_str(), JoinFlags({kModelFlags, kSamplingFlags, {"system", "think"}}));
  if (parsed.exit_code) return *parsed.exit_code;
  if (!parsed.positional.empty())
    return Fail(UsageError("unexpected argument '" + parsed.positional[0] + "'"));
  const bool think = absl::GetFlag(FLAGS_think);
  absl::StatusOr<Sampler> sampler =
      SamplerFromFlags(think ? SamplingDefaults{0.6f, 0.95f} : SamplingDefaults{0.7f, 0.8f});
  if (!sampler.ok()) return Fail(sampler.status());
  const int64_t n_predict = NPredictFlag();
  if (n_predict < -1) return Fail(absl::InvalidArgumentError("--n-predict must be -1 or more"));

  absl::StatusOr<Session> session = OpenSession();
  if (!session.ok()) return Fail(session.status());
  PrintSampling(*sampler);
  Executor& ex = *session->executor;
  const tokenizer::Tokenizer& tok = *session->tokenizer;

  tokenizer::ChatOptions options;
  options.add_generation_prompt = true;
  options.enable_thinking = think;
  std::vector<tokenizer::ChatMessage> messages;
  const std::string system = absl::GetFlag(FLAGS_system);
  if (!system.empty()) messages.push_back({"system", system});
  const size_t first_turn = messages.size();
  std::vector<int32_t> cached;  // the tokens whose keys and values the executor holds
  const bool interactive = isatty(0) != 0;

  std::string line;
  while (true) {
    if (interactive) std::fputs("> ", stderr);
    if (!std::getline(std::cin, line)) break;
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty()) continue;
    if (text == "/exit" || text == "/quit") break;
    if (text == "/reset") {
      messages.resize(first_turn);
      cached.clear();
      (void)ex.Rewind(0);
      std::fputs("kiln: conversation reset\n", stderr);
      continue;
    }
    messages.push_back({"user", std::string(text)});
    const std::vector<int32_t> ids = tok.EncodePrompt(tokenizer::RenderChat(messages, options), /*parse_special=*/true);
    if (static_cast<int64_t>(ids.size()) >= ex.context()) {
      std::fprintf(stderr, "kiln: the conversation (%zu tokens) no longer fits the context of %lld tokens; /reset to start over\n",
                   ids.size(), static_cast<long long>(ex.context()));
      messages.pop_back();
      continue;
    }
    // Reuse the longest prefix the cache holds; at least the generation
    // prompt is always new.
    const size_t keep = std::min(CommonPrefix(cached, ids), ids.size() - 1);
    absl::Status s = ex.Rewind(static_cast<int64_t>(keep));
    if (!s.ok()) return Fail(s);
    cached.resize(keep);
    auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<StepResult> first =
        ex.Prefill(absl::MakeConstSpan(ids).subspan(keep), PromptLogits(*sampler, /*dump=*/false));
    if (!first.ok()) return Fail(first.status());
    const double prompt_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    cached = ids;

    tokenizer::StreamDecoder stream(tok);
    GenerateOptions go;
    go.n_predict = n_predict;
    t0 = std::chrono::steady_clock::now();
    absl::StatusOr<Generated> gen = Generate(ex, *sampler, tok, *first, go, [&](int32_t id) {
      if (tok.IsEog(id)) return;
      std::fputs(stream.Push(id).c_str(), stdout);
      std::fflush(stdout);
    });
    const double decode_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fputs(stream.Flush().c_str(), stdout);
    std::fputs("\n", stdout);
    std::fflush(stdout);
    if (!gen.ok()) return Fail(gen.status());
    cached.insert(cached.end(), gen->ids.begin(), gen->ids.begin() + gen->fed);
    std::vector<int32_t> reply = gen->ids;
    if (gen->hit_eog) reply.pop_back();
    messages.push_back({"assistant", tok.Decode(reply)});
    if (gen->context_full)
      std::fprintf(stderr, "kiln: the context of %lld tokens is full; /reset to start over\n",
                   static_cast<long long>(ex.context()));
    std::fprintf(stderr, "kiln: %s\n",
                 SpeedLine(static_cast<int64_t>(ids.size() - keep), prompt_s, gen->fed, decode_s).c_str());
  }
  return 0;
}

}  // namespace kiln::runtime
