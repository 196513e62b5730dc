// Writes GGUF v3 files: metadata in insertion order, tensors packed in
// insertion order with `general.alignment` padding (spec/gguf-format.md §6).
// Tensor bytes are produced by a callback at write time so multi-GB models
// never sit in memory whole.
#ifndef KILN_MODELS_GGUF_GGUF_WRITER_H_
#define KILN_MODELS_GGUF_GGUF_WRITER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "models/gguf/ggml_type.h"
#include "models/gguf/gguf_value.h"

namespace kiln::gguf {

class GgufWriter {
 public:
  // Fills `out` (exactly the tensor's byte size) with the tensor's data.
  using Producer = std::function<absl::Status(absl::Span<uint8_t> out)>;

  explicit GgufWriter(uint32_t alignment = 32) : alignment_(alignment) {}

  // Keys must be unique and non-empty; violations surface from Write().
  // `general.alignment` is written automatically when the alignment is not
  // 32; an explicit AddKey of it must be a UINT32 equal to the alignment.
  void AddKey(std::string key, Value value);
  // dims: ne[0] first. dims[0] must be a multiple of the type's block size.
  void AddTensor(std::string name, std::vector<int64_t> dims, GgmlType type, Producer producer);
  // Convenience: tensor from bytes already in memory (copied).
  void AddTensorBytes(std::string name, std::vector<int64_t> dims, GgmlType type,
                      std::vector<uint8_t> bytes);

  // Writes to `path` through `path`.tmp renamed into place, so a failed
  // write never leaves a truncated file under the final name. Producers of
  // different tensors run concurrently on `threads` threads, each tensor
  // produced into its own buffer (a bounded number of bytes in flight) and
  // written with pwrite at its precomputed offset.
  absl::Status Write(const std::string& path, int threads = 1) const;
  // Serializes to memory (small files, tests).
  absl::StatusOr<std::vector<uint8_t>> WriteToMemory() const;

 private:
  struct Layout;  // gguf_writer.cc: encoded metadata and tensor offsets
  // Validates keys and tensors and lays the file out.
  absl::StatusOr<Layout> Plan() const;

  struct PendingTensor {
    std::string name;
    std::vector<int64_t> dims;
    GgmlType type;
    Producer producer;
  };
  uint32_t alignment_;
  std::vector<std::pair<std::string, Value>> keys_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace kiln::gguf

#endif  // KILN_MODELS_GGUF_GGUF_WRITER_H_
