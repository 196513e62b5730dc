#include "compiler/commands/command_line.h"

#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "models/vocab_from_gguf.h"
#include "support/cli_args.h"
#include "support/status_macros.h"

ABSL_FLAG(std::string, model, "", "GGUF model file (-m)");
ABSL_FLAG(std::string, output, "", "output file (-o)");
ABSL_FLAG(int, threads, 0, "CPU threads (-t); 0 = all cores");
ABSL_FLAG(bool, json, false, "machine-readable JSON output");

namespace kiln::compiler {

ParsedArgs ParseArgs(const std::string& command, const std::vector<std::string>& args,
                     const char* usage) {
  ParsedArgs out;
  if (WantsHelp(args)) {
    std::fputs(usage, stdout);
    out.exit_code = 0;
    return out;
  }
  static const std::vector<ShortFlag> kShorts = {
      {"-m", "model"}, {"-o", "output"}, {"-p", "prompt"}, {"-n", "n_predict"},
      {"-t", "threads"}, {"-c", "ctx_size"}, {"-b", "bundle"}, {"-s", "seed"}};
  std::vector<std::string> norm = NormalizeArgs(args, kShorts);
  std::vector<std::string> storage = {"kilnc " + command};
  storage.insert(storage.end(), norm.begin(), norm.end());
  std::vector<char*> argv;
  for (std::string& s : storage) argv.push_back(s.data());
  // Unknown flags and bad values make Abseil print the problem and exit(1).
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(argv.size()), argv.data());
  for (size_t i = 1; i < positional.size(); ++i) out.positional.push_back(positional[i]);
  return out;
}

int Fail(const std::string& command, const absl::Status& status) {
  std::fprintf(stderr, "kilnc %s: error: %s\n", command.c_str(), std::string(status.message()).c_str());
  return 1;
}

absl::StatusOr<std::unique_ptr<gguf::GgufFile>> OpenModel(const std::vector<std::string>& positional) {
  std::string path = absl::GetFlag(FLAGS_model);
  if (path.empty() && !positional.empty()) path = positional.front();
  if (path.empty()) return absl::InvalidArgumentError("no model given (use -m FILE.gguf)");
  return gguf::GgufFile::Open(path);
}

absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> LoadTokenizer(const gguf::GgufFile& file) {
  ASSIGN_OR_RETURN(tokenizer::Vocab vocab, models::ReadVocab(file));
  return tokenizer::Tokenizer::Create(std::move(vocab));
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

}  // namespace kiln::compiler
