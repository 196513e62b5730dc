// Interpreter kernels of the layout ops that `load` uses to repack weights
// (q8_0_split, q6_k_split, concat_rows, interleave_rows), of slice and swiglu, which
// read packed matmul results, and of arena (no effect).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ir/kernels.h"
#include "models/quant/float16.h"
#include "support/status_macros.h"

namespace kiln::ir {
namespace {

// Appends rows [begin, end) of `src` to `dst`, which has src's dtype and
// storage (rows of raw quantized tensors are copied as bytes).
absl::Status AppendRows(const HostTensor& src, int64_t begin, int64_t end, HostTensor& dst) {
  const int64_t len = src.row_length();
  switch (src.storage()) {
    case HostTensor::Storage::kFloat:
      dst.floats().insert(dst.floats().end(), src.floats().begin() + begin * len,
                          src.floats().begin() + end * len);
      return absl::OkStatus();
    case HostTensor::Storage::kInt:
      dst.ints().insert(dst.ints().end(), src.ints().begin() + begin * len, src.ints().begin() + end * len);
      return absl::OkStatus();
    case HostTensor::Storage::kRaw: {
      const uint64_t rb = src.row_bytes();
      absl::Span<const uint8_t> b = src.bytes();
      if (end * rb > b.size())
        return absl::DataLossError(absl::StrCat("rows up to ", end, " lie past the tensor's ", b.size(), " bytes"));
      dst.owned_bytes().insert(dst.owned_bytes().end(), b.begin() + begin * rb, b.begin() + end * rb);
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

// An empty tensor of `like`'s dtype and storage with the result's dims.
HostTensor EmptyLike(const HostTensor& like, std::vector<int64_t> dims) {
  if (like.storage() == HostTensor::Storage::kRaw) return HostTensor::RawOwned(like.dtype(), std::move(dims), {});
  if (like.storage() == HostTensor::Storage::kInt) return HostTensor::FromInts(like.dtype(), std::move(dims), {});
  return HostTensor::FromFloats(like.dtype(), std::move(dims), {});
}

// The quantization blocks of a split's operand w: how many there are, or a
// DataLossError naming `op` when w's bytes are not that many blocks.
absl::StatusOr<int64_t> SplitBlocks(const HostTensor& w, const char* op, int block_bytes, int block_elems) {
  const int64_t blocks = w.num_elements() / block_elems;
  if (static_cast<int64_t>(w.bytes().size()) != blocks * block_bytes)
    return absl::DataLossError(
        absl::StrCat(op, ": ", w.bytes().size(), " bytes for ", blocks, " blocks of ", block_bytes));
  return blocks;
}

}  // namespace

absl::Status EvalQ8_0Split(EvalContext& ctx) {
  const HostTensor& w = *ctx.operands[0];
  constexpr int kBlockBytes = 34, kBlockElems = 32;  // spec/quant-formats.md §2
  ASSIGN_OR_RETURN(const int64_t blocks, SplitBlocks(w, "q8_0_split", kBlockBytes, kBlockElems));
  absl::Span<const uint8_t> b = w.bytes();
  HostTensor& qs = ctx.Output(0);
  HostTensor& d = ctx.Output(1);
  for (int64_t i = 0; i < blocks; ++i) {
    const uint8_t* block = b.data() + i * kBlockBytes;
    uint16_t h;
    std::memcpy(&h, block, 2);
    d.floats()[i] = quant::HalfToFloat(h);
    for (int j = 0; j < kBlockElems; ++j)
      qs.ints()[i * kBlockElems + j] = static_cast<int8_t>(block[2 + j]);
  }
  return absl::OkStatus();
}

absl::Status EvalQ6_KSplit(EvalContext& ctx) {
  const HostTensor& w = *ctx.operands[0];
  constexpr int kBlockBytes = 210, kDataBytes = 208, kBlockElems = 256;  // spec/quant-formats.md §7
  ASSIGN_OR_RETURN(const int64_t blocks, SplitBlocks(w, "q6_k_split", kBlockBytes, kBlockElems));
  absl::Span<const uint8_t> b = w.bytes();
  HostTensor& data = ctx.Output(0);
  HostTensor& d = ctx.Output(1);
  std::vector<uint8_t>& out = data.owned_bytes();
  for (int64_t i = 0; i < blocks; ++i) {
    const uint8_t* block = b.data() + i * kBlockBytes;
    std::memcpy(out.data() + i * kDataBytes, block, kDataBytes);
    uint16_t h;
    std::memcpy(&h, block + kDataBytes, 2);
    d.floats()[i] = quant::HalfToFloat(h);
  }
  return absl::OkStatus();
}

absl::Status EvalConcatRows(EvalContext& ctx) {
  HostTensor y = EmptyLike(*ctx.operands[0], ctx.result_dims[0]);
  for (const HostTensor* t : ctx.operands) RETURN_IF_ERROR(AppendRows(*t, 0, t->num_rows(), y));
  ctx.results[0] = std::move(y);
  return absl::OkStatus();
}

absl::Status EvalInterleaveRows(EvalContext& ctx) {
  const HostTensor& a = *ctx.operands[0];
  const HostTensor& b = *ctx.operands[1];
  const int64_t g = ctx.op.GetInt("group");
  HostTensor y = EmptyLike(a, ctx.result_dims[0]);
  for (int64_t r = 0; r < a.num_rows(); r += g) {
    RETURN_IF_ERROR(AppendRows(a, r, r + g, y));
    RETURN_IF_ERROR(AppendRows(b, r, r + g, y));
  }
  ctx.results[0] = std::move(y);
  return absl::OkStatus();
}

absl::Status EvalSlice(EvalContext& ctx) {
  const HostTensor& x = *ctx.operands[0];
  const int64_t start = ctx.op.GetInt("start"), size = ctx.op.GetInt("size");
  const int64_t n = x.row_length(), rows = x.num_rows();
  HostTensor& y = ctx.Output(0);
  for (int64_t r = 0; r < rows; ++r) {
    if (x.storage() == HostTensor::Storage::kFloat) {
      std::copy_n(x.floats().begin() + r * n + start, size, y.floats().begin() + r * size);
    } else if (x.storage() == HostTensor::Storage::kInt) {
      std::copy_n(x.ints().begin() + r * n + start, size, y.ints().begin() + r * size);
    } else {
      return absl::InternalError("slice of raw bytes");
    }
  }
  return absl::OkStatus();
}

absl::Status EvalLastRow(EvalContext& ctx) {
  const HostTensor& x = *ctx.operands[0];
  const int64_t n = x.dims().front();
  if (n < 1) return absl::InvalidArgumentError("last_row of no rows");
  const int64_t each = x.num_elements() / n;
  HostTensor& y = ctx.Output(0);
  if (x.storage() == HostTensor::Storage::kFloat) {
    std::copy_n(x.floats().begin() + (n - 1) * each, each, y.floats().begin());
  } else if (x.storage() == HostTensor::Storage::kInt) {
    std::copy_n(x.ints().begin() + (n - 1) * each, each, y.ints().begin());
  } else {
    return absl::InternalError("last_row of raw bytes");
  }
  return absl::OkStatus();
}

absl::Status EvalSwiglu(EvalContext& ctx) {
  std::vector<float> xs;
  ASSIGN_OR_RETURN(const float* x, FloatsOf(*ctx.operands[0], xs));
  const int64_t g = ctx.op.GetInt("group");
  const int64_t n2 = ctx.operands[0]->row_length(), rows = ctx.operands[0]->num_rows(), n = n2 / 2;
  HostTensor& y = ctx.Output(0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      // Group j / g holds gates at [2g * (j / g), +g) and ups right after.
      const int64_t base = r * n2 + 2 * g * (j / g) + j % g;
      const float gate = x[base], up = x[base + g];
      // The same float operations as silu then mul (kernels_data.cc).
      const float act = gate / (1.0f + std::exp(-gate));
      y.floats()[r * n + j] = act * up;
    }
  }
  return absl::OkStatus();
}

absl::Status EvalArena(EvalContext& ctx) { return absl::OkStatus(); }

}  // namespace kiln::ir
