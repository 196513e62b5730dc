// kilnc: the kiln compiler driver. Dispatches to one subcommand.
#include "compiler/commands/commands.h"
#include "support/subcommands.h"

int main(int argc, char** argv) {
  static constexpr kiln::Subcommand kCommands[] = {
      {"synth", "write a synthetic Qwen3 GGUF (random weights, real shapes)", kiln::compiler::RunSynth},
      {"compile", "compile a GGUF to a .kiln bundle (IR passes, codegen)", kiln::compiler::RunCompile},
      {"inspect", "describe a GGUF file or a .kiln bundle", kiln::compiler::RunInspect},
      {"tokenize", "print the token ids of a text", kiln::compiler::RunTokenize},
      {"reference", "generate with the CPU reference forward pass", kiln::compiler::RunReference},
      {"tune", "time schedule candidates on the GPU; export a schedule table", kiln::compiler::RunTune},
      {"tune-worker", "the GPU side of tune (started by it)", kiln::compiler::RunTuneWorker, /*hidden=*/true},
  };
  return kiln::DispatchSubcommand("kilnc", "", kCommands, argc, argv);
}
