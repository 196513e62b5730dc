// Reads a GGUF file (versions 2 and 3): metadata, tensor table, tensor bytes.
// Every byte range is checked against the file before it is touched; bad
// files give InvalidArgument/DataLoss naming the key/tensor and byte offset.
// Anything that runs past the end of the file is DataLoss; each tensor's
// trailing alignment padding must be present too, as every writer emits it
// (spec/gguf-format.md §6), so a file cut at any byte is rejected.
#ifndef KILN_MODELS_GGUF_GGUF_FILE_H_
#define KILN_MODELS_GGUF_GGUF_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "models/gguf/ggml_type.h"
#include "models/gguf/gguf_value.h"
#include "support/mapped_file.h"

namespace kiln::gguf {

struct TensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // ne[0] first (innermost); trailing 1s as stored
  GgmlType type = GgmlType::kF32;
  uint64_t offset = 0;       // relative to data_offset, as stored
  uint64_t file_offset = 0;  // absolute byte offset in the file
  uint64_t nbytes = 0;       // bytes of data
  int64_t num_elements() const;
  int64_t dim(int i) const { return i < static_cast<int>(dims.size()) ? dims[i] : 1; }
};

class GgufFile {
 public:
  // Maps and parses `path`.
  static absl::StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // Parses bytes owned by the caller (must outlive the result). `name` is
  // used in error messages.
  static absl::StatusOr<std::unique_ptr<GgufFile>> Parse(absl::Span<const uint8_t> bytes,
                                                         std::string name = "<memory>");

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const { return bytes_.size(); }
  const std::string& name() const { return name_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
  const Value* Find(std::string_view key) const;
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* FindTensor(std::string_view name) const;
  // The tensor's bytes (already bounds-checked at parse time).
  absl::Span<const uint8_t> TensorData(const TensorInfo& t) const;

 private:
  GgufFile() = default;
  std::string name_;
  std::unique_ptr<MappedFile> mapping_;  // null for Parse()
  absl::Span<const uint8_t> bytes_;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> metadata_;
  absl::flat_hash_map<std::string, size_t> key_index_;
  std::vector<TensorInfo> tensors_;
  absl::flat_hash_map<std::string, size_t> tensor_index_;
  friend class GgufParser;
};

}  // namespace kiln::gguf

#endif  // KILN_MODELS_GGUF_GGUF_FILE_H_
