// The executor and its preflight checks. CPU tests (CI): the GGUF binding,
// the kernel-image choice, buffer sizes and the out-of-memory message, the
// decode-graph rule, and a clean "no GPU" failure. GPU tests (suite
// ExecutorGpuTest, CTest label `gpu`): a toy bundle of hand-written PTX is
// run end to end against a CPU model of the same arithmetic, exactly.
#include "runtime/executor.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/gguf/gguf_writer.h"
#include "runtime/bundle/bundle_format.h"
#include "runtime/bundle/expr.h"
#include "runtime/bundle/validator.h"
#include "runtime/preflight.h"
#include "runtime/sampler.h"
#include "runtime/vocab_from_manifest.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// ------------------------------------------------------------ the toy model
//
// vocabulary V = 16, one F32 tensor w [16, 16]. load packs it as 2 * w.
// A step of T tokens at position P stores token ids in a "KV cache"
// (kv[P + i] = tokens[i]) and gives row r the logits
//   2 * w[tokens[r]][v] + (v == (kv[0] + ... + kv[P + r]) % V ? 100 : 0),
// so the argmax is the running sum of all tokens fed so far mod V: any lost
// position, stale token or unwritten KV entry shows.

constexpr int kV = 16;
constexpr int kContext = 64;
constexpr int kMaxTokens = 8;

constexpr char kToyPtx[] = R"(.version 7.8
.target @TARGET@
.address_size 64

// load: dst[i] = 2 * src[i] for i < n (packs the GGUF tensor)
.visible .entry toy_pack(.param .u64 src_p, .param .u64 dst_p, .param .u32 n_p)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .f32 	%f<3>;
	.reg .b64 	%rd<8>;
	ld.param.u64 	%rd1, [src_p];
	ld.param.u64 	%rd2, [dst_p];
	ld.param.u32 	%r1, [n_p];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	setp.ge.u32 	%p1, %r5, %r1;
	@%p1 bra 	DONE;
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mul.wide.u32 	%rd5, %r5, 4;
	add.s64 	%rd6, %rd3, %rd5;
	add.s64 	%rd7, %rd4, %rd5;
	ld.global.f32 	%f1, [%rd6];
	add.f32 	%f2, %f1, %f1;
	st.global.f32 	[%rd7], %f2;
DONE:
	ret;
}

// kv[P + i] = tokens[i] for i < T, P = position[0]
.visible .entry toy_store(.param .u64 tokens_p, .param .u64 pos_p, .param .u64 kv_p, .param .u32 t_p)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<10>;
	.reg .b64 	%rd<10>;
	ld.param.u64 	%rd1, [tokens_p];
	ld.param.u64 	%rd2, [pos_p];
	ld.param.u64 	%rd3, [kv_p];
	ld.param.u32 	%r1, [t_p];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	setp.ge.u32 	%p1, %r5, %r1;
	@%p1 bra 	DONE;
	cvta.to.global.u64 	%rd4, %rd1;
	cvta.to.global.u64 	%rd5, %rd2;
	cvta.to.global.u64 	%rd6, %rd3;
	ld.global.u32 	%r6, [%rd5];
	mul.wide.u32 	%rd7, %r5, 4;
	add.s64 	%rd8, %rd4, %rd7;
	ld.global.u32 	%r7, [%rd8];
	add.u32 	%r8, %r6, %r5;
	mul.wide.u32 	%rd9, %r8, 4;
	add.s64 	%rd9, %rd6, %rd9;
	st.global.u32 	[%rd9], %r7;
DONE:
	ret;
}

// Row r < T, column v < V: s = kv[0] + ... + kv[P + r];
// logits[row][v] = w[tokens[r] * V + v] + (v == s % V ? 100 : 0),
// row = r, or 0 for r = T - 1 alone when last_only.
.visible .entry toy_logits(.param .u64 tokens_p, .param .u64 pos_p, .param .u64 kv_p, .param .u64 w_p,
                           .param .u64 logits_p, .param .u32 t_p, .param .u32 v_p, .param .u32 last_only_p)
{
	.reg .pred 	%p<6>;
	.reg .b32 	%r<24>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<16>;
	@WAIT@
	ld.param.u64 	%rd1, [tokens_p];
	ld.param.u64 	%rd2, [pos_p];
	ld.param.u64 	%rd3, [kv_p];
	ld.param.u64 	%rd4, [w_p];
	ld.param.u64 	%rd5, [logits_p];
	ld.param.u32 	%r1, [t_p];
	ld.param.u32 	%r2, [v_p];
	ld.param.u32 	%r20, [last_only_p];
	cvta.to.global.u64 	%rd1, %rd1;
	cvta.to.global.u64 	%rd2, %rd2;
	cvta.to.global.u64 	%rd3, %rd3;
	cvta.to.global.u64 	%rd4, %rd4;
	cvta.to.global.u64 	%rd5, %rd5;
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r6, %r3, %r4, %r5;
	mul.lo.u32 	%r7, %r1, %r2;
	setp.ge.u32 	%p1, %r6, %r7;
	@%p1 bra 	DONE;
	div.u32 	%r8, %r6, %r2;
	rem.u32 	%r9, %r6, %r2;
	sub.u32 	%r21, %r1, 1;
	setp.ne.u32 	%p4, %r20, 0;
	setp.ne.u32 	%p5, %r8, %r21;
	and.pred 	%p5, %p4, %p5;
	@%p5 bra 	DONE;
	ld.global.u32 	%r10, [%rd2];
	add.u32 	%r11, %r10, %r8;
	mov.u32 	%r12, 0;
	mov.u32 	%r13, 0;
SUM:
	mul.wide.u32 	%rd6, %r12, 4;
	add.s64 	%rd7, %rd3, %rd6;
	ld.global.u32 	%r14, [%rd7];
	add.u32 	%r13, %r13, %r14;
	add.u32 	%r12, %r12, 1;
	setp.le.u32 	%p2, %r12, %r11;
	@%p2 bra 	SUM;
	rem.u32 	%r15, %r13, %r2;
	mul.wide.u32 	%rd8, %r8, 4;
	add.s64 	%rd9, %rd1, %rd8;
	ld.global.u32 	%r16, [%rd9];
	mad.lo.u32 	%r17, %r16, %r2, %r9;
	mul.wide.u32 	%rd10, %r17, 4;
	add.s64 	%rd11, %rd4, %rd10;
	ld.global.f32 	%f1, [%rd11];
	setp.eq.u32 	%p3, %r9, %r15;
	selp.f32 	%f2, 0f42C80000, 0f00000000, %p3;
	add.f32 	%f3, %f1, %f2;
	selp.u32 	%r18, %r9, %r6, %p4;
	mul.wide.u32 	%rd12, %r18, 4;
	add.s64 	%rd13, %rd5, %rd12;
	st.global.f32 	[%rd13], %f3;
DONE:
	ret;
}

