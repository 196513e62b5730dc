// Where the interpreter finds the GGUF tensors a module's weights are bound
// to: raw bytes, GGML type and dims, looked up by tensor name.
// MemoryWeightSource holds tensors built in tests; models/ adapts a GgufFile.
#ifndef KILN_IR_WEIGHT_SOURCE_H_
#define KILN_IR_WEIGHT_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "models/gguf/ggml_type.h"

namespace kiln::ir {

struct WeightView {
  gguf::GgmlType type;
  std::vector<int64_t> ne;          // GGUF order: ne[0] is the contiguous dim
  absl::Span<const uint8_t> bytes;  // valid while the source lives
};

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // NotFound if there is no tensor `name`.
  virtual absl::StatusOr<WeightView> Find(std::string_view name) const = 0;
};

class MemoryWeightSource : public WeightSource {
 public:
  void Add(std::string name, gguf::GgmlType type, std::vector<int64_t> ne, std::vector<uint8_t> bytes);
  // An F32 tensor; `ne` in GGUF order (a [M, K] IR matrix has ne = {K, M}).
  void AddF32(std::string name, std::vector<int64_t> ne, absl::Span<const float> values);
  absl::StatusOr<WeightView> Find(std::string_view name) const override;

 private:
  struct Entry {
    gguf::GgmlType type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> bytes;
  };
  absl::flat_hash_map<std::string, std::unique_ptr<Entry>> tensors_;
};

}  // namespace kiln::ir

#endif  // KILN_IR_WEIGHT_SOURCE_H_
