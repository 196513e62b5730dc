// kiln: the thin runtime. Runs a compiled bundle (.kiln) with its GGUF's
// weights on an NVIDIA GPU. Dispatches to one subcommand.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/commands/commands.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>&);
};

constexpr Command kCommands[] = {
    {"run", "generate from one prompt (streams text; --dump-logits for checks)", kiln::runtime::RunRun},
    {"chat", "multi-turn ChatML conversation on stdin", kiln::runtime::RunChat},
    {"devices", "list the GPUs the CUDA driver sees", kiln::runtime::RunDevices},
};

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: kiln <command> [flags]   (kiln <command> --help for its flags)\n\n"
               "Runs a bundle compiled by kilnc with the weights of its GGUF on an NVIDIA GPU.\n\ncommands:\n");
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
    if (std::string(argv[1]) == c.name)
      return c.run(kiln::runtime::RewriteNoThink(std::vector<std::string>(argv + 2, argv + argc)));
  std::fprintf(stderr, "kiln: unknown command '%s'\n\n", argv[1]);
  Usage(stderr);
  return 2;
}
