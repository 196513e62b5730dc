#include "models/gguf/ggml_type.h"

#include <array>
#include <string>

#include "absl/strings/ascii.h"

namespace kiln::gguf {
namespace {

// spec/gguf-format.md §5 type table.
constexpr std::array<GgmlTypeInfo, 20> kTypes = {{
    {GgmlType::kF32, "F32", 1, 4},
    {GgmlType::kF16, "F16", 1, 2},
    {GgmlType::kQ4_0, "Q4_0", 32, 18},
    {GgmlType::kQ4_1, "Q4_1", 32, 20},
    {GgmlType::kQ5_0, "Q5_0", 32, 22},
    {GgmlType::kQ5_1, "Q5_1", 32, 24},
    {GgmlType::kQ8_0, "Q8_0", 32, 34},
    {GgmlType::kQ8_1, "Q8_1", 32, 36},
    {GgmlType::kQ2_K, "Q2_K", 256, 84},
    {GgmlType::kQ3_K, "Q3_K", 256, 110},
    {GgmlType::kQ4_K, "Q4_K", 256, 144},
    {GgmlType::kQ5_K, "Q5_K", 256, 176},
    {GgmlType::kQ6_K, "Q6_K", 256, 210},
    {GgmlType::kQ8_K, "Q8_K", 256, 292},
    {GgmlType::kI8, "I8", 1, 1},
    {GgmlType::kI16, "I16", 1, 2},
    {GgmlType::kI32, "I32", 1, 4},
    {GgmlType::kI64, "I64", 1, 8},
    {GgmlType::kF64, "F64", 1, 8},
    {GgmlType::kBF16, "BF16", 1, 2},
}};

}  // namespace

std::optional<GgmlTypeInfo> LookupGgmlType(uint32_t id) {
  for (const auto& t : kTypes)
    if (static_cast<uint32_t>(t.type) == id) return t;
  return std::nullopt;
}

const GgmlTypeInfo& TypeInfo(GgmlType type) {
  for (const auto& t : kTypes)
    if (t.type == type) return t;
  // Unreachable for enumerators (all are in the table); a value cast from an
  // unchecked integer gets the F32 entry rather than a crash. Callers that
  // hold raw ids use LookupGgmlType, which rejects unknown ones.
  return kTypes[0];
}

std::string_view TypeName(GgmlType type) { return TypeInfo(type).name; }

std::optional<GgmlType> ParseGgmlType(std::string_view name) {
  std::string upper = absl::AsciiStrToUpper(std::string(name));
  for (const auto& t : kTypes)
    if (t.name == upper) return t.type;
  return std::nullopt;
}

}  // namespace kiln::gguf
