// A GGUF metadata value: one of the 13 value types of spec/gguf-format.md §4,
// arrays (nested arrays included) holding values of one element type.
#ifndef KILN_MODELS_GGUF_GGUF_VALUE_H_
#define KILN_MODELS_GGUF_GGUF_VALUE_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kiln::gguf {

enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
std::string_view ValueTypeName(ValueType t);  // "UINT32", "ARRAY", ...

class Value;
// An array: its element type is stored explicitly so empty arrays keep it.
struct Array {
  ValueType element_type = ValueType::kUint8;
  std::vector<Value> elements;
};

class Value {
 public:
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, Array, uint64_t, int64_t, double>;
  Value() : type_(ValueType::kUint8), v_(uint8_t{0}) {}

  static Value U8(uint8_t x) { return Value(ValueType::kUint8, x); }
  static Value I8(int8_t x) { return Value(ValueType::kInt8, x); }
  static Value U16(uint16_t x) { return Value(ValueType::kUint16, x); }
  static Value I16(int16_t x) { return Value(ValueType::kInt16, x); }
  static Value U32(uint32_t x) { return Value(ValueType::kUint32, x); }
  static Value I32(int32_t x) { return Value(ValueType::kInt32, x); }
  static Value F32(float x) { return Value(ValueType::kFloat32, x); }
  static Value Bool(bool x) { return Value(ValueType::kBool, x); }
  static Value Str(std::string x) { return Value(ValueType::kString, std::move(x)); }
  static Value U64(uint64_t x) { return Value(ValueType::kUint64, x); }
  static Value I64(int64_t x) { return Value(ValueType::kInt64, x); }
  static Value F64(double x) { return Value(ValueType::kFloat64, x); }
  static Value Arr(Array a) { return Value(ValueType::kArray, std::move(a)); }
  static Value StrArray(std::vector<std::string> xs);
  static Value I32Array(const std::vector<int32_t>& xs);

  ValueType type() const { return type_; }
  const Storage& storage() const { return v_; }

  // Any integer type (UINT8..INT64) whose value is representable; nullopt
  // for other types or out-of-range values (robust readers accept any width).
  std::optional<int64_t> AsInt() const;
  std::optional<uint64_t> AsUint() const;
  // FLOAT32 or FLOAT64.
  std::optional<double> AsFloat() const;
  std::optional<bool> AsBool() const;
  const std::string* AsString() const { return std::get_if<std::string>(&v_); }
  const Array* AsArray() const { return std::get_if<Array>(&v_); }

  // Short human-readable form for `kilnc inspect` (long arrays elided).
  std::string DebugString(size_t max_elements = 8) const;
  // The same with every element: equal texts, equal values (floats in their
  // shortest exact form).
  std::string ExactString() const { return DebugString(std::numeric_limits<size_t>::max()); }

 private:
  Value(ValueType t, Storage v) : type_(t), v_(std::move(v)) {}
  ValueType type_;
  Storage v_;
};

}  // namespace kiln::gguf

#endif  // KILN_MODELS_GGUF_GGUF_VALUE_H_
