// compiler/codegen on the CPU: output is deterministic; bad specs are
// InvalidArgument naming the kernel; the ABI behaves as documented. (FileCheck:
// codegen_*_filecheck_test.cc; the reference kernels: reference_kernels_test.cc;
// ptxas over every kernel: codegen_ptxas_test.cc.)
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/kernel_validation.h"
#include "gtest/gtest.h"
#include "tests/compiler/codegen/filecheck.h"
#include "tests/compiler/codegen/test_specs.h"

namespace kiln::codegen {
namespace {

using testing::DecodeAttention8B;
using testing::ExpectFileCheck;
using testing::Sm;

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / absl::StrCat("kiln-codegen-test-", ::getpid(), "-", name)).string();
}

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
