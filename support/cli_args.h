// Command-line scanning for kilnc and kiln: each command's own flags (Abseil
// flags, set through Abseil's reflection), in the familiar llama.cpp forms
// too (-m x, --n-predict 8), and nothing else.
#ifndef KILN_SUPPORT_CLI_ARGS_H_
#define KILN_SUPPORT_CLI_ARGS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln {

struct ShortFlag {
  const char* short_name;  // "-m"
  const char* long_name;   // "model"
};

// A usage error (an unknown or foreign flag, a missing or bad value, a
// required input missing, an extra argument, flags that exclude each other):
// InvalidArgument, marked so that FailCommand (support/command_line.h) exits
// 2 for it and 1 for other errors.
absl::Status UsageError(absl::string_view message);
bool IsUsageError(const absl::Status& status);

// What ScanArgs found: the positional arguments, or a request for help.
struct ScannedArgs {
  std::vector<std::string> positional;
  bool help = false;
};

// Sets the flags named in `args` (without the program and command names):
//   --name=value, --name value, -name value (the value taken verbatim, even
//   when it starts with '-'); a bool flag alone is true, --noname and --no-name false;
//   short names from `shorts` ("-m x", "-m=x"); dashes in a name are
//   underscores (--n-predict is --n_predict);
//   -h, -help or --help asks for help; "--" ends the flags, and every
//   argument not starting with '-' (or "-" alone) is positional.
// Only the flags listed in `allowed` are accepted. Errors (UsageError) name
// the argument: an unknown or foreign flag, a missing or bad value, an empty
// value for a string flag (empty is every string flag's "not given").
// Every name in `allowed` must be a registered flag (else Internal).
absl::StatusOr<ScannedArgs> ScanArgs(const std::vector<std::string>& args, const std::vector<ShortFlag>& shorts,
                                     const std::vector<absl::string_view>& allowed);

}  // namespace kiln

#endif  // KILN_SUPPORT_CLI_ARGS_H_
