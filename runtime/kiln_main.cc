// kiln: the thin runtime. Runs a compiled bundle (.kiln) with its GGUF's
// weights on an NVIDIA GPU. Dispatches to one subcommand.
#include "runtime/commands/commands.h"
#include "support/subcommands.h"

int main(int argc, char** argv) {
  static constexpr kiln::Subcommand kCommands[] = {
      {"run", "generate from one prompt (streams text; --dump-logits for checks)", kiln::runtime::RunRun},
      {"chat", "multi-turn ChatML conversation on stdin", kiln::runtime::RunChat},
      {"bench", "decode and prefill speed against this GPU's measured read bandwidth",
       kiln::runtime::RunBench},
      {"profile", "per-kernel times of a decode step and a prefill chunk", kiln::runtime::RunProfile},
      {"devices", "list the GPUs the CUDA driver sees", kiln::runtime::RunDevices},
  };
  return kiln::DispatchSubcommand(
      "kiln", "Runs a bundle compiled by kilnc with the weights of its GGUF on an NVIDIA GPU.", kCommands, argc,
      argv);
}
