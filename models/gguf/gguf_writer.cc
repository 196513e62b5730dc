// GGUF v3 writer (spec/gguf-format.md §1-§6). The whole layout (metadata
// bytes and every tensor's offset) is computed before any tensor data is
// produced, so producers can run in parallel and their output can be written
// with pwrite at a known offset, in any order.
#include "models/gguf/gguf_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <variant>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status_macros.h"
#include "support/write_file.h"

namespace kiln::gguf {
namespace {

constexpr uint32_t kDefaultAlignment = 32;
constexpr uint32_t kVersion = 3;
constexpr size_t kMaxDims = 4;
constexpr size_t kMaxTensorName = 63;
constexpr int kMaxArrayDepth = 8;  // what the reader accepts
constexpr char kAlignmentKey[] = "general.alignment";
// Bytes of tensor data held in producer buffers at once (a single tensor
// larger than this still runs, alone). Keeps the 8B model's write at a few
// hundred MB of RAM while two producers stay busy.
constexpr uint64_t kWindowBytes = uint64_t{512} << 20;
// Largest single pwrite; Linux transfers at most ~2 GiB per call anyway.
constexpr uint64_t kMaxWriteChunk = uint64_t{1} << 30;

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }

// Little-endian encoder into a growing byte string.
class Encoder {
 public:
  template <typename T>
  void PutUint(T v) {
    for (size_t i = 0; i < sizeof(T); ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
  }
  void PutString(std::string_view s) {
    PutUint<uint64_t>(s.size());
    out_.append(s);
  }
  void PadTo(uint64_t size) { out_.resize(size, '\0'); }
  std::string& bytes() { return out_; }

  absl::Status PutValue(const std::string& key, const Value& v, int depth) {
    switch (v.type()) {
      case ValueType::kUint8: PutUint(std::get<uint8_t>(v.storage())); break;
      case ValueType::kInt8: PutUint(static_cast<uint8_t>(std::get<int8_t>(v.storage()))); break;
      case ValueType::kUint16: PutUint(std::get<uint16_t>(v.storage())); break;
      case ValueType::kInt16: PutUint(static_cast<uint16_t>(std::get<int16_t>(v.storage()))); break;
      case ValueType::kUint32: PutUint(std::get<uint32_t>(v.storage())); break;
      case ValueType::kInt32: PutUint(static_cast<uint32_t>(std::get<int32_t>(v.storage()))); break;
      case ValueType::kFloat32:
        PutUint(std::bit_cast<uint32_t>(std::get<float>(v.storage())));
        break;
      case ValueType::kBool: PutUint<uint8_t>(std::get<bool>(v.storage()) ? 1 : 0); break;
      case ValueType::kString: PutString(std::get<std::string>(v.storage())); break;
      case ValueType::kUint64: PutUint(std::get<uint64_t>(v.storage())); break;
      case ValueType::kInt64: PutUint(static_cast<uint64_t>(std::get<int64_t>(v.storage()))); break;
      case ValueType::kFloat64:
        PutUint(std::bit_cast<uint64_t>(std::get<double>(v.storage())));
        break;
      case ValueType::kArray: return PutArray(key, std::get<Array>(v.storage()), depth);
    }
    return absl::OkStatus();
  }

 private:
  absl::Status PutArray(const std::string& key, const Array& a, int depth) {
    if (depth > kMaxArrayDepth) {
      return absl::InvalidArgumentError(
          absl::StrCat("key '", key, "': arrays nested more than ", kMaxArrayDepth, " deep"));
    }
    PutUint(static_cast<uint32_t>(a.element_type));
    PutUint<uint64_t>(a.elements.size());
    for (size_t i = 0; i < a.elements.size(); ++i) {
      const Value& e = a.elements[i];
      if (e.type() != a.element_type) {
        return absl::InvalidArgumentError(
            absl::StrCat("key '", key, "': array element ", i, " has type ",
                         std::string(ValueTypeName(e.type())), " but the array's element type is ",
                         std::string(ValueTypeName(a.element_type))));
      }
      RETURN_IF_ERROR(PutValue(key, e, depth + 1));
    }
    return absl::OkStatus();
  }

  std::string out_;
};

absl::Status WithTensor(const absl::Status& s, const std::string& name) {
  return absl::Status(s.code(), absl::StrCat("tensor '", name, "': ", s.message()));
}

absl::Status PwriteAll(int fd, const uint8_t* p, uint64_t n, uint64_t offset,
                       const std::string& path) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, std::min(n, kMaxWriteChunk), static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = w < 0 ? errno : EIO;
      return absl::ErrnoToStatus(e, absl::StrCat("write to '", path, "' at byte offset ", offset));
    }
    p += w;
    n -= static_cast<uint64_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return absl::OkStatus();
}

