// Element type table and the printing of dims and tensor types.
#include "ir/types.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/absl_compat.h"

namespace kiln::ir {
namespace {

using gguf::GgmlType;

// Block geometry of the quantized types is that of spec/quant-formats.md
// (the same numbers as models/gguf/ggml_type.cc's table).
constexpr std::array<DTypeInfo, 12> kDTypes = {{
    {DType::kF32, "f32", true, false, false, 1, 4, GgmlType::kF32},
    {DType::kF16, "f16", true, false, false, 1, 2, GgmlType::kF16},
    {DType::kBF16, "bf16", true, false, false, 1, 2, GgmlType::kBF16},
    {DType::kI32, "i32", false, true, false, 1, 4, GgmlType::kI32},
    {DType::kI8, "i8", false, true, false, 1, 1, GgmlType::kI8},
    {DType::kU8, "u8", false, true, false, 1, 1, std::nullopt},
    {DType::kQ8_0, "q8_0", false, false, true, 32, 34, GgmlType::kQ8_0},
    {DType::kQ4_0, "q4_0", false, false, true, 32, 18, GgmlType::kQ4_0},
    {DType::kQ4_K, "q4_k", false, false, true, 256, 144, GgmlType::kQ4_K},
    {DType::kQ5_K, "q5_k", false, false, true, 256, 176, GgmlType::kQ5_K},
    {DType::kQ6_K, "q6_k", false, false, true, 256, 210, GgmlType::kQ6_K},
    {DType::kQ6_KData, "q6_kd", false, false, true, 256, 208, std::nullopt},
}};

}  // namespace

const DTypeInfo& GetDTypeInfo(DType dtype) { return kDTypes[static_cast<int>(dtype)]; }
std::string_view DTypeName(DType dtype) { return GetDTypeInfo(dtype).name; }
absl::Span<const DTypeInfo> AllDTypes() { return kDTypes; }

std::optional<DType> ParseDType(std::string_view name) {
  for (const auto& d : kDTypes)
    if (d.name == name) return d.dtype;
  return std::nullopt;
}

std::optional<DType> DTypeFromGgml(gguf::GgmlType type) {
  for (const auto& d : kDTypes)
    if (d.ggml == type) return d.dtype;
  return std::nullopt;
}

std::string_view SymbolName(Symbol s) {
  switch (s) {
    case Symbol::kT:
      return "T";
    case Symbol::kP:
      return "P";
    case Symbol::kC:
      return "C";
    case Symbol::kNone:
      break;
  }
  return "?";
}

std::optional<Symbol> ParseSymbol(std::string_view name) {
  for (Symbol s : kAllSymbols)
    if (SymbolName(s) == name) return s;
  return std::nullopt;
}

std::string Dim::ToString() const {
  return is_static() ? absl::StrCat(value_) : std::string(SymbolName(symbol_));
}

bool TensorType::is_static() const {
  for (const Dim& d : shape)
    if (!d.is_static()) return false;
  return true;
}

std::string ShapeToString(const Shape& shape) {
  return absl::StrCat(
      "[", absl::StrJoin(shape, ", ", [](std::string* out, const Dim& d) { out->append(d.ToString()); }),
      "]");
}

std::string TensorType::ToString() const {
  return absl::StrCat(ToAbsl(DTypeName(dtype)), ShapeToString(shape));
}

ElementCount CountElements(const Shape& shape) {
  ElementCount c;
  for (const Dim& d : shape) {
    if (d.is_static()) {
      c.constant *= d.value();
    } else {
      c.powers[static_cast<int>(d.symbol()) - 1] += 1;
    }
  }
  return c;
}

}  // namespace kiln::ir
