// Guards for the files a command writes: never one of its inputs.
#ifndef KILN_SUPPORT_OUTPUT_PATH_H_
#define KILN_SUPPORT_OUTPUT_PATH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace kiln {

// InvalidArgument naming both when `output` exists and is the same file as
// one of `inputs` (the same device and inode: a hard link or another
// spelling of the path counts); empty paths and missing files are skipped.
// `what` names the output's flag in the message, e.g. "-o".
absl::Status CheckNotAnInput(const std::string& what, const std::string& output,
                             const std::vector<std::string>& inputs);

// Checked before the work that produces `output` (empty: nothing to check):
// InvalidArgument naming `what` when its folder does not exist or cannot be
// written, or when `output` is a folder. The write itself still reports
// what goes wrong later (a full disk).
absl::Status CheckWritable(const std::string& what, const std::string& output);

}  // namespace kiln

#endif  // KILN_SUPPORT_OUTPUT_PATH_H_