// One worker's tensor buffer, kept across tensors: fresh multi-MB
// allocations cost a page fault per 4 KiB and dominated write time.
class ReusedBuffer {
 public:
  // Null when the allocation fails (no exceptions in kiln).
  uint8_t* Get(uint64_t n) {
    if (n > capacity_) {
      data_.reset();  // release first so old and new never coexist
      capacity_ = 0;
      data_.reset(new (std::nothrow) uint8_t[n]);
      if (data_ == nullptr) return nullptr;
      capacity_ = n;
    }
    return data_.get();
  }
  // Gives back buffers larger than the window (one-off huge tensors such as
  // the embedding), so idle workers never pin more than a window each.
  void Trim() {
    if (capacity_ > kWindowBytes) {
      data_.reset();
      capacity_ = 0;
    }
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  uint64_t capacity_ = 0;
};

}  // namespace

struct GgufWriter::Layout {
  std::string head;               // header, KVs, tensor infos, padding: [0, data_offset)
  std::vector<uint64_t> offsets;  // absolute file offset of each tensor
  std::vector<uint64_t> nbytes;   // data bytes of each tensor (padding excluded)
  uint64_t total = 0;             // file size
};

void GgufWriter::AddKey(std::string key, Value value) {
  keys_.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::AddTensor(std::string name, std::vector<int64_t> dims, GgmlType type,
                           Producer producer) {
  tensors_.push_back({std::move(name), std::move(dims), type, std::move(producer)});
}

void GgufWriter::AddTensorBytes(std::string name, std::vector<int64_t> dims, GgmlType type,
                                std::vector<uint8_t> bytes) {
  // shared_ptr: std::function must be copyable, the bytes need not be copied.
  auto data = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  AddTensor(std::move(name), std::move(dims), type,
            [data](absl::Span<uint8_t> out) -> absl::Status {
              if (data->size() != out.size()) {
                return absl::InvalidArgumentError(absl::StrCat("AddTensorBytes got ", data->size(),
                                                               " bytes but the dims and type need ",
                                                               out.size()));
              }
              std::copy(data->begin(), data->end(), out.begin());
              return absl::OkStatus();
            });
}

absl::StatusOr<GgufWriter::Layout> GgufWriter::Plan() const {
  if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("GGUF alignment ", alignment_, " is not a non-zero power of two"));
  }
  absl::flat_hash_set<std::string_view> seen;
  bool has_alignment_key = false;
  for (const auto& [key, value] : keys_) {
    if (key.empty()) return absl::InvalidArgumentError("empty metadata key");
    if (!seen.insert(key).second) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate metadata key '", key, "'"));
    }
    if (key == kAlignmentKey) {
      has_alignment_key = true;
      const uint32_t* a = std::get_if<uint32_t>(&value.storage());
      if (a == nullptr || *a != alignment_) {
        return absl::InvalidArgumentError(
            absl::StrCat("key 'general.alignment' = ", value.DebugString(),
                         " disagrees with the writer's alignment (UINT32 ", alignment_, ")"));
      }
    }
  }
  bool add_alignment_key = !has_alignment_key && alignment_ != kDefaultAlignment;

  Layout layout;
  Encoder enc;
  enc.bytes().append("GGUF");
  enc.PutUint(kVersion);
  enc.PutUint<uint64_t>(tensors_.size());
  enc.PutUint<uint64_t>(keys_.size() + (add_alignment_key ? 1 : 0));
  for (const auto& [key, value] : keys_) {
    enc.PutString(key);
    enc.PutUint(static_cast<uint32_t>(value.type()));
    RETURN_IF_ERROR(enc.PutValue(key, value, 1));
  }
  if (add_alignment_key) {
    enc.PutString(kAlignmentKey);
    enc.PutUint(static_cast<uint32_t>(ValueType::kUint32));
    enc.PutUint(alignment_);
  }

  seen.clear();
  uint64_t rel = 0;  // offset relative to data_offset; tensors packed in order
  std::vector<uint64_t> rel_offsets;
  rel_offsets.reserve(tensors_.size());
  layout.nbytes.reserve(tensors_.size());
  for (const PendingTensor& t : tensors_) {
    if (t.name.empty()) return absl::InvalidArgumentError("empty tensor name");
    // llama.cpp rejects names of GGML_MAX_NAME (64) bytes or more (spec §5);
    // refuse to write files it cannot read.
    if (t.name.size() > kMaxTensorName) {
      return absl::InvalidArgumentError(absl::StrCat("tensor name '", t.name, "' is ",
                                                     t.name.size(), " bytes, at most ",
                                                     kMaxTensorName, " are allowed"));
    }
    if (!seen.insert(t.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate tensor name '", t.name, "'"));
    }
    const GgmlTypeInfo& info = TypeInfo(t.type);
    std::string dims = absl::StrJoin(t.dims, ", ");
    if (t.dims.empty() || t.dims.size() > kMaxDims) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", t.name, "' has ", t.dims.size(),
                                                     " dims [", dims, "], must be 1..4"));
    }
    for (int64_t d : t.dims) {
      if (d < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("tensor '", t.name, "' has a negative dim in [", dims, "]"));
      }
    }
    if (t.dims[0] % info.block_elems != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", t.name, "': ne[0] = ", t.dims[0], " is not a multiple of the ",
                       std::string(info.name), " block size ", info.block_elems));
    }
    int64_t bytes = t.dims[0] / info.block_elems;
    bool overflow = __builtin_mul_overflow(bytes, int64_t{info.block_bytes}, &bytes);
    for (size_t j = 1; j < t.dims.size(); ++j) {
      overflow |= __builtin_mul_overflow(bytes, t.dims[j], &bytes);
    }
    // Keep every offset far from uint64 wrap-around as well.
    if (overflow || static_cast<uint64_t>(bytes) > (uint64_t{1} << 62) - rel) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", t.name, "': byte size of dims [", dims, "] overflows"));
    }
    enc.PutString(t.name);
    enc.PutUint(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) enc.PutUint(static_cast<uint64_t>(d));
    enc.PutUint(static_cast<uint32_t>(t.type));
    enc.PutUint(rel);
    rel_offsets.push_back(rel);
    layout.nbytes.push_back(static_cast<uint64_t>(bytes));
    rel = AlignUp(rel + static_cast<uint64_t>(bytes), alignment_);
  }
  // spec §1: padding before the data section only when there are tensors.
  uint64_t data_offset = enc.bytes().size();
  if (!tensors_.empty()) data_offset = AlignUp(data_offset, alignment_);
  enc.PadTo(data_offset);
  layout.head = std::move(enc.bytes());
  layout.offsets.reserve(rel_offsets.size());
  for (uint64_t r : rel_offsets) layout.offsets.push_back(data_offset + r);
  layout.total = data_offset + rel;
  return layout;
}