// sampled[0] = argmax of logits row (last_only ? 0 : T - 1), lowest index on ties
.visible .entry toy_argmax(.param .u64 logits_p, .param .u64 sampled_p, .param .u32 t_p, .param .u32 v_p,
                           .param .u32 last_only_p)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<10>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<10>;
	@WAIT@
	ld.param.u64 	%rd1, [logits_p];
	ld.param.u64 	%rd2, [sampled_p];
	ld.param.u32 	%r1, [t_p];
	ld.param.u32 	%r2, [v_p];
	ld.param.u32 	%r9, [last_only_p];
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	sub.u32 	%r3, %r1, 1;
	setp.ne.u32 	%p3, %r9, 0;
	selp.u32 	%r3, 0, %r3, %p3;
	mul.lo.u32 	%r4, %r3, %r2;
	mul.wide.u32 	%rd5, %r4, 4;
	add.s64 	%rd6, %rd3, %rd5;
	ld.global.f32 	%f1, [%rd6];
	mov.u32 	%r5, 0;
	mov.u32 	%r6, 1;
SCAN:
	setp.ge.u32 	%p1, %r6, %r2;
	@%p1 bra 	END;
	mul.wide.u32 	%rd7, %r6, 4;
	add.s64 	%rd8, %rd6, %rd7;
	ld.global.f32 	%f2, [%rd8];
	setp.gt.f32 	%p2, %f2, %f1;
	selp.f32 	%f1, %f2, %f1, %p2;
	selp.b32 	%r5, %r6, %r5, %p2;
	add.u32 	%r6, %r6, 1;
	bra 	SCAN;
END:
	st.global.u32 	[%rd4], %r5;
	ret;
}
)";

// The toy PTX for sm_80 (no PDL) or sm_90 (the PDL kernels wait first).
std::string ToyPtx(const std::string& target) {
  const bool pdl = target == "sm_90";
  return absl::StrReplaceAll(kToyPtx, {{"@TARGET@", target}, {"@WAIT@", pdl ? "griddepcontrol.wait;" : ""}});
}

enum ToyBuffer : uint32_t { kGgufW = 0, kPacked, kKv, kTokens, kPosition, kLogits, kSampled };
enum ToyKernel : uint32_t { kPack = 0, kStore, kLogitsKernel, kArgmax };

struct ToyOptions {
  bool last_only = false;            // logits_buffer holds one row
  int64_t kv_bytes_per_token = 4;    // KV_CACHE bytes = this * C
  bool decode_reads_p = false;       // a decode arg depends on P (not graphable)
  std::vector<std::pair<std::string, std::string>> ptx = {{"sm_80", ToyPtx("sm_80")}, {"sm_90", ToyPtx("sm_90")}};
  std::vector<std::pair<std::string, std::string>> cubins;  // target -> image
};

struct ToyBundle {
  Manifest manifest;
  std::vector<uint8_t> file;  // sections at their offsets, like a .kiln
  SectionBytesFn sections() const {
    return [this](int i) -> absl::StatusOr<absl::Span<const uint8_t>> {
      const Section& s = manifest.sections(i);
      return absl::MakeConstSpan(file).subspan(s.offset(), s.size());
    };
  }
};

Expr E(int64_t constant, int64_t t = 0, int64_t p = 0, int64_t c = 0, int64_t div = 0) {
  return MakeExpr(constant, t, p, c, div);
}

void AddBufferArg(Launch& l, uint32_t buffer, Expr offset = E(0)) {
  Arg::BufferRef* ref = l.add_args()->mutable_buffer();
  ref->set_buffer(buffer);
  *ref->mutable_offset() = offset;
}

void AddI32(Launch& l, Expr e) { *l.add_args()->mutable_i32() = e; }

Launch MakeLaunch(uint32_t kernel, Expr grid_x) {
  Launch l;
  l.set_kernel(kernel);
  *l.mutable_grid_x() = grid_x;
  *l.mutable_grid_y() = E(1);
  *l.mutable_grid_z() = E(1);
  return l;
}

void AddStepLaunches(Plan& plan, const ToyOptions& o, bool decode) {
  Launch store = MakeLaunch(kStore, E(0, 1, 0, 0, 32));
  AddBufferArg(store, kTokens);
  AddBufferArg(store, kPosition);
  AddBufferArg(store, kKv, decode && o.decode_reads_p ? E(0, 0, 4) : E(0));
  AddI32(store, E(0, 1));
  Launch logits = MakeLaunch(kLogitsKernel, E(0, kV, 0, 0, 64));
  for (uint32_t b : {kTokens, kPosition, kKv, kPacked, kLogits}) AddBufferArg(logits, b);
  AddI32(logits, E(0, 1));
  AddI32(logits, E(kV));
  AddI32(logits, E(o.last_only ? 1 : 0));
  Launch argmax = MakeLaunch(kArgmax, E(1));
  AddBufferArg(argmax, kLogits);
  AddBufferArg(argmax, kSampled);
  AddI32(argmax, E(0, 1));
  AddI32(argmax, E(kV));
  AddI32(argmax, E(o.last_only ? 1 : 0));
  *plan.add_launches() = store;
  *plan.add_launches() = logits;
  *plan.add_launches() = argmax;
}

