// Writes a whole file so that readers see either the old file or the whole
// new one: bundles, schedule tables, logits dumps.
#ifndef KILN_SUPPORT_WRITE_FILE_H_
#define KILN_SUPPORT_WRITE_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace kiln {

// Writes `bytes` to `path`.tmp, fsyncs it and renames it over `path`; on any
// failure the .tmp is removed, `path` is left as it was, and the error
// (Unavailable) names the step, the file and strerror.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes);

}  // namespace kiln

#endif  // KILN_SUPPORT_WRITE_FILE_H_
