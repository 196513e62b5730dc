#include "support/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "support/write_file.h"

namespace kiln {

// Format: "\x93NUMPY", version 1.0, uint16 header length, a Python dict
// literal padded with spaces and '\n' so the data starts 64-byte aligned.
absl::Status WriteNpyF32(const std::string& path, const std::vector<int64_t>& shape,
                         absl::Span<const float> data) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n != static_cast<int64_t>(data.size()))
    return absl::InternalError(absl::StrCat("npy shape holds ", n, " values, data has ", data.size()));
  std::string dims = absl::StrJoin(shape, ", ");
  if (shape.size() == 1) dims += ",";
  std::string header = absl::StrCat("{'descr': '<f4', 'fortran_order': False, 'shape': (", dims, "), }");
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string bytes("\x93NUMPY\x01\x00", 8);  // magic, version 1.0
  const uint16_t len = static_cast<uint16_t>(header.size());
  bytes.append(reinterpret_cast<const char*>(&len), 2);
  bytes.append(header);
  bytes.append(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float));
  return WriteFileAtomically(path, bytes);
}

absl::StatusOr<NpyArray> ReadNpyF32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0 || bytes[6] != 1)
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' is not a version 1 .npy file"));
  uint16_t len;
  std::memcpy(&len, bytes.data() + 8, 2);
  if (10u + len > bytes.size()) return absl::DataLossError(absl::StrCat("'", path, "' is truncated"));
  absl::string_view header(bytes.data() + 10, len);
  if (header.find("'<f4'") == absl::string_view::npos || header.find("False") == absl::string_view::npos)
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' is not little-endian float32 C-order"));
  size_t a = header.find("'shape': ("), b = header.find(')', a);
  if (a == absl::string_view::npos || b == absl::string_view::npos)
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' has no shape"));
  NpyArray arr;
  int64_t n = 1;
  for (absl::string_view part : absl::StrSplit(header.substr(a + 10, b - a - 10), ',', absl::SkipWhitespace())) {
    int64_t d;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &d) || d < 0)
      return absl::InvalidArgumentError(absl::StrCat("'", path, "' has a bad shape"));
    arr.shape.push_back(d);
    // Checked before it can overflow: no more values than the file has bytes.
    if (d > 0 && n > static_cast<int64_t>(bytes.size()) / d)
      return absl::DataLossError(absl::StrCat("'", path, "' has a shape larger than its data"));
    n *= d;
  }
  if (bytes.size() - 10 - len != static_cast<size_t>(n) * 4)
    return absl::DataLossError(absl::StrCat("'", path, "' holds ", bytes.size() - 10 - len, " data bytes, expected ", n * 4));
  arr.data.resize(n);
  if (n > 0) std::memcpy(arr.data.data(), bytes.data() + 10 + len, n * 4);  // an empty vector's data() may be null
  return arr;
}

}  // namespace kiln