void AddKernel(Manifest& m, const char* name, std::vector<Param::Kind> params, uint32_t block, bool pdl) {
  Kernel* k = m.add_kernels();
  k->set_name(name);
  k->set_family("toy");
  for (size_t i = 0; i < params.size(); ++i) {
    Param* p = k->add_params();
    p->set_kind(params[i]);
    p->set_name(absl::StrCat("p", i));
  }
  k->set_block_x(block);
  k->set_block_y(1);
  k->set_block_z(1);
  k->set_programmatic_launch(pdl);
}

void AddBuffer(Manifest& m, const char* name, Buffer::Kind kind, Expr bytes) {
  Buffer* b = m.add_buffers();
  b->set_name(name);
  b->set_kind(kind);
  *b->mutable_bytes() = bytes;
  b->set_alignment(256);
}

ToyBundle MakeToyBundle(const ToyOptions& o = {}) {
  ToyBundle tb;
  Manifest& m = tb.manifest;
  m.set_format_version(kBundleFormatVersion);
  m.set_producer("kiln executor_test");
  m.set_target("sm_90");
  ModelConfig* c = m.mutable_config();
  c->set_architecture("toy");
  c->set_n_layer(1);
  c->set_n_embd(kV);
  c->set_n_ff(kV);
  c->set_n_head(1);
  c->set_n_head_kv(1);
  c->set_head_dim(kV);
  c->set_n_vocab(kV);
  c->set_context_length(kContext);
  c->set_rms_eps(1e-6f);
  c->set_rope_base(1e4f);
  Tokenizer* t = m.mutable_tokenizer();
  t->set_model("gpt2");
  t->set_pre("qwen2");
  t->set_bos_id(-1);
  t->set_eos_id(-1);
  t->set_pad_id(-1);

  TensorBinding* b = m.add_bindings();
  b->set_name("toy.weight");
  b->set_ggml_type(static_cast<uint32_t>(gguf::GgmlType::kF32));
  b->add_dims(kV);
  b->add_dims(kV);
  b->set_nbytes(kV * kV * 4);
  b->set_buffer(kGgufW);

  AddBuffer(m, "gguf.toy.weight", Buffer::GGUF_TENSOR, E(kV * kV * 4));
  AddBuffer(m, "toy.packed", Buffer::WEIGHT, E(kV * kV * 4));
  AddBuffer(m, "kv", Buffer::KV_CACHE, E(0, 0, 0, o.kv_bytes_per_token));
  AddBuffer(m, "tokens", Buffer::IO, E(0, 4));
  AddBuffer(m, "position", Buffer::IO, E(4));
  AddBuffer(m, "logits", Buffer::IO, o.last_only ? E(kV * 4) : E(0, kV * 4));
  AddBuffer(m, "sampled", Buffer::IO, E(4));
  m.set_tokens_buffer(kTokens);
  m.set_position_buffer(kPosition);
  m.set_logits_buffer(kLogits);
  m.set_sampled_buffer(kSampled);

  using P = Param;
  AddKernel(m, "toy_pack", {P::POINTER, P::POINTER, P::I32}, 64, false);
  AddKernel(m, "toy_store", {P::POINTER, P::POINTER, P::POINTER, P::I32}, 32, false);
  AddKernel(m, "toy_logits", {P::POINTER, P::POINTER, P::POINTER, P::POINTER, P::POINTER, P::I32, P::I32, P::I32}, 64,
            true);
  AddKernel(m, "toy_argmax", {P::POINTER, P::POINTER, P::I32, P::I32, P::I32}, 1, true);

  Launch pack = MakeLaunch(kPack, E(kV * kV, 0, 0, 0, 64));
  AddBufferArg(pack, kGgufW);
  AddBufferArg(pack, kPacked);
  AddI32(pack, E(kV * kV));
  *m.mutable_load()->add_launches() = pack;
  m.mutable_load()->set_max_tokens(0);
  AddStepLaunches(*m.mutable_prefill(), o, false);
  m.mutable_prefill()->set_max_tokens(kMaxTokens);
  AddStepLaunches(*m.mutable_decode(), o, true);
  m.mutable_decode()->set_max_tokens(1);

  // Sections after a header-sized gap, each at a multiple of 256.
  tb.file.assign(kSectionAlignment, 0);
  auto add_section = [&](Section::Kind kind, const std::string& target, const std::string& image) {
    Section* s = m.add_sections();
    s->set_kind(kind);
    s->set_target(target);
    s->set_offset(tb.file.size());
    s->set_size(image.size());
    tb.file.insert(tb.file.end(), image.begin(), image.end());
    s->set_fnv1a64(Fnv1a64(absl::MakeConstSpan(tb.file).subspan(s->offset(), s->size())));
    tb.file.resize((tb.file.size() + kSectionAlignment - 1) / kSectionAlignment * kSectionAlignment, 0);
  };
  for (const auto& [target, ptx] : o.ptx) add_section(Section::PTX, target, ptx);
  for (const auto& [target, cubin] : o.cubins) add_section(Section::CUBIN, target, cubin);
  return tb;
}

std::vector<float> ToyWeights() {
  std::vector<float> w(kV * kV);
  uint32_t x = 12345;
  for (float& v : w) {
    x = x * 1664525u + 1013904223u;  // LCG: any fixed values in [0, 1) do
    v = static_cast<float>(x >> 8) * 0x1.0p-24f;
  }
  return w;
}

