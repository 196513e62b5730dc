#include "compiler/commands/command_line.h"

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "compiler/codegen/kernel_abi.h"
#include "models/vocab_from_gguf.h"
#include "support/status_macros.h"

ABSL_FLAG(std::string, model, "", "GGUF model file (-m)");
ABSL_FLAG(std::string, output, "", "output file (-o)");
ABSL_FLAG(int, threads, 0, "CPU threads (-t); 0 = all cores");
ABSL_FLAG(bool, json, false, "machine-readable JSON output");

namespace kiln::compiler {

ParsedArgs ParseArgs(const std::string& command, const std::vector<std::string>& args, const char* usage,
                     const std::vector<absl::string_view>& flags) {
  return ParseCommandArgs("kilnc", command, args, usage, flags);
}

int Fail(const std::string& command, const absl::Status& status) {
  return FailCommand("kilnc", command, status);
}

absl::Status CheckPositionals(const std::vector<std::string>& positional, size_t allowed) {
  if (positional.size() <= allowed) return absl::OkStatus();
  return UsageError(absl::StrCat("unexpected argument '", positional[allowed], "'"));
}

absl::StatusOr<int> ThreadsFlag() {
  const int t = absl::GetFlag(FLAGS_threads);
  if (t < 0 || t > 1024)
    return absl::InvalidArgumentError(absl::StrCat("-t/--threads must be 0 (all cores) to 1024, got ", t));
  return t;
}

absl::Status CheckTargetFlag(const std::string& target) {
  if (absl::Status s = codegen::Target::FromName(target).status(); !s.ok())
    return UsageError(absl::StrCat("--target: ", s.message()));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<gguf::GgufFile>> OpenModel(const std::vector<std::string>& positional) {
  std::string path = absl::GetFlag(FLAGS_model);
  if (path.empty() && !positional.empty()) path = positional.front();
  if (path.empty()) return UsageError("no model given (use -m FILE.gguf)");
  return gguf::GgufFile::Open(path);
}

absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> LoadTokenizer(const gguf::GgufFile& file) {
  ASSIGN_OR_RETURN(tokenizer::Vocab vocab, models::ReadVocab(file));
  return tokenizer::Tokenizer::Create(std::move(vocab));
}

}  // namespace kiln::compiler
