// kilnc synth: writes a synthetic Qwen3 GGUF (models/synth.h).
#include <chrono>
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/commands/command_line.h"
#include "compiler/commands/commands.h"
#include "models/synth.h"
#include "support/output_path.h"
#include "support/progress.h"

ABSL_FLAG(std::string, preset, "tiny", "model shape: tiny, 0.6b, 1.7b, 4b, 8b, 14b, 32b");
ABSL_FLAG(std::string, type, "Q8_0", "weight types: F16, BF16, Q8_0, Q4_0, Q6_K, Q4_K_M");
ABSL_FLAG(uint64_t, seed, 0, "random seed (-s); the file is a pure function of it");
ABSL_FLAG(std::string, tokenizer, "",
          "tokenizer.json of the Qwen3 vocabulary, or a .gguf to copy it from");
ABSL_FLAG(bool, untied, false, "write output.weight even for presets with tied embeddings");

namespace kiln::compiler {

constexpr char kSynthUsage[] = R"(usage: kilnc synth --preset P --type T --seed N -o out.gguf

Writes a synthetic Qwen3 GGUF with random weights of the given shape and
quantization, deterministic for a seed.

  --preset P       tiny (2 layers, small vocabulary), 0.6b, 1.7b, 4b, 8b, 14b, 32b
  --type T         F16, BF16, Q8_0, Q4_0, Q6_K, Q4_K_M (mixed, as llama-quantize)
  -s, --seed N     random seed (default 0)
  -o, --output F   output file (required)
  --tokenizer F    Qwen3 tokenizer.json (tokenizer_config.json beside it) or a
                   .gguf to copy the vocabulary from; default: $KILN_TOKENIZER,
                   then third_party/tokenizer-qwen3 (tools/fetch_tokenizer.sh)
  --untied         write a separate output.weight
  -t, --threads N  generator threads (default: all cores)
)";

int RunSynth(const std::vector<std::string>& args) {
  ParsedArgs parsed = ParseArgs("synth", args, kSynthUsage, {"output", "preset", "type", "seed", "threads", "tokenizer", "untied"});
  if (parsed.exit_code) return *parsed.exit_code;
  models::SynthOptions o;
  o.preset = absl::AsciiStrToLower(absl::GetFlag(FLAGS_preset));  // PresetConfig matches any case
  // The presets are the flag's choices: another is a usage error.
  if (absl::Status s = models::PresetConfig(o.preset).status(); !s.ok()) return Fail("synth", UsageError(s.message()));
  std::optional<models::Recipe> recipe = models::ParseRecipe(absl::GetFlag(FLAGS_type));
  if (!recipe)
    return Fail("synth", UsageError(absl::StrCat(
                             "unknown --type '", absl::GetFlag(FLAGS_type),
                             "'; known: F16, BF16, Q8_0, Q4_0, Q6_K, Q4_K_M")));
  o.recipe = *recipe;
  o.seed = absl::GetFlag(FLAGS_seed);
  o.tokenizer = absl::GetFlag(FLAGS_tokenizer);
  o.force_untied = absl::GetFlag(FLAGS_untied);
  absl::StatusOr<int> threads = ThreadsFlag();
  if (!threads.ok()) return Fail("synth", threads.status());
  o.threads = *threads;
  std::string out = absl::GetFlag(FLAGS_output);
  if (absl::Status s = CheckPositionals(parsed.positional, out.empty() ? 1 : 0); !s.ok()) return Fail("synth", s);
  if (out.empty() && !parsed.positional.empty()) out = parsed.positional.front();
  if (out.empty()) return Fail("synth", UsageError("no output file (use -o out.gguf)"));
  if (absl::Status s = CheckOutputPath("-o", out, models::TokenizerFiles(o)); !s.ok()) return Fail("synth", s);
  ProgressLine progress(absl::StrCat("synth ", o.preset, " ", std::string(models::RecipeName(o.recipe))));
  o.progress = [&](uint64_t done, uint64_t total) { progress.Update(done, total); };
  auto start = std::chrono::steady_clock::now();
  absl::Status s = models::WriteSyntheticModel(o, out);
  progress.Finish();
  if (!s.ok()) return Fail("synth", s);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "wrote %s (%s %s, seed %llu) in %.1f s\n", out.c_str(), o.preset.c_str(),
               std::string(models::RecipeName(o.recipe)).c_str(),
               static_cast<unsigned long long>(o.seed), secs);
  return 0;
}

}  // namespace kiln::compiler
