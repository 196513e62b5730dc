// Element types, dimensions and tensor types of the kiln IR.
// A tensor type prints as `q8_0[2048, 1024]` or `f32[T, 1024]`: shapes are
// row-major (outermost first, last dim contiguous); a dim is a constant or
// one of the symbols T (tokens in this step), P (start position) and C (max
// context). A GGUF weight with ne = [K, M] is the IR type dtype[M, K].
#ifndef KILN_IR_TYPES_H_
#define KILN_IR_TYPES_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "models/gguf/ggml_type.h"

namespace kiln::ir {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kI32,
  kI8,
  kU8,
  kQ8_0,
  kQ4_0,
  kQ4_K,
  kQ5_K,
  kQ6_K,
  kQ6_KData,  // Q6_K blocks without their d (208 bytes / 256): q6_k_split's first plane
};

struct DTypeInfo {
  DType dtype;
  std::string_view name;               // as printed: "f32", "q4_k", ...
  bool is_float;                       // f32 f16 bf16
  bool is_int;                         // i32 i8 u8
  bool is_quantized;                   // block-quantized GGML weight types
  int block_elems;                     // 1 unless quantized
  int block_bytes;                     // bytes per block (= element size unless quantized)
  std::optional<gguf::GgmlType> ggml;  // the GGUF tensor type, if any
};

const DTypeInfo& GetDTypeInfo(DType dtype);
std::string_view DTypeName(DType dtype);
std::optional<DType> ParseDType(std::string_view name);
std::optional<DType> DTypeFromGgml(gguf::GgmlType type);
absl::Span<const DTypeInfo> AllDTypes();

enum class Symbol : uint8_t { kNone, kT, kP, kC };
inline constexpr std::array<Symbol, 3> kAllSymbols = {Symbol::kT, Symbol::kP, Symbol::kC};
std::string_view SymbolName(Symbol s);  // "T", "P", "C"
std::optional<Symbol> ParseSymbol(std::string_view name);

// A dimension: a non-negative constant or exactly one symbol.
class Dim {
 public:
  Dim(int64_t value) : value_(value) {}  // NOLINT: implicit, `{Dim::T(), 1024}`
  static Dim Sym(Symbol s) {
    Dim d(0);
    d.symbol_ = s;
    return d;
  }
  static Dim T() { return Sym(Symbol::kT); }
  static Dim P() { return Sym(Symbol::kP); }
  static Dim C() { return Sym(Symbol::kC); }

  bool is_static() const { return symbol_ == Symbol::kNone; }
  int64_t value() const { return value_; }  // only if is_static()
  Symbol symbol() const { return symbol_; }
  std::string ToString() const;
  bool operator==(const Dim& o) const { return symbol_ == o.symbol_ && value_ == o.value_; }
  bool operator!=(const Dim& o) const { return !(*this == o); }

 private:
  int64_t value_ = 0;
  Symbol symbol_ = Symbol::kNone;
};

using Shape = std::vector<Dim>;

struct TensorType {
  DType dtype = DType::kF32;
  Shape shape;

  int rank() const { return static_cast<int>(shape.size()); }
  bool is_static() const;
  std::string ToString() const;  // "f32[T, 1024]"
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
};

std::string ShapeToString(const Shape& shape);  // "[T, 1024]"

// The element count of a shape as constant * T^a * P^b * C^c, so counts of
// symbolic shapes compare exactly (reshape's rule).
struct ElementCount {
  int64_t constant = 1;
  std::array<int, 3> powers = {0, 0, 0};  // of T, P, C
  bool operator==(const ElementCount& o) const { return constant == o.constant && powers == o.powers; }
};
ElementCount CountElements(const Shape& shape);

}  // namespace kiln::ir

#endif  // KILN_IR_TYPES_H_
