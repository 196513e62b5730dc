// Writes float32 arrays as NumPy .npy files (format version 1.0), e.g. the
// logits dumps of `kilnc reference` and `kiln run`.
#ifndef KILN_SUPPORT_NPY_H_
#define KILN_SUPPORT_NPY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace kiln {

absl::Status WriteNpyF32(const std::string& path, const std::vector<int64_t>& shape,
                         absl::Span<const float> data);

// Reads a little-endian float32 C-order .npy (tests, comparisons). A file
// that is not one is InvalidArgument, a short one DataLoss, a missing one
// NotFound, each naming the path.
struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;
};
absl::StatusOr<NpyArray> ReadNpyF32(const std::string& path);

}  // namespace kiln

#endif  // KILN_SUPPORT_NPY_H_
