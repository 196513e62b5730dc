#include "tests/compiler/codegen/filecheck.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace kiln::codegen::testing {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / absl::StrCat("kiln-filecheck-", ::getpid(), "-", name)).string();
}

int RunFileCheck(const std::string& ptx, const std::string& checks, std::string* output) {
  const std::string in = TempPath("in.ptx"), chk = TempPath("checks.txt"), log = TempPath("log.txt");
  std::ofstream(in) << ptx;
  std::ofstream(chk) << checks;
  std::string cmd = absl::StrCat(KILN_FILECHECK, " ", chk, " --input-file=", in, " > ", log, " 2>&1");
  int rc = std::system(cmd.c_str());
  std::ifstream f(log);
  output->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  std::filesystem::remove(in);
  std::filesystem::remove(chk);
  std::filesystem::remove(log);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace

void ExpectFileCheck(const std::vector<KernelSpec>& specs, const Target& target, const std::string& checks) {
  if (!std::filesystem::exists(KILN_FILECHECK)) GTEST_SKIP() << "FileCheck not installed";
  absl::StatusOr<CompiledModule> m = EmitPtx(specs, target);
  ASSERT_TRUE(m.ok()) << m.status();
  std::string out;
  EXPECT_EQ(RunFileCheck(m->ptx, checks, &out), 0) << out;
}

}  // namespace kiln::codegen::testing
