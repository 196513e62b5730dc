// Kernel specs with the shapes of the tiny synthetic model (n_embd 256,
// n_ff 768) and of Qwen3-8B (4096 / 12288 / vocab 151936), shared by the
// codegen tests.
#ifndef KILN_TESTS_COMPILER_CODEGEN_TEST_SPECS_H_
#define KILN_TESTS_COMPILER_CODEGEN_TEST_SPECS_H_

#include <string>
#include <vector>

#include "compiler/codegen/kernel_abi.h"
#include "compiler/codegen/kernel_spec.h"

namespace kiln::codegen::testing {

// The target "sm_<sm>" (one kiln supports).
Target Sm(int sm);

const std::vector<WeightFormat>& AllFormats();

KernelSpec MatVec(const std::string& name, WeightFormat format, int64_t rows, int64_t cols,
                  Prologue prologue = Prologue::kNone, Epilogue epilogue = Epilogue::kStore,
                  int max_tokens = 1);
KernelSpec Gemm(const std::string& name, WeightFormat format, int64_t rows, int64_t cols,
                Prologue prologue = Prologue::kNone, Epilogue epilogue = Epilogue::kStore);

// Every format x prologue x epilogue for matvec, shapes rotating over the
// tiny and 8B matrices, T = 1 and T = 4.
std::vector<KernelSpec> MatVecMatrix();
// Matvecs whose weights stream through shared memory (stream_stages):
// every direct format with the schedule axes that change its loops.
std::vector<KernelSpec> StreamedMatVecs();
// Matvecs whose next work item's weight loads are in flight during this
// one's math (pipeline_loads): every direct format, row tiles, k splits,
// chunks restaged or staged once; each also loaded row by row
// (pipeline_rows), half of those with registers capped for 2 blocks an SM.
std::vector<KernelSpec> PipelinedMatVecs();
// The work-item cases (and their pipelined forms) that can reduce each row
// group in its own warp (warp_reduce: a warp per group, RMSNorm with
// stage_all, whole SiLU pairs in a group), with it on.
std::vector<KernelSpec> WarpReduceMatVecs();
// kMatVecJoin: the 8B Q4_K_M split layer's q/k and v projections on their
// tuned schedules, the tiny model's, and three parts with one streamed.
std::vector<KernelSpec> MatVecJoins();
// Every format x prologue x epilogue for gemm, tensor cores and fp32.
// Qwen3-8B's four per-layer matrices: shape, prologue and epilogue as
// kiln fuses them.
struct LayerMatrix {
  const char* name;
  int64_t rows, cols;
  Prologue pro;
  Epilogue epi;
};
std::vector<LayerMatrix> Qwen3_8BLayerMatrices();
// gemm.stages = 2 on the smallest tile_k the format allows (32, or its
// window), on 256 threads where 128 would hold more than
// kMaxGemmPrefetchRegisters in flight.
void UseTwoStages(KernelSpec& s);
std::vector<KernelSpec> GemmMatrix();
// Embedding (every table format), rope, attention, argmax, pack, copy: tiny and 8B.
std::vector<KernelSpec> OtherKernels();

// Qwen3-8B's decode attention (32 query heads on 8 KV heads of 128),
// default schedule.
KernelSpec DecodeAttention8B(const char* name);

}  // namespace kiln::codegen::testing

#endif  // KILN_TESTS_COMPILER_CODEGEN_TEST_SPECS_H_