// A GGUF holding `name` with `type` and `dims` (F32 data from ToyWeights
// when it fits, zeros otherwise).
std::vector<uint8_t> ToyGgufBytes(const std::string& name = "toy.weight", gguf::GgmlType type = gguf::GgmlType::kF32,
                                  std::vector<int64_t> dims = {kV, kV}, bool extra_tensor = false) {
  gguf::GgufWriter w;
  w.AddKey("general.architecture", gguf::Value::Str("toy"));
  const gguf::GgmlTypeInfo& info = gguf::TypeInfo(type);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<uint8_t> bytes(n / info.block_elems * info.block_bytes, 0);
  std::vector<float> weights = ToyWeights();
  if (type == gguf::GgmlType::kF32 && bytes.size() == weights.size() * 4)
    std::memcpy(bytes.data(), weights.data(), bytes.size());
  if (extra_tensor) w.AddTensorBytes("other.weight", {32}, gguf::GgmlType::kF32, std::vector<uint8_t>(128, 0));
  w.AddTensorBytes(name, dims, type, bytes);
  absl::StatusOr<std::vector<uint8_t>> out = w.WriteToMemory();
  EXPECT_TRUE(out.ok()) << out.status();
  return *out;
}

std::unique_ptr<gguf::GgufFile> ParseGguf(const std::vector<uint8_t>& bytes) {
  absl::StatusOr<std::unique_ptr<gguf::GgufFile>> f = gguf::GgufFile::Parse(bytes, "toy.gguf");
  EXPECT_TRUE(f.ok()) << f.status();
  return *std::move(f);
}

// The toy model's arithmetic on the CPU, in the same float operations.
class ToyModel {
 public:
  std::vector<float> Feed(int32_t token) {
    history_.push_back(token);
    const int64_t sum = std::accumulate(history_.begin(), history_.end(), int64_t{0});
    std::vector<float> row(kV);
    for (int v = 0; v < kV; ++v) {
      const float packed = w_[token * kV + v] + w_[token * kV + v];
      row[v] = packed + (v == sum % kV ? 100.0f : 0.0f);
    }
    return row;
  }
  void Rewind(size_t n) { history_.resize(n); }
  size_t size() const { return history_.size(); }

 private:
  std::vector<float> w_ = ToyWeights();
  std::vector<int32_t> history_;
};

// ------------------------------------------------------------ CPU tests

TEST(ToyBundleTest, PassesTheBundleValidator) {
  ToyBundle tb = MakeToyBundle();
  EXPECT_TRUE(ValidateManifest(tb.manifest, tb.file.size()).ok()) << ValidateManifest(tb.manifest, tb.file.size());
  ToyOptions last_only;
  last_only.last_only = true;
  ToyBundle tb2 = MakeToyBundle(last_only);
  EXPECT_TRUE(ValidateManifest(tb2.manifest, tb2.file.size()).ok());
}

TEST(BindingTest, MatchingGgufPasses) {
  ToyBundle tb = MakeToyBundle();
  std::vector<uint8_t> bytes = ToyGgufBytes("toy.weight", gguf::GgmlType::kF32, {kV, kV}, /*extra_tensor=*/true);
  EXPECT_TRUE(CheckBinding(tb.manifest, *ParseGguf(bytes)).ok());
}

TEST(BindingTest, TrailingOnesInTheShapeDoNotMatter) {
  ToyBundle tb = MakeToyBundle();
  tb.manifest.mutable_bindings(0)->add_dims(1);
  std::vector<uint8_t> bytes = ToyGgufBytes();
  EXPECT_TRUE(CheckBinding(tb.manifest, *ParseGguf(bytes)).ok());
}

TEST(BindingTest, MissingTensorIsNamed) {
  ToyBundle tb = MakeToyBundle();
  std::vector<uint8_t> bytes = ToyGgufBytes("renamed.weight");
  absl::Status s = CheckBinding(tb.manifest, *ParseGguf(bytes));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), StartsWith("tensor 'toy.weight' is missing from toy.gguf; the bundle expects F32 [16, 16]"));
}

TEST(BindingTest, OtherTypeIsNamed) {
  ToyBundle tb = MakeToyBundle();
  std::vector<uint8_t> bytes = ToyGgufBytes("toy.weight", gguf::GgmlType::kF16);
  absl::Status s = CheckBinding(tb.manifest, *ParseGguf(bytes));
  EXPECT_THAT(s.message(), StartsWith("tensor 'toy.weight' is F16 in toy.gguf, the bundle expects F32"));
}

TEST(BindingTest, OtherShapeIsNamed) {
  ToyBundle tb = MakeToyBundle();
  std::vector<uint8_t> bytes = ToyGgufBytes("toy.weight", gguf::GgmlType::kF32, {kV, 2 * kV});
  absl::Status s = CheckBinding(tb.manifest, *ParseGguf(bytes));
  EXPECT_THAT(s.message(), StartsWith("tensor 'toy.weight' has shape [16, 32] in toy.gguf, the bundle expects [16, 16]"));
}

TEST(BindingTest, TheFirstMismatchInBindingOrderIsReported) {
  ToyBundle tb = MakeToyBundle();
  // Bind a second tensor before the first; both differ from the file.
  TensorBinding first = tb.manifest.bindings(0);
  first.set_name("other.weight");  // F32 [32] in the file
  first.clear_dims();
  first.add_dims(64);
  *tb.manifest.mutable_bindings()->Add() = tb.manifest.bindings(0);
  *tb.manifest.mutable_bindings(0) = first;
  std::vector<uint8_t> bytes = ToyGgufBytes("toy.weight", gguf::GgmlType::kF16, {kV, kV}, /*extra_tensor=*/true);
  absl::Status s = CheckBinding(tb.manifest, *ParseGguf(bytes));
  EXPECT_THAT(s.message(), StartsWith("tensor 'other.weight' has shape [32]"));
}

