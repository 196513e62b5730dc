// Op attributes: int (int64), float (IEEE binary32, the precision every op
// computes in), string, int list, tensor type, and dict (a kernel's schedule).
// An AttrDict keeps its entries sorted by name, so printing is deterministic
// however the attributes were added.
#ifndef KILN_IR_ATTRIBUTES_H_
#define KILN_IR_ATTRIBUTES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/types.h"

namespace kiln::ir {

class Attribute;
struct NamedAttribute;

class AttrDict {
 public:
  AttrDict();
  AttrDict(std::initializer_list<NamedAttribute> entries);
  AttrDict(const AttrDict&);
  AttrDict(AttrDict&&) noexcept;
  AttrDict& operator=(const AttrDict&);
  AttrDict& operator=(AttrDict&&) noexcept;
  ~AttrDict();

  void Set(std::string_view name, Attribute value);  // insert or replace
  const Attribute* Find(std::string_view name) const;
  bool Erase(std::string_view name);
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  const std::vector<NamedAttribute>& entries() const { return entries_; }
  bool operator==(const AttrDict& o) const;
  bool operator!=(const AttrDict& o) const { return !(*this == o); }

 private:
  std::vector<NamedAttribute> entries_;
};

class Attribute {
 public:
  enum class Kind : uint8_t { kInt, kFloat, kString, kInts, kType, kDict };

  Attribute() = default;  // int 0
  static Attribute Int(int64_t v);
  static Attribute Float(float v);
  static Attribute String(std::string v);
  static Attribute Ints(std::vector<int64_t> v);
  static Attribute Type(TensorType v);
  static Attribute Dict(AttrDict v);

  Kind kind() const { return kind_; }
  int64_t int_value() const { return int_; }
  float float_value() const { return float_; }
  const std::string& string_value() const { return string_; }
  const std::vector<int64_t>& ints() const { return ints_; }
  const TensorType& type() const { return type_; }
  const AttrDict& dict() const { return dict_; }

  // Text form: 3, 1e-06, 2.0, "s", [1, 2], f32[T, 4], {a = 1}. Floats print
  // as the shortest text that parses back to the same float.
  std::string ToString() const;
  bool operator==(const Attribute& o) const;
  bool operator!=(const Attribute& o) const { return !(*this == o); }

 private:
  Kind kind_ = Kind::kInt;
  int64_t int_ = 0;
  float float_ = 0;
  std::string string_;
  std::vector<int64_t> ints_;
  TensorType type_;
  AttrDict dict_;
};

struct NamedAttribute {
  std::string name;
  Attribute value;
};

std::string_view AttrKindName(Attribute::Kind kind);  // "int", "float", ...
std::string AttrDictToString(const AttrDict& dict);   // "{a = 1, b = 2.5}"
std::string FloatToString(float v);                   // shortest round-trip text
std::string QuoteString(std::string_view s);          // "..." with escapes

}  // namespace kiln::ir

#endif  // KILN_IR_ATTRIBUTES_H_
