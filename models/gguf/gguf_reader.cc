// GGUF reader (spec/gguf-format.md §8). The file is untrusted: every length
// and count is checked against the bytes that remain before anything is
// allocated, and every tensor's byte range is checked against the file.
// Claims that run past the end of the file are DataLoss (a truncated file
// cannot be told apart from an absurd length); malformed content is
// InvalidArgument. Messages name the byte offset and the key or tensor.
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <variant>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "models/gguf/gguf_file.h"
#include "support/status_macros.h"

namespace kiln::gguf {
namespace {

constexpr uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr uint32_t kDefaultAlignment = 32;  // GGUF_DEFAULT_ALIGNMENT, spec §4
constexpr uint32_t kMaxDims = 4;            // GGML_MAX_DIMS, spec §5
// Arrays of arrays are legal in the prose spec; bound the recursion so a
// hostile file cannot blow the stack.
constexpr int kMaxArrayDepth = 8;
// Up-front reservations are capped; past them vectors grow as records are
// actually read, so memory tracks parsed bytes, not claimed counts.
constexpr uint64_t kMaxArrayReserve = uint64_t{1} << 18;   // > any vocabulary
constexpr uint64_t kMaxRecordReserve = uint64_t{1} << 12;  // > any model's tensors
// Smallest possible records, used to reject absurd counts up front:
// KV = key length + 1 key byte + type + 1 payload byte;
// tensor = name length + 1 name byte + n_dims + one dim + type + offset.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;

bool IsValidValueType(uint32_t id) { return id <= static_cast<uint32_t>(ValueType::kFloat64); }

// Smallest encoding of one element of `t` (an array element of type ARRAY
// is at least its element type and count).
uint64_t MinEncodedBytes(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool: return 1;
    case ValueType::kUint16:
    case ValueType::kInt16: return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32: return 4;
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64:
    case ValueType::kString: return 8;
    case ValueType::kArray: return 12;
  }
  return 1;
}

// Names of ggml type ids that are valid in ggml but that kiln cannot size
// (spec §5 table), so the error can say what the file holds.
std::string_view KnownUnsupportedTypeName(uint32_t id) {
  switch (id) {
    case 16: return "IQ2_XXS";
    case 17: return "IQ2_XS";
    case 18: return "IQ3_XXS";
    case 19: return "IQ1_S";
    case 20: return "IQ4_NL";
    case 21: return "IQ3_S";
    case 22: return "IQ2_S";
    case 23: return "IQ4_XS";
    case 29: return "IQ1_M";
    case 34: return "TQ1_0";
    case 35: return "TQ2_0";
    case 39: return "MXFP4";
    case 40: return "NVFP4";
    case 41: return "Q1_0";
    case 42: return "Q2_0";
  }
  return "";
}

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }

}  // namespace

class GgufParser {
 public:
  GgufParser(absl::Span<const uint8_t> bytes, GgufFile* file) : bytes_(bytes), file_(file) {}

  absl::Status Run() {
    RETURN_IF_ERROR(ParseHeader());
    RETURN_IF_ERROR(ParseMetadata());
    RETURN_IF_ERROR(ParseAlignment());
    RETURN_IF_ERROR(ParseTensorInfos());
    return PlaceTensors();
  }

 private:
  uint64_t size() const { return bytes_.size(); }
  uint64_t remaining() const { return size() - pos_; }

  // "<file>: byte offset N (key 'k'): " — the prefix of every diagnostic.
  std::string Where(uint64_t at) const {
    if (context_.empty()) return absl::StrCat(file_->name_, ": byte offset ", at, ": ");
    return absl::StrCat(file_->name_, ": byte offset ", at, " (", context_, "): ");
  }
  absl::Status Invalid(uint64_t at, absl::string_view msg) const {
    return absl::InvalidArgumentError(absl::StrCat(Where(at), msg));
  }
  absl::Status Truncated(uint64_t at, absl::string_view msg) const {
    return absl::DataLossError(
        absl::StrCat(Where(at), msg, " (file truncated or corrupt; file size ", size(), ")"));
  }