Manifest WithSections(std::vector<std::pair<Section::Kind, std::string>> sections) {
  Manifest m;
  for (const auto& [kind, target] : sections) {
    Section* s = m.add_sections();
    s->set_kind(kind);
    s->set_target(target);
  }
  return m;
}

TEST(SectionTest, ACubinForTheExactTargetIsChosen) {
  Manifest m = WithSections({{Section::PTX, "sm_80"}, {Section::CUBIN, "sm_80"}, {Section::CUBIN, "sm_90"}});
  absl::StatusOr<SectionChoice> c = SelectSections(m, {"NVIDIA H200", 90}, false);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->jit);
  EXPECT_EQ(c->target, "sm_90");
  EXPECT_THAT(c->sections, ::testing::ElementsAre(2));
  // sm_90a runs on 9.0 alone.
  c = SelectSections(WithSections({{Section::CUBIN, "sm_90a"}}), {"NVIDIA H200", 90}, false);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->target, "sm_90a");
}

TEST(SectionTest, AnotherGpuNeedsAllowPtxJit) {
  Manifest m = WithSections({{Section::PTX, "sm_80"}, {Section::CUBIN, "sm_90"}});
  absl::StatusOr<SectionChoice> c = SelectSections(m, {"NVIDIA GeForce RTX 4090", 89}, false);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(c.status().message(),
              StartsWith("bundle built for sm_90, this GPU is NVIDIA GeForce RTX 4090 (sm_89); rerun with "
                         "--allow-ptx-jit to JIT the PTX (sm_80)"));
  c = SelectSections(m, {"NVIDIA GeForce RTX 4090", 89}, true);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->jit);
  EXPECT_EQ(c->target, "sm_80");
  EXPECT_THAT(c->sections, ::testing::ElementsAre(0));
}

TEST(SectionTest, TheHighestPtxTheGpuCanJitIsChosen) {
  Manifest m = WithSections({{Section::PTX, "sm_80"}, {Section::PTX, "sm_90a"}, {Section::PTX, "sm_89"},
                             {Section::PTX, "sm_100"}});
  absl::StatusOr<SectionChoice> c = SelectSections(m, {"NVIDIA H200", 90}, true);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->target, "sm_90a");
  c = SelectSections(m, {"NVIDIA L4", 89}, true);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->target, "sm_89");
  // Only PTX: even the exact target needs the flag (it is a JIT).
  c = SelectSections(m, {"NVIDIA H200", 90}, false);
  EXPECT_THAT(c.status().message(), StartsWith("bundle has no cubin, only PTX for sm_80, sm_90a, sm_89, sm_100, "
                                               "this GPU is NVIDIA H200 (sm_90); rerun with --allow-ptx-jit"));
}

TEST(SectionTest, NothingUsableSaysToRecompile) {
  Manifest m = WithSections({{Section::PTX, "sm_90"}, {Section::CUBIN, "sm_90"}});
  absl::StatusOr<SectionChoice> c = SelectSections(m, {"NVIDIA A100-SXM4-80GB", 80}, true);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "bundle built for sm_90, this GPU is NVIDIA A100-SXM4-80GB (sm_80), and the bundle has no PTX this GPU "
            "can JIT (PTX for sm_90); recompile the bundle with kilnc for sm_80");
}

