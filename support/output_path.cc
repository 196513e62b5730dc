#include "support/output_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace kiln {

namespace {

absl::Status CheckNotAnInput(const std::string& what, const std::string& output,
                             const std::vector<std::string>& inputs) {
  struct stat out;
  if (::stat(output.c_str(), &out) != 0) return absl::OkStatus();
  for (const std::string& in : inputs) {
    struct stat st;
    if (in.empty() || ::stat(in.c_str(), &st) != 0) continue;
    if (st.st_dev == out.st_dev && st.st_ino == out.st_ino)
      return absl::InvalidArgumentError(absl::StrCat(what, " '", output, "' is the input '", in,
                                                     "'; refusing to overwrite it"));
  }
  return absl::OkStatus();
}

absl::Status CheckWritable(const std::string& what, const std::string& output) {
  struct stat st;
  if (::stat(output.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return absl::InvalidArgumentError(absl::StrCat(what, " '", output, "' is a folder"));
    // A complete file is renamed over the path, which would replace a
    // device, FIFO or socket by a regular file.
    if (!S_ISREG(st.st_mode))
      return absl::InvalidArgumentError(absl::StrCat(what, " '", output,
                                                     "' is not a regular file (a device, FIFO or socket); "
                                                     "give the path of a file to write"));
  }
  const size_t slash = output.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : output.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0)
    return absl::InvalidArgumentError(absl::StrCat(what, " '", output, "': the folder '", dir, "' does not exist"));
  if (!S_ISDIR(st.st_mode))
    return absl::InvalidArgumentError(absl::StrCat(what, " '", output, "': '", dir, "' is not a folder"));
  if (::access(dir.c_str(), W_OK) != 0)
    return absl::InvalidArgumentError(absl::StrCat(what, " '", output, "': the folder '", dir, "' is not writable: ",
                                                   std::strerror(errno)));
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckOutputPath(const std::string& what, const std::string& output,
                             const std::vector<std::string>& inputs) {
  if (output.empty()) return absl::OkStatus();
  if (absl::Status s = CheckNotAnInput(what, output, inputs); !s.ok()) return s;
  return CheckWritable(what, output);
}

}  // namespace kiln
