#include "tests/runtime/toy_bundle.h"

#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "models/gguf/gguf_writer.h"
#include "models/tokenizer/byte_level.h"
#include "runtime/bundle/bundle_format.h"
#include "runtime/bundle/expr.h"

namespace kiln::runtime::toy {

Expr E(int64_t constant, int64_t t, int64_t p, int64_t c, int64_t div) { return MakeExpr(constant, t, p, c, div); }

void AddBufferArg(Launch& l, uint32_t buffer, Expr offset) {
  Arg::BufferRef* ref = l.add_args()->mutable_buffer();
  ref->set_buffer(buffer);
  *ref->mutable_offset() = offset;
}

void AddBuffer(Manifest& m, const char* name, Buffer::Kind kind, Expr bytes) {
  Buffer* b = m.add_buffers();
  b->set_name(name);
  b->set_kind(kind);
  *b->mutable_bytes() = bytes;
  b->set_alignment(256);
}

namespace {

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
  Launch logits = MakeLaunch(kLogitsKernel, E(0, o.vocab, 0, 0, 64));
  for (uint32_t b : {kTokens, kPosition, kKv, kPacked, kLogits}) AddBufferArg(logits, b);
  AddI32(logits, E(0, 1));
  AddI32(logits, E(o.vocab));
  AddI32(logits, E(o.last_only ? 1 : 0));
  Launch argmax = MakeLaunch(kArgmax, E(1));
  AddBufferArg(argmax, kLogits);
  AddBufferArg(argmax, kSampled);
  AddI32(argmax, E(0, 1));
  AddI32(argmax, E(o.vocab));
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

void AddToken(Tokenizer& t, const std::string& text, int type) {
  t.add_tokens(text);
  t.add_token_types(type);
}

}  // namespace

std::string ToyPtx(const std::string& target) {
  const bool pdl = target == "sm_90";
  return absl::StrReplaceAll(kToyPtx, {{"@TARGET@", target}, {"@WAIT@", pdl ? "griddepcontrol.wait;" : ""}});
}

SectionBytesFn ToyBundle::sections() const {
  return [this](int i) -> absl::StatusOr<absl::Span<const uint8_t>> {
    const Section& s = manifest.sections(i);
    return absl::MakeConstSpan(file).subspan(s.offset(), s.size());
  };
}

ToyBundle MakeToyBundle(const ToyOptions& o) {
  const int v = o.vocab;
  ToyBundle tb;
  Manifest& m = tb.manifest;
  m.set_format_version(kBundleFormatVersion);
  m.set_producer("kiln runtime tests (toy bundle)");
  m.set_target("sm_90");
  ModelConfig* c = m.mutable_config();
  c->set_architecture("toy");
  c->set_n_layer(1);
  c->set_n_embd(v);
  c->set_n_ff(v);
  c->set_n_head(1);
  c->set_n_head_kv(1);
  c->set_head_dim(v);
  c->set_n_vocab(v);
  c->set_context_length(o.context);
  c->set_rms_eps(1e-6f);
  c->set_rope_base(1e4f);
  Tokenizer* t = m.mutable_tokenizer();
  t->set_model("gpt2");
  t->set_pre("qwen2");
  t->set_bos_id(-1);
  t->set_eos_id(-1);
  t->set_pad_id(-1);
  if (v >= kTokenizerVocab) {
    for (int b = 0; b < 256; ++b) AddToken(*t, tokenizer::ByteToSymbol(static_cast<uint8_t>(b)), 1);
    AddToken(*t, "<|endoftext|>", 3);
    AddToken(*t, "<|im_start|>", 3);
    AddToken(*t, "<|im_end|>", 3);
    AddToken(*t, "<think>", 4);
    AddToken(*t, "</think>", 4);
    for (int i = t->tokens_size(); i < v; ++i) AddToken(*t, absl::StrCat("<|unused_", i, "|>"), 5);
    t->set_eos_id(kEndOfText);
    t->set_pad_id(kEndOfText);
  }

  TensorBinding* b = m.add_bindings();
  b->set_name("toy.weight");
  b->set_ggml_type(static_cast<uint32_t>(gguf::GgmlType::kF32));
  b->add_dims(v);
  b->add_dims(v);
  b->set_nbytes(int64_t{v} * v * 4);
  b->set_buffer(kGgufW);

  AddBuffer(m, "gguf.toy.weight", Buffer::GGUF_TENSOR, E(int64_t{v} * v * 4));
  AddBuffer(m, "toy.packed", Buffer::WEIGHT, E(int64_t{v} * v * 4));
  AddBuffer(m, "kv", Buffer::KV_CACHE, E(0, 0, 0, o.kv_bytes_per_token));
  AddBuffer(m, "tokens", Buffer::IO, E(0, 4));
  AddBuffer(m, "position", Buffer::IO, E(4));
  AddBuffer(m, "logits", Buffer::IO, o.last_only ? E(v * 4) : E(0, v * 4));
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

  Launch pack = MakeLaunch(kPack, E(int64_t{v} * v, 0, 0, 0, 64));
  AddBufferArg(pack, kGgufW);
  AddBufferArg(pack, kPacked);
  AddI32(pack, E(int64_t{v} * v));
  *m.mutable_load()->add_launches() = pack;
  m.mutable_load()->set_max_tokens(0);
  AddStepLaunches(*m.mutable_prefill(), o, false);
  m.mutable_prefill()->set_max_tokens(o.max_tokens);
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
    tb.images.push_back({kind, target, image});
  };
  for (const auto& [target, ptx] : o.ptx) add_section(Section::PTX, target, ptx);
  for (const auto& [target, cubin] : o.cubins) add_section(Section::CUBIN, target, cubin);
  return tb;
}