// A manifest shaped like Qwen3-8B Q8_0 for the memory arithmetic: 8.7 GB of
// GGUF tensors, the same packed, 147456 bytes of f16 KV per token (times
// `kv_scale`, to make the KV cache dominate).
Manifest EightBLike(int64_t kv_scale = 1) {
  Manifest m;
  m.mutable_config()->set_context_length(40960);
  m.mutable_prefill()->set_max_tokens(512);
  m.mutable_decode()->set_max_tokens(1);
  AddBuffer(m, "gguf", Buffer::GGUF_TENSOR, E(8'700'000'000));
  AddBuffer(m, "packed", Buffer::WEIGHT, E(8'700'000'000));
  AddBuffer(m, "kv", Buffer::KV_CACHE, E(0, 0, 0, 147456 * kv_scale));
  AddBuffer(m, "arena", Buffer::ACTIVATION, E(1 << 20, 4 * 12288));
  AddBuffer(m, "logits", Buffer::IO, E(0, 151936 * 4));
  m.mutable_buffers(2)->set_alignment(4096);
  Launch* l = m.mutable_load()->add_launches();
  AddBufferArg(*l, 0);
  AddBufferArg(*l, 1);
  return m;
}

TEST(MemoryTest, BuffersAreSizedAtTheContextAndTheLargestStep) {
  Manifest m = EightBLike();
  absl::StatusOr<MemoryPlan> p = PlanMemory(m, 4096);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->buffer_bytes[2], 147456ull * 4096 + 4096 - 256);  // alignment slack
  EXPECT_EQ(p->buffer_bytes[3], (1u << 20) + 4 * 12288 * 512ull);
  EXPECT_EQ(p->buffer_bytes[4], 151936 * 4 * 512ull);
  EXPECT_THAT(p->during_load, ::testing::ElementsAre(true, true, false, false, false));
  EXPECT_EQ(p->load_bytes, p->buffer_bytes[0] + p->buffer_bytes[1]);
  EXPECT_EQ(p->run_bytes, p->buffer_bytes[1] + p->buffer_bytes[2] + p->buffer_bytes[3] + p->buffer_bytes[4]);
  EXPECT_EQ(p->peak_bytes, std::max(p->load_bytes, p->run_bytes) + kMemoryHeadroom);
}

TEST(MemoryTest, TheLoadPlansScratchIsAllocatedForLoad) {
  Manifest m = EightBLike();
  AddBufferArg(*m.mutable_load()->mutable_launches(0), 3);  // load uses the arena
  absl::StatusOr<MemoryPlan> p = PlanMemory(m, 4096);
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(p->during_load, ::testing::ElementsAre(true, true, false, true, false));
}

TEST(MemoryTest, FittingIsOk) {
  Manifest m = EightBLike();
  absl::StatusOr<MemoryPlan> p = PlanMemory(m, 40960);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(CheckMemoryFits(m, *p, p->peak_bytes, "NVIDIA H200").ok());
  EXPECT_FALSE(CheckMemoryFits(m, *p, p->peak_bytes - 1, "NVIDIA H200").ok());
}

TEST(MemoryTest, TooLittleMemorySuggestsTheLargestContextThatFits) {
  Manifest m = EightBLike(/*kv_scale=*/4);  // the KV cache dominates: 33 GB at 40960
  absl::StatusOr<MemoryPlan> p = PlanMemory(m, 40960);
  ASSERT_TRUE(p.ok());
  ASSERT_GT(p->run_bytes, p->load_bytes);
  const uint64_t free = 24'000'000'000;
  absl::Status s = CheckMemoryFits(m, *p, free, "NVIDIA GeForce RTX 4090");
  ASSERT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), StartsWith(absl::StrCat("context 40960 needs ", FormatBytes(p->peak_bytes),
                                                   " of GPU memory, 24.0 GB free on NVIDIA GeForce RTX 4090; "
                                                   "rerun with --ctx-size ")));
  // The suggestion fits and is within one rounding step (256) of the limit.
  const std::string key = "rerun with --ctx-size ";
  const size_t at = s.message().find(key);
  ASSERT_NE(at, absl::string_view::npos) << s.message();
  const int64_t suggested = std::atoll(std::string(s.message().substr(at + key.size())).c_str());
  EXPECT_EQ(suggested % 256, 0);
  EXPECT_LE(PlanMemory(m, suggested)->peak_bytes, free);
  EXPECT_GT(PlanMemory(m, suggested + 256)->peak_bytes, free);
}

TEST(MemoryTest, WhenTheWeightsAloneDoNotFitItSaysSo) {
  Manifest m = EightBLike();
  absl::StatusOr<MemoryPlan> p = PlanMemory(m, 4096);
  ASSERT_TRUE(p.ok());
  absl::Status s = CheckMemoryFits(m, *p, 12'000'000'000, "NVIDIA T4");
  EXPECT_THAT(s.message(), HasSubstr("the peak is while loading"));
  EXPECT_THAT(s.message(), HasSubstr("even --ctx-size 1 does not fit"));
}

TEST(MemoryTest, FormatBytes) {
  EXPECT_EQ(FormatBytes(12'345'678'901), "12.3 GB");
  EXPECT_EQ(FormatBytes(9'100'000'000), "9.1 GB");
  EXPECT_EQ(FormatBytes(512ull << 20), "536.9 MB");
}

TEST(ContextTest, DefaultIsTheModelsAndItIsBounded) {
  Manifest m = EightBLike();
  EXPECT_EQ(*ChooseContext(m, 0), 40960);
  EXPECT_EQ(*ChooseContext(m, 4096), 4096);
  EXPECT_THAT(ChooseContext(m, 50000).status().message(),
              HasSubstr("--ctx-size 50000 exceeds the model's context length 40960"));
  EXPECT_FALSE(ChooseContext(m, -1).ok());
}

TEST(DecodeGraphTest, DecodeMustNotDependOnP) {
  EXPECT_TRUE(CheckDecodeGraphable(MakeToyBundle().manifest).ok());
  ToyOptions o;
  o.decode_reads_p = true;
  absl::Status s = CheckDecodeGraphable(MakeToyBundle(o).manifest);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), StartsWith("decode launch 0 (kernel 'toy_store'): arg 2 offset = 4*P depends on P"));
}

TEST(VocabTest, ManifestTokenizerBecomesAVocab) {
  Tokenizer t;
  t.set_model("gpt2");
  t.set_pre("qwen2");
  t.add_tokens("a");
  t.add_token_types(1);
  t.add_tokens("<|im_end|>");
  t.add_token_types(3);
  t.add_merges("a a");
  t.set_bos_id(-1);
  t.set_eos_id(1);
  t.set_pad_id(-1);
  t.set_chat_template("{{ x }}");
  absl::StatusOr<tokenizer::Vocab> v = VocabFromManifest(t);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_THAT(v->tokens, ::testing::ElementsAre("a", "<|im_end|>"));
  EXPECT_THAT(v->token_types, ::testing::ElementsAre(tokenizer::TokenType::kNormal, tokenizer::TokenType::kControl));
  EXPECT_EQ(v->eos_id, 1);
  EXPECT_EQ(v->bos_id, -1);
  EXPECT_EQ(v->chat_template, "{{ x }}");
  t.set_token_types(1, 9);
  EXPECT_THAT(VocabFromManifest(t).status().message(), HasSubstr("token 1 has type 9"));
  t.add_token_types(1);
  EXPECT_THAT(VocabFromManifest(t).status().message(), HasSubstr("3 token types for 2 tokens"));
}

bool HaveDriver() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

TEST(ExecutorTest, WithoutAGpuCreateFailsCleanly) {
  if (HaveDriver()) GTEST_SKIP() << "this machine has an NVIDIA driver";
  ToyBundle tb = MakeToyBundle();
  std::vector<uint8_t> bytes = ToyGgufBytes();
  std::unique_ptr<gguf::GgufFile> file = ParseGguf(bytes);
  absl::StatusOr<std::unique_ptr<Executor>> e = Executor::Create(tb.manifest, tb.sections(), *file, {});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(e.status().message(), StartsWith("no NVIDIA driver found"));
}

TEST(ExecutorTest, TheBindingIsCheckedBeforeTheDriverIsTouched) {
  ToyBundle tb = MakeToyBundle();
  std::vector<uint8_t> bytes = ToyGgufBytes("toy.weight", gguf::GgmlType::kF16);
  std::unique_ptr<gguf::GgufFile> file = ParseGguf(bytes);
  absl::StatusOr<std::unique_ptr<Executor>> e = Executor::Create(tb.manifest, tb.sections(), *file, {});
  EXPECT_THAT(e.status().message(), StartsWith("tensor 'toy.weight' is F16"));
  ExecutorOptions big;
  big.context = kContext + 1;
  bytes = ToyGgufBytes();
  file = ParseGguf(bytes);
  e = Executor::Create(tb.manifest, tb.sections(), *file, big);
  EXPECT_THAT(e.status().message(), HasSubstr("exceeds the model's context length 64"));
}

// ------------------------------------------------------------ GPU tests

class ExecutorGpuTest : public ::testing::Test {
 protected:
  absl::StatusOr<std::unique_ptr<Executor>> Create(const ToyBundle& tb, ExecutorOptions o = {}) {
    o.show_progress = false;
    gguf_bytes_ = ToyGgufBytes();
    file_ = ParseGguf(gguf_bytes_);
    return Executor::Create(tb.manifest, tb.sections(), *file_, o);
  }
  static ExecutorOptions Jit() {
    ExecutorOptions o;
    o.allow_ptx_jit = true;
    return o;
  }

  std::vector<uint8_t> gguf_bytes_;
  std::unique_ptr<gguf::GgufFile> file_;
};

void ExpectRow(const std::vector<float>& got, size_t row, const std::vector<float>& want, const std::string& what) {
  ASSERT_GE(got.size(), (row + 1) * kV) << what;
  for (int v = 0; v < kV; ++v) ASSERT_EQ(got[row * kV + v], want[v]) << what << ", column " << v;
}

TEST_F(ExecutorGpuTest, PrefillAndGreedyDecodeMatchTheCpuModelExactly) {
  ToyBundle tb = MakeToyBundle();
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb, Jit());
  ASSERT_TRUE(e.ok()) << e.status();
  Executor& ex = **e;
  EXPECT_EQ(ex.context(), kContext);
  EXPECT_TRUE(ex.sections().jit);
  EXPECT_EQ(ex.sections().target, ex.device().supports_pdl() ? "sm_90" : "sm_80");

  ToyModel cpu;
  const std::vector<int32_t> prompt = {3, 5, 7};
  absl::StatusOr<StepResult> r = ex.Prefill(prompt, Logits::kAll);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows, 3);
  std::vector<float> last;
  for (size_t i = 0; i < prompt.size(); ++i) {
    last = cpu.Feed(prompt[i]);
    ExpectRow(r->logits, i, last, absl::StrCat("prompt row ", i));
  }
  EXPECT_EQ(r->argmax, Argmax(last));
  EXPECT_EQ(ex.position(), 3);

  // Greedy: feed the device's argmax back; after the first step nothing is
  // written from the host, so this checks the graph's own step advance.
  int32_t next = r->argmax;
  for (int step = 0; step < 40; ++step) {
    absl::StatusOr<StepResult> d = ex.Decode(next, step % 2 ? Logits::kLast : Logits::kNone);
    ASSERT_TRUE(d.ok()) << d.status();
    last = cpu.Feed(next);
    if (step % 2) ExpectRow(d->logits, 0, last, absl::StrCat("decode step ", step));
    else EXPECT_TRUE(d->logits.empty());
    ASSERT_EQ(d->argmax, Argmax(last)) << "decode step " << step;
    next = d->argmax;
  }
  EXPECT_EQ(ex.position(), 43);
}

TEST_F(ExecutorGpuTest, HostChosenTokensAndRewindAreFedCorrectly) {
  ToyBundle tb = MakeToyBundle();
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb, Jit());
  ASSERT_TRUE(e.ok()) << e.status();
  Executor& ex = **e;
  ToyModel cpu;
  ASSERT_TRUE(ex.Prefill(std::vector<int32_t>{1, 2}, Logits::kNone).ok());
  cpu.Feed(1);
  cpu.Feed(2);
  // Not the argmax: the host must write the token (a sampled step).
  for (int32_t t : {9, 9, 0, 15, 4}) {
    absl::StatusOr<StepResult> d = ex.Decode(t, Logits::kLast);
    ASSERT_TRUE(d.ok()) << d.status();
    ExpectRow(d->logits, 0, cpu.Feed(t), absl::StrCat("token ", t));
  }
  // Rewind into the prompt and continue with prefill, then decode.
  ASSERT_TRUE(ex.Rewind(1).ok());
  cpu.Rewind(1);
  absl::StatusOr<StepResult> r = ex.Prefill(std::vector<int32_t>{11, 12, 13}, Logits::kLast);
  ASSERT_TRUE(r.ok()) << r.status();
  cpu.Feed(11);
  cpu.Feed(12);
  std::vector<float> last = cpu.Feed(13);
  ExpectRow(r->logits, 0, last, "prefill after rewind");
  absl::StatusOr<StepResult> d = ex.Decode(r->argmax, Logits::kLast);
  ASSERT_TRUE(d.ok()) << d.status();
  ExpectRow(d->logits, 0, cpu.Feed(r->argmax), "decode after rewind");
  EXPECT_FALSE(ex.Rewind(ex.position() + 1).ok());
  // Reset starts over at position 0.
  ex.Reset();
  cpu.Rewind(0);
  r = ex.Prefill(std::vector<int32_t>{6}, Logits::kLast);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectRow(r->logits, 0, cpu.Feed(6), "after reset");
}

TEST_F(ExecutorGpuTest, LongPromptsArePrefilledInChunks) {
  ToyBundle tb = MakeToyBundle();
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb, Jit());
  ASSERT_TRUE(e.ok()) << e.status();
  std::vector<int32_t> prompt;
  for (int i = 0; i < 3 * kMaxTokens + 3; ++i) prompt.push_back((i * 7 + 1) % kV);
  ToyModel cpu;
  absl::StatusOr<StepResult> r = (*e)->Prefill(prompt, Logits::kAll);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows, static_cast<int64_t>(prompt.size()));
  std::vector<float> last;
  for (size_t i = 0; i < prompt.size(); ++i) {
    last = cpu.Feed(prompt[i]);
    ExpectRow(r->logits, i, last, absl::StrCat("row ", i));
  }
  EXPECT_EQ(r->argmax, Argmax(last));
  // kLast over chunks: only the final row comes back.
  (*e)->Reset();
  r = (*e)->Prefill(prompt, Logits::kLast);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rows, 1);
  ExpectRow(r->logits, 0, last, "last row");
}

