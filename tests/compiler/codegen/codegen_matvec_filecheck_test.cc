// FileCheck on the matvec kernels' PTX: 16-byte read-only weight loads,
// dp4a on int8 activations, the grid-dependency wait and what goes before
// it, joins, pipelined and warp-reduced loops.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/codegen.h"
#include "gtest/gtest.h"
#include "tests/compiler/codegen/filecheck.h"
#include "tests/compiler/codegen/test_specs.h"

namespace kiln::codegen {
namespace {

using testing::ExpectFileCheck;
using testing::Sm;

TEST(CodegenFileCheck, MatVecWeightLoadsAre16ByteReadOnly) {
  std::vector<KernelSpec> specs = {
      testing::MatVec("mv_q8_0p", WeightFormat::kQ8_0Planar, 4096, 4096),
      testing::MatVec("mv_q4_k", WeightFormat::kQ4_K, 4096, 4096),
      testing::MatVec("mv_q5_k", WeightFormat::kQ5_K, 4096, 4096),
      testing::MatVec("mv_f16", WeightFormat::kF16, 4096, 4096),
      testing::MatVec("mv_bf16", WeightFormat::kBF16, 4096, 4096),
      testing::MatVec("mv_f32", WeightFormat::kF32, 4096, 4096),
      testing::MatVec("mv_q6_k", WeightFormat::kQ6_K, 4096, 4096),
      testing::MatVec("mv_q4_0", WeightFormat::kQ4_0, 4096, 4096),
      testing::MatVec("mv_q8_0", WeightFormat::kQ8_0, 4096, 4096),
  };
  // Direct formats: 16-byte read-only loads of weights and activations
  // (activations staged through shared memory); staged formats: 16-byte
  // windows into shared memory, then 2-byte reads.
  ExpectFileCheck(specs, Sm(90), R"(
CHECK-LABEL: .entry mv_q8_0p(
CHECK-DAG: ld.global.nc.v4.u32
CHECK-DAG: ld.global.nc.v4.f32
CHECK-DAG: st.shared.v4.f32
CHECK: ld.shared.v4.f32
CHECK: shfl.sync.bfly.b32
CHECK-LABEL: .entry mv_q4_k(
CHECK-DAG: ld.global.nc.v4.u32
CHECK-DAG: ld.global.nc.v4.f32
CHECK: prmt.b32
CHECK-LABEL: .entry mv_q5_k(
CHECK: ld.global.nc.v4.u32
CHECK-LABEL: .entry mv_f16(
CHECK: ld.global.nc.v4.u32
CHECK-LABEL: .entry mv_bf16(
CHECK: ld.global.nc.v4.u32
CHECK-LABEL: .entry mv_f32(
CHECK: ld.global.nc.v4.{{u32|f32}}
CHECK-LABEL: .entry mv_q6_k(
CHECK: ld.global.nc.v4.u32
CHECK: st.shared.v4.u32
CHECK: bar.warp.sync
CHECK: ld.shared.u16
CHECK-LABEL: .entry mv_q4_0(
CHECK: ld.global.nc.v4.u32
CHECK: st.shared.v4.u32
CHECK-LABEL: .entry mv_q8_0(
CHECK: ld.global.nc.v4.u32
CHECK: st.shared.v4.u32
)");
}

// int8 activations: the staging rounds with mul.rn/add.rn (never an fma
// the host reference could not reproduce) and the K loop multiplies with
// dp4a, signed weights for Q8_0, unsigned 4-bit codes for Q4_K; no
// per-weight byte-to-float conversion is left.
TEST(CodegenFileCheck, MatVecInt8ActivationsUseDp4a) {
  std::vector<KernelSpec> specs = {testing::MatVec("mv8_q8_0p", WeightFormat::kQ8_0Planar, 4096, 4096),
                                   testing::MatVec("mv8_q4_k", WeightFormat::kQ4_K, 4096, 4096, Prologue::kRmsNorm)};
  for (KernelSpec& s : specs) s.matvec.int8_activations = true;
  ExpectFileCheck(specs, Sm(90), R"(
CHECK-LABEL: .entry mv8_q8_0p(
CHECK: mul.rn.f32
CHECK: add.rn.f32
CHECK: st.shared{{(.v[24])?}}.{{u|b}}32
CHECK: bar.sync
CHECK: ld.global.nc.v4.u32
CHECK: dp4a.s32.s32
CHECK-NOT: cvt.rn.f32.s8
CHECK-LABEL: .entry mv8_q4_k(
CHECK: mul.rn.f32
CHECK: dp4a.u32.s32
)");
}

TEST(CodegenFileCheck, MatVecNeverLoadsWeightsNarrowly) {
  // Direct formats: every weight load is 16 bytes (the only narrow global
  // load of Q8_0Planar is its 2-byte scale).
  ExpectFileCheck({testing::MatVec("mv_q4_k", WeightFormat::kQ4_K, 4096, 4096)}, Sm(90), R"(
CHECK-LABEL: .entry mv_q4_k(
CHECK-NOT: ld.global.nc.u32
CHECK-NOT: ld.global.nc.u16
CHECK-NOT: ld.global.nc.u8
CHECK: ret;
)");
}

std::vector<KernelSpec> ProgrammaticSpecs(bool programmatic) {
  std::vector<KernelSpec> all = testing::MatVecMatrix();
  std::vector<KernelSpec> specs = {all[0], all[30]};
  specs.push_back(testing::GemmMatrix()[4]);
  std::vector<KernelSpec> other = testing::OtherKernels();
  for (const KernelSpec& s : other)
    if (s.family != Family::kMatVec && s.name.find("tiny") != std::string::npos) specs.push_back(s);
  std::vector<KernelSpec> out;
  for (KernelSpec s : specs) {
    s.programmatic_launch = programmatic;
    out.push_back(s);
  }
  return out;
}

std::string PerKernelChecks(const std::vector<KernelSpec>& specs, const std::string& body) {
  std::string c;
  for (const KernelSpec& s : specs) absl::StrAppend(&c, "CHECK-LABEL: .entry ", s.name, "(\n", body);
  return c;
}

TEST(CodegenFileCheck, GridDependencyControlOnSm90WhenAsked) {
  std::vector<KernelSpec> specs = ProgrammaticSpecs(true);
  ExpectFileCheck(specs, Sm(90), PerKernelChecks(specs, "CHECK: griddepcontrol.wait;\nCHECK: griddepcontrol.launch_dependents;\n"));
}

TEST(CodegenFileCheck, NoGridDependencyControlBeforeSm90) {
  std::vector<KernelSpec> specs = ProgrammaticSpecs(true);
  for (int sm : {80, 86, 89}) ExpectFileCheck(specs, Sm(sm), "CHECK-NOT: griddepcontrol\nCHECK: ret;\n");
}

TEST(CodegenFileCheck, NoGridDependencyControlUnlessAsked) {
  ExpectFileCheck(ProgrammaticSpecs(false), Sm(90), "CHECK-NOT: griddepcontrol\nCHECK: ret;\n");
}

// A matvec's first weight loads (16-byte aligned formats) do not depend on
// the previous kernel and go before griddepcontrol.wait; its activations,
// and the weights of formats staged through shared memory, come after.
TEST(CodegenFileCheck, MatVecLoadsFirstWeightsBeforeGridDependencyWait) {
  KernelSpec direct = testing::MatVec("mv_direct", WeightFormat::kQ8_0Planar, 256, 4096, Prologue::kRmsNorm);
  KernelSpec staged = testing::MatVec("mv_staged", WeightFormat::kQ6_K, 256, 4096, Prologue::kRmsNorm);
  for (KernelSpec* s : {&direct, &staged}) {
    s->programmatic_launch = true;
    s->matvec.threads = 64;  // full chunks of 64 pieces: the first is loaded early
    s->matvec.unroll = 1;
  }
  ExpectFileCheck({direct, staged}, Sm(90), R"(
CHECK-LABEL: .entry mv_direct(
CHECK-NOT: ld.global.nc.v4.f32
CHECK: ld.global.nc.v4.u32
CHECK-NOT: ld.global.nc.v4.f32
CHECK: griddepcontrol.wait;
CHECK: ld.global.nc.v4.f32
CHECK-LABEL: .entry mv_staged(
CHECK-NOT: ld.global
CHECK: griddepcontrol.wait;
CHECK: ld.global
)");
}

// A matvec join is one kernel whose blocks branch to their part: the
// 8B q/k part (Q4_K, dp4a) on blocks [0, 214), the v part (planar Q6_K,
// float FMAs) on the rest, renumbered from 0, each waiting on the
// previous kernel as it does alone.
TEST(CodegenFileCheck, MatVecJoinBranchesToEachPartsCode) {
  KernelSpec join = testing::MatVecJoins()[0];
  join.programmatic_launch = true;
  ExpectFileCheck({join}, Sm(90), R"(
CHECK-LABEL: .entry mvjoin_8b_qkv(
CHECK: .maxntid 256, 1, 1
CHECK: mov.u32 %r[[B:[0-9]+]], %ctaid.x;
CHECK: setp.{{[lg][te]}}.u32 %p{{[0-9]+}}, %r[[B]], {{21[34]}};
CHECK: griddepcontrol.wait;
CHECK: dp4a
CHECK-NOT: .entry
CHECK: add.s32 %r{{[0-9]+}}, %r[[B]], -214;
CHECK-NOT: dp4a
CHECK: griddepcontrol.wait;
CHECK-NOT: dp4a
CHECK: fma.rn.f32
CHECK-NOT: dp4a
CHECK: ret;
)");
}

// What the previous kernel wrote (here the activations) is read through L2
// under programmatic launch, which overlaps that kernel, and through the
// non-coherent path only when the kernel starts after it has ended.
TEST(CodegenFileCheck, ActivationsAreReadCoherentlyUnderProgrammaticLaunch) {
  for (bool programmatic : {true, false}) {
    KernelSpec mv = testing::MatVec("mv", WeightFormat::kQ8_0Planar, 256, 4096, Prologue::kNone);
    KernelSpec gemm = testing::Gemm("gemm", WeightFormat::kQ8_0Planar, 256, 4096, Prologue::kNone);
    for (KernelSpec* s : {&mv, &gemm}) s->programmatic_launch = programmatic;
    const std::string body = programmatic ? "CHECK-NOT: ld.global.nc.v4.f32\nCHECK: griddepcontrol.wait;\n"
                                            "CHECK-NOT: ld.global.nc.v4.f32\nCHECK: ld.global.cg.v4.f32\n"
                                            "CHECK-NOT: ld.global.nc.v4.f32\nCHECK: ret;\n"
                                          : "CHECK-NOT: ld.global.cg\nCHECK: ld.global.nc.v4.f32\n"
                                            "CHECK-NOT: ld.global.cg\nCHECK: ret;\n";
    ExpectFileCheck({mv, gemm}, Sm(90), PerKernelChecks({mv, gemm}, body));
  }
}

// A Q4_K matvec as the sm_90 table schedules the 8B model's: 128 threads,
// 4 row groups, one piece a step, the split staged once as int8, under
// programmatic launch.
KernelSpec StagedInt8Q4K(const char* name, int64_t rows, int rows_per_block, Epilogue epilogue) {
  KernelSpec mv = testing::MatVec(name, WeightFormat::kQ4_K, rows, 4096, Prologue::kRmsNorm, epilogue);
  mv.programmatic_launch = true;
  mv.matvec.threads = 128;
  mv.matvec.rows_per_block = rows_per_block;
  mv.matvec.row_groups = 4;
  mv.matvec.unroll = 1;
  mv.matvec.stage_all = true;
  mv.matvec.int8_activations = true;
  return mv;
}

// The int8 staging issues a thread's 8 activation loads (4096 columns, 128
// threads) before its first shared-memory store: the L2-only loads of
// programmatic launch are inline asm that LLVM keeps below earlier stores,
// and one load per store waited a round trip each (Q4_K_M decode 11 %
// slower on the H200, bench/RESULTS.md 2026-12-03 session 3).
TEST(CodegenFileCheck, Int8StagingIssuesItsLoadsTogether) {
  KernelSpec mv = StagedInt8Q4K("mv_i8", 256, 8, Epilogue::kStore);
  std::string checks = "CHECK-LABEL: .entry mv_i8(\nCHECK: griddepcontrol.wait;\n";
  for (int i = 0; i < 8; ++i) absl::StrAppend(&checks, "CHECK-NOT: st.shared\nCHECK: ld.global.cg.v4.f32\n");
  ExpectFileCheck({mv}, Sm(90), checks);
}

// pipeline_loads: after the staging's barrier the K loop's first body
// issues the next item's 12 weight loads (4 rows x 3 of a Q4_K piece)
// before any dp4a of the current item, whose words were loaded before
// griddepcontrol.wait. Without it, the first item is computed first.
TEST(CodegenFileCheck, PipelinedMatVecLoadsTheNextItemFirst) {
  KernelSpec s = StagedInt8Q4K("mvpipe", 24576, 16, Epilogue::kSiluMulPairs);
  s.matvec.row_tiles = 4;
  KernelSpec plain = s;
  plain.name = "mvplain";
  s.matvec.pipeline_loads = true;
  ExpectFileCheck({s, plain}, Sm(90), R"(
CHECK-LABEL: .entry mvpipe(
CHECK-COUNT-12: ld.global.nc.v4.u32
CHECK: griddepcontrol.wait;
CHECK: bar.sync
CHECK-NOT: dp4a.u32.s32
CHECK-COUNT-12: ld.global.nc.v4.u32
CHECK: dp4a.u32.s32
CHECK-LABEL: .entry mvplain(
CHECK-COUNT-12: ld.global.nc.v4.u32
CHECK: griddepcontrol.wait;
CHECK: bar.sync
CHECK-NOT: ld.global.nc.v4.u32
CHECK: dp4a.u32.s32
)");
}

// pipeline_rows: the K loop's body computes row 0 of the current item
// (its dp4a) before any load of the next item, then loads the next item's
// row r (3 words of a Q4_K piece) right after row r's math, 4 rows in turn.
// matvec.blocks_per_sm 3 caps 128 threads at 65536 / 384 -> 168 registers.
TEST(CodegenFileCheck, PipelinedRowsLoadEachRowAfterItsMath) {
  KernelSpec s = StagedInt8Q4K("mvrows", 24576, 16, Epilogue::kSiluMulPairs);
  s.matvec.row_tiles = 4;
  s.matvec.pipeline_loads = true;
  s.matvec.pipeline_rows = true;
  s.matvec.blocks_per_sm = 3;
  std::string checks = R"(
CHECK-LABEL: .entry mvrows(
CHECK: .maxnreg 168
CHECK-COUNT-12: ld.global.nc.v4.u32
CHECK: griddepcontrol.wait;
CHECK: bar.sync
)";
  for (int r = 0; r < 4; ++r)
    absl::StrAppend(&checks, R"(CHECK-NOT: ld.global.nc.v4.u32
CHECK: dp4a.u32.s32
CHECK-NOT: ld.global.nc.v4.u32
CHECK-COUNT-3: ld.global.nc.v4.u32
)");
  absl::StrAppend(&checks, "CHECK-NOT: ld.global.nc.v4.u32\nCHECK: bar.sync\n");
  ExpectFileCheck({s}, Sm(90), checks);
}

// warp_reduce: after the staging (its barrier, then the one that sums the
// warps' squares for the RMSNorm factor), the 4 row tiles' K loops and
// reductions run with no block barrier; without it every tile's reduction
// has two.
TEST(CodegenFileCheck, WarpReduceHasNoBarrierAfterTheStaging) {
  KernelSpec s = StagedInt8Q4K("mvwarp", 24576, 16, Epilogue::kSiluMulPairs);
  s.matvec.row_tiles = 4;
  s.matvec.pipeline_loads = true;
  s.matvec.pipeline_rows = true;
  s.matvec.warp_reduce = true;
  KernelSpec block = s;
  block.name = "mvblock";
  block.matvec.warp_reduce = false;
  ExpectFileCheck({s, block}, Sm(90), R"(
CHECK-LABEL: .entry mvwarp(
CHECK: griddepcontrol.wait;
CHECK: bar.sync
CHECK: shfl.sync.bfly
CHECK: bar.sync
CHECK-NOT: bar.sync
CHECK: dp4a.u32.s32
CHECK-NOT: bar.sync
CHECK: ret;
CHECK-LABEL: .entry mvblock(
CHECK: dp4a.u32.s32
CHECK: bar.sync
)");
}

}  // namespace
}  // namespace kiln::codegen
