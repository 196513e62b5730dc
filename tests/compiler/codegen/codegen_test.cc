// compiler/codegen on the CPU: FileCheck pins the instructions that matter;
// output is deterministic; bad specs are InvalidArgument naming the kernel;
// the ABI and the reference kernels behave as documented. (ptxas over every
// kernel: codegen_ptxas_test.cc.)
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/kernel_validation.h"
#include "compiler/codegen/reference_kernels.h"
#include "gtest/gtest.h"
#include "models/quant/float16.h"
#include "tests/compiler/codegen/test_specs.h"

namespace kiln::codegen {
namespace {

Target Sm(int sm) { return *Target::FromName(absl::StrCat("sm_", sm)); }

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / absl::StrCat("kiln-codegen-test-", ::getpid(), "-", name)).string();
}

// ---------------------------------------------------------------------------
// FileCheck.

int RunFileCheck(const std::string& ptx, const std::string& checks, std::string* output) {
  const std::string in = TempPath("in.ptx"), chk = TempPath("checks.txt"), log = TempPath("log.txt");
  std::ofstream(in) << ptx;
  std::ofstream(chk) << checks;
  std::string cmd = absl::StrCat(KILN_FILECHECK, " ", chk, " --input-file=", in, " > ", log, " 2>&1");
  int rc = std::system(cmd.c_str());
  std::ifstream f(log);
  output->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  std::filesystem::remove(in);
  std::filesystem::remove(chk);
  std::filesystem::remove(log);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

void ExpectFileCheck(const std::vector<KernelSpec>& specs, const Target& target, const std::string& checks) {
  if (!std::filesystem::exists(KILN_FILECHECK)) GTEST_SKIP() << "FileCheck not installed";
  absl::StatusOr<CompiledModule> m = EmitPtx(specs, target);
  ASSERT_TRUE(m.ok()) << m.status();
  std::string out;
  EXPECT_EQ(RunFileCheck(m->ptx, checks, &out), 0) << out;
}

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

TEST(ReferenceKernels, Int8ActivationsTwoLevelsMatchFloatTo1e4) {
  // Two int8 levels per 32 columns: each x is represented to ~2^-15 of its
  // block's maximum, so a random dot product stays within ~1e-4 of the
  // float one (one level: ~1e-2).
  const int64_t rows = 64, cols = 1024;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(rows * cols)), x(static_cast<size_t>(cols));
  for (float& v : w) v = nd(rng);
  for (float& v : x) v = nd(rng);
  KernelSpec f = testing::MatVec("ref_f32", WeightFormat::kF32, rows, cols);
  KernelSpec q = f;
  q.matvec.int8_activations = true;  // the reference does not validate formats
  std::vector<float> want(size_t(rows), NAN), got(size_t(rows), NAN);
  ASSERT_TRUE(reference::MatVec(f, w.data(), nullptr, x.data(), nullptr, want.data(), 1).ok());
  ASSERT_TRUE(reference::MatVec(q, w.data(), nullptr, x.data(), nullptr, got.data(), 1).ok());
  double num = 0, den = 0, diff = 0;
  for (int64_t r = 0; r < rows; ++r) {
    num += double(got[size_t(r)] - want[size_t(r)]) * (got[size_t(r)] - want[size_t(r)]);
    den += double(want[size_t(r)]) * want[size_t(r)];
    diff = std::max(diff, std::fabs(double(got[size_t(r)] - want[size_t(r)])));
  }
  EXPECT_LT(std::sqrt(num / den), 1e-4);
  EXPECT_GT(diff, 0.0);  // it is quantized, not the float path
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

// The "last block done" merge (decode attention, argmax): one acq_rel
// atomic counts the block (its ordering replaces the membar.gl before it
// and the one in the last arrival), then the last arrival resets the
// counter; the reads of the other blocks' partials follow, never through
// the .nc path.
constexpr char kLastBlockMerge[] = R"(CHECK-NOT: membar
CHECK: atom.acq_rel.gpu.global.add.u32
CHECK: bar.sync
CHECK-NOT: membar
CHECK: st.volatile.global.u32
)";

// Qwen3-8B's decode attention (32 query heads on 8 KV heads of 128).
KernelSpec DecodeAttention8B(const char* name) {
  KernelSpec d;
  d.name = name;
  d.family = Family::kAttentionDecode;
  d.n_head = 32;
  d.n_head_kv = 8;
  d.head_dim = 128;
  return d;
}

