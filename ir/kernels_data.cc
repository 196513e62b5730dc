// Interpreter kernels of the element-wise, data-movement, effect and
// structural ops, and the helpers every kernel uses.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "ir/kernels.h"
#include "support/status_macros.h"

namespace kiln::ir {

HostTensor& EvalContext::Output(int i) {
  results[i] = HostTensor::Poisoned(op.result(i)->type().dtype, result_dims[i]);
  return results[i];
}

absl::StatusOr<const float*> FloatsOf(const HostTensor& t, std::vector<float>& scratch) {
  if (t.storage() == HostTensor::Storage::kFloat) return t.floats().data();
  ASSIGN_OR_RETURN(scratch, t.ToFloats());
  return scratch.data();
}

int64_t PosOf(const HostTensor& t) {
  if (t.storage() == HostTensor::Storage::kInt && !t.ints().empty()) return t.ints()[0];
  return -1;  // not a position; the kernels' range checks report it
}

absl::Status EvalKvStore(EvalContext& ctx) {
  const int64_t P = PosOf(*ctx.operands[4]);
  for (int which = 0; which < 2; ++which) {
    std::vector<float> scratch;
    const HostTensor& src = *ctx.operands[which];
    HostTensor& cache = *ctx.operands[2 + which];
    ASSIGN_OR_RETURN(const float* x, FloatsOf(src, scratch));
    const int64_t width = cache.row_length(), rows = src.num_elements() / width;
    if (P < 0 || P + rows > cache.num_rows())
      return absl::OutOfRangeError(absl::StrCat("kv_store: positions [", P, ", ", P + rows,
                                                ") exceed the cache's ", cache.num_rows(), " rows"));
    if (cache.storage() != HostTensor::Storage::kFloat)
      return absl::InternalError("kv_store into a non-float cache");
    float* dst = cache.floats().data() + P * width;
    for (int64_t i = 0; i < rows * width; ++i) dst[i] = RoundToFloatType(cache.dtype(), x[i]);
  }
  return absl::OkStatus();
}

absl::Status EvalStore(EvalContext& ctx) {
  const HostTensor& x = *ctx.operands[0];
  HostTensor& s = *ctx.operands[1];
  switch (s.storage()) {
    case HostTensor::Storage::kFloat: {
      std::vector<float> scratch;
      ASSIGN_OR_RETURN(const float* v, FloatsOf(x, scratch));
      for (size_t i = 0; i < s.floats().size(); ++i) s.floats()[i] = RoundToFloatType(s.dtype(), v[i]);
      return absl::OkStatus();
    }
    case HostTensor::Storage::kInt: {
      ASSIGN_OR_RETURN(s.ints(), x.ToInts());
      s.RoundToDType();
      return absl::OkStatus();
    }
    case HostTensor::Storage::kRaw: {
      absl::Span<const uint8_t> b = x.bytes();
      if (b.size() != s.owned_bytes().size())
        return absl::InternalError(
            absl::StrCat("store of ", b.size(), " bytes into a state of ", s.owned_bytes().size()));
      s.owned_bytes().assign(b.begin(), b.end());
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

namespace {

template <typename Fn>
absl::Status Elementwise(EvalContext& ctx, Fn&& fn) {
  std::vector<float> as, bs;
  ASSIGN_OR_RETURN(const float* a, FloatsOf(*ctx.operands[0], as));
  const float* b = a;
  if (ctx.operands.size() > 1) {
    ASSIGN_OR_RETURN(b, FloatsOf(*ctx.operands[1], bs));
  }
  HostTensor& y = ctx.Output(0);
  float* out = y.floats().data();
  for (size_t i = 0; i < y.floats().size(); ++i) out[i] = fn(a[i], b[i]);
  return absl::OkStatus();
}

}  // namespace

absl::Status EvalSilu(EvalContext& ctx) {
  return Elementwise(ctx, [](float x, float) { return x / (1.0f + std::exp(-x)); });
}
absl::Status EvalMul(EvalContext& ctx) {
  return Elementwise(ctx, [](float a, float b) { return a * b; });
}
absl::Status EvalAdd(EvalContext& ctx) {
  return Elementwise(ctx, [](float a, float b) { return a + b; });
}

absl::Status EvalReshape(EvalContext& ctx) {
  ctx.results[0] = *ctx.operands[0];  // raw weights stay views: no copy of the bytes
  ctx.results[0].set_dims(ctx.result_dims[0]);
  return absl::OkStatus();
}

absl::Status EvalKernel(EvalContext& ctx) {
  std::vector<HostTensor> yielded;
  RETURN_IF_ERROR(ctx.run_region(*ctx.op.region(0), ctx.operands, yielded));
  if (yielded.size() != ctx.results.size())
    return absl::InternalError("kernel yielded the wrong number of values");
  for (size_t i = 0; i < yielded.size(); ++i) ctx.results[i] = std::move(yielded[i]);
  return absl::OkStatus();
}

// Terminators are executed by the interpreter's block loop itself.
absl::Status EvalYield(EvalContext& ctx) { return absl::InternalError("'yield' evaluated as an op"); }
absl::Status EvalReturn(EvalContext& ctx) { return absl::InternalError("'return' evaluated as an op"); }

}  // namespace kiln::ir
