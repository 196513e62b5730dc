// State shared by the lowering of `load` (lower_load.cc) and of prefill and
// decode (lower_to_kernels.cc): the manifest under construction, the buffer
// of each global, kernel deduplication, and launch building.
#ifndef KILN_COMPILER_LOWER_LOWERING_CONTEXT_H_
#define KILN_COMPILER_LOWER_LOWERING_CONTEXT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "compiler/codegen/kernel_abi.h"
#include "compiler/codegen/kernel_spec.h"
#include "ir/ir.h"
#include "models/gguf/gguf_file.h"
#include "runtime/manifest.pb.h"

namespace kiln::compiler {

// Where a tensor lives: a manifest buffer and a byte offset into it.
struct Location {
  uint32_t buffer = 0;
  runtime::Expr offset;
};
// The same buffer at the same offset expression.
bool SameLocation(const Location& a, const Location& b);

// The weight and KV-cache bytes a launch reads (for profiles:
// Kernel.bytes_read and bytes_read_per_position).
struct ReadBytes {
  int64_t bytes = 0;
  int64_t per_position = 0;
};

// One launch argument before it is matched to the kernel's parameters.
struct LaunchArg {
  enum Kind { kPointer, kI32 } kind = kPointer;
  Location at;        // kPointer
  runtime::Expr i32;  // kI32
};

class LoweringContext {
 public:
  // programmatic_launch: use griddepcontrol where the target has it.
  LoweringContext(const ir::Module& module, const gguf::GgufFile& file, codegen::Target target,
                  bool programmatic_launch = true)
      : module_(module), file_(file), target_(target), programmatic_launch_(programmatic_launch) {}

  runtime::Manifest& manifest() { return manifest_; }
  std::vector<codegen::KernelSpec>& kernels() { return kernels_; }
  const gguf::GgufFile& file() const { return file_; }
  const codegen::Target& target() const { return target_; }

  uint32_t AddBuffer(const std::string& name, runtime::Buffer::Kind kind, runtime::Expr bytes);
  // The GGUF_TENSOR buffer (and binding) of a weight global, made on first use.
  absl::StatusOr<uint32_t> GgufBuffer(const ir::Value* weight);
  // The buffer prefill/decode read a global from: states have their own;
  // weights get a WEIGHT copy that `load` fills (GGUF buffers die after load).
  absl::StatusOr<uint32_t> RuntimeBuffer(const ir::Value* global);
  // Weights whose runtime copy load must make, in first-use order.
  const std::vector<const ir::Value*>& weight_copies() const { return weight_copies_; }

  // Appends a launch of `spec` (deduplicated by content) to `plan`, matching
  // `args` to the kernel's parameters in order. `grid_t` is T's Expr for
  // grids that depend on the token count; `rows` the value of a `rows` arg.
  absl::Status Launch(runtime::Plan& plan, codegen::KernelSpec spec, const std::vector<LaunchArg>& args,
                      const runtime::Expr& t, int64_t rows_value = 0, const runtime::Expr* rows_expr = nullptr);

 private:
  const ir::Module& module_;
  const gguf::GgufFile& file_;
  codegen::Target target_;
  bool programmatic_launch_ = true;
  runtime::Manifest manifest_;
  std::vector<codegen::KernelSpec> kernels_;
  std::vector<codegen::KernelAbi> abis_;          // parallel to kernels_
  std::map<std::string, uint32_t> kernel_index_;  // spec key -> kernel
  absl::flat_hash_map<const ir::Value*, uint32_t> gguf_buffers_, runtime_buffers_;
  std::vector<const ir::Value*> weight_copies_;
};

runtime::Expr ConstExpr(int64_t c);
runtime::Expr AffineT(int64_t a, int64_t b);  // a*T + b
// Parses plan-buffers' "a*T + b" strings.
absl::StatusOr<runtime::Expr> ParseAffine(const std::string& text);
// Bytes of a static tensor type (quantized: whole-block rows; T counted as
// `t_value`, C as `c_value`).
absl::StatusOr<int64_t> TypeBytes(const ir::TensorType& type, int64_t t_value = 1, int64_t c_value = 1);
absl::StatusOr<int64_t> RowBytesOf(const ir::TensorType& type);
// The codegen weight format of a weight dtype (kQ8_0 is the raw GGUF
// blocks, never read by matmul kernels: pack-weights splits it).
absl::StatusOr<codegen::WeightFormat> FormatOf(ir::DType dtype);

}  // namespace kiln::compiler

#endif  // KILN_COMPILER_LOWER_LOWERING_CONTEXT_H_
