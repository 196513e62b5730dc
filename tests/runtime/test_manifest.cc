#include "tests/runtime/test_manifest.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/bundle/expr.h"

namespace kiln::testing {
namespace {

using runtime::Arg;
using runtime::Buffer;
using runtime::Launch;
using runtime::MakeExpr;
using runtime::Manifest;
using runtime::Param;

void AddBuffer(Manifest& m, const char* name, Buffer::Kind kind, runtime::Expr bytes) {
  Buffer* b = m.add_buffers();
  b->set_name(name);
  b->set_kind(kind);
  *b->mutable_bytes() = bytes;
  b->set_alignment(256);
}

void AddBinding(Manifest& m, const char* name, uint32_t type, std::vector<int64_t> dims,
                uint64_t nbytes, uint32_t buffer) {
  runtime::TensorBinding* b = m.add_bindings();
  b->set_name(name);
  b->set_ggml_type(type);
  for (int64_t d : dims) b->add_dims(d);
  b->set_nbytes(nbytes);
  b->set_buffer(buffer);
}

void AddParam(runtime::Kernel& k, Param::Kind kind, const char* name) {
  Param* p = k.add_params();
  p->set_kind(kind);
  p->set_name(name);
}

void AddBufferArg(Launch& l, uint32_t buffer, runtime::Expr offset = MakeExpr(0)) {
  Arg::BufferRef* ref = l.add_args()->mutable_buffer();
  ref->set_buffer(buffer);
  *ref->mutable_offset() = offset;
}

void SetGrid(Launch& l, runtime::Expr x) {
  *l.mutable_grid_x() = x;
  *l.mutable_grid_y() = MakeExpr(1);
  *l.mutable_grid_z() = MakeExpr(1);
}

// One step of the tiny model: embed, norm, lm_head, argmax in one kernel.
Launch StepLaunch(runtime::Expr grid_x, runtime::Expr n_tokens) {
  Launch l;
  l.set_kernel(kStep);
  SetGrid(l, grid_x);
  AddBufferArg(l, kTokens);
  AddBufferArg(l, kPosition);
  AddBufferArg(l, kWeights);
  AddBufferArg(l, kKvCache, MakeExpr(0, 0, 128));  // P * 128: this step's KV rows
  AddBufferArg(l, kArena, MakeExpr(0, 256));       // T * 256: past the embeddings
  AddBufferArg(l, kLogits);
  AddBufferArg(l, kSampled);
  *l.add_args()->mutable_i32() = n_tokens;
  l.add_args()->set_f32(1e-6f);
  return l;
}

}  // namespace

Manifest MakeValidManifest() {
  Manifest m;
  m.set_format_version(1);
  m.set_producer("kiln tests");
  m.set_target("sm_90");

  runtime::ModelConfig* c = m.mutable_config();
  c->set_architecture("qwen3");
  c->set_n_layer(1);
  c->set_n_embd(64);
  c->set_n_ff(192);
  c->set_n_head(4);
  c->set_n_head_kv(2);
  c->set_head_dim(16);
  c->set_n_vocab(32);
  c->set_context_length(256);
  c->set_rms_eps(1e-6f);
  c->set_rope_base(1e6f);
  c->set_tied_embeddings(true);

  runtime::Tokenizer* t = m.mutable_tokenizer();
  t->set_model("gpt2");
  t->set_pre("qwen2");
  for (int i = 0; i < 30; ++i) {
    t->add_tokens(std::string(1, static_cast<char>('a' + i % 26)) + (i >= 26 ? "!" : ""));
    t->add_token_types(1);
  }
  t->add_tokens("<|endoftext|>");
  t->add_token_types(3);
  t->add_tokens("<|im_end|>");
  t->add_token_types(3);
  t->add_merges("a b");
  t->add_merges("c d");
  t->set_bos_id(30);
  t->set_eos_id(31);
  t->set_pad_id(30);
  t->set_add_bos(false);
  t->set_chat_template("{% for m in messages %}{{ m.content }}{% endfor %}");

  // Q8_0 [64, 32]: 2 blocks of 34 bytes a row, 32 rows.
  AddBinding(m, "token_embd.weight", 8, {64, 32}, 2176, kEmbdGguf);
  AddBinding(m, "output_norm.weight", 0, {64}, 256, kNormGguf);

  AddBuffer(m, "gguf.token_embd.weight", Buffer::GGUF_TENSOR, MakeExpr(2176));
  AddBuffer(m, "gguf.output_norm.weight", Buffer::GGUF_TENSOR, MakeExpr(256));
  AddBuffer(m, "weights", Buffer::WEIGHT, MakeExpr(4096));
  AddBuffer(m, "kv_cache", Buffer::KV_CACHE, MakeExpr(0, 0, 0, 128));  // C * 2 * 2 * 16 * f16
  AddBuffer(m, "arena", Buffer::ACTIVATION, MakeExpr(1024, 1024));
  AddBuffer(m, "tokens", Buffer::IO, MakeExpr(0, 4));
  AddBuffer(m, "position", Buffer::IO, MakeExpr(4));
  AddBuffer(m, "logits", Buffer::IO, MakeExpr(0, 128));  // f32[T, 32]
  AddBuffer(m, "sampled", Buffer::IO, MakeExpr(4));
  m.set_tokens_buffer(kTokens);
  m.set_position_buffer(kPosition);
  m.set_logits_buffer(kLogits);
  m.set_sampled_buffer(kSampled);

  runtime::Section* ptx = m.add_sections();
  ptx->set_kind(runtime::Section::PTX);
  ptx->set_target("sm_90");
  ptx->set_offset(4096);
  ptx->set_size(1000);
  runtime::Section* cubin = m.add_sections();
  cubin->set_kind(runtime::Section::CUBIN);
  cubin->set_target("sm_90");
  cubin->set_offset(5120);
  cubin->set_size(300);

  runtime::Kernel* repack = m.add_kernels();
  repack->set_name("repack_q8_0");
  repack->set_family("repack");
  AddParam(*repack, Param::POINTER, "src");
  AddParam(*repack, Param::POINTER, "dst");
  AddParam(*repack, Param::I32, "n_bytes");
  repack->set_block_x(256);
  repack->set_block_y(1);
  repack->set_block_z(1);

  runtime::Kernel* step = m.add_kernels();
  step->set_name("tiny_step");
  step->set_family("fused");
  for (const char* name : {"tokens", "position", "weights", "kv", "arena", "logits", "sampled"})
    AddParam(*step, Param::POINTER, name);
  AddParam(*step, Param::I32, "n_tokens");
  AddParam(*step, Param::F32, "eps");
  step->set_block_x(32);
  step->set_block_y(4);
  step->set_block_z(1);
  step->set_shared_bytes(4096);
  step->set_programmatic_launch(true);
  step->set_bytes_read(4096);
  *step->mutable_bytes_read_per_position() = MakeExpr(128);

  // load: pack both GGUF tensors into the weight buffer.
  const std::pair<uint32_t, int64_t> packs[] = {{kEmbdGguf, 0}, {kNormGguf, 2304}};
  for (const auto& [src, dst_offset] : packs) {
    Launch* l = m.mutable_load()->add_launches();
    l->set_kernel(kRepack);
    SetGrid(*l, MakeExpr(src == kEmbdGguf ? 2176 : 256, 0, 0, 0, 256));
    AddBufferArg(*l, src);
    AddBufferArg(*l, kWeights, MakeExpr(dst_offset));
    *l->add_args()->mutable_i32() = MakeExpr(src == kEmbdGguf ? 2176 : 256);
  }
  m.mutable_load()->set_max_tokens(0);
  *m.mutable_prefill()->add_launches() = StepLaunch(MakeExpr(0, 1, 0, 0, 64), MakeExpr(0, 1));
  m.mutable_prefill()->set_max_tokens(64);
  *m.mutable_decode()->add_launches() = StepLaunch(MakeExpr(1), MakeExpr(1));
  m.mutable_decode()->set_max_tokens(1);
  return m;
}

std::vector<compiler::SectionInput> MakeSectionInputs() {
  std::string ptx =
      "//\n// Generated by kiln tests\n//\n.version 8.4\n.target sm_90\n.address_size 64\n\n"
      ".visible .entry repack_q8_0(.param .u64 src, .param .u64 dst, .param .u32 n)\n{\n  ret;\n}\n"
      ".visible .entry tiny_step(.param .u64 tokens)\n{\n  ret;\n}\n";
  std::string cubin;
  for (int i = 0; i < 300; ++i) cubin.push_back(static_cast<char>((i * 37 + 11) & 0xff));
  cubin[0] = 0x7f;  // ELF
  cubin[10] = 0;    // binary: NULs are fine in a cubin
  return {{runtime::Section::PTX, "sm_90", ptx}, {runtime::Section::CUBIN, "sm_90", cubin}};
}

}  // namespace kiln::testing
