// A concrete tensor on the host, as the CPU interpreter holds values.
// f32/f16/bf16 are stored as float (f16/bf16 values already rounded to their
// type), i32/i8/u8 as int32, quantized types as raw GGUF bytes (a view of a
// weight, or owned), dequantized row by row on use.
#ifndef KILN_IR_HOST_TENSOR_H_
#define KILN_IR_HOST_TENSOR_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/types.h"

namespace kiln::ir {

class HostTensor {
 public:
  enum class Storage : uint8_t { kFloat, kInt, kRaw };

  HostTensor() = default;
  // Every element `value` (ints take it converted); quantized: zero bytes.
  static HostTensor Filled(DType dtype, std::vector<int64_t> dims, float value);
  // Elements NaN (floats), INT32_MIN (ints): unwritten outputs show.
  static HostTensor Poisoned(DType dtype, std::vector<int64_t> dims);
  static HostTensor FromFloats(DType dtype, std::vector<int64_t> dims, std::vector<float> values);  // rounds
  static HostTensor FromInts(DType dtype, std::vector<int64_t> dims, std::vector<int32_t> values);
  // Raw GGUF-encoded bytes (any dtype with a byte layout), row-major; a view
  // of `bytes`, which must outlive the tensor and its copies.
  static HostTensor RawView(DType dtype, std::vector<int64_t> dims, absl::Span<const uint8_t> bytes);
  static HostTensor RawOwned(DType dtype, std::vector<int64_t> dims, std::vector<uint8_t> bytes);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  void set_dims(std::vector<int64_t> dims) { dims_ = std::move(dims); }  // same element count
  int64_t num_elements() const;
  int64_t row_length() const { return dims_.empty() ? 1 : dims_.back(); }
  int64_t num_rows() const;  // elements / row_length
  Storage storage() const { return storage_; }

  std::vector<float>& floats() { return floats_; }
  const std::vector<float>& floats() const { return floats_; }
  std::vector<int32_t>& ints() { return ints_; }
  const std::vector<int32_t>& ints() const { return ints_; }
  absl::Span<const uint8_t> bytes() const {
    return view_.data() != nullptr ? view_ : absl::Span<const uint8_t>(owned_);
  }
  std::vector<uint8_t>& owned_bytes() { return owned_; }
  uint64_t row_bytes() const;  // kRaw: bytes of one row

  // Row `r` (row_length() elements) as float: copied, converted or dequantized.
  absl::Status ReadRow(int64_t r, float* out) const;
  // All elements as float.
  absl::StatusOr<std::vector<float>> ToFloats() const;
  // All elements of an integer tensor (int storage or raw i32/i8/u8 bytes).
  absl::StatusOr<std::vector<int32_t>> ToInts() const;
  // Rounds stored floats to f16/bf16 (no-op for f32), ints to i8/u8 range.
  void RoundToDType();

 private:
  DType dtype_ = DType::kF32;
  std::vector<int64_t> dims_;
  Storage storage_ = Storage::kFloat;
  std::vector<float> floats_;
  std::vector<int32_t> ints_;
  absl::Span<const uint8_t> view_;
  std::vector<uint8_t> owned_;
};

// `v` rounded to `dtype` (f16, bf16) and back; f32 returns v.
float RoundToFloatType(DType dtype, float v);

}  // namespace kiln::ir

#endif  // KILN_IR_HOST_TENSOR_H_
