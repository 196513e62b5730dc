#include "support/command_line.h"

#include <cstdio>

#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace kiln {

const std::vector<ShortFlag>& CommonShortFlags() {
  static const std::vector<ShortFlag> kShorts = {
      {"-m", "model"}, {"-o", "output"}, {"-p", "prompt"}, {"-n", "n_predict"},
      {"-t", "threads"}, {"-c", "ctx_size"}, {"-b", "bundle"}, {"-s", "seed"}};
  return kShorts;
}

ParsedArgs ParseCommandArgs(absl::string_view program, absl::string_view command,
                            const std::vector<std::string>& args, const char* usage) {
  ParsedArgs out;
  if (WantsHelp(args)) {
    std::fputs(usage, stdout);
    out.exit_code = 0;
    return out;
  }
  std::vector<std::string> norm = NormalizeArgs(args, CommonShortFlags());
  std::vector<std::string> storage = {absl::StrCat(program, " ", command)};
  storage.insert(storage.end(), norm.begin(), norm.end());
  std::vector<char*> argv;
  for (std::string& s : storage) argv.push_back(s.data());
  std::vector<char*> positional = absl::ParseCommandLine(static_cast<int>(argv.size()), argv.data());
  for (size_t i = 1; i < positional.size(); ++i) out.positional.push_back(positional[i]);
  return out;
}

int FailCommand(absl::string_view program, absl::string_view command, const absl::Status& status) {
  std::string line = absl::StrCat(program, " ", command, ": error: ", status.message(), "\n");
  std::fputs(line.c_str(), stderr);
  return 1;
}

absl::StatusOr<std::vector<int32_t>> ParseTokenList(const std::string& text) {
  std::vector<int32_t> ids;
  for (absl::string_view part : absl::StrSplit(text, absl::ByAnyChar(", "), absl::SkipEmpty())) {
    int32_t id;
    if (!absl::SimpleAtoi(part, &id) || id < 0)
      return absl::InvalidArgumentError(absl::StrCat("bad token id '", part, "' in --tokens"));
    ids.push_back(id);
  }
  if (ids.empty()) return absl::InvalidArgumentError("--tokens is empty");
  return ids;
}

}  // namespace kiln
