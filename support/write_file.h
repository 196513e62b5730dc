// Writes a whole file so that readers see either the old file or the whole
// new one: bundles, schedule tables, logits dumps.
#ifndef KILN_SUPPORT_WRITE_FILE_H_
#define KILN_SUPPORT_WRITE_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln {

// Writes `bytes` to a new temporary file beside `path` (CreateTempBeside),
// fsyncs it and renames it over `path`; on any failure the temporary file is
// removed, `path` is left as it was, and the error (Unavailable) names the
// step, the file and strerror.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes);

// A new, empty file beside `path` for writing what is then renamed over it:
// `<path>.tmp.XXXXXX`, opened for writing with O_CREAT | O_EXCL | O_NOFOLLOW
// (mode 0644 under the umask), so no file that exists, an input or a link
// planted under that name among them, is ever truncated or followed.
struct TempFile {
  int fd = -1;
  std::string path;
};
absl::StatusOr<TempFile> CreateTempBeside(const std::string& path);

}  // namespace kiln

#endif  // KILN_SUPPORT_WRITE_FILE_H_
