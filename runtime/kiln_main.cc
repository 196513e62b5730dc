// kiln: the thin runtime. Runs a compiled bundle (.kiln) with its GGUF's
// weights on an NVIDIA GPU. Dispatches to one subcommand.
#include <string>
#include <vector>

#include "runtime/commands/commands.h"
#include "support/subcommands.h"

namespace {

// Accepts `--no-think` as `--think=false` (runtime/commands/commands.h).
template <int (*Run)(const std::vector<std::string>&)>
int WithNoThink(const std::vector<std::string>& args) {
  return Run(kiln::runtime::RewriteNoThink(args));
}

}  // namespace

int main(int argc, char** argv) {
  static constexpr kiln::Subcommand kCommands[] = {
      {"run", "generate from one prompt (streams text; --dump-logits for checks)", WithNoThink<kiln::runtime::RunRun>},
      {"chat", "multi-turn ChatML conversation on stdin", WithNoThink<kiln::runtime::RunChat>},
      {"bench", "decode and prefill speed against this GPU's measured read bandwidth",
       WithNoThink<kiln::runtime::RunBench>},
      {"profile", "per-kernel times of a decode step and a prefill chunk", WithNoThink<kiln::runtime::RunProfile>},
      {"devices", "list the GPUs the CUDA driver sees", WithNoThink<kiln::runtime::RunDevices>},
  };
  return kiln::DispatchSubcommand(
      "kiln", "Runs a bundle compiled by kilnc with the weights of its GGUF on an NVIDIA GPU.", kCommands, argc,
      argv);
}
