// Shared plumbing of the kilnc subcommands: flag parsing with llama.cpp-style
// short names, per-command --help, error printing, and model opening.
#ifndef KILN_COMPILER_COMMANDS_COMMAND_LINE_H_
#define KILN_COMPILER_COMMANDS_COMMAND_LINE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/gguf/gguf_file.h"
#include "models/tokenizer/tokenizer.h"
#include "support/command_line.h"

ABSL_DECLARE_FLAG(std::string, model);
ABSL_DECLARE_FLAG(std::string, output);
ABSL_DECLARE_FLAG(int, threads);
ABSL_DECLARE_FLAG(bool, json);

namespace kiln::compiler {

// Parses `args` into the command's Abseil flags, `flags`
// (support/command_line.h with program "kilnc"). Returns the positional
// arguments, or an exit code: 0 after printing `usage` for --help, 2 after
// a usage error.
using ParsedArgs = ::kiln::ParsedArgs;
ParsedArgs ParseArgs(const std::string& command, const std::vector<std::string>& args, const char* usage,
                     const std::vector<absl::string_view>& flags);

// Prints "kilnc <command>: error: <message>" to stderr and returns 2 for a
// usage error (UsageError), else 1.
int Fail(const std::string& command, const absl::Status& status);

// A usage error naming the first positional argument past `allowed`.
absl::Status CheckPositionals(const std::vector<std::string>& positional, size_t allowed);

// The positional model file is allowed only without -m.
inline size_t ModelPositionals() { return absl::GetFlag(FLAGS_model).empty() ? 1 : 0; }

// -t: 0 (all cores) up to 1024 threads; InvalidArgument naming the flag else.
absl::StatusOr<int> ThreadsFlag();

// --target: one of the GPUs kiln compiles for; another is a usage error (a
// value outside the flag's choices) naming them.
absl::Status CheckTargetFlag(const std::string& target);

// Opens the GGUF given by --model (or the first positional argument).
absl::StatusOr<std::unique_ptr<gguf::GgufFile>> OpenModel(const std::vector<std::string>& positional);

// Builds the tokenizer from a GGUF's metadata.
absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> LoadTokenizer(const gguf::GgufFile& file);

// ParseTokenList("1,2,3") is kiln::ParseTokenList (support/command_line.h).

}  // namespace kiln::compiler

#endif  // KILN_COMPILER_COMMANDS_COMMAND_LINE_H_
