// In-memory weight source.
#include "ir/weight_source.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"

namespace kiln::ir {

void MemoryWeightSource::Add(std::string name, gguf::GgmlType type, std::vector<int64_t> ne,
                             std::vector<uint8_t> bytes) {
  tensors_[std::move(name)] = std::make_unique<Entry>(Entry{type, std::move(ne), std::move(bytes)});
}

void MemoryWeightSource::AddF32(std::string name, std::vector<int64_t> ne, absl::Span<const float> values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  Add(std::move(name), gguf::GgmlType::kF32, std::move(ne), std::move(bytes));
}

absl::StatusOr<WeightView> MemoryWeightSource::Find(std::string_view name) const {
  auto it = tensors_.find(ToAbsl(name));
  if (it == tensors_.end()) return absl::NotFoundError(absl::StrCat("no tensor '", ToAbsl(name), "'"));
  const Entry& e = *it->second;
  return WeightView{e.type, e.ne, e.bytes};
}

}  // namespace kiln::ir
