// RunPtxas: PTX -> cubin with the CUDA toolkit's ptxas, and the -v report
// (registers, spills, stack frame; spec/nvptx-llvm19.md §10).
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "compiler/codegen/codegen.h"
#include "support/read_file.h"

extern char** environ;

namespace kiln::codegen {
namespace {

bool IsExecutable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

// Runs argv, capturing stdout and stderr together.
absl::StatusOr<int> RunCapture(const std::vector<std::string>& argv, std::string* output) {
  int fds[2];
  if (::pipe(fds) != 0) return absl::InternalError("pipe() failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return absl::InternalError(absl::StrCat("cannot run ", argv[0], ": ", std::strerror(rc)));
  }
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n > 0) {
      output->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::InternalError("waitpid failed");
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// "ptxas info    : Used 32 registers, used 1 barriers, 4096 bytes smem, 368 bytes cmem[0]"
// "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"
void ParseReport(const std::string& log, PtxasReport* report) {
  PtxasKernelInfo* cur = nullptr;
  auto find_or_add = [&](const std::string& name) {
    for (PtxasKernelInfo& k : report->kernels)
      if (k.name == name) return &k;
    report->kernels.push_back({});
    report->kernels.back().name = name;
    return &report->kernels.back();
  };
  auto quoted = [](absl::string_view line) -> std::string {
    size_t a = line.find('\'');
    size_t b = line.find('\'', a + 1);
    if (a == absl::string_view::npos || b == absl::string_view::npos) return "";
    return std::string(line.substr(a + 1, b - a - 1));
  };
  // "<number> <words>" pairs separated by commas.
  auto number_before = [](absl::string_view line, absl::string_view what, int64_t* out) {
    size_t pos = line.find(what);
    if (pos == absl::string_view::npos) return false;
    size_t end = pos;
    while (end > 0 && line[end - 1] == ' ') --end;
    size_t begin = end;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
    return absl::SimpleAtoi(line.substr(begin, end - begin), out);
  };
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StrContains(line, "Compiling entry function")) {
      cur = find_or_add(quoted(line));
      continue;
    }
    if (absl::StrContains(line, "Function properties for ")) {
      std::string name(absl::StripAsciiWhitespace(line.substr(line.find("Function properties for ") + 24)));
      cur = find_or_add(name);
      continue;
    }
    if (cur == nullptr) continue;
    int64_t v = 0;
    if (absl::StrContains(line, "bytes stack frame")) {
      if (number_before(line, "bytes stack frame", &v)) cur->stack_frame = v;
      if (number_before(line, "bytes spill stores", &v)) cur->spill_stores = v;
      if (number_before(line, "bytes spill loads", &v)) cur->spill_loads = v;
    }
    if (absl::StrContains(line, "Used ") && absl::StrContains(line, "registers")) {
      size_t u = line.find("Used ");
      absl::string_view rest = line.substr(u + 5);
      int64_t regs = 0;
      if (number_before(rest, "registers", &regs)) cur->registers = static_cast<int>(regs);
      if (number_before(rest, "barriers", &v)) cur->barriers = static_cast<int>(v);
      if (number_before(rest, "bytes smem", &v)) cur->shared = v;
      if (number_before(rest, "bytes cmem[0]", &v)) cur->constant = v;
    }
  }
}

}  // namespace

const PtxasKernelInfo* PtxasReport::Find(const std::string& name) const {
  for (const PtxasKernelInfo& k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

std::optional<std::string> FindPtxas() {
  if (const char* env = std::getenv("KILN_PTXAS"); env != nullptr && *env != '\0') {
    if (IsExecutable(env)) return std::string(env);
    return std::nullopt;
  }
  if (IsExecutable("/usr/local/cuda/bin/ptxas")) return std::string("/usr/local/cuda/bin/ptxas");
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    for (absl::string_view dir : absl::StrSplit(path, ':')) {
      if (dir.empty()) continue;
      std::string candidate = absl::StrCat(dir, "/ptxas");
      if (IsExecutable(candidate)) return candidate;
    }
  }
  return std::nullopt;
}

absl::StatusOr<std::string> RunPtxas(const std::string& ptx, const Target& target, PtxasReport* report) {
  std::optional<std::string> ptxas = FindPtxas();
  if (!ptxas) return absl::NotFoundError("ptxas not found (set KILN_PTXAS or install the CUDA toolkit)");
  std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-ptxas-XXXXXX").string();
  std::vector<char> dir(tmpl.begin(), tmpl.end());
  dir.push_back('\0');
  if (::mkdtemp(dir.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  std::string tmpdir(dir.data());
  std::string in = tmpdir + "/module.ptx", out = tmpdir + "/module.cubin";
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{tmpdir};
  {
    std::ofstream f(in, std::ios::binary);
    f << ptx;
    if (!f) return absl::InternalError(absl::StrCat("cannot write ", in));
  }
  std::string log;
  absl::StatusOr<int> rc = RunCapture({*ptxas, "-v", absl::StrCat("-arch=", target.Name()), in, "-o", out}, &log);
  if (!rc.ok()) return rc.status();
  if (report != nullptr) {
    report->ptxas_path = *ptxas;
    report->log = log;
    report->kernels.clear();
    ParseReport(log, report);
  }
  if (*rc != 0) {
    // Keep the messages, not the info lines.
    std::string errors;
    for (absl::string_view line : absl::StrSplit(log, '\n'))
      if (!absl::StrContains(line, "ptxas info") && !absl::StartsWith(line, "    ") && !line.empty())
        absl::StrAppend(&errors, line, "\n");
    return absl::InvalidArgumentError(
        absl::StrCat("ptxas rejected the PTX for ", target.Name(), " (exit ", *rc, "):\n", errors));
  }
  absl::StatusOr<std::string> cubin = ReadTextFile(out);
  if (!cubin.ok()) return absl::InternalError(cubin.status().message());  // ptxas said it wrote it
  return cubin;
}

}  // namespace kiln::codegen
