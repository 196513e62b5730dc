// The kiln subcommands. Each takes the arguments after its name, parses its
// own flags, and returns the process exit code (0 ok, 1 error).
#ifndef KILN_RUNTIME_COMMANDS_COMMANDS_H_
#define KILN_RUNTIME_COMMANDS_COMMANDS_H_

#include <string>
#include <vector>

namespace kiln::runtime {

int RunRun(const std::vector<std::string>& args);
int RunChat(const std::vector<std::string>& args);
int RunDevices(const std::vector<std::string>& args);
int RunBench(const std::vector<std::string>& args);
int RunProfile(const std::vector<std::string>& args);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_COMMANDS_COMMANDS_H_
