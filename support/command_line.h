// Plumbing shared by the subcommands of kilnc and kiln: Abseil flag parsing
// with llama.cpp's short names, per-command --help, the one-line error
// format, and token-id lists.
#ifndef KILN_SUPPORT_COMMAND_LINE_H_
#define KILN_SUPPORT_COMMAND_LINE_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "support/cli_args.h"

namespace kiln {

// The short names both programs accept: -m model, -o output, -p prompt,
// -n n_predict, -t threads, -c ctx_size, -b bundle, -s seed.
const std::vector<ShortFlag>& CommonShortFlags();

// Parses `args` (after the command name) into the command's Abseil flags,
// `flags` (support/cli_args.h: ScanArgs). Returns the positional arguments,
// or an exit code: 0 after printing `usage` to stdout for -h/--help; 2 after
// printing "<program> <command>: error: ..." for a usage error (an unknown
// or foreign flag, a missing or bad value).
struct ParsedArgs {
  std::vector<std::string> positional;
  std::optional<int> exit_code;
};
ParsedArgs ParseCommandArgs(absl::string_view program, absl::string_view command,
                            const std::vector<std::string>& args, const char* usage,
                            const std::vector<absl::string_view>& flags);

// The flag-name lists `parts` one after another (a command's flags as groups).
std::vector<absl::string_view> JoinFlags(std::initializer_list<std::vector<absl::string_view>> parts);

// Prints "<program> <command>: error: <message>" to stderr and returns 2
// for a usage error (support/cli_args.h: UsageError), else 1.
int FailCommand(absl::string_view program, absl::string_view command, const absl::Status& status);

// The items of a list flag, separated by commas and/or spaces ("1,2",
// "1, 2", "1 2"); nullopt when a comma has nothing before or after it
// ("1,,2", "1,") but other items exist; none for a list of separators.
std::optional<std::vector<absl::string_view>> ListItems(absl::string_view text);

// Parses "1,2,3" (commas or spaces) into token ids; errors (UsageError)
// name --tokens.
absl::StatusOr<std::vector<int32_t>> ParseTokenList(const std::string& text);

// The prompt flags of a generating command: exactly one of `prompt` (-p) and
// `tokens` (--tokens) given, --chat (which renders a text prompt) not with
// --tokens, and --think=false only with --chat. Errors are UsageError.
absl::Status CheckPromptFlags(absl::string_view prompt, absl::string_view tokens, bool chat, bool think);

}  // namespace kiln

#endif  // KILN_SUPPORT_COMMAND_LINE_H_