TEST_F(ExecutorGpuTest, OneRowLogitsFallBackToStepsForEveryRow) {
  ToyOptions o;
  o.last_only = true;
  ToyBundle tb = MakeToyBundle(o);
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb, Jit());
  ASSERT_TRUE(e.ok()) << e.status();
  const std::vector<int32_t> prompt = {2, 4, 6, 8, 10};
  ToyModel cpu;
  absl::StatusOr<StepResult> r = (*e)->Prefill(prompt, Logits::kAll);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows, 5);
  for (size_t i = 0; i < prompt.size(); ++i) ExpectRow(r->logits, i, cpu.Feed(prompt[i]), absl::StrCat("row ", i));
  (*e)->Reset();
  cpu.Rewind(0);
  r = (*e)->Prefill(prompt, Logits::kLast);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<float> last;
  for (int32_t t : prompt) last = cpu.Feed(t);
  ExpectRow(r->logits, 0, last, "last row");
  EXPECT_EQ(r->argmax, Argmax(last));
}

TEST_F(ExecutorGpuTest, AFullContextIsReportedNotOverrun) {
  ToyBundle tb = MakeToyBundle();
  ExecutorOptions o = Jit();
  o.context = 12;
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb, o);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ((*e)->Prefill(std::vector<int32_t>(13, 1), Logits::kNone).status().code(),
            absl::StatusCode::kResourceExhausted);
  absl::StatusOr<StepResult> r = (*e)->Prefill(std::vector<int32_t>(11, 1), Logits::kNone);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE((*e)->Decode(r->argmax, Logits::kNone).ok());
  absl::Status s = (*e)->Decode(0, Logits::kNone).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("the context of 12 tokens is full"));
  ASSERT_TRUE((*e)->Rewind(0).ok());
  EXPECT_THAT((*e)->Decode(kV, Logits::kNone).status().message(), HasSubstr("outside the vocabulary"));
}

