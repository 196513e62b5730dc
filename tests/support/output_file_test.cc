// What a command may write over: CheckOutputPath refuses inputs, folders and
// files that are not regular (a FIFO here), and WriteFileAtomically never
// opens, truncates or follows a file that exists beside the target.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "support/output_path.h"
#include "support/write_file.h"

namespace kiln {
namespace {

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() / absl::StrCat("kiln-output-file-test-", ::getpid())).string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  static std::string Read(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }
  static void Write(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }
  std::string dir_;
};

TEST_F(OutputFileTest, RefusesInputsFoldersAndFilesThatAreNotRegular) {
  Write(Path("in.gguf"), "input");
  EXPECT_TRUE(CheckOutputPath("-o", Path("out.kiln"), {Path("in.gguf")}).ok());
  absl::Status s = CheckOutputPath("-o", Path("in.gguf"), {Path("in.gguf")});
  EXPECT_NE(s.message().find("is the input"), std::string::npos) << s;
  s = CheckOutputPath("-o", dir_, {});
  EXPECT_NE(s.message().find("is a folder"), std::string::npos) << s;
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  s = CheckOutputPath("--dump-logits", Path("fifo"), {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("is not a regular file"), std::string::npos) << s;
  s = CheckOutputPath("-o", Path("in.gguf/x.kiln"), {});
  EXPECT_NE(s.message().find("is not a folder"), std::string::npos) << s;
  s = CheckOutputPath("-o", Path("nodir/x.kiln"), {});
  EXPECT_NE(s.message().find("does not exist"), std::string::npos) << s;
}

// An input named like the old temporary file (`<out>.tmp`) and a link
// planted under that name both survive the write.
TEST_F(OutputFileTest, TheTemporaryFileIsAlwaysNew) {
  Write(Path("out.npy.tmp"), "an input");
  Write(Path("victim"), "keep me");
  std::filesystem::create_symlink(Path("victim"), Path("out.kiln.tmp"));
  ASSERT_TRUE(WriteFileAtomically(Path("out.npy"), "new bytes").ok());
  ASSERT_TRUE(WriteFileAtomically(Path("out.kiln"), "bundle").ok());
  EXPECT_EQ(Read(Path("out.npy")), "new bytes");
  EXPECT_EQ(Read(Path("out.kiln")), "bundle");
  EXPECT_EQ(Read(Path("out.npy.tmp")), "an input");
  EXPECT_EQ(Read(Path("victim")), "keep me");
  // Nothing is left behind: the five files above and no temporary one.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    ++files;
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  }
  EXPECT_EQ(files, 5);
}

TEST_F(OutputFileTest, TemporaryFilesAreDistinctAndExclusive) {
  absl::StatusOr<TempFile> a = CreateTempBeside(Path("x"));
  absl::StatusOr<TempFile> b = CreateTempBeside(Path("x"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->path, b->path);
  EXPECT_EQ(a->path.rfind(Path("x.tmp."), 0), 0u) << a->path;
  ::close(a->fd);
  ::close(b->fd);
  absl::StatusOr<TempFile> c = CreateTempBeside(Path("nodir/x"));
  EXPECT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cannot create"), std::string::npos) << c.status();
}

}  // namespace
}  // namespace kiln
