// kilnc: the kiln compiler driver. Dispatches to one subcommand.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/commands/commands.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>&);
};

constexpr Command kCommands[] = {
    {"synth", "write a synthetic Qwen3 GGUF (random weights, real shapes)", kiln::compiler::RunSynth},
    {"inspect", "describe a GGUF file: metadata, tensors, derived config", kiln::compiler::RunInspect},
    {"tokenize", "print the token ids of a text", kiln::compiler::RunTokenize},
    {"reference", "generate with the CPU reference forward pass", kiln::compiler::RunReference},
    {"compile", "build the IR of a GGUF and run the pass pipeline (dumps, timing)", kiln::compiler::RunCompile},
};

void Usage(FILE* out) {
  std::fprintf(out, "usage: kilnc <command> [flags]   (kilnc <command> --help for its flags)\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    Usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  for (const Command& c : kCommands)
    if (std::string(argv[1]) == c.name) return c.run(std::vector<std::string>(argv + 2, argv + argc));
  std::fprintf(stderr, "kilnc: unknown command '%s'\n\n", argv[1]);
  Usage(stderr);
  return 2;
}
