#include "support/output_path.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"

namespace kiln {

absl::Status CheckNotAnInput(const std::string& what, const std::string& output,
                             const std::vector<std::string>& inputs) {
  struct stat out;
  if (output.empty() || ::stat(output.c_str(), &out) != 0) return absl::OkStatus();
  for (const std::string& in : inputs) {
    struct stat st;
    if (in.empty() || ::stat(in.c_str(), &st) != 0) continue;
    if (st.st_dev == out.st_dev && st.st_ino == out.st_ino)
      return absl::InvalidArgumentError(absl::StrCat(what, " '", output, "' is the input '", in,
                                                     "'; refusing to overwrite it"));
  }
  return absl::OkStatus();
}

}  // namespace kiln
