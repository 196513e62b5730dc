// What `kiln run` and `kiln chat` share: the flags for the bundle, the model,
// the GPU and sampling; opening all of it into a ready Executor; and the
// token-by-token generation loop.
#ifndef KILN_RUNTIME_COMMANDS_SESSION_H_
#define KILN_RUNTIME_COMMANDS_SESSION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/gguf/gguf_file.h"
#include "models/tokenizer/tokenizer.h"
#include "runtime/bundle/bundle_reader.h"
#include "runtime/executor.h"
#include "runtime/sampler.h"

// Thinking on or off for ChatML prompts (kiln chat; kiln run --chat).
ABSL_DECLARE_FLAG(bool, think);
ABSL_DECLARE_FLAG(std::string, bundle);
ABSL_DECLARE_FLAG(std::string, model);
ABSL_DECLARE_FLAG(int64_t, ctx_size);

namespace kiln::runtime {

// Usage text for the flags of every command that opens a session (bundle,
// model, context, GPU), and of those that generate (length, sampling).
// `context_default` is what -c defaults to ("the model's"; kiln bench and
// profile: what they measure).
std::string ModelFlagsHelp(absl::string_view context_default = "the model's");
extern const char kSamplingFlagsHelp[];
// The flags those two describe (ParseCommandArgs' lists).
extern const std::vector<absl::string_view> kModelFlags;
extern const std::vector<absl::string_view> kSamplingFlags;

struct Session {
  std::unique_ptr<Bundle> bundle;
  std::unique_ptr<gguf::GgufFile> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<Executor> executor;
};

// Picks the context from the bundle's manifest and --ctx-size (0 when not
// given): `kiln bench` sizes it for what it measures.
using ContextChooser = std::function<absl::StatusOr<int64_t>(const Manifest& m, int64_t ctx_size_flag)>;

// What a command checks once the bundle's manifest and tokenizer are there
// and before the GPU is touched (its prompt, say).
using BeforeGpu = std::function<absl::Status(const Manifest& m, const tokenizer::Tokenizer& tok)>;

// Opens --bundle and --model, builds the tokenizer from the bundle, runs
// `before_gpu`, and creates the executor (binding check, upload, warm-up)
// on --gpu for the context `choose_context` picks (null: --ctx-size).
// Status lines go to stderr.
absl::StatusOr<Session> OpenSession(const ContextChooser& choose_context = nullptr,
                                    const BeforeGpu& before_gpu = nullptr);

// Sampling defaults differ per command (kiln run: greedy; kiln chat: Qwen3's
// recommended settings); flags given on the command line override them.
struct SamplingDefaults {
  float temperature = 0.0f;
  float top_p = 0.95f;
};
// Reads --temp/--top-k/--top-p/--seed; a negative --seed draws one at random.
absl::StatusOr<Sampler> SamplerFromFlags(const SamplingDefaults& defaults);
// Prints the sampling settings, the seed included (so a run can be
// repeated), to stderr; nothing for greedy decoding.
void PrintSampling(const Sampler& sampler);

// --n-predict (-1: until an end-of-generation token or a full context).
int64_t NPredictFlag();

struct GenerateOptions {
  int64_t n_predict = -1;
  bool stop_at_eog = true;
  // Feed every generated token (the last one too) and append each step's
  // logits row here: --dump-logits.
  std::vector<float>* dump = nullptr;
};

struct Generated {
  std::vector<int32_t> ids;  // sampled, in order
  int64_t fed = 0;           // how many of them were fed back to the model
  bool hit_eog = false;
  bool context_full = false;
};

// Samples from `first` (the step that fed the prompt; it must carry the last
// logits row unless the sampler is greedy) and decodes until n_predict, an
// EOG token or the end of the context. `on_token` sees each id as sampled.
absl::StatusOr<Generated> Generate(Executor& executor, Sampler& sampler, const tokenizer::Tokenizer& tok,
                                   const StepResult& first, const GenerateOptions& options,
                                   const std::function<void(int32_t)>& on_token);

// What a step feeding the prompt must copy back for `sampler` (and a dump).
Logits PromptLogits(const Sampler& sampler, bool dump);

// "prompt 12 tokens in 8.1 ms (1481 tok/s); decode 63 tokens in 110.2 ms (572 tok/s)"
std::string SpeedLine(int64_t prompt_tokens, double prompt_s, int64_t decoded, double decode_s);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_COMMANDS_SESSION_H_
