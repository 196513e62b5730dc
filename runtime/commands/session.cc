#include "runtime/commands/session.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <random>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/preflight.h"
#include "runtime/vocab_from_manifest.h"
#include "support/command_line.h"
#include "support/status_macros.h"

ABSL_FLAG(std::string, bundle, "", "compiled bundle, X.kiln (-b)");
ABSL_FLAG(std::string, model, "", "GGUF model the bundle was compiled for (-m)");
ABSL_FLAG(int64_t, ctx_size, 0, "context size in tokens (-c); 0 = the model's context length");
ABSL_FLAG(bool, allow_ptx_jit, false, "JIT-compile the bundle's PTX when it has no cubin for this GPU");
ABSL_FLAG(int, gpu, 0, "GPU ordinal");
ABSL_FLAG(int64_t, n_predict, -1, "tokens to generate (-n); -1 = until end of generation or a full context");
ABSL_FLAG(std::optional<double>, temp, std::nullopt, "sampling temperature; 0 = greedy; default per command");
ABSL_FLAG(int, top_k, 20, "keep the k most likely tokens; 0 = all");
ABSL_FLAG(std::optional<double>, top_p, std::nullopt,
          "keep the smallest set of tokens with this much probability; default per command");
ABSL_FLAG(int64_t, seed, -1, "sampling seed (-s); -1 = random (printed)");
ABSL_FLAG(bool, think, true, "chat: let the model think first (--no-think pre-fills an empty think block)");

namespace kiln::runtime {

std::string ModelFlagsHelp(absl::string_view context_default) {
  return absl::StrCat("  -b, --bundle X.kiln   the compiled bundle\n",
                      "  -m, --model X.gguf    the GGUF the bundle was compiled for (weights)\n",
                      "  -c, --ctx-size N      context size in tokens (default: ", context_default, ")\n",
                      "  --allow-ptx-jit       JIT the bundle's PTX if it has no cubin for this GPU\n",
                      "  --gpu N               GPU ordinal (default 0)\n");
}

const char kSamplingFlagsHelp[] = R"(  -n, --n-predict N     tokens to generate (default -1: until end of generation)
  --temp T              temperature; 0 = greedy
  --top-k K             keep the K most likely tokens (default 20; 0 = all)
  --top-p P             nucleus: keep the most likely tokens up to probability P
  -s, --seed N          sampling seed (default: random, printed)
)";

const std::vector<absl::string_view> kModelFlags = {"bundle", "model", "ctx_size", "allow_ptx_jit", "gpu"};
const std::vector<absl::string_view> kSamplingFlags = {"n_predict", "temp", "top_k", "top_p", "seed"};

absl::StatusOr<Session> OpenSession(const ContextChooser& choose_context, const BeforeGpu& before_gpu) {
  const std::string bundle_path = absl::GetFlag(FLAGS_bundle), model_path = absl::GetFlag(FLAGS_model);
  if (bundle_path.empty()) return UsageError("no bundle given (use -b X.kiln)");
  if (model_path.empty()) return UsageError("no model given (use -m X.gguf)");
  if (absl::GetFlag(FLAGS_gpu) < 0)
    return absl::InvalidArgumentError(absl::StrCat("--gpu ", absl::GetFlag(FLAGS_gpu), " is negative"));
  Session s;
  ASSIGN_OR_RETURN(s.bundle, Bundle::Open(bundle_path));
  ASSIGN_OR_RETURN(s.model, gguf::GgufFile::Open(model_path));
  // The GGUF is the bundle's before anything is judged by the bundle's
  // model (a prompt against its context); Executor::Create checks it again.
  RETURN_IF_ERROR(CheckBinding(s.bundle->manifest(), *s.model));
  ASSIGN_OR_RETURN(tokenizer::Vocab vocab, VocabFromManifest(s.bundle->manifest().tokenizer()));
  ASSIGN_OR_RETURN(s.tokenizer, tokenizer::Tokenizer::Create(std::move(vocab)));
  if (before_gpu) RETURN_IF_ERROR(before_gpu(s.bundle->manifest(), *s.tokenizer));

  ExecutorOptions options;
  options.device = absl::GetFlag(FLAGS_gpu);
  options.context = absl::GetFlag(FLAGS_ctx_size);
  if (choose_context) {
    ASSIGN_OR_RETURN(options.context, choose_context(s.bundle->manifest(), options.context));
  }
  options.allow_ptx_jit = absl::GetFlag(FLAGS_allow_ptx_jit);
  options.log = [](absl::string_view line) { std::fprintf(stderr, "kiln: %.*s\n", static_cast<int>(line.size()), line.data()); };
  const Bundle& bundle = *s.bundle;
  SectionBytesFn sections = [&bundle](int i) { return bundle.SectionBytes(i); };
  ASSIGN_OR_RETURN(s.executor, Executor::Create(bundle.manifest(), sections, *s.model, options));
  return s;
}

