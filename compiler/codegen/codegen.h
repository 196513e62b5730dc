// compiler/codegen: KernelSpecs -> one PTX module through LLVM's NVPTX
// backend, and PTX -> cubin through ptxas. The only place in kiln that
// includes LLVM; this header stays LLVM-free. See docs/codegen.md.
#ifndef KILN_COMPILER_CODEGEN_CODEGEN_H_
#define KILN_COMPILER_CODEGEN_CODEGEN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/codegen/kernel_abi.h"
#include "compiler/codegen/kernel_spec.h"

namespace kiln::codegen {

struct EmitOptions {
  // When set, writes <dump_dir>/<kernel>.ll (LLVM IR as emitted, before
  // optimization) and <dump_dir>/<kernel>.ptx for every kernel.
  std::string dump_dir;
};

struct CompiledKernel {
  std::string name;  // the .entry name
  Family family = Family::kMatVec;
  KernelAbi abi;     // parameters, block, grid, shared memory
  bool programmatic_launch = false;  // griddepcontrol was emitted (sm_90 only)
};

struct CompiledModule {
  Target target;
  std::string ptx;  // one module with every kernel, in input order
  std::vector<CompiledKernel> kernels;
};

// Emits every kernel into one PTX module. Deterministic: the same specs give
// byte-identical PTX. A bad spec is InvalidArgument naming the kernel
// (nothing reaches LLVM before every spec is validated); duplicate names are
// InvalidArgument; an LLVM failure is Internal.
absl::StatusOr<CompiledModule> EmitPtx(const std::vector<KernelSpec>& kernels, const Target& target,
                                       const EmitOptions& opts = {});

// What ptxas -v reported for one entry.
struct PtxasKernelInfo {
  std::string name;
  int registers = 0;
  int barriers = 0;
  int64_t stack_frame = 0;   // bytes
  int64_t spill_stores = 0;  // bytes
  int64_t spill_loads = 0;   // bytes
  int64_t shared = 0;        // static smem bytes
  int64_t constant = 0;      // cmem[0] bytes
};

struct PtxasReport {
  std::string ptxas_path;
  std::string log;  // ptxas's full stderr/stdout
  std::vector<PtxasKernelInfo> kernels;
  const PtxasKernelInfo* Find(const std::string& name) const;
};

// The ptxas to use: $KILN_PTXAS, /usr/local/cuda/bin/ptxas, or ptxas on
// PATH; nullopt when none is installed.
std::optional<std::string> FindPtxas();

// Assembles `ptx` for `target` with `ptxas -v` and returns the cubin.
// NotFound without ptxas; InvalidArgument with ptxas's messages when it
// rejects the PTX. `report` (optional) receives the -v numbers.
absl::StatusOr<std::string> RunPtxas(const std::string& ptx, const Target& target,
                                     PtxasReport* report = nullptr);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_CODEGEN_H_
