// Tests for runtime/bundle/validator.h. Every rule is one case that starts
// from the valid manifest of test_manifest.h (which must pass), breaks one
// thing, and expects an InvalidArgument naming that thing; boundary cases
// that must still pass sit beside them.
#include "runtime/bundle/validator.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/bundle/expr.h"
#include "tests/runtime/test_manifest.h"

namespace kiln::runtime {
namespace {

using ::kiln::testing::kValidFileSize;
using ::kiln::testing::MakeValidManifest;
using ::testing::HasSubstr;
namespace t = ::kiln::testing;

TEST(ValidatorTest, AcceptsTheTestManifest) {
  absl::Status s = ValidateManifest(MakeValidManifest(), kValidFileSize);
  EXPECT_TRUE(s.ok()) << s;
}

TEST(ValidatorTest, AcceptsAnEmptyLoadPlan) {
  Manifest m = MakeValidManifest();
  m.mutable_load()->clear_launches();
  absl::Status s = ValidateManifest(m, kValidFileSize);
  EXPECT_TRUE(s.ok()) << s;
}

TEST(ValidatorTest, BufferEnvUsesTheLargestPlan) {
  Manifest m = MakeValidManifest();
  EXPECT_EQ(AllocationTokens(m), 64);
  ExprEnv env = BufferEnv(m, 100);
  EXPECT_EQ(env.t, 64);
  EXPECT_EQ(env.p, 0);
  EXPECT_EQ(env.c, 100);
}

struct Case {
  std::string name;
  std::function<void(Manifest&)> mutate;
  std::vector<std::string> expect;  // substrings of the error; empty: must pass
  uint64_t file_size = kValidFileSize;
};

Launch& PrefillStep(Manifest& m) { return *m.mutable_prefill()->mutable_launches(0); }
Launch& DecodeStep(Manifest& m) { return *m.mutable_decode()->mutable_launches(0); }

std::vector<Case> Cases() {
  const int64_t k2e24 = int64_t{1} << 24;
  return {
      // Manifest and config.
      {"FormatVersion",
       [](Manifest& m) { m.set_format_version(2); },
       {"format_version is 2", "reads version 1"}},
      {"ArchitectureEmpty",
       [](Manifest& m) { m.mutable_config()->clear_architecture(); },
       {"config: architecture is empty"}},
      {"DimZero", [](Manifest& m) { m.mutable_config()->set_n_embd(0); }, {"config: n_embd is 0"}},
      {"DimTooBig",
       [](Manifest& m) { m.mutable_config()->set_n_ff(int64_t{1} << 31); },
       {"config: n_ff is 2147483648"}},
      {"HeadsNotGrouped",
       [](Manifest& m) { m.mutable_config()->set_n_head_kv(3); },
       {"n_head 4 is not a multiple of n_head_kv 3"}},
      {"RmsEpsZero",
       [](Manifest& m) { m.mutable_config()->set_rms_eps(0); },
       {"config: rms_eps 0"}},
      {"RopeBaseNaN",
       [](Manifest& m) { m.mutable_config()->set_rope_base(std::nanf("")); },
       {"config: rope_base"}},
      // Tokenizer.
      {"TokenTypesShort",
       [](Manifest& m) { m.mutable_tokenizer()->mutable_token_types()->RemoveLast(); },
       {"tokenizer: 32 tokens but 31 token types"}},
      {"TokensExceedVocab",
       [](Manifest& m) {
         m.mutable_tokenizer()->add_tokens("x");
         m.mutable_tokenizer()->add_token_types(1);
       },
       {"tokenizer: 33 tokens exceed config n_vocab 32"}},
      {"BosOutOfRange",
       [](Manifest& m) { m.mutable_tokenizer()->set_bos_id(32); },
       {"tokenizer: bos_id 32 is not a token id"}},
      {"EosNegative",
       [](Manifest& m) { m.mutable_tokenizer()->set_eos_id(-2); },
       {"tokenizer: eos_id -2"}},
      {"NoPadIsFine", [](Manifest& m) { m.mutable_tokenizer()->set_pad_id(-1); }, {}},
      {"AddBosWithoutBos",
       [](Manifest& m) {
         m.mutable_tokenizer()->set_add_bos(true);
         m.mutable_tokenizer()->set_bos_id(-1);
       },
       {"add_bos is set but bos_id is -1"}},
      // Plan shapes.
      {"LoadMaxTokens",
       [](Manifest& m) { m.mutable_load()->set_max_tokens(1); },
       {"load plan: max_tokens is 1"}},
      {"PrefillMaxTokensZero",
       [](Manifest& m) { m.mutable_prefill()->set_max_tokens(0); },
       {"prefill plan: max_tokens 0 is not in [1, context_length = 256]"}},
      {"PrefillMaxTokensPastContext",
       [](Manifest& m) { m.mutable_prefill()->set_max_tokens(257); },
       {"prefill plan: max_tokens 257"}},
      {"PrefillMaxTokensAtContext",
       [](Manifest& m) {
         m.mutable_prefill()->set_max_tokens(256);
         *PrefillStep(m).mutable_args(4)->mutable_buffer()->mutable_offset() = MakeExpr(0);
       },
       {}},
      {"DecodeMaxTokens",
       [](Manifest& m) { m.mutable_decode()->set_max_tokens(2); },
       {"decode plan: max_tokens is 2"}},
      {"PrefillEmpty",
       [](Manifest& m) { m.mutable_prefill()->clear_launches(); },
       {"prefill plan has no launches"}},
      {"DecodeEmpty",
       [](Manifest& m) { m.mutable_decode()->clear_launches(); },
       {"decode plan has no launches"}},
      // Sections.
      {"SectionKind",
       [](Manifest& m) { m.mutable_sections(1)->set_kind(Section::KIND_UNSPECIFIED); },
       {"section 1 (KIND_UNSPECIFIED sm_90): kind 0 is neither PTX nor CUBIN"}},
      {"SectionTarget",
       [](Manifest& m) { m.mutable_sections(0)->clear_target(); },
       {"section 0 (PTX <no target>): target is empty"}},
      {"SectionEmpty",
       [](Manifest& m) { m.mutable_sections(1)->set_size(0); },
       {"section 1 (CUBIN sm_90): is empty"}},
      {"SectionMisaligned",
       [](Manifest& m) { m.mutable_sections(0)->set_offset(4100); },
       {"section 0 (PTX sm_90): offset 4100 is not a multiple of 256"}},
      {"SectionOverlapsHeader",
       [](Manifest& m) { m.mutable_sections(0)->set_offset(0); },
       {"section 0 (PTX sm_90): offset 0 is before the end of the header"}},
      {"SectionsOverlap",
       [](Manifest& m) { m.mutable_sections(1)->set_offset(4864); },
       {"section 1 (CUBIN sm_90): offset 4864 is before the end of section 0 (5096)"}},
      {"SectionsUnsorted",
       [](Manifest& m) { m.mutable_sections()->SwapElements(0, 1); },
       {"section 1 (PTX sm_90): offset 4096 is before the end of section 0"}},
      {"SectionPastEndOfFile",
       [](Manifest&) {},
       {"section 1 (CUBIN sm_90): bytes [5120, 5120 + 300) extend past the end of the file (5419 "
        "bytes)"},
       kValidFileSize - 1},
      {"SectionSizeOverflows",
       [](Manifest& m) { m.mutable_sections(1)->set_size(UINT64_MAX - 100); },
       {"section 1 (CUBIN sm_90): bytes [5120, 5120 + 18446744073709551515) extend past"}},
      {"SectionDuplicate",
       [](Manifest& m) { m.mutable_sections(1)->set_kind(Section::PTX); },
       {"section 1 (PTX sm_90): duplicates section 0"}},
      {"SectionOtherTargetIsFine",
       [](Manifest& m) {
         m.mutable_sections(1)->set_kind(Section::PTX);
         m.mutable_sections(1)->set_target("sm_89");
       },
       {}},
      {"KernelsWithoutSections",
       [](Manifest& m) { m.clear_sections(); },
       {"2 kernels but no section"}},
      // Buffers.
      {"BufferNameEmpty",
       [](Manifest& m) { m.mutable_buffers(4)->clear_name(); },
       {"buffer 4: name is empty"}},
      {"BufferNameDuplicate",
       [](Manifest& m) { m.mutable_buffers(3)->set_name("weights"); },
       {"buffer 3 ('weights'): name also used by buffer 2"}},
      {"BufferKind",
       [](Manifest& m) { m.mutable_buffers(4)->set_kind(Buffer::KIND_UNSPECIFIED); },
       {"buffer 4 ('arena'): kind 0 is not a buffer kind"}},
      {"BufferKindUnknown",
       [](Manifest& m) { m.mutable_buffers(4)->set_kind(static_cast<Buffer::Kind>(9)); },
       {"buffer 4 ('arena'): kind 9"}},
      {"AlignmentZero",
       [](Manifest& m) { m.mutable_buffers(2)->set_alignment(0); },
       {"buffer 2 ('weights'): alignment 0 is not a power of two in [1, 4096]"}},
      {"AlignmentNotPowerOfTwo",
       [](Manifest& m) { m.mutable_buffers(2)->set_alignment(48); },
       {"buffer 2 ('weights'): alignment 48"}},
      {"AlignmentTooBig",
       [](Manifest& m) { m.mutable_buffers(2)->set_alignment(8192); },
       {"buffer 2 ('weights'): alignment 8192"}},
      {"AlignmentLimitsAreFine",
       [](Manifest& m) {
         m.mutable_buffers(2)->set_alignment(4096);
         m.mutable_buffers(3)->set_alignment(1);
       },
       {}},
      {"BufferBytesNegative",
       [](Manifest& m) { *m.mutable_buffers(4)->mutable_bytes() = MakeExpr(1024, -1); },
       {"buffer 4 ('arena'): bytes: expression -1*T + 1024 has a negative coefficient"}},
      {"BufferBytesNegativeDivisor",
       [](Manifest& m) { *m.mutable_buffers(4)->mutable_bytes() = MakeExpr(1024, 0, 0, 0, -4); },
       {"buffer 4 ('arena'): bytes: expression", "negative divisor -4"}},
      {"BufferBytesDependOnP",
       [](Manifest& m) { *m.mutable_buffers(3)->mutable_bytes() = MakeExpr(0, 0, 128); },
       {"buffer 3 ('kv_cache'): bytes = 128*P depends on P"}},
      {"BufferBytes2To40",
       [](Manifest& m) {
         *m.mutable_buffers(3)->mutable_bytes() = MakeExpr(0, 0, 0, int64_t{1} << 32);
       },
       {"buffer 3 ('kv_cache'): bytes = 4294967296*C is 1099511627776 at T=64 P=0 C=256; must be "
        "below 2^40"}},
      {"BufferBytesJustBelow2To40",
       [](Manifest& m) {
         *m.mutable_buffers(3)->mutable_bytes() = MakeExpr((int64_t{1} << 40) - 1);
       },
       {}},
      {"BufferBytesOverflow",
       [](Manifest& m) { *m.mutable_buffers(4)->mutable_bytes() = MakeExpr(0, int64_t{1} << 62); },
       {"buffer 4 ('arena'): bytes: expression 4611686018427387904*T overflows int64 at T=64"}},
      {"BufferBytesZero",
       [](Manifest& m) { *m.mutable_buffers(2)->mutable_bytes() = MakeExpr(0); },
       {"buffer 2 ('weights'): bytes = 0 is 0"}},
      // Bindings.
      {"BindingNameEmpty",
       [](Manifest& m) { m.mutable_bindings(1)->clear_name(); },
       {"binding 1: name is empty"}},
      {"BindingNameDuplicate",
       [](Manifest& m) { m.mutable_bindings(1)->set_name("token_embd.weight"); },
       {"binding 1 ('token_embd.weight'): tensor also bound by binding 0"}},
      {"BindingUnknownType",
       [](Manifest& m) { m.mutable_bindings(0)->set_ggml_type(4); },
       {"binding 0 ('token_embd.weight'): unknown ggml type id 4"}},
      {"BindingNoDims",
       [](Manifest& m) { m.mutable_bindings(1)->clear_dims(); },
       {"binding 1 ('output_norm.weight'): has 0 dims"}},
      {"BindingFiveDims",
       [](Manifest& m) {
         for (int i = 0; i < 4; ++i) m.mutable_bindings(1)->add_dims(1);
       },
       {"binding 1 ('output_norm.weight'): has 5 dims"}},
      {"BindingFourDimsAreFine",
       [](Manifest& m) {
         for (int i = 0; i < 3; ++i) m.mutable_bindings(1)->add_dims(1);
       },
       {}},
      {"BindingDimZero",
       [](Manifest& m) { m.mutable_bindings(0)->set_dims(1, 0); },
       {"binding 0 ('token_embd.weight'): ne[1] = 0 is not in [1, 2^40)"}},
      {"BindingPartialBlock",
       [](Manifest& m) { m.mutable_bindings(0)->set_dims(0, 48); },
       {"binding 0 ('token_embd.weight'): ne[0] = 48 is not a multiple of Q8_0's block of 32"}},
      {"BindingNbytes",
       [](Manifest& m) { m.mutable_bindings(0)->set_nbytes(2048); },
       {"binding 0 ('token_embd.weight'): nbytes 2048 does not match Q8_0 [64, 32], which is 2176 "
        "bytes"}},
      {"BindingTooBig",
       [](Manifest& m) {
         m.mutable_bindings(1)->add_dims(int64_t{1} << 20);
         m.mutable_bindings(1)->add_dims(int64_t{1} << 20);
       },
       {"binding 1 ('output_norm.weight'): F32 [64, 1048576, 1048576] is 2^40 bytes or more"}},
      {"BindingBufferOutOfRange",
       [](Manifest& m) { m.mutable_bindings(1)->set_buffer(9); },
       {"binding 1 ('output_norm.weight'): buffer 9 is out of range (9 buffers)"}},
      {"BindingIntoWeightBuffer",
       [](Manifest& m) { m.mutable_bindings(1)->set_buffer(t::kWeights); },
       {"binding 1 ('output_norm.weight'): points at buffer 2 ('weights') of kind WEIGHT"}},
      {"BindingsShareABuffer",
       [](Manifest& m) {
         m.mutable_bindings(1)->set_buffer(t::kEmbdGguf);
         m.mutable_buffers(t::kNormGguf)->set_kind(Buffer::WEIGHT);
       },
       {"binding 1 ('output_norm.weight'): buffer 0 ('gguf.token_embd.weight') is already bound by "
        "binding 0"}},
      {"BindingBufferTooSmall",
       [](Manifest& m) { *m.mutable_buffers(t::kEmbdGguf)->mutable_bytes() = MakeExpr(2048); },
       {"binding 0 ('token_embd.weight'): buffer 0 ('gguf.token_embd.weight') holds 2048 bytes, "
        "fewer than the tensor's 2176"}},
      {"GgufBufferUnbound",
       [](Manifest& m) {
         Buffer* b = m.add_buffers();
         b->set_name("gguf.orphan");
         b->set_kind(Buffer::GGUF_TENSOR);
         *b->mutable_bytes() = MakeExpr(64);
         b->set_alignment(256);
       },
       {"buffer 9 ('gguf.orphan'): GGUF_TENSOR buffer has no binding"}},
      // IO buffers.
      {"TokensBufferOutOfRange",
       [](Manifest& m) { m.set_tokens_buffer(42); },
       {"tokens_buffer: buffer 42 is out of range (9 buffers)"}},
      {"LogitsBufferNotIo",
       [](Manifest& m) { m.set_logits_buffer(t::kArena); },
       {"logits_buffer: buffer 4 ('arena') has kind ACTIVATION, not IO"}},
      {"IoBuffersShared",
       [](Manifest& m) { m.set_sampled_buffer(t::kPosition); },
       {"sampled_buffer: buffer 6 ('position') is also position_buffer"}},
      {"TokensBufferTooSmall",
       [](Manifest& m) { *m.mutable_buffers(t::kTokens)->mutable_bytes() = MakeExpr(128); },
       {"tokens_buffer: buffer 5 ('tokens') holds 128 bytes, fewer than the 256 of "
        "i32[max_tokens]"}},
      {"LogitsBufferTooSmall",
       [](Manifest& m) { *m.mutable_buffers(t::kLogits)->mutable_bytes() = MakeExpr(64); },
       {"logits_buffer: buffer 7 ('logits') holds 64 bytes, fewer than the 128 of f32[n_vocab]"}},
      // Kernels.
      {"KernelNameEmpty",
       [](Manifest& m) { m.mutable_kernels(1)->clear_name(); },
       {"kernel 1: name is empty"}},
      {"KernelNameDuplicate",
       [](Manifest& m) { m.mutable_kernels(1)->set_name("repack_q8_0"); },
       {"kernel 1 ('repack_q8_0'): name also used by kernel 0"}},
      {"ParamKind",
       [](Manifest& m) {
         m.mutable_kernels(0)->mutable_params(2)->set_kind(Param::KIND_UNSPECIFIED);
       },
       {"kernel 0 ('repack_q8_0'): param 2 ('n_bytes') has kind 0"}},
      {"BlockDimZero",
       [](Manifest& m) { m.mutable_kernels(1)->set_block_z(0); },
       {"kernel 1 ('tiny_step'): block 32x4x0 is not 1 to 1024 threads"}},
      {"BlockTooBig",
       [](Manifest& m) { m.mutable_kernels(1)->set_block_y(64); },
       {"kernel 1 ('tiny_step'): block 32x64x1"}},
      {"BlockProductOverflowsU32",
       [](Manifest& m) {
         m.mutable_kernels(1)->set_block_x(65536);
         m.mutable_kernels(1)->set_block_y(65536);
       },
       {"kernel 1 ('tiny_step'): block 65536x65536x1"}},
      {"Block1024IsFine",
       [](Manifest& m) {
         m.mutable_kernels(1)->set_block_x(16);
         m.mutable_kernels(1)->set_block_y(16);
         m.mutable_kernels(1)->set_block_z(4);
       },
       {}},
      {"SharedTooBig",
       [](Manifest& m) { m.mutable_kernels(1)->set_shared_bytes(232449); },
       {"kernel 1 ('tiny_step'): shared_bytes 232449 exceeds 232448"}},
      {"SharedAtLimitIsFine",
       [](Manifest& m) { m.mutable_kernels(1)->set_shared_bytes(232448); },
       {}},
      {"BytesReadPerPositionNegative",
       [](Manifest& m) { *m.mutable_kernels(1)->mutable_bytes_read_per_position() = MakeExpr(-5); },
       {"kernel 1 ('tiny_step'): bytes_read_per_position: expression -5 has a negative constant its T and C "
        "terms do not cover"}},
      // Launches.
      {"LaunchKernelOutOfRange",
       [](Manifest& m) { PrefillStep(m).set_kernel(2); },
       {"prefill launch 0: kernel 2 is out of range (2 kernels)"}},
      {"LoadLaunchKernelOutOfRange",
       [](Manifest& m) { m.mutable_load()->mutable_launches(1)->set_kernel(7); },
       {"load launch 1: kernel 7 is out of range (2 kernels)"}},
      {"GridTooBig",
       [&](Manifest& m) { *PrefillStep(m).mutable_grid_x() = MakeExpr(0, 0, 0, k2e24); },
       {"prefill launch 0 (kernel 'tiny_step'): grid_x = 16777216*C is 4294967296 at T=64 P=256 "
        "C=256; must be below 2^31"}},
      {"GridJustBelow2To31",
       [](Manifest& m) { *PrefillStep(m).mutable_grid_z() = MakeExpr((int64_t{1} << 31) - 1); },
       {}},
      {"GridOverflow",
       [](Manifest& m) { *PrefillStep(m).mutable_grid_x() = MakeExpr(0, INT64_MAX); },
       {"prefill launch 0 (kernel 'tiny_step'): grid_x: expression", "overflows"}},
      {"GridUnset",
       [](Manifest& m) { DecodeStep(m).clear_grid_y(); },
       {"decode launch 0 (kernel 'tiny_step'): grid_y = 0 is 0 at T=1 P=0 C=1"}},
      {"GridZeroAtPositionZero",
       [](Manifest& m) { *DecodeStep(m).mutable_grid_x() = MakeExpr(0, 0, 1); },
       {"decode launch 0 (kernel 'tiny_step'): grid_x = P is 0"}},
      {"GridNegative",
       [](Manifest& m) { *DecodeStep(m).mutable_grid_x() = MakeExpr(-1); },
       {"decode launch 0 (kernel 'tiny_step'): grid_x: expression -1 has a negative constant its T and C terms do not cover"}},
      {"LoadGridOfTIsZero",
       [](Manifest& m) {
         *m.mutable_load()->mutable_launches(0)->mutable_grid_x() = MakeExpr(0, 1);
       },
       {"load launch 0 (kernel 'repack_q8_0'): grid_x = T is 0 at T=0"}},
      {"BesideNextAccepted",
       [](Manifest& m) {
         *m.mutable_prefill()->add_launches() = PrefillStep(m);
         PrefillStep(m).set_beside_next(true);
       },
       {}},
      {"BesideNextOnTheLastLaunch",
       [](Manifest& m) { DecodeStep(m).set_beside_next(true); },
       {"decode launch 0 (kernel 'tiny_step'): runs beside the next launch, but it is the plan's last"}},
      {"BesideNextChained",
       [](Manifest& m) {
         for (int i = 0; i < 2; ++i) *m.mutable_prefill()->add_launches() = PrefillStep(m);
         m.mutable_prefill()->mutable_launches(0)->set_beside_next(true);
         m.mutable_prefill()->mutable_launches(1)->set_beside_next(true);
       },
       {"prefill launch 1 (kernel 'tiny_step'): runs beside the next launch, but launch 0 already runs "
        "beside this one"}},
      {"TooFewArgs",
       [](Manifest& m) { PrefillStep(m).mutable_args()->RemoveLast(); },
       {"prefill launch 0 (kernel 'tiny_step'): 8 args for 9 params"}},
      {"TooManyArgs",
       [](Manifest& m) { m.mutable_load()->mutable_launches(0)->add_args()->set_f32(1); },
       {"load launch 0 (kernel 'repack_q8_0'): 4 args for 3 params"}},
      {"I32ForPointer",
       [](Manifest& m) { *DecodeStep(m).mutable_args(0)->mutable_i32() = MakeExpr(1); },
       {"decode launch 0 (kernel 'tiny_step'): arg 0 ('tokens'): an i32 for a POINTER param"}},
      {"F32ForI32",
       [](Manifest& m) { DecodeStep(m).mutable_args(7)->set_f32(1); },
       {"decode launch 0 (kernel 'tiny_step'): arg 7 ('n_tokens'): an f32 for a I32 param"}},
      {"BufferForF32",
       [](Manifest& m) { DecodeStep(m).mutable_args(8)->mutable_buffer()->set_buffer(t::kArena); },
       {"decode launch 0 (kernel 'tiny_step'): arg 8 ('eps'): a buffer for a F32 param"}},
      {"ArgWithoutValue",
       [](Manifest& m) { DecodeStep(m).mutable_args(8)->clear_value(); },
       {"decode launch 0 (kernel 'tiny_step'): arg 8 ('eps'): has no value"}},
      {"ArgBufferOutOfRange",
       [](Manifest& m) { DecodeStep(m).mutable_args(2)->mutable_buffer()->set_buffer(99); },
       {"decode launch 0 (kernel 'tiny_step'): arg 2 ('weights'): buffer 99 is out of range (9 "
        "buffers)"}},
      {"ArgOffsetPastEnd",
       [](Manifest& m) {
         *PrefillStep(m).mutable_args(3)->mutable_buffer()->mutable_offset() = MakeExpr(0, 0, 129);
       },
       {"prefill launch 0 (kernel 'tiny_step'): arg 3 ('kv'): offset 129*P is 33024 at T=64 P=256 "
        "C=256, past the end of buffer 3 ('kv_cache') (32768 bytes)"}},
      {"ArgOffsetNegative",
       [](Manifest& m) {
         *PrefillStep(m).mutable_args(4)->mutable_buffer()->mutable_offset() = MakeExpr(0, -1);
       },
       {"prefill launch 0 (kernel 'tiny_step'): arg 4 ('arena'): offset: expression -1*T"}},
      {"ArgUsesGgufAfterLoad",
       [](Manifest& m) {
         PrefillStep(m).mutable_args(2)->mutable_buffer()->set_buffer(t::kNormGguf);
       },
       {"prefill launch 0 (kernel 'tiny_step'): arg 2 ('weights'): uses buffer 1 "
        "('gguf.output_norm.weight'), a GGUF_TENSOR buffer, which is freed after load"}},
      {"I32ArgTooBig",
       [&](Manifest& m) { *PrefillStep(m).mutable_args(7)->mutable_i32() = MakeExpr(0, 0, k2e24); },
       {"prefill launch 0 (kernel 'tiny_step'): arg 7 ('n_tokens') = 16777216*P is 4294967296 at "
        "T=64 P=256 C=256; must be below 2^31"}},
      {"F32ArgInfinite",
       [](Manifest& m) { DecodeStep(m).mutable_args(8)->set_f32(INFINITY); },
       {"decode launch 0 (kernel 'tiny_step'): arg 8 ('eps'): f32 inf is not finite"}},
  };
}

class ValidatorRuleTest : public ::testing::TestWithParam<Case> {};

TEST_P(ValidatorRuleTest, ValidPassesAndBrokenIsNamed) {
  const Case& c = GetParam();
  Manifest m = MakeValidManifest();
  absl::Status valid = ValidateManifest(m, kValidFileSize);
  ASSERT_TRUE(valid.ok()) << valid;
  c.mutate(m);
  absl::Status s = ValidateManifest(m, c.file_size);
  if (c.expect.empty()) {
    EXPECT_TRUE(s.ok()) << s;
    return;
  }
  ASSERT_FALSE(s.ok()) << "the broken manifest was accepted";
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  for (const std::string& want : c.expect) EXPECT_THAT(s.message(), HasSubstr(want));
}

INSTANTIATE_TEST_SUITE_P(Rules, ValidatorRuleTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace kiln::runtime