// Decode attention reads its records through L2 with ld.global.cg: the
// acc rows 16 bytes at a time, the first round of them (8 a thread) before
// the (max, sum) pairs (8 bytes), whose round trip they share; no scalar
// volatile reads are left.
TEST(CodegenFileCheck, DecodeAttentionLastBlockMerge) {
  KernelSpec d = DecodeAttention8B("dec");
  ExpectFileCheck({d}, Sm(90),
                  absl::StrCat("CHECK-LABEL: .entry dec(\nCHECK: ld.global.nc\nCHECK: ex2.approx.ftz.f32\n",
                               "CHECK: st.global.v4.f32\n", kLastBlockMerge, R"(CHECK-NOT: ld.volatile.global
CHECK-NOT: ld.global.nc
CHECK-COUNT-8: ld.global.cg.v4.f32
CHECK-NOT: bar.sync
CHECK: ld.global.cg.v2.f32
CHECK-NOT: ld.volatile.global
CHECK-NOT: ld.global.nc
CHECK: ld.global.cg.v4.f32
CHECK-NOT: ld.volatile.global
CHECK: ret;
)"));
}

// With rope_fused the kernel writes the new K/V row before a barrier and
// then reads the cache with coherent loads: never ld.global.nc, which may
// serve data written during the launch stale. `store` is the cache store,
// `loads` the cache loads after the barrier, in order.
std::string CoherentCacheChecks(const std::string& name, int table_bytes, const std::string& store,
                                const std::vector<std::string>& loads) {
  std::string c = absl::StrCat("CHECK: .const .align 8 .b8 ", name, "_inv_freq[", table_bytes, "]\n",
                               "CHECK-LABEL: .entry ", name, "(\nCHECK: sin.approx.f32\nCHECK: ", store,
                               "\nCHECK: bar.sync\n");
  for (const std::string& l : loads) absl::StrAppend(&c, "CHECK-NOT: ld.global.nc\nCHECK: ", l, "\n");
  absl::StrAppend(&c, "CHECK-NOT: ld.global.nc\nCHECK: ld.global.cg.v4.f32\nCHECK: ret;\n");
  return c;
}

TEST(CodegenFileCheck, DecodeAttentionWithRopeReadsTheCacheCoherently) {
  KernelSpec d = DecodeAttention8B("decr");
  d.rope_fused = true;
  // Rows of 256 f32 (1 KiB) take the key-per-thread path.
  KernelSpec wide = d;
  wide.name = "decr_wide";
  wide.n_head = 8;
  wide.n_head_kv = 2;
  wide.head_dim = 256;
  wide.kv_f16 = false;
  ExpectFileCheck({d, wide}, Sm(90),
                  absl::StrCat(CoherentCacheChecks("decr", 512, "st.global.b16", {"ld.global.u64", "ld.global.v4.u32"}),
                               CoherentCacheChecks("decr_wide", 1024, "st.global.f32", {"ld.global.v4.f32"})));
}

// The 8B decode attention with q/k-norm, RoPE and the KV store fused, under
// programmatic launch (as sm_90 bundles run it).
KernelSpec FusedDecodeAttention8BUnderPdl(const char* name) {
  KernelSpec d = DecodeAttention8B(name);
  d.rope_fused = true;
  d.programmatic_launch = true;
  return d;
}

// Under programmatic launch the fused decode attention forms its RoPE
// angles (the .const table's f64 frequencies, the f64 reduction, sin and
// cos) for the new token's position before griddepcontrol.wait, during the
// previous kernel's tail: after the wait only their products remain.
TEST(CodegenFileCheck, DecodeAttentionRotationAnglesBeforeTheWait) {
  KernelSpec d = FusedDecodeAttention8BUnderPdl("deca");
  ExpectFileCheck({d}, Sm(90), R"(
CHECK-LABEL: .entry deca(
CHECK: ld.global.cg.u32
CHECK: ld.const.f64
CHECK: cos.approx.f32
CHECK: sin.approx.f32
CHECK: ld.const.f64
CHECK: cos.approx.f32
CHECK: sin.approx.f32
CHECK: griddepcontrol.wait;
CHECK-NOT: ld.const
CHECK-NOT: sin.approx
CHECK: bar.sync
)");
}

// Prefill with stage_keys: the block copies K and V rows into shared memory
// with 16-byte loads and stores, then the warps read them from there; the
// streaming kernel reads every row from global memory.
TEST(CodegenFileCheck, PrefillAttentionStagesKeysInSharedMemory) {
  KernelSpec p = DecodeAttention8B("pres");
  p.family = Family::kAttentionPrefill;
  p.attention.stage_keys = true;
  p.attention.query_block = 16;
  KernelSpec plain = DecodeAttention8B("prep");
  plain.family = Family::kAttentionPrefill;
  ExpectFileCheck({p, plain}, Sm(90), R"(
CHECK-LABEL: .entry pres(
CHECK: ld.global{{(.nc)?}}.v4.f32
CHECK: st.shared.v4.f32
CHECK: bar.sync
CHECK: ld.shared.u64
CHECK: shfl.sync.bfly
CHECK: ex2.approx
CHECK-LABEL: .entry prep(
CHECK-NOT: {{ld|st}}.shared
CHECK: ret;
)");
}

// release_after_wait: the dependents launch once the wait is over, before
// the kernel loads anything the previous kernel wrote; by default only the
// live splits' ends release them.
TEST(CodegenFileCheck, DecodeAttentionReleaseAfterWait) {
  KernelSpec d = FusedDecodeAttention8BUnderPdl("decw");
  d.attention.release_after_wait = true;
  KernelSpec plain = FusedDecodeAttention8BUnderPdl("decn");
  ExpectFileCheck({d, plain}, Sm(90), R"(
CHECK-LABEL: .entry decw(
CHECK-NOT: griddepcontrol.launch_dependents
CHECK: griddepcontrol.wait;
CHECK-NOT: ld.global
CHECK: griddepcontrol.launch_dependents;
CHECK: ld.global.cg.f32
CHECK-LABEL: .entry decn(
CHECK: griddepcontrol.wait;
CHECK-NOT: griddepcontrol.launch_dependents
CHECK: ld.global.cg.f32
CHECK: bar.sync
)");
}

// Under programmatic launch the fused decode attention reads pos before
// griddepcontrol.wait, then every value its warp needs from the qkv row
// (two rounds of query/key pairs and value pairs: 8 loads for 128 dims)
// and the norm weights at once: after the head's sum-of-squares butterfly
// nothing global is loaded before the barrier.
TEST(CodegenFileCheck, DecodeAttentionLoadsTheQkvRowAtOnce) {
  KernelSpec d = FusedDecodeAttention8BUnderPdl("decp");
  ExpectFileCheck({d}, Sm(90), R"(
CHECK-LABEL: .entry decp(
CHECK: ld.global.cg.u32
CHECK: griddepcontrol.wait;
CHECK-COUNT-8: ld.global.cg.f32
CHECK: shfl.sync.bfly
CHECK-NOT: ld.global
CHECK: bar.sync
)");
}

// The first round of value rows (8 f16 rows a thread) is loaded right
// after step 0's barrier, before the key rows, and converted only after
// them: its round trip overlaps the scores' and the softmax's.
// Unfused under programmatic launch, both go through L2 (ld.global.cg).
TEST(CodegenFileCheck, DecodeAttentionLoadsTheFirstValuesWithTheKeys) {
  KernelSpec d = FusedDecodeAttention8BUnderPdl("decv");
  KernelSpec u = DecodeAttention8B("decu");
  u.kv_f16 = true;
  u.programmatic_launch = true;
  ExpectFileCheck({d, u}, Sm(90), R"(
CHECK-LABEL: .entry decv(
CHECK: griddepcontrol.wait;
CHECK: bar.sync
CHECK-COUNT-8: ld.global.u64
CHECK-NOT: cvt.f32.f16
CHECK-NOT: bar.sync
CHECK: ld.global.v4.u32
CHECK: shfl.sync.bfly
CHECK-LABEL: .entry decu(
CHECK: griddepcontrol.wait;
CHECK: bar.sync
CHECK-COUNT-8: ld.global.cg.u64
CHECK-NOT: cvt.f32.f16
CHECK-NOT: bar.sync
CHECK: ld.global.cg.v4.u32
CHECK: shfl.sync.bfly
)");
}

// keys_in_flight and value_bytes_in_flight: twice the defaults put 16 value
// loads (8 bytes: 4 f16 dims of a row) before the key loop and 8 key loads
// (16 bytes) in flight before the first dot product's shuffles.
TEST(CodegenFileCheck, DecodeAttentionLoadsInFlightFollowTheSchedule) {
  KernelSpec d = FusedDecodeAttention8BUnderPdl("decw");
  d.attention.blocks_per_sm = 1;
  d.attention.keys_in_flight = 8;
  d.attention.value_bytes_in_flight = 128;
  ExpectFileCheck({d}, Sm(90), R"(
CHECK-LABEL: .entry decw(
CHECK: griddepcontrol.wait;
CHECK: bar.sync
CHECK-COUNT-16: ld.global.u64
CHECK-NOT: bar.sync
)" + [] {
    std::string keys;  // 8 key loads, no shuffle among them
    for (int u = 0; u < 8; ++u) keys += "CHECK-NOT: shfl.sync\nCHECK: ld.global.v4.u32\n";
    return keys;
  }() + R"(CHECK-NOT: ld.global.v4.u32
CHECK: shfl.sync.bfly
)");
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

// The register cap counts warps per scheduler partition (16384 registers
// each, a warp in one): 10 warps put 3 in some partition, so 320 threads
// get 16384 / 96 -> 168 registers, not 65536 / 320 -> 200 (a 10-warp block
// at 189 failed to launch on an H200). 8 warps get 65536 / 256 = 256 -> 255;
// 6 warps at 2 blocks an SM 168; 512 threads at 2 blocks 64.
TEST(KernelAbi, MaxRegistersCountWarpsPerPartition) {
  EXPECT_EQ(MaxRegistersPerThread(320, 1), 168);
  EXPECT_EQ(MaxRegistersPerThread(384, 1), 168);
  EXPECT_EQ(MaxRegistersPerThread(256, 1), 255);
  EXPECT_EQ(MaxRegistersPerThread(192, 2), 168);
  EXPECT_EQ(MaxRegistersPerThread(128, 3), 168);
  EXPECT_EQ(MaxRegistersPerThread(512, 2), 64);
  EXPECT_EQ(MaxRegistersPerThread(1024, 1), 64);
  EXPECT_EQ(MaxRegistersPerThread(96, 1), 255);
  KernelSpec s = testing::MatVec("mv10warps", WeightFormat::kQ4_K, 400, 4096, Prologue::kRmsNorm, Epilogue::kStore);
  s.matvec.threads = 320;
  s.matvec.rows_per_block = 40;
  s.matvec.row_groups = 10;
  s.matvec.unroll = 1;
  ExpectFileCheck({s}, Sm(90), R"(
CHECK-LABEL: .entry mv10warps(
CHECK: .maxntid 320, 1, 1
CHECK: .maxnreg 168
)");
}

// attention.blocks_per_sm caps the registers so that many blocks fit an
// SM: 65536 / (256 threads x 2) = 128; by default only the block size
// caps them (255 at 256 threads).
TEST(CodegenFileCheck, DecodeAttentionBlocksPerSmCapsRegisters) {
  KernelSpec two = FusedDecodeAttention8BUnderPdl("dec2");
  two.attention.threads = 256;
  two.attention.blocks_per_sm = 2;
  KernelSpec one = two;
  one.name = "dec1";
  one.attention.blocks_per_sm = 1;
  ExpectFileCheck({two, one}, Sm(90), R"(
CHECK-LABEL: .entry dec2(
CHECK: .maxnreg 128
CHECK-LABEL: .entry dec1(
CHECK: .maxnreg 255
)");
}

// Under programmatic launch a live split asks the L2 for its K and V rows
// of earlier positions before griddepcontrol.wait, one 256-byte bulk
// prefetch per f16 row; with no wait (sm_80) there is nothing to overlap
// and no prefetch.
TEST(CodegenFileCheck, DecodeAttentionPrefetchesOldRowsBeforeTheWait) {
  KernelSpec d = FusedDecodeAttention8BUnderPdl("decq");
  ExpectFileCheck({d}, Sm(90), R"(
CHECK-LABEL: .entry decq(
CHECK: ld.global.cg.u32
CHECK-NOT: griddepcontrol.wait
CHECK: cp.async.bulk.prefetch.L2.global [%rd{{[0-9]+}}], 256;
CHECK: griddepcontrol.wait;
CHECK-NOT: prefetch
CHECK: ret;
)");
  ExpectFileCheck({d}, Sm(80), R"(
CHECK-LABEL: .entry decq(
CHECK-NOT: prefetch
CHECK: ret;
)");
}

TEST(CodegenFileCheck, ArgmaxMergesOnlyWithSeveralBlocks) {
  KernelSpec many;
  many.name = "am_many";
  many.family = Family::kArgmax;
  many.rows = 1;
  many.cols = 151936;
  KernelSpec one = many;
  one.name = "am_one";
  one.elementwise.max_blocks = 1;
  ExpectFileCheck({many, one}, Sm(90),
                  absl::StrCat("CHECK-LABEL: .entry am_many(\n", kLastBlockMerge, "CHECK: ld.volatile.global.f32\n",
                               "CHECK-LABEL: .entry am_one(\nCHECK-NOT: atom.global\nCHECK-NOT: volatile\nCHECK: ret;\n"));
}

TEST(CodegenFileCheck, GemmUsesTensorCoresWhenScheduled) {
  KernelSpec tc = testing::Gemm("g_tc", WeightFormat::kQ4_K, 4096, 4096);
  KernelSpec f32 = testing::Gemm("g_f32", WeightFormat::kQ4_K, 4096, 4096);
  f32.gemm.tensor_cores = false;
  ExpectFileCheck({tc, f32}, Sm(80), R"(
CHECK-LABEL: .entry g_tc(
CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
CHECK-LABEL: .entry g_f32(
CHECK-NOT: mma.sync
CHECK: fma.rn.f32
CHECK: ret;
)");
}

TEST(CodegenFileCheck, RopeUsesReducedAngleAndApproxSinCos) {
  KernelSpec r;
  r.name = "rope";
  r.family = Family::kQkNormRopeStore;
  r.n_head = 32;
  r.n_head_kv = 8;
  r.head_dim = 128;
  ExpectFileCheck({r}, Sm(90), R"(
CHECK: .const .align 8 .b8 rope_inv_freq[512]
CHECK-LABEL: .entry rope(
CHECK: ld.const.f64
CHECK: cvt.rni.f64.f64
CHECK: fma.rn.f64
CHECK: cos.approx.f32
CHECK: sin.approx.f32
CHECK: cvt.rn.f16.f32
)");
}

// ---------------------------------------------------------------------------
// Determinism, dumps, errors.

TEST(Codegen, DeterministicOutput) {
  std::vector<KernelSpec> specs = testing::OtherKernels();
  specs.push_back(testing::MatVecMatrix()[41]);
  specs.push_back(testing::GemmMatrix()[7]);
  absl::StatusOr<CompiledModule> a = EmitPtx(specs, Sm(90));
  absl::StatusOr<CompiledModule> b = EmitPtx(specs, Sm(90));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->ptx, b->ptx);
  // A kernel's PTX does not depend on its neighbours.
  absl::StatusOr<CompiledModule> one = EmitPtx({specs.back()}, Sm(90));
  ASSERT_TRUE(one.ok());
  size_t body = one->ptx.find(".visible .entry");
  ASSERT_NE(body, std::string::npos);
  EXPECT_TRUE(absl::StrContains(a->ptx, one->ptx.substr(body)));
}

TEST(Codegen, DumpsPerKernelIrAndPtx) {
  const std::string dir = TempPath("dump");
  EmitOptions o;
  o.dump_dir = dir;
  std::vector<KernelSpec> specs = {testing::MatVec("dumped_mv", WeightFormat::kQ4_K, 512, 256)};
  absl::StatusOr<CompiledModule> m = EmitPtx(specs, Sm(89), o);
  ASSERT_TRUE(m.ok()) << m.status();
  std::ifstream ll(dir + "/dumped_mv.ll"), ptx(dir + "/dumped_mv.ptx");
  std::string ll_text((std::istreambuf_iterator<char>(ll)), std::istreambuf_iterator<char>());
  std::string ptx_text((std::istreambuf_iterator<char>(ptx)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(absl::StrContains(ll_text, "define ptx_kernel void @dumped_mv("));
  EXPECT_TRUE(absl::StrContains(ptx_text, ".target sm_89"));
  EXPECT_EQ(ptx_text, m->ptx);
  std::filesystem::remove_all(dir);
}

void ExpectBad(const KernelSpec& spec, const std::string& fragment) {
  KernelSpec good = testing::MatVec("good_kernel", WeightFormat::kF16, 64, 64);
  absl::StatusOr<CompiledModule> m = EmitPtx({good, spec}, Sm(90));
  ASSERT_FALSE(m.ok()) << spec.name;
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << m.status();
  EXPECT_TRUE(absl::StrContains(m.status().message(), spec.name)) << m.status();
  EXPECT_TRUE(absl::StrContains(m.status().message(), fragment)) << m.status();
}

// stream_stages copies a warp's 32 consecutive pieces of a row as 16-byte
// cp.async units (emit_matvec.cc): for every format that can stream, that
// span is whole units, and so are its entries of a planar format's scale
// plane (planar Q8_0's 32 scales are 64 bytes, planar Q6_K's 8 d are 16).
TEST(Codegen, StreamedSpansAreWhole16ByteUnits) {
  for (WeightFormat f : testing::AllFormats()) {
    FormatGeometry g = GetFormatGeometry(f);
    if (!StreamableFormat(f)) continue;
    EXPECT_EQ(int64_t{32} * g.block_bytes * g.piece_weights / g.block_elems % 16, 0) << WeightFormatName(f);
    EXPECT_EQ(int64_t{32} * g.piece_weights * g.block_bytes % g.block_elems, 0) << WeightFormatName(f);
    EXPECT_EQ(ScaleRowBytes(f, int64_t{32} * g.piece_weights) % 16, 0) << WeightFormatName(f);
  }
  EXPECT_TRUE(StreamableFormat(WeightFormat::kQ6_KPlanar));
  EXPECT_TRUE(StreamableFormat(WeightFormat::kQ8_0Planar));
  EXPECT_FALSE(StreamableFormat(WeightFormat::kQ6_K));
  EXPECT_FALSE(StreamableFormat(WeightFormat::kQ8_0));
}

TEST(Codegen, BadSpecsAreInvalidArgumentNamingTheKernel) {
  ExpectBad(testing::MatVec("q4k_cols_300", WeightFormat::kQ4_K, 64, 300), "not a multiple of 256");
  ExpectBad(testing::MatVec("q8_cols_48", WeightFormat::kQ8_0Planar, 64, 48), "not a multiple of 32");
  ExpectBad(testing::MatVec("no_rows", WeightFormat::kF16, 0, 64), "must be positive");
  KernelSpec threads = testing::MatVec("threads_100", WeightFormat::kF16, 64, 64);
  threads.matvec.threads = 100;
  ExpectBad(threads, "multiple of 32");
  KernelSpec silu = testing::MatVec("silu_no_group", WeightFormat::kF16, 64, 64, Prologue::kNone,
                                    Epilogue::kSiluMulPairs);
  silu.pair_group = 0;
  ExpectBad(silu, "pair_group");
  KernelSpec silu_rows = testing::MatVec("silu_odd_rows", WeightFormat::kF16, 66, 64, Prologue::kNone,
                                         Epilogue::kSiluMulPairs);
  ExpectBad(silu_rows, "2*pair_group");
  KernelSpec ks = testing::MatVec("ksplit_store", WeightFormat::kF16, 64, 4096);
  ks.matvec.k_split = 2;
  ExpectBad(ks, "k_split");
  KernelSpec tokens = testing::MatVec("tokens_99", WeightFormat::kF16, 64, 64, Prologue::kNone, Epilogue::kStore, 99);
  ExpectBad(tokens, "max_tokens");
  KernelSpec int8_f16 = testing::MatVec("int8_f16", WeightFormat::kF16, 64, 64);
  int8_f16.matvec.int8_activations = true;
  ExpectBad(int8_f16, "int8_activations needs a quantized weight format, not f16");
  KernelSpec tiles = testing::MatVec("tiles_unstaged", WeightFormat::kQ4_K, 64, 256);
  tiles.matvec.row_tiles = 2;
  ExpectBad(tiles, "row_tiles > 1 needs stage_all");
  KernelSpec stream = testing::MatVec("stream_ok", WeightFormat::kQ4_K, 64, 4096);
  stream.matvec.threads = 64;
  stream.matvec.unroll = 1;
  stream.matvec.stage_all = true;
  stream.matvec.stream_stages = 3;
  EXPECT_TRUE(EmitPtx({stream}, Sm(90)).ok());
  KernelSpec one_stage = stream;
  one_stage.name = "stream_1";
  one_stage.matvec.stream_stages = 1;
  ExpectBad(one_stage, "stream_stages = 1 must be 0 or in [2, 8]");
  KernelSpec staged = stream;
  staged.name = "stream_q6_k";
  staged.weight = WeightFormat::kQ6_K;
  ExpectBad(staged, "stream_stages needs a 16-byte aligned weight format (not the 2-byte aligned GGUF blocks), "
                    "not q6_k");
  KernelSpec planar_q6 = stream;  // planar Q6_K streams its data plane and d plane
  planar_q6.name = "stream_q6_kp";
  planar_q6.weight = WeightFormat::kQ6_KPlanar;
  EXPECT_TRUE(EmitPtx({planar_q6}, Sm(90)).ok());
  KernelSpec chunked = stream;
  chunked.name = "stream_chunked";
  chunked.matvec.stage_all = false;
  ExpectBad(chunked, "stream_stages needs stage_all");
  KernelSpec uneven = stream;
  uneven.name = "stream_uneven";
  uneven.matvec.threads = 128;
  uneven.matvec.unroll = 3;
  ExpectBad(uneven, "not whole chunks");
  KernelSpec early = stream;
  early.name = "release_unstreamed";
  early.matvec.stream_stages = 0;
  early.matvec.release_early = true;
  ExpectBad(early, "release_early needs stream_stages");
  KernelSpec many = stream;
  many.name = "stream_9";
  many.matvec.stream_stages = 9;
  ExpectBad(many, "stream_stages = 9 must be 0 or in [2, 8]");
  KernelSpec deep = stream;  // 4 stages x 2 warps x 32 rows x 1152-byte spans = 288 KiB
  deep.name = "stream_deep";
  deep.matvec.rows_per_block = 32;
  deep.matvec.stream_stages = 4;
  ExpectBad(deep, "bytes of shared memory (sm_90 has 232448)");
  KernelSpec piped = testing::MatVec("pipeline_ok", WeightFormat::kQ4_K, 64, 4096);
  piped.matvec.threads = 64;
  piped.matvec.unroll = 1;
  piped.matvec.pipeline_loads = true;
  EXPECT_TRUE(EmitPtx({piped}, Sm(90)).ok());
  KernelSpec piped_staged = piped;
  piped_staged.name = "pipeline_q6_k";
  piped_staged.weight = WeightFormat::kQ6_K;
  ExpectBad(piped_staged, "pipeline_loads needs a weight format loaded straight into registers, not q6_k");
  KernelSpec piped_uneven = piped;
  piped_uneven.name = "pipeline_uneven";
  piped_uneven.matvec.unroll = 3;
  ExpectBad(piped_uneven, "matvec.pipeline_loads: a split's 64 pieces are not whole chunks");
  // Every pipelined and streamed case of the GPU test is a valid spec that
  // LLVM compiles.
  absl::StatusOr<CompiledModule> pipelined = EmitPtx(testing::PipelinedMatVecs(), Sm(90));
  EXPECT_TRUE(pipelined.ok()) << pipelined.status();
  absl::StatusOr<CompiledModule> streamed = EmitPtx(testing::StreamedMatVecs(), Sm(90));
  EXPECT_TRUE(streamed.ok()) << streamed.status();
  KernelSpec rows_alone = piped;
  rows_alone.name = "pipeline_rows_alone";
  rows_alone.matvec.pipeline_loads = false;
  rows_alone.matvec.pipeline_rows = true;
  ExpectBad(rows_alone, "matvec.pipeline_rows needs pipeline_loads");
  KernelSpec capped = piped;
  capped.name = "matvec_blocks_per_sm";
  capped.matvec.blocks_per_sm = 33;
  ExpectBad(capped, "matvec.blocks_per_sm = 33 must be >= 1 and leave blocks_per_sm * threads <= 2048");
  capped.matvec.blocks_per_sm = 2;  // 64 threads: 512 registers a thread caps nothing
  ExpectBad(capped, "matvec.blocks_per_sm = 2 caps nothing at 64 threads (a thread may still use all 255 registers)");
  KernelSpec warp = piped;
  warp.name = "warp_reduce_2_warps";
  warp.matvec.warp_reduce = true;  // 64 threads, one group
  ExpectBad(warp, "matvec.warp_reduce needs a warp per row group (threads = 32 x row_groups), not 64 threads in 1");
  KernelSpec warp_rms = testing::MatVec("warp_reduce_rms", WeightFormat::kQ4_K, 64, 4096, Prologue::kRmsNorm);
  warp_rms.matvec.threads = 64;
  warp_rms.matvec.row_groups = 2;
  warp_rms.matvec.rows_per_block = 8;
  warp_rms.matvec.warp_reduce = true;
  ExpectBad(warp_rms, "matvec.warp_reduce with RMSNorm needs stage_all");
  KernelSpec warp_pairs = warp_rms;  // the same 2 groups of 4 rows, pairs of 4 + 4 rows
  warp_pairs.name = "warp_reduce_pairs";
  warp_pairs.prologue = Prologue::kNone;
  warp_pairs.epilogue = Epilogue::kSiluMulPairs;
  warp_pairs.pair_group = 4;
  ExpectBad(warp_pairs, "matvec.warp_reduce with SiLU pairs needs whole pairs in a group: 4 rows a group, pair_group 4");
  absl::StatusOr<CompiledModule> warps = EmitPtx(testing::WarpReduceMatVecs(), Sm(90));
  EXPECT_TRUE(warps.ok()) << warps.status();
  EXPECT_GE(testing::WarpReduceMatVecs().size(), 20u);
  // Matvec joins: valid parts that one launch can run.
  absl::StatusOr<CompiledModule> joins = EmitPtx(testing::MatVecJoins(), Sm(90));
  EXPECT_TRUE(joins.ok()) << joins.status();
  KernelSpec lone = testing::MatVecJoins()[0];
  lone.name = "join_of_one";
  lone.parts.pop_back();
  ExpectBad(lone, "a matvec join needs at least 2 parts, has 1");
  KernelSpec mixed_threads = testing::MatVecJoins()[0];
  mixed_threads.name = "join_mixed_threads";
  mixed_threads.parts[1].matvec.threads = 128;
  mixed_threads.parts[1].matvec.row_groups = 2;
  ExpectBad(mixed_threads, "part 1's threads, blocks_per_sm, k_split and max_tokens (128, 1, 1, 1) differ from "
                           "part 0's (256, 1, 1, 1): one launch has one of each");
  KernelSpec bad_part = testing::MatVecJoins()[0];
  bad_part.name = "join_bad_part";
  bad_part.parts[1].matvec.row_groups = 3;
  ExpectBad(bad_part, "part 1: kernel 'join_bad_part_p1' (matvec): matvec.row_groups = 3");
  KernelSpec not_matvec = testing::MatVecJoins()[0];
  not_matvec.name = "join_of_a_gemm";
  not_matvec.parts[0].family = Family::kGemm;
  ExpectBad(not_matvec, "part 0 is a gemm kernel, not a matvec");
  KernelSpec nested = testing::MatVecJoins()[0];
  nested.name = "join_nested";
  nested.parts[0].parts = {testing::MatVecJoins()[0].parts[0]};
  ExpectBad(nested, "part 0 is a matvec with parts kernel, not a matvec");
  KernelSpec parts_elsewhere = testing::MatVec("matvec_with_parts", WeightFormat::kF16, 64, 64);
  parts_elsewhere.parts = testing::MatVecJoins()[0].parts;
  ExpectBad(parts_elsewhere, "parts are for matvec_join only");
  KernelSpec piped_streamed = stream;
  piped_streamed.name = "pipeline_streamed";
  piped_streamed.matvec.pipeline_loads = true;
  ExpectBad(piped_streamed, "pipeline_loads and stream_stages exclude each other");
  KernelSpec gemm = testing::Gemm("gemm_tile_k_32_q6k", WeightFormat::kQ6_K, 256, 256);
  gemm.gemm.tile_k = 32;
  ExpectBad(gemm, "column window");
  KernelSpec three = testing::Gemm("gemm_3_stages", WeightFormat::kF16, 256, 256);
  three.gemm.stages = 3;
  ExpectBad(three, "gemm.stages = 3 must be 1 or 2");
  // 64 x 64 x 128 on 128 threads: 16 f32 pieces and 16 activation quads a
  // thread, 128 registers in flight.
  KernelSpec deep_k = testing::Gemm("gemm_2_stages_deep", WeightFormat::kF32, 256, 256);
  deep_k.gemm.stages = 2;
  ExpectBad(deep_k, "holds a thread's share of the next k tile in 128 registers, more than 96");
  KernelSpec embed;
  embed.name = "embed_planar";
  embed.family = Family::kEmbed;
  embed.weight = WeightFormat::kQ8_0Planar;
  embed.rows = 10;
  embed.cols = 64;
  ExpectBad(embed, "q8_0p's planes");
  embed.name = "embed_q6_k_planar";
  embed.weight = WeightFormat::kQ6_KPlanar;
  embed.cols = 256;
  ExpectBad(embed, "q6_kp's planes");
  KernelSpec pack6;
  pack6.name = "pack_q6_k_cols_300";
  pack6.family = Family::kPackQ6_K;
  pack6.cols = 300;
  ExpectBad(pack6, "multiple of 256");
  KernelSpec heads;
  heads.name = "gqa_5_on_2";
  heads.family = Family::kAttentionDecode;
  heads.n_head = 5;
  heads.n_head_kv = 2;
  heads.head_dim = 128;
  ExpectBad(heads, "n_head");
  KernelSpec hd = heads;
  hd.name = "head_dim_100";
  hd.n_head = 4;
  hd.head_dim = 100;
  ExpectBad(hd, "head_dim");
  KernelSpec big = heads;
  big.name = "decode_too_much_smem";
  big.n_head = 4;
  big.attention.split_positions = 4096;
  ExpectBad(big, "shared memory");
  KernelSpec short_cap = heads;
  short_cap.name = "decode_min_split_above_cap";
  short_cap.n_head = 4;
  short_cap.attention.split_positions = 32;
  short_cap.attention.min_split_positions = 64;
  ExpectBad(short_cap, "min_split_positions");
  KernelSpec crowded = heads;
  crowded.name = "decode_blocks_per_sm_9";
  crowded.n_head = 4;
  crowded.attention.threads = 256;
  crowded.attention.blocks_per_sm = 9;
  ExpectBad(crowded, "attention.blocks_per_sm = 9 must be >= 1 and leave blocks_per_sm * threads <= 2048");
  crowded.attention.blocks_per_sm = 0;
  ExpectBad(crowded, "attention.blocks_per_sm = 0");
  crowded.attention.threads = 128;
  crowded.attention.blocks_per_sm = 2;
  ExpectBad(crowded, "attention.blocks_per_sm = 2 caps nothing at 128 threads (a thread may still use all 255");
  KernelSpec released = heads;
  released.name = "decode_release_without_pdl";
  released.n_head = 4;
  released.attention.release_after_wait = true;
  ExpectBad(released, "release_after_wait needs programmatic launch");
  released.programmatic_launch = true;
  released.family = Family::kAttentionPrefill;
  ExpectBad(released, "release_after_wait is a decode attention field");
  KernelSpec loads = heads;
  loads.name = "decode_loads_in_flight";
  loads.n_head = 4;
  loads.attention.keys_in_flight = 0;
  ExpectBad(loads, "attention.keys_in_flight = 0 must be in [1, 16]");
  loads.attention.keys_in_flight = 17;
  ExpectBad(loads, "attention.keys_in_flight = 17 must be in [1, 16]");
  loads.attention.keys_in_flight = 16;
  loads.kv_f16 = false;
  loads.attention.value_bytes_in_flight = 24;
  ExpectBad(loads, "attention.value_bytes_in_flight = 24 must be a positive multiple of 16 (4 dims of a f32 row a "
                   "load), at most 256");
  loads.attention.value_bytes_in_flight = 0;
  ExpectBad(loads, "attention.value_bytes_in_flight = 0 must be a positive multiple of 16");
  loads.attention.value_bytes_in_flight = 272;
  ExpectBad(loads, "attention.value_bytes_in_flight = 272");
  loads.attention.value_bytes_in_flight = 256;
  EXPECT_TRUE(ValidateKernelSpec(loads, Sm(90)).ok());
  loads.kv_f16 = true;  // one f16 row: 8 bytes
  loads.attention.value_bytes_in_flight = 24;
  EXPECT_TRUE(ValidateKernelSpec(loads, Sm(90)).ok());
  loads.attention.value_bytes_in_flight = 4;
  ExpectBad(loads, "attention.value_bytes_in_flight = 4 must be a positive multiple of 8 (4 dims of a f16 row");
  KernelSpec tiled = heads;
  tiled.name = "prefill_staged";
  tiled.n_head = 4;
  tiled.family = Family::kAttentionPrefill;
  tiled.attention.stage_keys = true;
  tiled.attention.threads = 128;
  tiled.attention.query_block = 10;
  ExpectBad(tiled, "attention.query_block = 10 must be a multiple of the 4 warps");
  tiled.attention.query_block = 64;
  ExpectBad(tiled, "attention.query_block = 64 puts 16 queries on a warp with stage_keys");
  tiled.attention.threads = 1024;
  tiled.attention.query_block = 256;  // 8 queries, 80 registers of state against 64
  ExpectBad(tiled, "8 queries on a warp with stage_keys (80 registers of state a thread)");
  tiled.attention.threads = 128;
  tiled.attention.query_block = 16;
  tiled.attention.key_block = 6;
  ExpectBad(tiled, "key_block must be a positive multiple of 4");
  tiled.attention.key_block = 128;
  tiled.kv_f16 = false;
  ExpectBad(tiled, "stage_keys needs 131072 bytes of shared memory (> 48 KiB)");
  tiled.family = Family::kAttentionDecode;
  ExpectBad(tiled, "attention.stage_keys is a prefill attention field");
  KernelSpec odd = heads;
  odd.name = "prefill_head_dim_96";
  odd.n_head = 4;
  odd.head_dim = 96;
  odd.family = Family::kAttentionPrefill;
  ExpectBad(odd, "head_dim = 96: prefill attention takes 32, 64 or a multiple of 128");
  KernelSpec fused_base = heads;
  fused_base.name = "fused_low_base";
  fused_base.n_head = 4;
  fused_base.rope_fused = true;
  fused_base.rope_base = 1.0f;
  ExpectBad(fused_base, "rope_base");
  KernelSpec fused_scale = fused_base;
  fused_scale.name = "fused_zero_freq_scale";
  fused_scale.rope_base = 10000.0f;
  fused_scale.rope_scaling.freq_scale = 0.0f;
  ExpectBad(fused_scale, "rope_scaling: freq_scale and mscale must be finite and > 0");
  fused_scale.rope_scaling.freq_scale = 1.0f;
  fused_scale.rope_scaling.mscale = std::nanf("");
  ExpectBad(fused_scale, "rope_scaling");
  KernelSpec fused_prefill = fused_base;
  fused_prefill.name = "fused_prefill";
  fused_prefill.family = Family::kAttentionPrefill;
  fused_prefill.rope_base = 10000.0f;
  ExpectBad(fused_prefill, "rope_fused");
  KernelSpec am;
  am.name = "argmax_no_blocks";
  am.family = Family::kArgmax;
  am.rows = 1;
  am.cols = 100;
  am.elementwise.max_blocks = 0;
  ExpectBad(am, "max_blocks");
  KernelSpec copy;
  copy.name = "copy_no_bytes";
  copy.family = Family::kCopyRows;
  ExpectBad(copy, "row_bytes");
}

TEST(Codegen, NamesMustBeUniqueIdentifiers) {
  KernelSpec a = testing::MatVec("same", WeightFormat::kF16, 64, 64);
  absl::StatusOr<CompiledModule> m = EmitPtx({a, a}, Sm(90));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(m.status().message(), "same"));
  KernelSpec bad = testing::MatVec("not-an-identifier", WeightFormat::kF16, 64, 64);
  m = EmitPtx({bad}, Sm(90));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(m.status().message(), "not-an-identifier"));
  EXPECT_EQ(EmitPtx({}, Sm(90)).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Codegen, PtxasRejectionIsAClearError) {
  if (!FindPtxas()) GTEST_SKIP() << "ptxas not installed";
  PtxasReport report;
  absl::StatusOr<std::string> c =
      RunPtxas(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus.instruction; }\n", Sm(90),
               &report);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(c.status().message(), "ptxas rejected")) << c.status();
  EXPECT_TRUE(absl::StrContains(c.status().message(), "bogus")) << c.status();
}

TEST(Codegen, TargetNames) {
  EXPECT_EQ(Target::FromName("sm_86")->Name(), "sm_86");
  EXPECT_EQ(Target::FromName("90")->Name(), "sm_90");
  EXPECT_TRUE(Target::FromName("sm_90")->HasGridDependencyControl());
  EXPECT_FALSE(Target::FromName("sm_89")->HasGridDependencyControl());
  EXPECT_EQ(Target::FromName("sm_75").status().code(), absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// ABI.

TEST(CodegenAbi, MatVecParamsAndLaunch) {
  KernelSpec s = testing::MatVec("mv", WeightFormat::kQ4_K, 6146, 4096, Prologue::kRmsNorm);
  absl::StatusOr<KernelAbi> abi = DescribeKernel(s, Sm(90));
  ASSERT_TRUE(abi.ok()) << abi.status();
  std::vector<std::string> names;
  for (const KernelParam& p : abi->params) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"w", "w_scales", "x", "norm_w", "out", "T"}));
  EXPECT_EQ(abi->params[4].offset, 32);
  EXPECT_EQ(abi->params[5].type, ParamType::kI32);
  EXPECT_EQ(abi->params[5].offset, 40);
  EXPECT_EQ(abi->block[0], 256);
  EXPECT_EQ(abi->grid[0].Eval(1), 1537);  // ceil(6146 / 4)
  EXPECT_EQ(abi->grid[1].Eval(1), 1);
  EXPECT_EQ(abi->dynamic_shared_bytes, 4096 * 4 + 4096 / 64 * 16);  // x staged, padded per window
}

// A matvec join takes its parts' parameters in order, each prefixed with
// its index, and runs their blocks one after another along x on one block
// size, with the largest part's static and dynamic shared memory.
TEST(CodegenAbi, MatVecJoinConcatenatesItsParts) {
  const KernelSpec join = testing::MatVecJoins()[0];  // 8B q/k (Q4_K) + v (planar Q6_K)
  absl::StatusOr<KernelAbi> abi = DescribeKernel(join, Sm(90));
  ASSERT_TRUE(abi.ok()) << abi.status();
  std::vector<std::string> names;
  for (const KernelParam& p : abi->params) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"p0_w", "p0_w_scales", "p0_x", "p0_norm_w", "p0_out", "p0_T", "p1_w",
                                             "p1_w_scales", "p1_x", "p1_norm_w", "p1_out", "p1_T"}));
  EXPECT_EQ(abi->params[6].offset, 48);  // after p0_T (offset 40) padded to 8
  absl::StatusOr<KernelAbi> a = DescribeKernel(JoinPart(join, 0), Sm(90));
  absl::StatusOr<KernelAbi> b = DescribeKernel(JoinPart(join, 1), Sm(90));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->grid[0].Eval(1), 214);  // ceil(5120 / 24)
  EXPECT_EQ(b->grid[0].Eval(1), 128);  // 1024 / 8
  EXPECT_EQ(abi->grid[0].Eval(1), 214 + 128);
  EXPECT_EQ(abi->grid[1].Eval(1), 1);
  EXPECT_EQ(abi->block[0], 256);
  EXPECT_EQ(abi->static_shared_bytes, std::max(a->static_shared_bytes, b->static_shared_bytes));
  EXPECT_EQ(abi->dynamic_shared_bytes, std::max(a->dynamic_shared_bytes, b->dynamic_shared_bytes));
  EXPECT_NE(a->dynamic_shared_bytes, b->dynamic_shared_bytes);  // int8 against float staging
  EXPECT_EQ(JoinPart(join, 1).name, "mvjoin_8b_qkv_p1");
}

TEST(CodegenAbi, SiluMulWithTakesTheGateLast) {
  KernelSpec s = testing::MatVec("up", WeightFormat::kQ4_K, 768, 256, Prologue::kRmsNorm, Epilogue::kSiluMulWith);
  absl::StatusOr<KernelAbi> abi = DescribeKernel(s, Sm(90));
  ASSERT_TRUE(abi.ok()) << abi.status();
  ASSERT_EQ(abi->params.size(), 7u);
  EXPECT_EQ(abi->params[5].name, "T");
  EXPECT_EQ(abi->params[6].name, "extra");
  EXPECT_EQ(abi->params[6].offset, 48);
}

TEST(CodegenAbi, GridExpressions) {
  KernelSpec g = testing::Gemm("g", WeightFormat::kF16, 1000, 256);
  absl::StatusOr<KernelAbi> abi = DescribeKernel(g, Sm(90));
  ASSERT_TRUE(abi.ok());
  EXPECT_EQ(abi->grid[0].Eval(70), 16);
  EXPECT_EQ(abi->grid[1].Eval(70), 2);
  EXPECT_EQ(abi->grid[1].ToString(), "ceil((T)/64)");
  EXPECT_GT(abi->dynamic_shared_bytes, 0);
  KernelSpec c;
  c.name = "c";
  c.family = Family::kCopyRows;
  c.row_bytes = 64;
  abi = DescribeKernel(c, Sm(90));
  ASSERT_TRUE(abi.ok());
  EXPECT_EQ(abi->grid[0].Eval(1, 77), 77);
  EXPECT_EQ(abi->grid[0].ToString(), "rows");
  KernelSpec d = DecodeAttention8B("d");
  abi = DescribeKernel(d, Sm(90));
  ASSERT_TRUE(abi.ok());
  EXPECT_EQ(abi->params.size(), 7u);
  EXPECT_EQ(abi->params[0].name, "q");
  EXPECT_EQ(abi->grid[0].Eval(1), 8);
  EXPECT_EQ(abi->grid[1].Eval(1), 64);
  // Fused: the raw qkv row first, the norm weights last; the same grid.
  d.rope_fused = true;
  abi = DescribeKernel(d, Sm(90));
  ASSERT_TRUE(abi.ok()) << abi.status();
  ASSERT_EQ(abi->params.size(), 9u);
  EXPECT_EQ(abi->params[0].name, "qkv");
  EXPECT_EQ(abi->params[7].name, "q_norm");
  EXPECT_EQ(abi->params[8].name, "k_norm");
  EXPECT_EQ(abi->grid[0].Eval(1), 8);
  EXPECT_EQ(abi->grid[1].Eval(1), 64);
  // Argmax: rows x min(max_blocks, ceil(cols / block_cols)) blocks.
  KernelSpec am;
  am.name = "am";
  am.family = Family::kArgmax;
  am.rows = 2;
  am.cols = 151936;
  abi = DescribeKernel(am, Sm(90));
  ASSERT_TRUE(abi.ok());
  EXPECT_EQ(abi->params.size(), 5u);
  EXPECT_EQ(abi->params[2].name, "partial");
  EXPECT_EQ(abi->params[3].name, "counter");
  EXPECT_EQ(abi->grid[0].Eval(1), 2);
  EXPECT_EQ(abi->grid[1].Eval(1), 75);  // ceil(151936 / 2048)
  am.elementwise.block_cols = 64;
  EXPECT_EQ(DescribeKernel(am, Sm(90))->grid[1].Eval(1), 128);  // the cap
  am.cols = 5;
  EXPECT_EQ(DescribeKernel(am, Sm(90))->grid[1].Eval(1), 1);
}

// ---------------------------------------------------------------------------
// Reference kernels (the GPU tests' oracle).

TEST(ReferenceKernels, MatVecPlanarAndSiluPairs) {
  // 4 rows x 32 cols, Q8_0 planar with scale 0.5: rows 0,1 are gates, 2,3 ups.
  KernelSpec s = testing::MatVec("ref", WeightFormat::kQ8_0Planar, 4, 32, Prologue::kNone, Epilogue::kSiluMulPairs);
  s.pair_group = 2;
  std::vector<int8_t> qs(4 * 32, 0);
  qs[0 * 32 + 0] = 2;   // gate 0 = 2 * 0.5 * x0 = 1
  qs[1 * 32 + 1] = -4;  // gate 1 = -2 * x1 = -2
  qs[2 * 32 + 0] = 6;   // up 0 = 3
  qs[3 * 32 + 1] = 8;   // up 1 = 4
  std::vector<uint16_t> d(4, quant::FloatToHalf(0.5f));
  std::vector<float> x(32, 0.0f);
  x[0] = 1.0f;
  x[1] = 1.0f;
  std::vector<float> out(2, NAN);
  ASSERT_TRUE(reference::MatVec(s, qs.data(), d.data(), x.data(), nullptr, out.data(), 1).ok());
  auto silu = [](double z) { return z / (1 + std::exp(-z)); };
  EXPECT_NEAR(out[0], silu(1.0) * 3.0, 1e-6);
  EXPECT_NEAR(out[1], silu(-2.0) * 4.0, 1e-6);
}

TEST(ReferenceKernels, SiluMulWithMultipliesTheGate) {
  KernelSpec s = testing::MatVec("ref", WeightFormat::kF32, 2, 4, Prologue::kNone, Epilogue::kSiluMulWith);
  std::vector<float> w = {1, 0, 0, 0, 0, 1, 0, 0}, x = {3, 5, 0, 0}, gate = {0, 2}, out(2, NAN);
  ASSERT_TRUE(reference::MatVec(s, w.data(), nullptr, x.data(), nullptr, out.data(), 1, gate.data()).ok());
  EXPECT_FLOAT_EQ(out[0], 0.0f);  // silu(0) * 3
  EXPECT_NEAR(out[1], 2.0 / (1 + std::exp(-2.0)) * 5.0, 1e-6);
}

TEST(ReferenceKernels, RmsNormPrologueAndResidualAdd) {
  KernelSpec s = testing::MatVec("ref", WeightFormat::kF32, 1, 4, Prologue::kRmsNorm, Epilogue::kAddInPlace);
  std::vector<float> w = {1, 1, 1, 1}, x = {1, 1, 1, 1}, nw = {1, 2, 3, 4}, out = {10};
  s.eps = 0.0f;
  ASSERT_TRUE(reference::MatVec(s, w.data(), nullptr, x.data(), nw.data(), out.data(), 1).ok());
  EXPECT_FLOAT_EQ(out[0], 20.0f);  // rms(x) = 1, sum(nw) = 10
}

TEST(ReferenceKernels, ArgmaxAndCopyRows) {
  KernelSpec a;
  a.name = "a";
  a.family = Family::kArgmax;
  a.rows = 2;
  std::vector<float> l = {1, 3, 3, NAN, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  std::vector<int32_t> out(2, -1);
  ASSERT_TRUE(reference::Argmax(a, l.data(), out.data(), 4).ok());
  EXPECT_EQ(out, (std::vector<int32_t>{1, 0}));
  KernelSpec c;
  c.name = "c";
  c.family = Family::kCopyRows;
  c.row_bytes = 1;
  std::vector<uint8_t> src = {10, 11, 12, 13}, dst(8, 0);
  // gate/up interleave with pair_group 2: up rows go to 2,3,6,7.
  ASSERT_TRUE(reference::CopyRows(c, src.data(), dst.data(), 4, 2, 2, 4).ok());
  EXPECT_EQ(dst, (std::vector<uint8_t>{0, 0, 10, 11, 0, 0, 12, 13}));
}

// kQ6_KPlanar's layout (kPackQ6_K, the reference the GPU tests compare
// against): random GGUF Q6_K rows packed into planes decode to the same
// weights row by row, the bytes after the planes' rows keep their poison,
// and a matvec over the planes equals one over the GGUF rows.
TEST(ReferenceKernels, PackQ6_KPlanesDecodeToTheGgufRows) {
  const int64_t cols = 512, nb = cols / 256;
  const int32_t rows = 6;
  std::mt19937 rng(11);
  std::vector<uint8_t> gguf(size_t(rows * nb * 210));
  for (uint8_t& b : gguf) b = static_cast<uint8_t>(rng());
  for (int64_t b = 0; b < rows * nb; ++b) {
    const uint16_t d = quant::FloatToHalf(0.001f * static_cast<float>(1 + b % 7));
    std::memcpy(gguf.data() + b * 210 + 208, &d, 2);
  }
  KernelSpec pack;
  pack.name = "pack6";
  pack.family = Family::kPackQ6_K;
  pack.cols = cols;
  // One row of poison past each plane.
  std::vector<uint8_t> data(size_t((rows + 1) * nb * 208), 0xAB), d(size_t((rows + 1) * nb * 2), 0xAB);
  ASSERT_TRUE(reference::PackQ6_K(pack, gguf.data(), data.data(), d.data(), rows).ok());
  for (int32_t i = 0; i < rows; ++i) {
    std::vector<float> want(static_cast<size_t>(cols)), got(static_cast<size_t>(cols));
    ASSERT_TRUE(reference::DequantizeRow(WeightFormat::kQ6_K, gguf.data(), nullptr, cols, i, want.data()).ok());
    ASSERT_TRUE(reference::DequantizeRow(WeightFormat::kQ6_KPlanar, data.data(), d.data(), cols, i, got.data()).ok());
    EXPECT_EQ(got, want) << "row " << i;
  }
  for (size_t k = size_t(rows * nb * 208); k < data.size(); ++k) ASSERT_EQ(data[k], 0xAB) << k;
  for (size_t k = size_t(rows * nb * 2); k < d.size(); ++k) ASSERT_EQ(d[k], 0xAB) << k;
  KernelSpec mv = testing::MatVec("mv", WeightFormat::kQ6_K, rows, cols, Prologue::kNone, Epilogue::kStore);
  KernelSpec mvp = mv;
  mvp.weight = WeightFormat::kQ6_KPlanar;
  std::vector<float> x(static_cast<size_t>(cols));
  for (float& v : x) v = static_cast<float>(rng() % 2001) / 1000.0f - 1.0f;
  std::vector<float> a(size_t(rows), NAN), b(size_t(rows), NAN);
  ASSERT_TRUE(reference::MatVec(mv, gguf.data(), nullptr, x.data(), nullptr, a.data(), 1).ok());
  ASSERT_TRUE(reference::MatVec(mvp, data.data(), d.data(), x.data(), nullptr, b.data(), 1).ok());
  EXPECT_EQ(a, b);
  for (float v : a) EXPECT_TRUE(std::isfinite(v));
}

TEST(ReferenceKernels, RopeRotatesPairsHalfADimApart) {
  KernelSpec r;
  r.name = "r";
  r.family = Family::kQkNormRopeStore;
  r.n_head = 1;
  r.n_head_kv = 1;
  r.head_dim = 4;
  r.rope_base = 100.0f;
  r.kv_f16 = false;
  r.eps = 0.0f;
  // q = (1, 0, 0, 0) normalizes to (2, 0, 0, 0); at position 3, pair (0, 2)
  // rotates by 3 rad.
  std::vector<float> qkv = {1, 0, 0, 0, 0, 1, 0, 0, 5, 6, 7, 8};
  std::vector<float> ones(4, 1.0f), q(4);
  std::vector<float> k(4 * 4, 0.0f), v(4 * 4, 0.0f);
  int32_t pos = 3;
  ASSERT_TRUE(reference::QkNormRopeStore(r, qkv.data(), ones.data(), ones.data(), &pos, k.data(), v.data(), q.data(), 1)
                  .ok());
  EXPECT_NEAR(q[0], 2 * std::cos(3.0), 1e-6);
  EXPECT_NEAR(q[2], 2 * std::sin(3.0), 1e-6);
  // k = (0, 1, 0, 0) -> 2 at dim 1, pair (1, 3) rotates by 3 * 100^(-1/2).
  EXPECT_NEAR(k[3 * 4 + 1], 2 * std::cos(0.3), 1e-6);
  EXPECT_NEAR(k[3 * 4 + 3], 2 * std::sin(0.3), 1e-6);
  EXPECT_EQ(v[3 * 4 + 0], 5.0f);
  EXPECT_EQ(v[3 * 4 + 3], 8.0f);
  // YaRN with its ramp over pairs [0, 1]: pair 0 keeps its angle (mix 1),
  // pair 1 is interpolated by the factor 2 (mix 0), both scaled by 1.5.
  r.rope_scaling = {0.5f, 1.0f, 0.0f, 1.0f, 1.5f};
  ASSERT_TRUE(reference::QkNormRopeStore(r, qkv.data(), ones.data(), ones.data(), &pos, k.data(), v.data(), q.data(), 1)
                  .ok());
  EXPECT_NEAR(q[0], 3 * std::cos(3.0), 1e-6);
  EXPECT_NEAR(q[2], 3 * std::sin(3.0), 1e-6);
  EXPECT_NEAR(k[3 * 4 + 1], 3 * std::cos(0.15), 1e-6);
  EXPECT_NEAR(k[3 * 4 + 3], 3 * std::sin(0.15), 1e-6);
}

// The RoPE kernels' frequency table: plain, linear (every pair divided by
// the factor) and YaRN, whose ramp over pairs [3, 12] keeps pairs below 3
// unscaled (mix 1), divides those above 12 by the factor (mix 0) and mixes
// linearly between: pair 7 has mix 1 - (7 - 3)/9 = 5/9, so its frequency
// is base^(-14/64) (1/8 (1 - 5/9) + 5/9).
TEST(Codegen, RopeFrequenciesFoldTheScaling) {
  KernelSpec s;
  s.head_dim = 64;
  s.rope_base = 1e6f;
  auto unscaled = [](int i) { return std::pow(1e6, -2.0 * i / 64); };
  std::vector<double> plain = RopeFrequencies(s);
  ASSERT_EQ(plain.size(), 32u);
  for (int i : {0, 7, 31}) EXPECT_DOUBLE_EQ(plain[size_t(i)], unscaled(i)) << i;
  s.rope_scaling.freq_scale = 0.25f;
  std::vector<double> linear = RopeFrequencies(s);
  for (int i : {0, 7, 31}) EXPECT_DOUBLE_EQ(linear[size_t(i)], unscaled(i) / 4) << i;
  s.rope_scaling = {0.125f, 1.0f, 3.0f, 12.0f, 1.0871497f};
  std::vector<double> yarn = RopeFrequencies(s);
  for (int i : {0, 2, 3}) EXPECT_DOUBLE_EQ(yarn[size_t(i)], unscaled(i)) << i;
  for (int i : {12, 20, 31}) EXPECT_DOUBLE_EQ(yarn[size_t(i)], unscaled(i) / 8) << i;
  EXPECT_NEAR(yarn[7] / unscaled(7), 0.125 * (4.0 / 9) + 5.0 / 9, 1e-12);
}

}  // namespace
}  // namespace kiln::codegen
