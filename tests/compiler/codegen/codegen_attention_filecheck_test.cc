// FileCheck on the attention kernels' PTX (the decode attention's merge,
// coherent cache reads, loads before the wait and in flight; the prefill
// attention's staged keys), and on argmax, the GEMM and RoPE.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/codegen.h"
#include "gtest/gtest.h"
#include "tests/compiler/codegen/filecheck.h"
#include "tests/compiler/codegen/test_specs.h"

namespace kiln::codegen {
namespace {

using testing::DecodeAttention8B;
using testing::ExpectFileCheck;
using testing::Sm;

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

}  // namespace
}  // namespace kiln::codegen
