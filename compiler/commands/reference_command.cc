// kilnc reference: greedy generation with the CPU reference forward pass.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/commands/command_line.h"
#include "compiler/commands/commands.h"
#include "models/qwen3_config.h"
#include "models/reference_forward.h"
#include "models/tokenizer/chat_template.h"
#include "support/npy.h"
#include "support/output_path.h"

ABSL_FLAG(std::string, prompt, "", "prompt text (-p)");
ABSL_FLAG(std::string, tokens, "", "prompt as token ids, e.g. 1,2,3 (instead of --prompt)");
ABSL_FLAG(int, n_predict, 16, "tokens to generate (-n)");
ABSL_FLAG(std::string, dump_logits, "", "write float32 logits [positions, vocab] to this .npy");
ABSL_FLAG(bool, chat, false, "wrap the prompt in the chat template (one user turn)");
ABSL_FLAG(bool, think, true, "with --chat: let the model think (false pre-fills an empty think block)");
ABSL_FLAG(bool, ignore_eos, false, "keep generating past end-of-generation tokens");
ABSL_FLAG(bool, kv_f16, false, "round the KV cache through fp16 like the GPU runtime");
ABSL_FLAG(int, ctx_size, 0, "context size (-c); 0 = what the prompt and n_predict need");

namespace kiln::compiler {

constexpr char kReferenceUsage[] = R"(usage: kilnc reference -m X.gguf -p "text" -n 16

Greedy generation on the CPU with the float32 reference forward pass, the
oracle the compiled model is checked against. Streams the text to stdout.

  -p, --prompt T      prompt text
  --tokens 1,2,3      prompt as token ids instead (also prints generated ids)
  -n, --n-predict N   tokens to generate (default 16)
  --chat              render the prompt as a ChatML user turn
  --think=false       with --chat: pre-fill an empty think block
  --dump-logits F     write logits [prompt + generated, vocab] as float32 .npy;
                      row i holds the logits after feeding token i
  --ignore-eos        do not stop at end-of-generation tokens
  --kv-f16            round cached keys/values through fp16
  -c, --ctx-size N    context size, at most the model's (default 0: what the prompt and -n need)
  -t, --threads N     CPU threads (default: all cores)
)";

