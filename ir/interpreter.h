// The CPU interpreter: runs any function of a verified Module (`load`,
// `prefill`, `decode`, ...) on float32 values (dot products accumulate in
// double), the oracle the compiled kernels are tested against. Weights come from a WeightSource, checked against their
// declared type and shape when the interpreter is created; quantized weights
// are dequantized on use. States (KV caches, packed weights) are zeroed at
// creation and persist across calls, so `decode` after `prefill` sees the
// cache. Values of type f16/bf16 are rounded to that type when produced or
// stored. Op semantics: ir/ops.def and ir/kernels_*.cc.
//
//   ASSIGN_OR_RETURN(auto interp, Interpreter::Create(module, weights, {.max_context = 512}));
//   RETURN_IF_ERROR(interp->Run("load", {}).status());
//   ASSIGN_OR_RETURN(auto out, interp->Run("prefill", {tokens, pos}));
#ifndef KILN_IR_INTERPRETER_H_
#define KILN_IR_INTERPRETER_H_

#include <memory>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ir/host_tensor.h"
#include "ir/ir.h"
#include "ir/weight_source.h"

namespace kiln::ir {

struct InterpreterOptions {
  int64_t max_context = 0;  // binds C; required if a type uses C
  int threads = 0;          // 0: all hardware threads
};

class Interpreter {
 public:
  // Verifies `module` and binds its weights; `module` and `weights` must
  // outlive the interpreter. Binding errors name the weight and the tensor.
  static absl::StatusOr<std::unique_ptr<Interpreter>> Create(const Module& module,
                                                             const WeightSource& weights,
                                                             InterpreterOptions options = {});
  ~Interpreter();

  // Runs `function` on `args`, whose dtypes and ranks must match its
  // arguments'; symbolic dims (T, ...) are bound from the arguments' dims.
  // `p` binds the symbol P when a type uses it. Returns the results.
  absl::StatusOr<std::vector<HostTensor>> Run(std::string_view function, std::vector<HostTensor> args,
                                              int64_t p = -1);

  // A state buffer by name (e.g. to poison or inspect a cache); null if none.
  HostTensor* state(std::string_view name);

 private:
  struct Frame;
  Interpreter(const Module& module, InterpreterOptions options);
  absl::Status BindWeights(const WeightSource& weights);
  absl::Status AllocateStates();
  absl::Status RunBlock(const Block& block, Frame& frame, std::vector<HostTensor>& returned);
  absl::StatusOr<HostTensor*> Lookup(const Value* v, Frame& frame);

  const Module& module_;
  InterpreterOptions options_;
  absl::flat_hash_map<const Value*, HostTensor> globals_;  // weights (views) and states
};

}  // namespace kiln::ir

#endif  // KILN_IR_INTERPRETER_H_