TEST_F(ExecutorGpuTest, PtxOnlyBundleNeedsAllowPtxJit) {
  ToyBundle tb = MakeToyBundle();
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(e.status().message(), StartsWith("bundle has no cubin, only PTX for sm_80, sm_90"));
  EXPECT_THAT(e.status().message(), HasSubstr("rerun with --allow-ptx-jit"));
}

TEST_F(ExecutorGpuTest, TooLittleMemoryIsReportedAgainstTheRealFreeMemory) {
  ToyOptions o;
  o.kv_bytes_per_token = int64_t{8} << 30;  // 8 GiB a token: 512 GiB at C = 64
  ToyBundle tb = MakeToyBundle(o);
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb, Jit());
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(e.status().message(), StartsWith("context 64 needs "));
  EXPECT_THAT(e.status().message(), HasSubstr("rerun with --ctx-size "));
}

// The production path: a cubin for exactly this GPU, no JIT. Needs ptxas
// (the CUDA toolkit) on the GPU machine; skipped without it.
TEST_F(ExecutorGpuTest, AnExactCubinLoadsWithoutJit) {
  const char* env = std::getenv("KILN_PTXAS");
  const std::string ptxas = env != nullptr ? env : "/usr/local/cuda/bin/ptxas";
  if (access(ptxas.c_str(), X_OK) != 0) GTEST_SKIP() << "no ptxas at " << ptxas;
  absl::StatusOr<const cuda::Driver*> driver = cuda::Driver::Get();
  ASSERT_TRUE(driver.ok()) << driver.status();
  absl::StatusOr<cuda::DeviceInfo> dev = cuda::GetDeviceInfo(**driver, 0);
  ASSERT_TRUE(dev.ok()) << dev.status();
  const std::string sm = dev->sm();
  char dir[] = "/tmp/kiln_executor_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string ptx_path = absl::StrCat(dir, "/toy.ptx"), cubin_path = absl::StrCat(dir, "/toy.cubin");
  std::ofstream(ptx_path) << ToyPtx(dev->supports_pdl() ? "sm_90" : "sm_80");
  const std::string cmd = absl::StrCat(ptxas, " -arch=", sm, " ", ptx_path, " -o ", cubin_path);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(cubin_path, std::ios::binary);
  std::string cubin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(cubin.empty());
  ToyOptions o;
  o.ptx.clear();
  o.cubins = {{sm, cubin}};
  ToyBundle tb = MakeToyBundle(o);
  absl::StatusOr<std::unique_ptr<Executor>> e = Create(tb);  // no --allow-ptx-jit
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_FALSE((*e)->sections().jit);
  EXPECT_EQ((*e)->sections().target, sm);
  ToyModel cpu;
  absl::StatusOr<StepResult> r = (*e)->Prefill(std::vector<int32_t>{4, 4}, Logits::kLast);
  ASSERT_TRUE(r.ok()) << r.status();
  cpu.Feed(4);
  ExpectRow(r->logits, 0, cpu.Feed(4), "cubin prefill");
  int32_t next = r->argmax;
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<StepResult> d = (*e)->Decode(next, Logits::kLast);
    ASSERT_TRUE(d.ok()) << d.status();
    ExpectRow(d->logits, 0, cpu.Feed(next), "cubin decode");
    next = d->argmax;
  }
  std::remove(ptx_path.c_str());
  std::remove(cubin_path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace kiln::runtime
