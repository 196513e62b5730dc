// Guards for the files a command writes, checked before the work that
// produces them.
#ifndef KILN_SUPPORT_OUTPUT_PATH_H_
#define KILN_SUPPORT_OUTPUT_PATH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace kiln {

// InvalidArgument naming `what` (the output's flag, e.g. "-o") when `output`
// exists and is the same file as one of `inputs` (the same device and
// inode: a hard link or another spelling of the path counts), is a folder
// or another file that is not a regular one (a device, FIFO or socket: the
// complete file is renamed over the path), or lies in a folder that does not
// exist or cannot be written. Empty paths
// and missing inputs are skipped. The write itself still reports what goes
// wrong later (a full disk).
absl::Status CheckOutputPath(const std::string& what, const std::string& output,
                             const std::vector<std::string>& inputs);

}  // namespace kiln

#endif  // KILN_SUPPORT_OUTPUT_PATH_H_
