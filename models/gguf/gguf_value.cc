#include "models/gguf/gguf_value.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kiln::gguf {
namespace {

// Strings longer than this are elided in DebugString: chat templates run to
// kilobytes and would drown the rest of `kilnc inspect`.
constexpr size_t kMaxDebugStringBytes = 200;

// Quotes `s` C-style, but passes bytes >= 0x80 through so UTF-8 tokens
// ("Ġthe", CJK) stay readable.
void AppendQuoted(std::string_view s, std::string* out) {
  size_t n = s.size();
  bool elided = n > kMaxDebugStringBytes;
  if (elided) {
    n = kMaxDebugStringBytes;
    // Back up to a UTF-8 character boundary (continuation bytes are 10xxxxxx).
    while (n > 0 && (static_cast<uint8_t>(s[n]) & 0xC0) == 0x80) --n;
  }
  out->push_back('"');
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (c < 0x20 || c == 0x7F) {
          absl::StrAppendFormat(out, "\\x%02x", c);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
  if (elided) absl::StrAppend(out, "... (", s.size(), " bytes)");
}

// Shortest text that reads back to the same float/double.
template <typename F>
void AppendFloat(F x, std::string* out) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), x);
  out->append(buf, r.ptr);
}

void Append(const Value& v, size_t max_elements, std::string* out);

void AppendArray(const Array& a, size_t max_elements, std::string* out) {
  absl::StrAppend(out, "[", std::string(ValueTypeName(a.element_type)), " x", a.elements.size());
  if (a.elements.empty()) {
    out->push_back(']');
    return;
  }
  out->append(": ");
  size_t shown = std::min(a.elements.size(), max_elements);
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) out->append(", ");
    Append(a.elements[i], max_elements, out);
  }
  if (shown < a.elements.size()) out->append(shown > 0 ? ", ..." : "...");
  out->push_back(']');
}

void Append(const Value& v, size_t max_elements, std::string* out) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          AppendQuoted(x, out);
        } else if constexpr (std::is_same_v<T, Array>) {
          AppendArray(x, max_elements, out);
        } else if constexpr (std::is_same_v<T, bool>) {
          out->append(x ? "true" : "false");
        } else if constexpr (std::is_floating_point_v<T>) {
          AppendFloat(x, out);
        } else {
          // Widen so int8/uint8 print as numbers, not characters.
          if constexpr (std::is_signed_v<T>) {
            absl::StrAppend(out, static_cast<int64_t>(x));
          } else {
            absl::StrAppend(out, static_cast<uint64_t>(x));
          }
        }
      },
      v.storage());
}

}  // namespace

std::string_view ValueTypeName(ValueType t) {
  switch (t) {
    case ValueType::kUint8: return "UINT8";
    case ValueType::kInt8: return "INT8";
    case ValueType::kUint16: return "UINT16";
    case ValueType::kInt16: return "INT16";
    case ValueType::kUint32: return "UINT32";
    case ValueType::kInt32: return "INT32";
    case ValueType::kFloat32: return "FLOAT32";
    case ValueType::kBool: return "BOOL";
    case ValueType::kString: return "STRING";
    case ValueType::kArray: return "ARRAY";
    case ValueType::kUint64: return "UINT64";
    case ValueType::kInt64: return "INT64";
    case ValueType::kFloat64: return "FLOAT64";
  }
  return "INVALID";  // a value cast from an unchecked id
}

Value Value::StrArray(std::vector<std::string> xs) {
  Array a;
  a.element_type = ValueType::kString;
  a.elements.reserve(xs.size());
  for (auto& s : xs) a.elements.push_back(Str(std::move(s)));
  return Arr(std::move(a));
}

Value Value::I32Array(const std::vector<int32_t>& xs) {
  Array a;
  a.element_type = ValueType::kInt32;
  a.elements.reserve(xs.size());
  for (int32_t x : xs) a.elements.push_back(I32(x));
  return Arr(std::move(a));
}

std::optional<int64_t> Value::AsInt() const {
  return std::visit(
      [](const auto& x) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_same_v<T, uint64_t>) {
            if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
          }
          return static_cast<int64_t>(x);
        } else {
          return std::nullopt;
        }
      },
      v_);
}

std::optional<uint64_t> Value::AsUint() const {
  return std::visit(
      [](const auto& x) -> std::optional<uint64_t> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_signed_v<T>) {
            if (x < 0) return std::nullopt;
          }
          return static_cast<uint64_t>(x);
        } else {
          return std::nullopt;
        }
      },
      v_);
}

std::optional<double> Value::AsFloat() const {
  if (const float* f = std::get_if<float>(&v_)) return *f;
  if (const double* d = std::get_if<double>(&v_)) return *d;
  return std::nullopt;
}

std::optional<bool> Value::AsBool() const {
  if (const bool* b = std::get_if<bool>(&v_)) return *b;
  return std::nullopt;
}

std::string Value::DebugString(size_t max_elements) const {
  std::string out;
  Append(*this, max_elements, &out);
  return out;
}

}  // namespace kiln::gguf