  // Checks that `n` bytes for `what` remain at the cursor.
  absl::Status Need(uint64_t n, absl::string_view what) const {
    if (n <= remaining()) return absl::OkStatus();
    return Truncated(
        pos_, absl::StrCat("need ", n, " bytes for ", what, ", only ", remaining(), " remain"));
  }

  // Little-endian unsigned integer of sizeof(T) bytes, independent of the
  // host's byte order.
  template <typename T>
  absl::StatusOr<T> ReadUint(absl::string_view what) {
    RETURN_IF_ERROR(Need(sizeof(T), what));
    return LoadUint<T>();
  }
  // The caller has checked that sizeof(T) bytes remain.
  template <typename T>
  T LoadUint() {
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(bytes_[pos_ + i]) << (8 * i);
    pos_ += sizeof(T);
    return v;
  }

  absl::StatusOr<std::string> ReadString(absl::string_view what) {
    uint64_t at = pos_;
    // Checked inline so the hot path (every token string) builds no message.
    if (remaining() < 8) RETURN_IF_ERROR(Need(8, absl::StrCat(what, " length")));
    uint64_t len = LoadUint<uint64_t>();
    if (len > remaining()) {
      return Truncated(at, absl::StrCat(what, " length ", len, " exceeds the ", remaining(),
                                        " bytes left in the file"));
    }
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
    pos_ += len;
    return s;
  }

  absl::StatusOr<ValueType> ReadValueType(absl::string_view what) {
    uint64_t at = pos_;
    ASSIGN_OR_RETURN(uint32_t id, ReadUint<uint32_t>(what));
    if (!IsValidValueType(id)) return Invalid(at, absl::StrCat("unknown ", what, " id ", id));
    return static_cast<ValueType>(id);
  }

  absl::StatusOr<Value> ReadValue(ValueType type, int depth) {
    switch (type) {
      case ValueType::kUint8: {
        ASSIGN_OR_RETURN(uint8_t v, ReadUint<uint8_t>("UINT8 value"));
        return Value::U8(v);
      }
      case ValueType::kInt8: {
        ASSIGN_OR_RETURN(uint8_t v, ReadUint<uint8_t>("INT8 value"));
        return Value::I8(static_cast<int8_t>(v));
      }
      case ValueType::kUint16: {
        ASSIGN_OR_RETURN(uint16_t v, ReadUint<uint16_t>("UINT16 value"));
        return Value::U16(v);
      }
      case ValueType::kInt16: {
        ASSIGN_OR_RETURN(uint16_t v, ReadUint<uint16_t>("INT16 value"));
        return Value::I16(static_cast<int16_t>(v));
      }
      case ValueType::kUint32: {
        ASSIGN_OR_RETURN(uint32_t v, ReadUint<uint32_t>("UINT32 value"));
        return Value::U32(v);
      }
      case ValueType::kInt32: {
        ASSIGN_OR_RETURN(uint32_t v, ReadUint<uint32_t>("INT32 value"));
        return Value::I32(static_cast<int32_t>(v));
      }
      case ValueType::kFloat32: {
        ASSIGN_OR_RETURN(uint32_t v, ReadUint<uint32_t>("FLOAT32 value"));
        return Value::F32(std::bit_cast<float>(v));
      }
      case ValueType::kBool: {
        // llama.cpp reads any non-zero byte as true (spec §2); so do we.
        ASSIGN_OR_RETURN(uint8_t v, ReadUint<uint8_t>("BOOL value"));
        return Value::Bool(v != 0);
      }
      case ValueType::kString: {
        ASSIGN_OR_RETURN(std::string v, ReadString("STRING value"));
        return Value::Str(std::move(v));
      }
      case ValueType::kArray: {
        ASSIGN_OR_RETURN(Array v, ReadArray(depth));
        return Value::Arr(std::move(v));
      }
      case ValueType::kUint64: {
        ASSIGN_OR_RETURN(uint64_t v, ReadUint<uint64_t>("UINT64 value"));
        return Value::U64(v);
      }
      case ValueType::kInt64: {
        ASSIGN_OR_RETURN(uint64_t v, ReadUint<uint64_t>("INT64 value"));
        return Value::I64(static_cast<int64_t>(v));
      }
      case ValueType::kFloat64: {
        ASSIGN_OR_RETURN(uint64_t v, ReadUint<uint64_t>("FLOAT64 value"));
        return Value::F64(std::bit_cast<double>(v));
      }
    }
    return Invalid(pos_, "unknown value type");  // unreachable: ids are checked
  }

