#include "support/read_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kiln {

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int e = errno;
    std::string why = absl::StrCat("cannot open ", path, ": ", std::strerror(e));
    return e == ENOENT ? absl::NotFoundError(why) : absl::InvalidArgumentError(why);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat("cannot read ", path));
  return ss.str();
}

}  // namespace kiln
