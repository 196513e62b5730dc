#include "support/command_line.h"

#include <cstdio>

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
                            const std::vector<std::string>& args, const char* usage,
                            const std::vector<absl::string_view>& flags) {
  ParsedArgs out;
  absl::StatusOr<ScannedArgs> scanned = ScanArgs(args, CommonShortFlags(), flags);
  if (!scanned.ok()) {
    out.exit_code = FailCommand(program, command, scanned.status());
    return out;
  }
  if (scanned->help) {
    std::fputs(usage, stdout);
    out.exit_code = 0;
    return out;
  }
  out.positional = std::move(scanned->positional);
  return out;
}

std::vector<absl::string_view> JoinFlags(std::initializer_list<std::vector<absl::string_view>> parts) {
  std::vector<absl::string_view> out;
  for (const std::vector<absl::string_view>& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

int FailCommand(absl::string_view program, absl::string_view command, const absl::Status& status) {
  std::string line = absl::StrCat(program, " ", command, ": error: ", status.message(), "\n");
  std::fputs(line.c_str(), stderr);
  return IsUsageError(status) ? 2 : 1;
}

std::optional<std::vector<absl::string_view>> ListItems(absl::string_view text) {
  std::vector<absl::string_view> items;
  bool empty_part = false;  // ",," or a comma at an end
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    const size_t before = items.size();
    for (absl::string_view item : absl::StrSplit(part, ' ', absl::SkipEmpty())) items.push_back(item);
    empty_part |= items.size() == before;
  }
  // Nothing at all is an empty list (the caller names it), not a bad one.
  if (empty_part && !items.empty()) return std::nullopt;
  return items;
}

absl::StatusOr<std::vector<int32_t>> ParseTokenList(const std::string& text) {
  std::optional<std::vector<absl::string_view>> items = ListItems(text);
  if (!items) return UsageError(absl::StrCat("--tokens '", text, "' has an empty item between commas"));
  std::vector<int32_t> ids;
  for (absl::string_view part : *items) {
    int32_t id;
    if (!absl::SimpleAtoi(part, &id) || id < 0)
      return UsageError(absl::StrCat("bad token id '", part, "' in --tokens"));
    ids.push_back(id);
  }
  if (ids.empty()) return UsageError("--tokens is empty");
  return ids;
}

absl::Status CheckPromptFlags(absl::string_view prompt, absl::string_view tokens, bool chat, bool think) {
  if (!prompt.empty() && !tokens.empty()) return UsageError("give either --prompt or --tokens, not both");
  if (prompt.empty() && tokens.empty()) return UsageError("no prompt (use -p TEXT or --tokens 1,2,3)");
  if (chat && !tokens.empty()) return UsageError("--chat renders a text prompt; it does not apply to --tokens");
  if (!think && !chat) return UsageError("--think=false shapes the chat template: give --chat with it");
  return absl::OkStatus();
}

}  // namespace kiln
