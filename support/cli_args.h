// Command-line spelling: lets kilnc and kiln accept the familiar llama.cpp
// forms (-m x, --n-predict 8) on top of Abseil flags (--model=x, --n_predict=8).
#ifndef KILN_SUPPORT_CLI_ARGS_H_
#define KILN_SUPPORT_CLI_ARGS_H_

#include <string>
#include <utility>
#include <vector>

namespace kiln {

struct ShortFlag {
  const char* short_name;  // "-m"
  const char* long_name;   // "model"
};

// Rewrites args (without the program name): short flags from `shorts` become
// "--long", and dashes inside long flag names become underscores. Values and
// positional arguments are left alone; "--" ends flag processing.
std::vector<std::string> NormalizeArgs(const std::vector<std::string>& args,
                                       const std::vector<ShortFlag>& shorts);

// True if args ask for help (-h, --help).
bool WantsHelp(const std::vector<std::string>& args);

}  // namespace kiln

#endif  // KILN_SUPPORT_CLI_ARGS_H_