int RunReference(const std::vector<std::string>& args) {
  ParsedArgs parsed = ParseArgs("reference", args, kReferenceUsage, {"model", "prompt", "tokens", "n_predict", "ctx_size", "threads", "dump_logits", "ignore_eos", "kv_f16", "chat", "think"});
  if (parsed.exit_code) return *parsed.exit_code;
  if (absl::Status s = CheckPositionals(parsed.positional, ModelPositionals()); !s.ok()) return Fail("reference", s);
  if (absl::Status s = CheckPromptFlags(absl::GetFlag(FLAGS_prompt), absl::GetFlag(FLAGS_tokens), absl::GetFlag(FLAGS_chat),
                                         absl::GetFlag(FLAGS_think));
      !s.ok())
    return Fail("reference", s);
  auto file = OpenModel(parsed.positional);
  if (!file.ok()) return Fail("reference", file.status());
  auto config = models::ReadQwen3Config(**file);
  if (!config.ok()) return Fail("reference", config.status());
  auto tok = LoadTokenizer(**file);
  if (!tok.ok()) return Fail("reference", tok.status());

  std::vector<int32_t> prompt;
  const bool ids_mode = !absl::GetFlag(FLAGS_tokens).empty();
  if (ids_mode) {
    auto ids = ParseTokenList(absl::GetFlag(FLAGS_tokens));
    if (!ids.ok()) return Fail("reference", ids.status());
    prompt = *ids;
  } else {
    std::string text = absl::GetFlag(FLAGS_prompt);
    if (absl::GetFlag(FLAGS_chat)) {
      tokenizer::ChatOptions co;
      co.enable_thinking = absl::GetFlag(FLAGS_think);
      text = tokenizer::RenderChat({{"user", text}}, co);
    }
    prompt = (*tok)->EncodePrompt(text, absl::GetFlag(FLAGS_chat));
  }
  if (prompt.empty()) return Fail("reference", UsageError("empty prompt (use -p or --tokens)"));
  const int n_predict = absl::GetFlag(FLAGS_n_predict);
  if (n_predict < 0) return Fail("reference", absl::InvalidArgumentError("--n-predict must be >= 0"));
  const int64_t ctx_flag = absl::GetFlag(FLAGS_ctx_size);
  if (ctx_flag < 0)
    return Fail("reference", absl::InvalidArgumentError(absl::StrCat("--ctx-size must be >= 0, got ", ctx_flag)));

  models::ReferenceOptions ro;
  absl::StatusOr<int> threads = ThreadsFlag();
  if (!threads.ok()) return Fail("reference", threads.status());
  ro.threads = *threads;
  ro.kv_f16 = absl::GetFlag(FLAGS_kv_f16);
  const std::string dump = absl::GetFlag(FLAGS_dump_logits);
  if (absl::Status s = CheckOutputPath("--dump-logits", dump, {(*file)->name()}); !s.ok()) return Fail("reference", s);
  // Positions fed: the prompt, then every generated token but the last (the
  // last too when its logits are dumped). Checked before anything is run.
  const int64_t need = static_cast<int64_t>(prompt.size()) + (n_predict == 0 ? 0 : n_predict - (dump.empty() ? 1 : 0));
  const std::string what = absl::StrCat("the prompt (", prompt.size(), " tokens) and ", n_predict,
                                        " generated tokens need ", need, " positions");
  if (ctx_flag > config->context_length)
    return Fail("reference", absl::InvalidArgumentError(absl::StrCat(
                                 "--ctx-size ", ctx_flag, " exceeds the model's context length ", config->context_length)));
  if (ctx_flag > 0 && need > ctx_flag)
    return Fail("reference", absl::InvalidArgumentError(absl::StrCat(what, ", more than --ctx-size ", ctx_flag)));
  if (need > config->context_length)
    return Fail("reference", absl::InvalidArgumentError(
                                 absl::StrCat(what, ", more than the model's context length ", config->context_length)));
  ro.max_context = ctx_flag > 0 ? ctx_flag : std::max<int64_t>(need, 1);
  auto model = models::ReferenceModel::Create(**file, *config, ro);
  if (!model.ok()) return Fail("reference", model.status());

  std::vector<float> all_logits;
  std::vector<int32_t> generated;
  tokenizer::StreamDecoder stream(**tok);
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<float>> logits = (*model)->Forward(prompt);
  double prefill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int64_t V = config->n_vocab;
  for (int i = 0; logits.ok(); ++i) {
    if (!dump.empty()) all_logits.insert(all_logits.end(), logits->begin(), logits->end());
    if (i == n_predict) break;
    const absl::Span<const float> row = absl::MakeConstSpan(logits->data() + logits->size() - V, V);
    // NaN logits have no argmax: say so rather than print token 0.
    if (!std::all_of(row.begin(), row.end(), [](float x) { return std::isfinite(x); }))
      return Fail("reference", absl::InvalidArgumentError(absl::StrCat(
                                   "the logits after ", prompt.size() + generated.size(),
                                   " fed tokens are not finite (NaN or infinity): the model's weights or "
                                   "activations are")));
    int32_t next = models::Argmax(row);
    generated.push_back(next);
    if (!ids_mode) {
      std::fputs(stream.Push(next).c_str(), stdout);
      std::fflush(stdout);
    }
    bool stop = (*tok)->IsEog(next) && !absl::GetFlag(FLAGS_ignore_eos);
    // Feed the token even when stopping if logits are dumped, so every
    // generated token has its row; otherwise the last one is not fed.
    if ((stop || static_cast<int64_t>(generated.size()) == n_predict) && dump.empty()) break;
    logits = (*model)->Forward({next});
    if (stop) {
      if (logits.ok()) all_logits.insert(all_logits.end(), logits->begin(), logits->end());
      break;
    }
  }
  if (!logits.ok()) return Fail("reference", logits.status());
  double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (ids_mode) {
    std::printf("%s\n", absl::StrJoin(generated, " ").c_str());
  } else {
    std::fputs(stream.Flush().c_str(), stdout);
    std::printf("\n");
  }
  if (!dump.empty()) {
    int64_t rows = static_cast<int64_t>(all_logits.size()) / V;
    absl::Status s = WriteNpyF32(dump, {rows, V}, all_logits);
    if (!s.ok()) return Fail("reference", s);
  }
  std::fprintf(stderr, "reference: %zu prompt tokens in %.2f s, %zu generated in %.2f s (CPU, %s)\n",
               prompt.size(), prefill_s, generated.size(), total_s - prefill_s,
               ro.kv_f16 ? "f16 KV" : "f32 KV");
  return 0;
}

}  // namespace kiln::compiler
