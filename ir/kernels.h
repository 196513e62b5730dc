// The CPU interpreter's kernel per op (internal to ir/interpreter.cc): the
// executable semantics of ir/ops.def on float32 values, following
// spec/qwen3-model.md §3 for the model ops (dot products and softmax sums
// accumulate in double, as the CPU reference forward does).
#ifndef KILN_IR_KERNELS_H_
#define KILN_IR_KERNELS_H_

#include <array>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "ir/host_tensor.h"
#include "ir/ir.h"

namespace kiln::ir {

// Values of T, P, C for one call (-1: unbound).
using SymbolValues = std::array<int64_t, 3>;

struct EvalContext {
  const Op& op;
  // Operand tensors; a kernel writes only those the op table marks written.
  std::vector<HostTensor*> operands;
  // Result dims resolved from the declared types.
  std::vector<std::vector<int64_t>> result_dims;
  // Results: a kernel fills each with Output(i) (allocated, poisoned) or by
  // assigning a tensor of the resolved dims.
  std::vector<HostTensor> results;
  int threads = 1;
  // Runs a kernel region with its arguments bound to `args`; fills the
  // yielded tensors.
  std::function<absl::Status(const Block&, absl::Span<HostTensor* const>, std::vector<HostTensor>&)>
      run_region;

  HostTensor& Output(int i);
};

// Operand `t` as floats: its own storage, or converted into `scratch`.
absl::StatusOr<const float*> FloatsOf(const HostTensor& t, std::vector<float>& scratch);
// The start position held by an i32[1] operand.
int64_t PosOf(const HostTensor& t);

#define OP(name, ...) absl::Status Eval##name(EvalContext& ctx);
#include "ir/ops.def"
#undef OP

}  // namespace kiln::ir

#endif  // KILN_IR_KERNELS_H_
