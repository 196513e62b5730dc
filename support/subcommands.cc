#include "support/subcommands.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace kiln {
namespace {

void Usage(FILE* out, const char* program, const char* blurb, absl::Span<const Subcommand> commands) {
  std::fprintf(out, "usage: %s <command> [flags]   (%s <command> --help for its flags)\n\n", program, program);
  if (blurb != nullptr && *blurb) std::fprintf(out, "%s\n\n", blurb);
  std::fprintf(out, "commands:\n");
  for (const Subcommand& c : commands)
    if (!c.hidden) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
}

}  // namespace

int DispatchSubcommand(const char* program, const char* blurb, absl::Span<const Subcommand> commands, int argc,
                       char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    Usage(argc < 2 ? stderr : stdout, program, blurb, commands);
    if (argc < 2) return 2;
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      std::fprintf(stderr, "%s: error: cannot write to standard output: %s\n", program, std::strerror(errno));
      return 1;
    }
    return 0;
  }
  for (const Subcommand& c : commands)
    if (std::string(argv[1]) == c.name) {
      const int rc = c.run(std::vector<std::string>(argv + 2, argv + argc));
      // What a command printed must have reached its destination (a full
      // disk or a closed pipe is an error, not a success).
      if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        std::fprintf(stderr, "%s %s: error: cannot write to standard output: %s\n", program, argv[1],
                     std::strerror(errno));
        return rc == 0 ? 1 : rc;
      }
      return rc;
    }
  std::fprintf(stderr, "%s: unknown command '%s'\n\n", program, argv[1]);
  Usage(stderr, program, blurb, commands);
  return 2;
}

}  // namespace kiln