absl::StatusOr<Sampler> SamplerFromFlags(const SamplingDefaults& defaults) {
  SamplerOptions o;
  const std::optional<double> temp = absl::GetFlag(FLAGS_temp), top_p = absl::GetFlag(FLAGS_top_p);
  o.temperature = temp ? static_cast<float>(*temp) : defaults.temperature;
  o.top_p = top_p ? static_cast<float>(*top_p) : defaults.top_p;
  o.top_k = absl::GetFlag(FLAGS_top_k);
  const int64_t seed = absl::GetFlag(FLAGS_seed);
  if (seed < -1) return absl::InvalidArgumentError(absl::StrCat("--seed must be -1 (random) or more, got ", seed));
  o.seed = seed >= 0 ? static_cast<uint64_t>(seed) : std::random_device{}() & 0x7fffffff;
  return Sampler::Create(o);
}

void PrintSampling(const Sampler& sampler) {
  const SamplerOptions& o = sampler.options();
  if (sampler.greedy()) return;
  std::fprintf(stderr, "kiln: sampling with temp %.2f, top-k %d, top-p %.2f, seed %llu\n", o.temperature, o.top_k,
               o.top_p, static_cast<unsigned long long>(o.seed));
}

int64_t NPredictFlag() { return absl::GetFlag(FLAGS_n_predict); }

Logits PromptLogits(const Sampler& sampler, bool dump) {
  if (dump) return Logits::kAll;
  return sampler.greedy() ? Logits::kNone : Logits::kLast;
}

absl::StatusOr<Generated> Generate(Executor& executor, Sampler& sampler, const tokenizer::Tokenizer& tok,
                                   const StepResult& first, const GenerateOptions& options,
                                   const std::function<void(int32_t)>& on_token) {
  Generated out;
  if (options.n_predict == 0) return out;
  const bool dump = options.dump != nullptr;
  // Records a sampled id; true when generation stops after it.
  auto take = [&](int32_t id) {
    out.ids.push_back(id);
    if (on_token) on_token(id);
    out.hit_eog = options.stop_at_eog && tok.IsEog(id);
    return out.hit_eog || (options.n_predict >= 0 && static_cast<int64_t>(out.ids.size()) == options.n_predict);
  };
  if (sampler.greedy() && !dump) {
    // The host reads only the device's argmax, so the next step runs while
    // it does (Executor::DecodeGreedy). A token that stops generation is
    // not fed.
    if (take(first.argmax)) return out;
    // Steps: what the context holds, and no more than --n-predict asks for
    // (so no step is queued past the last token it wants).
    int64_t steps = executor.context() - executor.position();
    if (options.n_predict >= 0)
      steps = std::min<int64_t>(steps, options.n_predict - static_cast<int64_t>(out.ids.size()));
    bool stopped = false;
    if (steps > 0) {
      ASSIGN_OR_RETURN(out.fed, executor.DecodeGreedy(first.argmax, steps, [&](int32_t id) {
        stopped = take(id);
        return !stopped;
      }));
    }
    out.context_full = !stopped;
    return out;
  }
  const Logits step_logits = dump || !sampler.greedy() ? Logits::kLast : Logits::kNone;
  const int64_t v = executor.n_vocab();
  StepResult cur = first;
  while (true) {
    // The device already chose the argmax; logits travel only to sample.
    const absl::Span<const float> last_row =
        cur.logits.size() >= static_cast<size_t>(v) ? absl::MakeConstSpan(cur.logits).last(v) : absl::Span<const float>();
    const bool stop = take(sampler.greedy() ? cur.argmax : sampler.Sample(last_row));
    // Feed the token only if something will read the result: the next
    // sample, or its logits row in a dump.
    if (stop && !dump) break;
    if (executor.position() >= executor.context()) {
      out.context_full = true;
      break;
    }
    ASSIGN_OR_RETURN(cur, executor.Decode(out.ids.back(), step_logits));
    out.fed += 1;
    if (dump) options.dump->insert(options.dump->end(), cur.logits.begin(), cur.logits.end());
    if (stop) break;
  }
  return out;
}

std::string SpeedLine(int64_t prompt_tokens, double prompt_s, int64_t decoded, double decode_s) {
  auto rate = [](int64_t n, double s) { return s > 0 ? static_cast<double>(n) / s : 0.0; };
  return absl::StrFormat("prompt %d tokens in %.1f ms (%.0f tok/s); decode %d tokens in %.1f ms (%.0f tok/s)",
                         prompt_tokens, prompt_s * 1e3, rate(prompt_tokens, prompt_s), decoded, decode_s * 1e3,
                         rate(decoded, decode_s));
}

}  // namespace kiln::runtime
