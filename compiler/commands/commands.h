// The kilnc subcommands. Each takes the arguments after its name, parses its
// own flags, and returns the process exit code (0 ok, 1 error, 2 usage).
#ifndef KILN_COMPILER_COMMANDS_COMMANDS_H_
#define KILN_COMPILER_COMMANDS_COMMANDS_H_

#include <string>
#include <vector>

namespace kiln::compiler {

int RunSynth(const std::vector<std::string>& args);
int RunInspect(const std::vector<std::string>& args);
int RunTokenize(const std::vector<std::string>& args);
int RunReference(const std::vector<std::string>& args);
int RunCompile(const std::vector<std::string>& args);
int RunTune(const std::vector<std::string>& args);
int RunTuneWorker(const std::vector<std::string>& args);

}  // namespace kiln::compiler

#endif  // KILN_COMPILER_COMMANDS_COMMANDS_H_
