// What each kernel family takes and how it is launched (parameters, block,
// grid, shared memory) and the weight-format geometry the
// emitters and the reference kernels share. LLVM-free: the bundle writer and
// tests include it. The table of families is in docs/codegen.md.
#ifndef KILN_COMPILER_CODEGEN_KERNEL_ABI_H_
#define KILN_COMPILER_CODEGEN_KERNEL_ABI_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/codegen/kernel_spec.h"

namespace kiln::codegen {

enum class GpuArch { kSm80, kSm86, kSm89, kSm90 };

struct Target {
  GpuArch arch = GpuArch::kSm90;

  int sm() const;                    // 80, 86, 89, 90
  std::string Name() const;          // "sm_90"
  std::string PtxFeature() const;    // "+ptx70" ... "+ptx80"
  // griddepcontrol (programmatic dependent launch) exists from sm_90 on.
  bool HasGridDependencyControl() const { return arch == GpuArch::kSm90; }
  // cp.async.bulk (and its L2 prefetch) exists from sm_90 on.
  bool HasBulkCopy() const { return arch == GpuArch::kSm90; }
  // The most shared memory one block may use (static + dynamic opt-in).
  int64_t MaxSharedPerBlock() const;
  // "sm_80", "sm_86", "sm_89", "sm_90" (also "80", "90", ...).
  static absl::StatusOr<Target> FromName(absl::string_view name);
};

enum class ParamType { kPointer, kI32 };

// One kernel parameter as the driver sees it (cuLaunchKernel's kernelParams
// order; offsets in the packed parameter buffer).
struct KernelParam {
  std::string name;
  ParamType type = ParamType::kPointer;
  int offset = 0;  // bytes
  int size = 8;    // 8 for pointers, 4 for i32
};

// A grid dimension: ceil((constant + t*T + rows*R) / div), where T is the
// token count passed to the kernel and R the value of its `rows` argument.
struct LaunchExpr {
  int64_t constant = 0;
  int64_t t = 0;
  int64_t rows = 0;
  int64_t div = 1;

  int64_t Eval(int64_t tokens, int64_t rows_arg = 0) const;
  std::string ToString() const;  // "ceil(T/64)", "32", "rows"
};

struct KernelAbi {
  std::vector<KernelParam> params;
  std::array<int, 3> block = {1, 1, 1};
  std::array<LaunchExpr, 3> grid;
  int64_t static_shared_bytes = 0;   // declared inside the kernel
  int64_t dynamic_shared_bytes = 0;  // to pass at launch (> 48 KiB needs the opt-in attribute)
  int max_tokens = 0;                // largest T the kernel accepts (0: no T parameter)
  int min_blocks_per_sm = 1;         // .maxnreg leaves registers for this many blocks per SM
};

// The most registers a thread may use (.maxnreg) so that `blocks_per_sm`
// blocks of `threads` fit an SM: its 65536 registers sit in 4 partitions of
// 16384, one per warp scheduler; each warp takes its registers from the
// partition it is assigned to, warps spread evenly, so the fullest holds
// ceil(warps / 4) of them; a thread's count is allocated in 8s (256 a warp).
// 255 at most. (A block of 10 warps at 189 registers, 61440 in all, failed
// to launch on an H200: 3 warps' 18432 overflow a partition.)
int MaxRegistersPerThread(int threads, int blocks_per_sm);

// gemm.stages = 2 keeps a thread's share of the next k tile's loads in
// registers (GemmPlan::prefetch_regs) beside its accumulators. ptxas spilled
// at 128 (the 64 x 64 x 128 default tile on 128 threads); the 8B's 128 x 128
// x 128 tiles on 256 threads hold 76-82 without a spill (codegen_ptxas_test).
constexpr int kMaxGemmPrefetchRegisters = 96;

// How the emitters see a weight format. A "piece" is what one thread decodes
// per step: `piece_weights` weights from a window of `window` consecutive
// columns that `pieces_per_window` pieces cover exactly.
struct FormatGeometry {
  int block_elems = 1;        // weights per quantization block (1 for float formats)
  int block_bytes = 4;        // bytes per block in the layout the kernel reads
  int piece_weights = 4;
  int window = 4;
  int pieces_per_window = 1;
  int pieces_per_block = 1;   // pieces per quantization block (per super-block for K-quants)
  bool staged = false;        // blocks only 2-byte aligned: staged through shared memory
  int raw_words = 4;          // 32-bit registers one piece's loaded words take (WeightDecoder::Load)
};

FormatGeometry GetFormatGeometry(WeightFormat format);
// Bytes of one row of `cols` weights (the first plane of the planar formats).
int64_t WeightRowBytes(WeightFormat format, int64_t cols);
// Bytes of one row's f16 scale plane (w_scales): cols/32 scales for
// kQ8_0Planar, cols/256 super-scales d for kQ6_KPlanar, 0 for the rest.
int64_t ScaleRowBytes(WeightFormat format, int64_t cols);
// matvec.stream_stages can copy the format's weights (and scale plane)
// into shared memory: the direct formats, whose pieces are 16-byte aligned.
bool StreamableFormat(WeightFormat format);
// The head_dim / 2 angular frequencies the RoPE kernels rotate pair i by
// (angle = p * f_i): base^(-2i/D), scaled as spec.rope_scaling says.
std::vector<double> RopeFrequencies(const KernelSpec& spec);
const char* WeightFormatName(WeightFormat format);  // "q4_k"
const char* FamilyName(Family family);              // "matvec"

// kMatVecJoin: part i as a kernel of its own (named "<join>_p<i>", launched
// as the join is), and the prefix of its parameters' names in the join's.
KernelSpec JoinPart(const KernelSpec& join, size_t i);
std::string JoinParamPrefix(size_t i);

// The kernel's ABI (validates first: kernel_validation.h).
absl::StatusOr<KernelAbi> DescribeKernel(const KernelSpec& spec, const Target& target);

// kArgmax: the blocks a row is split over (grid.y),
// min(max_blocks, ceil(cols / block_cols)), at least 1; the caller's
// `partial` holds 8 bytes per row and block.
int ArgmaxBlocks(const KernelSpec& spec);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_KERNEL_ABI_H_
