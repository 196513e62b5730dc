// Reads a whole (small) file into a string: schedule tables, configs.
#ifndef KILN_SUPPORT_READ_FILE_H_
#define KILN_SUPPORT_READ_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace kiln {

// The file's bytes; NotFound / InvalidArgument naming the path and the
// reason (strerror) when it cannot be opened or read.
absl::StatusOr<std::string> ReadTextFile(const std::string& path);

}  // namespace kiln

#endif  // KILN_SUPPORT_READ_FILE_H_