  // Element type, count, then the elements back to back (spec §4). `depth`
  // is the nesting level of this array (1 for a top-level array).
  absl::StatusOr<Array> ReadArray(int depth) {
    if (depth > kMaxArrayDepth) {
      return Invalid(pos_, absl::StrCat("arrays nested more than ", kMaxArrayDepth, " deep"));
    }
    Array a;
    ASSIGN_OR_RETURN(a.element_type, ReadValueType("array element type"));
    uint64_t at = pos_;
    ASSIGN_OR_RETURN(uint64_t count, ReadUint<uint64_t>("array count"));
    // Checked before anything is allocated for the elements.
    uint64_t min_bytes = MinEncodedBytes(a.element_type);
    if (count > remaining() / min_bytes) {
      return Truncated(
          at, absl::StrCat("array of ", count, " ", std::string(ValueTypeName(a.element_type)),
                           " elements needs at least ", min_bytes, " bytes each, only ",
                           remaining(), " bytes remain"));
    }
    // A Value is ~48 bytes per (possibly 1-byte) element: reserve only a
    // bounded head start, so memory grows with the elements actually read.
    a.elements.reserve(std::min<uint64_t>(count, kMaxArrayReserve));
    for (uint64_t i = 0; i < count; ++i) {
      ASSIGN_OR_RETURN(Value v, ReadValue(a.element_type, depth + 1));
      a.elements.push_back(std::move(v));
    }
    return a;
  }

  absl::Status ParseHeader() {
    if (size() < sizeof(kMagic)) {
      return Truncated(0,
                       absl::StrCat("file has ", size(), " bytes, too short for the GGUF magic"));
    }
    if (std::memcmp(bytes_.data(), kMagic, sizeof(kMagic)) != 0) {
      if (std::memcmp(bytes_.data(), "FUGG", 4) == 0) {
        return Invalid(0,
                       "magic reads \"FUGG\": a byte-swapped (big-endian) GGUF file; only "
                       "little-endian GGUF is supported");
      }
      return Invalid(0, absl::StrFormat("bad magic %02x %02x %02x %02x, expected \"GGUF\" "
                                        "(47 47 55 46)",
                                        bytes_[0], bytes_[1], bytes_[2], bytes_[3]));
    }
    pos_ = sizeof(kMagic);
    ASSIGN_OR_RETURN(uint32_t version, ReadUint<uint32_t>("version"));
    // spec §2: a big-endian file's small version reads with its low 16 bits zero.
    if (version != 0 && (version & 0xFFFF) == 0) {
      return Invalid(4, absl::StrFormat("version field reads 0x%08x (version %u byte-swapped): a "
                                        "big-endian GGUF file; only little-endian GGUF is "
                                        "supported",
                                        version, __builtin_bswap32(version)));
    }
    if (version < 2 || version > 3) {
      return Invalid(
          4, absl::StrCat("unsupported GGUF version ", version,
                          version == 1 ? " (v1 used 32-bit counts; re-convert the model)" : "",
                          "; kiln reads versions 2 and 3"));
    }
    file_->version_ = version;
    uint64_t at = pos_;
    ASSIGN_OR_RETURN(n_tensors_, ReadUint<uint64_t>("n_tensors"));
    if (n_tensors_ > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Invalid(
          at, absl::StrCat("n_tensors = ", static_cast<int64_t>(n_tensors_), " is negative"));
    }
    at = pos_;
    ASSIGN_OR_RETURN(n_kv_, ReadUint<uint64_t>("n_kv"));
    if (n_kv_ > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Invalid(at, absl::StrCat("n_kv = ", static_cast<int64_t>(n_kv_), " is negative"));
    }
    // Both record kinds need a minimum number of bytes each; reject counts
    // the file cannot possibly hold before reserving anything for them.
    uint64_t left = remaining();
    if (n_kv_ > left / kMinKvBytes) {
      return Truncated(at, absl::StrCat("n_kv = ", n_kv_, " needs at least ", kMinKvBytes,
                                        " bytes per key, only ", left, " bytes follow the header"));
    }
    left -= n_kv_ * kMinKvBytes;
    if (n_tensors_ > left / kMinTensorInfoBytes) {
      return Truncated(8, absl::StrCat("n_tensors = ", n_tensors_, " needs at least ",
                                       kMinTensorInfoBytes, " bytes per tensor info, only ", left,
                                       " bytes are left after the minimal ", n_kv_, " keys"));
    }
    return absl::OkStatus();
  }