std::vector<float> ToyWeights(int vocab) {
  std::vector<float> w(static_cast<size_t>(vocab) * vocab);
  uint32_t x = 12345;
  for (float& v : w) {
    x = x * 1664525u + 1013904223u;  // LCG: any fixed values in [0, 1) do
    v = static_cast<float>(x >> 8) * 0x1.0p-24f;
  }
  return w;
}

std::vector<uint8_t> ToyGgufBytes(int vocab, const std::string& name, gguf::GgmlType type, std::vector<int64_t> dims,
                                  bool extra_tensor) {
  if (dims.empty()) dims = {vocab, vocab};
  gguf::GgufWriter w;
  w.AddKey("general.architecture", gguf::Value::Str("toy"));
  const gguf::GgmlTypeInfo& info = gguf::TypeInfo(type);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<uint8_t> bytes(n / info.block_elems * info.block_bytes, 0);
  std::vector<float> weights = ToyWeights(vocab);
  if (type == gguf::GgmlType::kF32 && bytes.size() == weights.size() * 4)
    std::memcpy(bytes.data(), weights.data(), bytes.size());
  if (extra_tensor) w.AddTensorBytes("other.weight", {32}, gguf::GgmlType::kF32, std::vector<uint8_t>(128, 0));
  w.AddTensorBytes(name, dims, type, bytes);
  absl::StatusOr<std::vector<uint8_t>> out = w.WriteToMemory();
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<uint8_t>();
}

std::unique_ptr<gguf::GgufFile> ParseGguf(const std::vector<uint8_t>& bytes) {
  absl::StatusOr<std::unique_ptr<gguf::GgufFile>> f = gguf::GgufFile::Parse(bytes, "toy.gguf");
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *std::move(f) : nullptr;
}

std::vector<float> ToyModel::Feed(int32_t token) {
  history_.push_back(token);
  const int64_t sum = std::accumulate(history_.begin(), history_.end(), int64_t{0});
  std::vector<float> row(vocab_);
  for (int v = 0; v < vocab_; ++v) {
    const float packed = w_[token * vocab_ + v] + w_[token * vocab_ + v];
    row[v] = packed + (v == sum % vocab_ ? 100.0f : 0.0f);
  }
  return row;
}

}  // namespace kiln::runtime::toy
