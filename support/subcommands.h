// The `<program> <command> [flags]` dispatcher shared by kilnc and kiln:
// usage on no command or --help, one line per command, exit code 2 for an
// unknown command.
#ifndef KILN_SUPPORT_SUBCOMMANDS_H_
#define KILN_SUPPORT_SUBCOMMANDS_H_

#include <string>
#include <vector>

#include "absl/types/span.h"

namespace kiln {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);  // args after the name
  bool hidden = false;  // runs, but is not listed (internal helpers, e.g. kilnc tune-worker)
};

// Runs the command named by argv[1] and returns its exit code. `blurb` is a
// line printed under the usage line.
int DispatchSubcommand(const char* program, const char* blurb, absl::Span<const Subcommand> commands,
                       int argc, char** argv);

}  // namespace kiln

#endif  // KILN_SUPPORT_SUBCOMMANDS_H_