  absl::Status ParseMetadata() {
    // Bounded head start: records cost more in memory than their minimum
    // size in the file, so grow with the records actually read.
    file_->metadata_.reserve(std::min<uint64_t>(n_kv_, kMaxRecordReserve));
    key_offsets_.reserve(std::min<uint64_t>(n_kv_, kMaxRecordReserve));
    for (uint64_t i = 0; i < n_kv_; ++i) {
      uint64_t at = pos_;
      context_ = absl::StrCat("key #", i);
      ASSIGN_OR_RETURN(std::string key, ReadString("key"));
      if (key.empty()) return Invalid(at, "empty key");
      context_ = absl::StrCat("key '", absl::CHexEscape(key), "'");
      auto [it, inserted] = file_->key_index_.try_emplace(key, file_->metadata_.size());
      if (!inserted) {
        return Invalid(at, absl::StrCat("duplicate key (first defined at byte offset ",
                                        key_offsets_[it->second], ")"));
      }
      ASSIGN_OR_RETURN(ValueType type, ReadValueType("value type"));
      ASSIGN_OR_RETURN(Value value, ReadValue(type, 1));
      file_->metadata_.emplace_back(std::move(key), std::move(value));
      key_offsets_.push_back(at);
    }
    context_.clear();
    return absl::OkStatus();
  }

  // spec §4: `general.alignment` (UINT32, non-zero power of two) or 32.
  absl::Status ParseAlignment() {
    auto it = file_->key_index_.find("general.alignment");
    if (it == file_->key_index_.end()) {
      file_->alignment_ = kDefaultAlignment;
      return absl::OkStatus();
    }
    const Value& v = file_->metadata_[it->second].second;
    uint64_t at = key_offsets_[it->second];
    context_ = "key 'general.alignment'";
    if (v.type() != ValueType::kUint32) {
      return Invalid(at, absl::StrCat("general.alignment has type ",
                                      std::string(ValueTypeName(v.type())), ", expected UINT32"));
    }
    uint32_t a = std::get<uint32_t>(v.storage());
    if (a == 0 || (a & (a - 1)) != 0) {
      return Invalid(at,
                     absl::StrCat("general.alignment = ", a, " is not a non-zero power of two"));
    }
    file_->alignment_ = a;
    context_.clear();
    return absl::OkStatus();
  }

