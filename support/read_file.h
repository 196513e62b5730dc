// Reads a whole (small) file into a string: schedule tables, configs.
#ifndef KILN_SUPPORT_READ_FILE_H_
#define KILN_SUPPORT_READ_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace kiln {

// Larger text inputs are refused (a schedule table is ~20 KB, a tune cache
// a few MB).
inline constexpr int64_t kMaxTextFileBytes = int64_t{256} << 20;

// The file's bytes; NotFound / InvalidArgument naming the path and the
// reason (strerror) when it cannot be opened or read, is not a regular file
// (a directory, a FIFO, /dev/zero) or is larger than kMaxTextFileBytes.
absl::StatusOr<std::string> ReadTextFile(const std::string& path);

}  // namespace kiln

#endif  // KILN_SUPPORT_READ_FILE_H_
