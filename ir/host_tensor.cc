// Host tensors of the CPU interpreter.
#include "ir/host_tensor.h"

#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "models/quant/dequantize.h"
#include "models/quant/float16.h"
#include "support/status_macros.h"

namespace kiln::ir {
namespace {

HostTensor::Storage StorageOf(DType dtype) {
  const DTypeInfo& d = GetDTypeInfo(dtype);
  if (d.is_float) return HostTensor::Storage::kFloat;
  if (d.is_int) return HostTensor::Storage::kInt;
  return HostTensor::Storage::kRaw;
}

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int32_t WrapInt(DType dtype, int32_t v) {
  if (dtype == DType::kI8) return static_cast<int8_t>(v);
  if (dtype == DType::kU8) return static_cast<uint8_t>(v);
  return v;
}

}  // namespace

float RoundToFloatType(DType dtype, float v) {
  switch (dtype) {
    case DType::kF16:
      return quant::HalfToFloat(quant::FloatToHalf(v));
    case DType::kBF16:
      return quant::Bf16ToFloat(quant::FloatToBf16(v));
    default:
      return v;
  }
}

HostTensor HostTensor::Filled(DType dtype, std::vector<int64_t> dims, float value) {
  HostTensor t;
  t.dtype_ = dtype;
  t.storage_ = StorageOf(dtype);
  const int64_t n = Product(dims);
  t.dims_ = std::move(dims);
  switch (t.storage_) {
    case Storage::kFloat:
      t.floats_.assign(n, RoundToFloatType(dtype, value));
      break;
    case Storage::kInt:
      t.ints_.assign(n, WrapInt(dtype, static_cast<int32_t>(value)));
      break;
    case Storage::kRaw:
      t.owned_.assign(t.num_rows() * t.row_bytes(), 0);
      break;
  }
  return t;
}

HostTensor HostTensor::Poisoned(DType dtype, std::vector<int64_t> dims) {
  HostTensor t = Filled(dtype, std::move(dims), 0.0f);
  if (t.storage_ == Storage::kFloat)
    t.floats_.assign(t.floats_.size(), std::numeric_limits<float>::quiet_NaN());
  if (t.storage_ == Storage::kInt) t.ints_.assign(t.ints_.size(), std::numeric_limits<int32_t>::min());
  return t;
}

HostTensor HostTensor::FromFloats(DType dtype, std::vector<int64_t> dims, std::vector<float> values) {
  HostTensor t;
  t.dtype_ = dtype;
  t.storage_ = Storage::kFloat;
  t.dims_ = std::move(dims);
  t.floats_ = std::move(values);
  t.RoundToDType();
  return t;
}

HostTensor HostTensor::FromInts(DType dtype, std::vector<int64_t> dims, std::vector<int32_t> values) {
  HostTensor t;
  t.dtype_ = dtype;
  t.storage_ = Storage::kInt;
  t.dims_ = std::move(dims);
  t.ints_ = std::move(values);
  t.RoundToDType();
  return t;
}

HostTensor HostTensor::RawView(DType dtype, std::vector<int64_t> dims, absl::Span<const uint8_t> bytes) {
  HostTensor t;
  t.dtype_ = dtype;
  t.storage_ = Storage::kRaw;
  t.dims_ = std::move(dims);
  t.view_ = bytes;
  return t;
}

HostTensor HostTensor::RawOwned(DType dtype, std::vector<int64_t> dims, std::vector<uint8_t> bytes) {
  HostTensor t;
  t.dtype_ = dtype;
  t.storage_ = Storage::kRaw;
  t.dims_ = std::move(dims);
  t.owned_ = std::move(bytes);
  return t;
}

int64_t HostTensor::num_elements() const { return Product(dims_); }

int64_t HostTensor::num_rows() const {
  const int64_t len = row_length();
  return len == 0 ? 0 : num_elements() / len;
}

uint64_t HostTensor::row_bytes() const {
  const DTypeInfo& d = GetDTypeInfo(dtype_);
  return static_cast<uint64_t>(row_length() / d.block_elems) * d.block_bytes;
}

absl::Status HostTensor::ReadRow(int64_t r, float* out) const {
  const int64_t len = row_length();
  if (r < 0 || r >= num_rows())
    return absl::OutOfRangeError(absl::StrCat("row ", r, " of a tensor with ", num_rows(), " rows"));
  switch (storage_) {
    case Storage::kFloat:
      std::memcpy(out, floats_.data() + r * len, len * sizeof(float));
      return absl::OkStatus();
    case Storage::kInt:
      for (int64_t i = 0; i < len; ++i) out[i] = static_cast<float>(ints_[r * len + i]);
      return absl::OkStatus();
    case Storage::kRaw:
      break;
  }
  const DTypeInfo& d = GetDTypeInfo(dtype_);
  const uint64_t rb = row_bytes();
  absl::Span<const uint8_t> all = bytes();
  if ((r + 1) * rb > all.size())
    return absl::DataLossError(
        absl::StrCat("row ", r, " of a ", ToAbsl(d.name), " tensor lies past its ", all.size(), " bytes"));
  const uint8_t* row = all.data() + r * rb;
  if (d.is_int) {
    for (int64_t i = 0; i < len; ++i) {
      int32_t v = 0;
      if (dtype_ == DType::kI32) std::memcpy(&v, row + 4 * i, 4);
      if (dtype_ == DType::kI8) v = static_cast<int8_t>(row[i]);
      if (dtype_ == DType::kU8) v = row[i];
      out[i] = static_cast<float>(v);
    }
    return absl::OkStatus();
  }
  if (!d.ggml) return absl::UnimplementedError(absl::StrCat("reading ", ToAbsl(d.name), " bytes"));
  return quant::Dequantize(*d.ggml, absl::MakeConstSpan(row, rb), absl::MakeSpan(out, len));
}

absl::StatusOr<std::vector<float>> HostTensor::ToFloats() const {
  if (storage_ == Storage::kFloat) return floats_;
  std::vector<float> out(num_elements());
  const int64_t len = row_length();
  for (int64_t r = 0; r < num_rows(); ++r) RETURN_IF_ERROR(ReadRow(r, out.data() + r * len));
  return out;
}

absl::StatusOr<std::vector<int32_t>> HostTensor::ToInts() const {
  if (storage_ == Storage::kInt) return ints_;
  if (!GetDTypeInfo(dtype_).is_int)
    return absl::InvalidArgumentError(absl::StrCat("reading ", ToAbsl(DTypeName(dtype_)), " as integers"));
  absl::Span<const uint8_t> b = bytes();
  const int64_t n = num_elements();
  const int64_t size = GetDTypeInfo(dtype_).block_bytes;
  if (static_cast<int64_t>(b.size()) < n * size)
    return absl::DataLossError(absl::StrCat("an ", ToAbsl(DTypeName(dtype_)), " tensor of ", n,
                                            " elements has ", b.size(), " bytes"));
  std::vector<int32_t> out(n);
  for (int64_t i = 0; i < n; ++i) {
    if (dtype_ == DType::kI32) std::memcpy(&out[i], b.data() + 4 * i, 4);
    if (dtype_ == DType::kI8) out[i] = static_cast<int8_t>(b[i]);
    if (dtype_ == DType::kU8) out[i] = b[i];
  }
  return out;
}

void HostTensor::RoundToDType() {
  if (storage_ == Storage::kFloat && dtype_ != DType::kF32)
    for (float& v : floats_) v = RoundToFloatType(dtype_, v);
  if (storage_ == Storage::kInt && dtype_ != DType::kI32)
    for (int32_t& v : ints_) v = WrapInt(dtype_, v);
}

}  // namespace kiln::ir
