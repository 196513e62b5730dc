// Attribute values, sorted attribute dicts and their text form.
#include "ir/attributes.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace kiln::ir {

AttrDict::AttrDict() = default;
AttrDict::AttrDict(std::initializer_list<NamedAttribute> entries) {
  for (const NamedAttribute& e : entries) Set(e.name, e.value);
}
AttrDict::AttrDict(const AttrDict&) = default;
AttrDict::AttrDict(AttrDict&&) noexcept = default;
AttrDict& AttrDict::operator=(const AttrDict&) = default;
AttrDict& AttrDict::operator=(AttrDict&&) noexcept = default;
AttrDict::~AttrDict() = default;

void AttrDict::Set(std::string_view name, Attribute value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const NamedAttribute& e, std::string_view n) { return e.name < n; });
  if (it != entries_.end() && it->name == name) {
    it->value = std::move(value);
  } else {
    entries_.insert(it, NamedAttribute{std::string(name), std::move(value)});
  }
}

const Attribute* AttrDict::Find(std::string_view name) const {
  for (const NamedAttribute& e : entries_)
    if (e.name == name) return &e.value;
  return nullptr;
}

bool AttrDict::Erase(std::string_view name) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->name == name) {
      entries_.erase(it);
      return true;
    }
  }
  return false;
}

bool AttrDict::operator==(const AttrDict& o) const {
  if (entries_.size() != o.entries_.size()) return false;
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].name != o.entries_[i].name || entries_[i].value != o.entries_[i].value) return false;
  return true;
}

Attribute Attribute::Int(int64_t v) {
  Attribute a;
  a.kind_ = Kind::kInt;
  a.int_ = v;
  return a;
}
Attribute Attribute::Float(float v) {
  Attribute a;
  a.kind_ = Kind::kFloat;
  a.float_ = v;
  return a;
}
Attribute Attribute::String(std::string v) {
  Attribute a;
  a.kind_ = Kind::kString;
  a.string_ = std::move(v);
  return a;
}
Attribute Attribute::Ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind_ = Kind::kInts;
  a.ints_ = std::move(v);
  return a;
}
Attribute Attribute::Type(TensorType v) {
  Attribute a;
  a.kind_ = Kind::kType;
  a.type_ = std::move(v);
  return a;
}
Attribute Attribute::Dict(AttrDict v) {
  Attribute a;
  a.kind_ = Kind::kDict;
  a.dict_ = std::move(v);
  return a;
}

bool Attribute::operator==(const Attribute& o) const {
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::kInt:
      return int_ == o.int_;
    // Bitwise, so that NaN equals itself and -0 differs from 0.
    case Kind::kFloat:
      return std::memcmp(&float_, &o.float_, sizeof(float)) == 0;
    case Kind::kString:
      return string_ == o.string_;
    case Kind::kInts:
      return ints_ == o.ints_;
    case Kind::kType:
      return type_ == o.type_;
    case Kind::kDict:
      return dict_ == o.dict_;
  }
  return false;
}

std::string_view AttrKindName(Attribute::Kind kind) {
  switch (kind) {
    case Attribute::Kind::kInt:
      return "int";
    case Attribute::Kind::kFloat:
      return "float";
    case Attribute::Kind::kString:
      return "string";
    case Attribute::Kind::kInts:
      return "ints";
    case Attribute::Kind::kType:
      return "type";
    case Attribute::Kind::kDict:
      return "dict";
  }
  return "?";
}

std::string FloatToString(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  // Keep floats distinguishable from ints in the text: "2" -> "2.0".
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string QuoteString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          out += absl::StrFormat("\\x%02x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += "\"";
  return out;
}

std::string Attribute::ToString() const {
  switch (kind_) {
    case Kind::kInt:
      return absl::StrCat(int_);
    case Kind::kFloat:
      return FloatToString(float_);
    case Kind::kString:
      return QuoteString(string_);
    case Kind::kInts:
      return absl::StrCat("[", absl::StrJoin(ints_, ", "), "]");
    case Kind::kType:
      return type_.ToString();
    case Kind::kDict:
      return AttrDictToString(dict_);
  }
  return "?";
}

std::string AttrDictToString(const AttrDict& dict) {
  return absl::StrCat("{",
                      absl::StrJoin(dict.entries(), ", ",
                                    [](std::string* out, const NamedAttribute& e) {
                                      absl::StrAppend(out, e.name, " = ", e.value.ToString());
                                    }),
                      "}");
}

}  // namespace kiln::ir