  absl::Status ParseTensorInfos() {
    file_->tensors_.reserve(std::min<uint64_t>(n_tensors_, kMaxRecordReserve));
    info_offsets_.reserve(std::min<uint64_t>(n_tensors_, kMaxRecordReserve));
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      uint64_t at = pos_;
      context_ = absl::StrCat("tensor #", i);
      ASSIGN_OR_RETURN(std::string name, ReadString("tensor name"));
      if (name.empty()) return Invalid(at, "empty tensor name");
      context_ = absl::StrCat("tensor '", absl::CHexEscape(name), "'");
      auto [it, inserted] = file_->tensor_index_.try_emplace(name, file_->tensors_.size());
      if (!inserted) {
        return Invalid(at, absl::StrCat("duplicate tensor name (first defined at byte offset ",
                                        info_offsets_[it->second], ")"));
      }
      TensorInfo t;
      t.name = std::move(name);
      RETURN_IF_ERROR(ReadShapeAndType(t));
      uint64_t off_at = pos_;
      ASSIGN_OR_RETURN(t.offset, ReadUint<uint64_t>("tensor data offset"));
      if (t.offset % file_->alignment_ != 0) {
        return Invalid(
            off_at, absl::StrCat("data offset ", t.offset, " is not a multiple of the alignment ",
                                 file_->alignment_));
      }
      file_->tensors_.push_back(std::move(t));
      info_offsets_.push_back(at);
    }
    context_.clear();
    return absl::OkStatus();
  }

  // n_dims, ne[], type; computes nbytes with overflow checks (spec §5, §6).
  absl::Status ReadShapeAndType(TensorInfo& t) {
    uint64_t at = pos_;
    ASSIGN_OR_RETURN(uint32_t n_dims, ReadUint<uint32_t>("n_dims"));
    if (n_dims == 0 || n_dims > kMaxDims) {
      return Invalid(at, absl::StrCat("n_dims = ", n_dims, ", must be 1..", kMaxDims));
    }
    t.dims.resize(n_dims);
    int64_t elements = 1;
    bool elements_overflow = false;
    for (uint32_t j = 0; j < n_dims; ++j) {
      at = pos_;
      ASSIGN_OR_RETURN(uint64_t raw, ReadUint<uint64_t>("tensor dimension"));
      int64_t d = static_cast<int64_t>(raw);
      if (d < 0) return Invalid(at, absl::StrCat("ne[", j, "] = ", d, " is negative"));
      t.dims[j] = d;
      elements_overflow |= __builtin_mul_overflow(elements, d, &elements);
    }
    at = pos_;
    ASSIGN_OR_RETURN(uint32_t type_id, ReadUint<uint32_t>("tensor type"));
    std::optional<GgmlTypeInfo> info = LookupGgmlType(type_id);
    if (!info.has_value()) {
      std::string_view known = KnownUnsupportedTypeName(type_id);
      return Invalid(at, known.empty() ? absl::StrCat("unknown ggml type id ", type_id)
                                       : absl::StrCat("ggml type ", std::string(known), " (id ",
                                                      type_id, ") is not supported by kiln"));
    }
    t.type = info->type;
    if (elements_overflow) {
      return Invalid(at, absl::StrCat("element count of dims [", absl::StrJoin(t.dims, ", "),
                                      "] overflows int64"));
    }
    if (t.dims[0] % info->block_elems != 0) {
      return Invalid(at, absl::StrCat("ne[0] = ", t.dims[0], " is not a multiple of the ",
                                      std::string(info->name), " block size ", info->block_elems));
    }
    // bytes = (ne0 / block) * block_bytes * ne1 * ne2 * ne3, all in int64.
    int64_t bytes = t.dims[0] / info->block_elems;
    bool overflow = __builtin_mul_overflow(bytes, int64_t{info->block_bytes}, &bytes);
    for (uint32_t j = 1; j < n_dims; ++j)
      overflow |= __builtin_mul_overflow(bytes, t.dims[j], &bytes);
    if (overflow) {
      return Invalid(at, absl::StrCat("byte size of ", std::string(info->name), " dims [",
                                      absl::StrJoin(t.dims, ", "), "] overflows int64"));
    }
    t.nbytes = static_cast<uint64_t>(bytes);
    return absl::OkStatus();
  }

  // spec §6: data_offset, then each tensor's absolute range, which must lie
  // in the file (with its trailing padding) and not overlap another.
  absl::Status PlaceTensors() {
    const uint64_t align = file_->alignment_;
    const uint64_t end_of_infos = pos_;
    if (n_tensors_ == 0) {
      file_->data_offset_ = end_of_infos;
      return absl::OkStatus();
    }
    const uint64_t data_offset = AlignUp(end_of_infos, align);
    if (data_offset > size()) {
      return Truncated(end_of_infos,
                       absl::StrCat("the data section starts at byte offset ", data_offset,
                                    " (tensor infos end at ", end_of_infos, ", aligned to ", align,
                                    ") but the file ends before it"));
    }
    file_->data_offset_ = data_offset;
    struct Range {
      uint64_t begin, end;
      size_t index;
    };
    std::vector<Range> ranges;
    ranges.reserve(file_->tensors_.size());
    for (size_t i = 0; i < file_->tensors_.size(); ++i) {
      TensorInfo& t = file_->tensors_[i];
      context_ = absl::StrCat("tensor '", absl::CHexEscape(t.name), "'");
      uint64_t room = size() - data_offset;
      if (t.offset > room || t.nbytes > room - t.offset) {
        return Truncated(info_offsets_[i],
                         absl::StrCat(t.nbytes, " bytes of data at data_offset ", data_offset,
                                      " + offset ", t.offset, " extend past the end of the file"));
      }
      t.file_offset = data_offset + t.offset;
      uint64_t end = t.file_offset + t.nbytes;
      // Writers pad after every tensor, the last included (spec §6); a
      // file cut inside that padding is truncated too.
      if (AlignUp(end, align) > size()) {
        return Truncated(info_offsets_[i],
                         absl::StrCat("data ends at byte offset ", end, " but its padding to ",
                                      align, " bytes runs past the end of the file"));
      }
      if (t.nbytes > 0) ranges.push_back({t.file_offset, end, i});
    }
    context_.clear();
    std::sort(ranges.begin(), ranges.end(),
              [](const Range& a, const Range& b) { return a.begin < b.begin; });
    for (size_t k = 1; k < ranges.size(); ++k) {
      const Range& p = ranges[k - 1];
      const Range& r = ranges[k];
      if (r.begin < p.end) {
        std::string a = absl::CHexEscape(file_->tensors_[p.index].name);
        std::string b = absl::CHexEscape(file_->tensors_[r.index].name);
        return Invalid(r.begin,
                       absl::StrCat("tensors '", a, "' (bytes ", p.begin, "..", p.end, ") and '", b,
                                    "' (bytes ", r.begin, "..", r.end, ") overlap"));
      }
    }
    return absl::OkStatus();
  }

  absl::Span<const uint8_t> bytes_;
  GgufFile* file_;
  uint64_t pos_ = 0;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
  std::vector<uint64_t> key_offsets_;   // record offset of each metadata entry
  std::vector<uint64_t> info_offsets_;  // record offset of each tensor info
  std::string context_;                 // "key 'x'" / "tensor 'y'" for messages
};

int64_t TensorInfo::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;  // cannot overflow: checked at parse time
  return n;
}

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapping, MappedFile::Open(path));
  ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, Parse(mapping->bytes(), path));
  file->mapping_ = std::move(mapping);
  return file;
}

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::Parse(absl::Span<const uint8_t> bytes,
                                                          std::string name) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->name_ = std::move(name);
  file->bytes_ = bytes;
  GgufParser parser(bytes, file.get());
  RETURN_IF_ERROR(parser.Run());
  return file;
}

const Value* GgufFile::Find(std::string_view key) const {
  auto it = key_index_.find(absl::string_view(key.data(), key.size()));
  return it == key_index_.end() ? nullptr : &metadata_[it->second].second;
}

const TensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(absl::string_view(name.data(), name.size()));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

absl::Span<const uint8_t> GgufFile::TensorData(const TensorInfo& t) const {
  // Ranges of this file's tensors were checked at parse time; guard against
  // a TensorInfo from another file anyway.
  if (t.file_offset > bytes_.size() || t.nbytes > bytes_.size() - t.file_offset) return {};
  return bytes_.subspan(t.file_offset, t.nbytes);
}

}  // namespace kiln::gguf