absl::StatusOr<std::vector<uint8_t>> GgufWriter::WriteToMemory() const {
  ASSIGN_OR_RETURN(Layout layout, Plan());
  std::vector<uint8_t> out(layout.total, 0);
  std::copy(layout.head.begin(), layout.head.end(), out.begin());
  for (size_t i = 0; i < tensors_.size(); ++i) {
    absl::Span<uint8_t> span(out.data() + layout.offsets[i], layout.nbytes[i]);
    absl::Status s = tensors_[i].producer(span);
    if (!s.ok()) return WithTensor(s, tensors_[i].name);
  }
  return out;
}

absl::Status GgufWriter::Write(const std::string& path, int threads) const {
  ASSIGN_OR_RETURN(Layout layout, Plan());
  ASSIGN_OR_RETURN(TempFile temp, CreateTempBeside(path));
  const int fd = temp.fd;
  const std::string& tmp = temp.path;

  // Reserve the space up front so a full disk fails before minutes of
  // producing data; file systems without fallocate just skip it. ftruncate
  // sets the exact final size even where the last tensor holds no bytes.
  absl::Status status = absl::OkStatus();
  if (::fallocate(fd, 0, 0, static_cast<off_t>(layout.total)) != 0 && errno == ENOSPC) {
    status = absl::ResourceExhaustedError(
        absl::StrCat("no space for ", layout.total, " bytes in '", tmp, "'"));
  } else if (::ftruncate(fd, static_cast<off_t>(layout.total)) != 0) {
    status = absl::ErrnoToStatus(errno, absl::StrCat("cannot size '", tmp, "'"));
  }
  if (status.ok()) {
    status = PwriteAll(fd, reinterpret_cast<const uint8_t*>(layout.head.data()), layout.head.size(),
                       0, tmp);
  }

  // Workers take tensors in order; each produces one tensor into a private
  // zeroed buffer (data plus its padding) and pwrites it. `in_flight` bounds
  // the buffered bytes. After an error no new tensor starts, and the error of
  // the lowest-index failing tensor is reported.
  std::mutex mu;
  std::condition_variable cv;
  size_t next = 0;
  uint64_t in_flight = 0;
  size_t error_index = std::numeric_limits<size_t>::max();
  absl::Status error = status;
  if (!status.ok()) error_index = 0;
  auto worker = [&] {
    ReusedBuffer buffer;
    for (;;) {
      size_t i;
      uint64_t padded;
      {
        std::unique_lock<std::mutex> lock(mu);
        if (!error.ok() || next >= tensors_.size()) return;
        i = next++;
        uint64_t end = i + 1 < tensors_.size() ? layout.offsets[i + 1] : layout.total;
        padded = end - layout.offsets[i];
        cv.wait(lock, [&] {
          return !error.ok() || in_flight == 0 || in_flight + padded <= kWindowBytes;
        });
        if (!error.ok()) return;
        in_flight += padded;
      }
      uint8_t* buf = buffer.Get(padded);
      absl::Status s;
      if (buf == nullptr) {
        s = absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", padded, " bytes"));
      } else {
        // Zeroed so padding, and any byte a producer skips, is deterministic.
        std::memset(buf, 0, padded);
        s = tensors_[i].producer(absl::Span<uint8_t>(buf, layout.nbytes[i]));
      }
      if (!s.ok()) {
        s = WithTensor(s, tensors_[i].name);
      } else {
        s = PwriteAll(fd, buf, padded, layout.offsets[i], tmp);
      }
      buffer.Trim();
      std::lock_guard<std::mutex> lock(mu);
      in_flight -= padded;
      if (!s.ok() && i < error_index) {
        error_index = i;
        error = s;
      }
      cv.notify_all();
    }
  };
  size_t n_threads =
      std::min<size_t>(threads < 1 ? 1 : threads, std::max<size_t>(tensors_.size(), 1));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n_threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  status = error;

  if (::close(fd) != 0 && status.ok()) {
    status = absl::ErrnoToStatus(errno, absl::StrCat("cannot close '", tmp, "'"));
  }
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = absl::ErrnoToStatus(errno, absl::StrCat("cannot rename '", tmp, "' to '", path, "'"));
  }
  if (!status.ok()) ::unlink(tmp.c_str());
  return status;
}

}  // namespace kiln::gguf
