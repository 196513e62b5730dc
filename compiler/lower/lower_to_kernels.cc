#include "compiler/lower/lower_to_kernels.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/codegen/kernel_spec_fields.h"
#include "compiler/lower/beside_launches.h"
#include "compiler/lower/join_matvecs.h"
#include "compiler/lower/lower_load.h"
#include "compiler/lower/lowering_context.h"
#include "ir/printer.h"
#include "models/tokenizer/utf8.h"
#include "runtime/bundle/model_keys.h"
#include "support/status_macros.h"

namespace kiln::compiler {
namespace {

using codegen::Family;
using codegen::KernelSpec;
using ir::Op;
using ir::Value;
using runtime::Buffer;
using runtime::Expr;

// The IO and scratch buffers every plan shares.
struct Io {
  uint32_t tokens, position, logits, sampled;
  uint32_t arena;
  uint32_t attn_partial = UINT32_MAX, attn_counter = UINT32_MAX, qkv_scratch = UINT32_MAX;
  uint32_t argmax_partial = UINT32_MAX, argmax_counter = UINT32_MAX;
};

// kArgmax's block records (8 bytes per row and block) and per-row arrival
// counters (zeroed at allocation, like every activation buffer, and left
// zero by each launch), shared by every argmax launch (they run one after
// another) and sized for the largest.
std::vector<LaunchArg> ArgmaxScratch(LoweringContext& ctx, Io& io, const KernelSpec& s) {
  auto buffer = [&](uint32_t& index, const char* name, int64_t bytes) {
    if (index == UINT32_MAX) {
      index = ctx.AddBuffer(name, Buffer::ACTIVATION, ConstExpr(bytes));
    } else {
      Expr* size = ctx.manifest().mutable_buffers(static_cast<int>(index))->mutable_bytes();
      size->set_constant(std::max(size->constant(), bytes));
    }
    return LaunchArg{LaunchArg::kPointer, {index, ConstExpr(0)}, {}};
  };
  return {buffer(io.argmax_partial, "argmax_partial", 8 * s.rows * codegen::ArgmaxBlocks(s)),
          buffer(io.argmax_counter, "argmax_counter", 4 * s.rows)};
}

const Op* FindIn(const Op& kernel, ir::OpKind kind, int nth = 0) {
  for (const auto& op : kernel.region()->ops())
    if (op->kind() == kind && nth-- == 0) return op.get();
  return nullptr;
}

// Copies the schedule dict's fields into the spec's schedules, each by its
// name in kernel_spec_fields.h (select-schedules writes them under those
// names, schedule.proto's); a name several schedules share (threads) goes to
// each, and only the kernel's family reads its own.
void ApplySchedule(const Op& kernel, KernelSpec& s) {
  const ir::Attribute* a = kernel.attr("schedule");
  if (a == nullptr || a->kind() != ir::Attribute::Kind::kDict) return;
  auto get = [&](std::string_view name, auto& field) {
    if (const ir::Attribute* f = a->dict().Find(name); f && f->kind() == ir::Attribute::Kind::kInt)
      field = static_cast<std::remove_reference_t<decltype(field)>>(f->int_value());
  };
  codegen::VisitMatVecScheduleFields(s.matvec, get);
  codegen::VisitGemmScheduleFields(s.gemm, get);
  codegen::VisitAttentionScheduleFields(s.attention, get);
  codegen::VisitElementwiseScheduleFields(s.elementwise, get);
}

class StepLowering {
 public:
  // join_matvecs (decode): q/k/v parts whose schedules allow it share a
  // launch (join_matvecs.h).
  StepLowering(const ir::Function& f, LoweringContext& ctx, Io& io, const models::Qwen3Config& c,
               runtime::Plan& plan, bool decode, bool join_matvecs = false)
      : f_(f),
        ctx_(ctx),
        io_(io),
        c_(c),
        plan_(plan),
        decode_(decode),
        join_matvecs_(join_matvecs),
        t_(decode ? ConstExpr(1) : AffineT(1, 0)) {}

  absl::Status Run() {
    const auto& ops = f_.body().ops();
    // Arguments are IO; returned values are written straight into IO.
    where_[f_.body().arg(0)] = {io_.tokens, ConstExpr(0)};
    where_[f_.body().arg(1)] = {io_.position, ConstExpr(0)};
    const Op* ret = f_.body().terminator();
    if (ret == nullptr || ret->num_operands() < 1) return absl::InternalError("no returned logits");
    for (int i = 0; i < ret->num_operands(); ++i)
      fixed_[Root(ret->operand(i))] = {i == 0 ? io_.logits : io_.sampled, ConstExpr(0)};
    if (decode_) RETURN_IF_ERROR(PlaceQkvParts());
    for (const auto& op : ops) RETURN_IF_ERROR(Lower(*op));
    return FlushPendingPart();
  }

  // Decode: the launches of q/k/v projections computed apart and not joined
  // (see QkvPart).
  const std::vector<int>& qkv_part_launches() const { return qkv_part_launches_; }

 private:
  // Reshapes are views: the storage is their root's.
  const Value* Root(const Value* v) {
    while (v->kind() == Value::Kind::kResult && v->defining_op()->kind() == ir::OpKind::kReshape)
      v = v->defining_op()->operand(0);
    return v;
  }

  absl::StatusOr<Location> At(const Value* v) {
    v = Root(v);
    if (v->is_global()) {
      ASSIGN_OR_RETURN(uint32_t b, ctx_.RuntimeBuffer(v));
      return Location{b, ConstExpr(0)};
    }
    if (auto it = fixed_.find(v); it != fixed_.end()) return it->second;
    if (auto it = where_.find(v); it != where_.end()) return it->second;
    return absl::InternalError(absl::StrCat("value %", v->name(), " has no place"));
  }

  // The kernel operand feeding region argument `arg`.
  const Value* Outer(const Op& k, const Value* inner) {
    return inner->kind() == Value::Kind::kArgument ? k.operand(inner->index()) : inner;
  }

  LaunchArg Ptr(Location l) { return {LaunchArg::kPointer, std::move(l), {}}; }
  LaunchArg I32(Expr e) { return {LaunchArg::kI32, {}, std::move(e)}; }

  absl::Status Lower(const Op& op) {
    switch (op.kind()) {
      case ir::OpKind::kArena:
      case ir::OpKind::kReshape:
      case ir::OpKind::kReturn:
        return absl::OkStatus();
      case ir::OpKind::kKernel:
        break;
      default:
        return Unsupported(op, "an op outside every kernel");
    }
    // Place the results (plan-buffers' offsets; IO for returned values).
    if (const ir::Attribute* off = op.attr("offset")) {
      ASSIGN_OR_RETURN(Expr e, ParseAffine(off->string_value()));
      if (!fixed_.count(op.result(0))) where_[op.result(0)] = {io_.arena, e};
    } else if (op.num_results() > 0 && !fixed_.count(op.result(0))) {
      return absl::InternalError(absl::StrCat("kernel without an offset:\n  ", ir::PrintOpLine(op)));
    }
    // A q/k/v part waits for the next kernel, which may join it; any other
    // kernel launches it first.
    ASSIGN_OR_RETURN(qkv_part_, IsQkvPart(op));
    if (!qkv_part_) RETURN_IF_ERROR(FlushPendingPart());
    const ir::Attribute* fam = op.attr("family");
    const std::string family = fam ? fam->string_value() : "";
    ASSIGN_OR_RETURN(read_, BytesRead(op));
    consumed_part_ = false;
    RETURN_IF_ERROR(LowerFamily(op, family));
    // A part counts its bytes when it is launched (QkvPart).
    if (!qkv_part_) return NoteBytesRead(read_);
    if (!consumed_part_)
      return absl::InternalError(absl::StrCat("a kernel writing q/k/v rows is not a one-matmul matvec:\n  ",
                                              ir::PrintOpLine(op)));
    return absl::OkStatus();
  }

  // Decode: a kernel writing its rows of the qkv scratch (PlaceQkvParts).
  absl::StatusOr<bool> IsQkvPart(const Op& op) {
    if (!decode_ || op.num_results() == 0 || io_.qkv_scratch == UINT32_MAX) return false;
    ASSIGN_OR_RETURN(Location out, At(op.result(0)));
    return out.buffer == io_.qkv_scratch;
  }

  // A q/k/v part: it writes its rows of the qkv scratch alone and reads none
  // of it. Held until the next kernel: a part after it joins it in one
  // launch (join_matvecs), anything else launches it alone.
  absl::Status QkvPart(MatVecLaunch part) {
    consumed_part_ = true;
    if (pending_part_ && join_matvecs_ && CanJoin(pending_part_->spec, part.spec, ctx_.target())) {
      MatVecLaunch j = Join(*std::move(pending_part_), std::move(part));
      pending_part_.reset();
      RETURN_IF_ERROR(ctx_.Launch(plan_, j.spec, j.args, j.tokens));
      return NoteBytesRead(j.read);
    }
    RETURN_IF_ERROR(FlushPendingPart());
    pending_part_ = std::move(part);
    return absl::OkStatus();
  }

  absl::Status FlushPendingPart() {
    if (!pending_part_) return absl::OkStatus();
    MatVecLaunch p = *std::move(pending_part_);
    pending_part_.reset();
    RETURN_IF_ERROR(ctx_.Launch(plan_, p.spec, p.args, p.tokens));
    qkv_part_launches_.push_back(plan_.launches_size() - 1);
    return NoteBytesRead(p.read);
  }

  absl::Status LowerFamily(const Op& op, const std::string& family) {
    if (family == "matvec" || family == "gemm") return MatMul(op);
    if (family == "embed") return Embed(op);
    if (family == "qk_norm_rope_store") return QkNormRopeStore(op);
    if (family == "attention_decode" || family == "attention_prefill") return Attention(op);
    if (family == "argmax") return Argmax(op);
    return Unsupported(op, absl::StrCat("kernel family '", family, "'"));
  }

  // For profiles (Kernel.bytes_read, bytes_read_per_position): the weight
  // and KV-cache bytes the kernel's launch reads at T = 1. Every weight
  // global its ops read counts whole, except an embed table (one row per
  // token); a KV-cache global (shape [C, ...]) counts one row per position
  // attended to; a kv_store's cache is written, not read; activations are
  // not counted.
  absl::StatusOr<ReadBytes> BytesRead(const Op& k) {
    int64_t bytes = 0, per_position = 0;
    absl::flat_hash_set<const Value*> seen;
    for (const auto& op : k.region()->ops()) {
      if (op->kind() == ir::OpKind::kKvStore) continue;
      for (int i = 0; i < op->num_operands(); ++i) {
        const Value* v = Root(Outer(k, op->operand(i)));
        if (!v->is_global() || !seen.insert(v).second) continue;
        bool kv = false;
        for (const ir::Dim& d : v->type().shape) kv |= d == ir::Dim::C();
        if (kv) {
          ASSIGN_OR_RETURN(int64_t row, TypeBytes(v->type(), 1, 1));
          per_position += row;
        } else if (op->kind() == ir::OpKind::kEmbed) {
          ASSIGN_OR_RETURN(int64_t row, RowBytesOf(v->type()));
          bytes += row;
        } else {
          ASSIGN_OR_RETURN(int64_t all, TypeBytes(v->type()));
          bytes += all;
        }
      }
    }
    return ReadBytes{bytes, per_position};
  }

  // `read` for the kernel of the plan's last launch. Layers share kernels,
  // and every launch of one kernel reads as much, so the largest is kept.
  absl::Status NoteBytesRead(const ReadBytes& read) {
    const int64_t bytes = read.bytes, per_position = read.per_position;
    if (plan_.launches_size() == 0) return absl::InternalError("a kernel without a launch");
    runtime::Kernel& mk = *ctx_.manifest().mutable_kernels(plan_.launches(plan_.launches_size() - 1).kernel());
    mk.set_bytes_read(std::max<uint64_t>(mk.bytes_read(), static_cast<uint64_t>(bytes)));
    if (per_position > mk.bytes_read_per_position().constant())
      *mk.mutable_bytes_read_per_position() = ConstExpr(per_position);
    return absl::OkStatus();
  }

  absl::Status Unsupported(const Op& op, const std::string& what) {
    return absl::UnimplementedError(
        absl::StrCat("lower-to-kernels: no GPU kernel for ", what, ":\n  ", ir::PrintOpLine(op)));
  }

  absl::Status MatMul(const Op& k) {
    const Op* mm = FindIn(k, ir::OpKind::kMatMul);
    if (mm == nullptr) return Unsupported(k, "a matmul kernel without a matmul");
    // A prefill's last-token logits (fuse's last_row prologue) run as a
    // matvec of one token: row T - 1 of the kernel's input.
    const Op* last_row = FindIn(k, ir::OpKind::kLastRow);
    const bool one_token = decode_ || last_row != nullptr;
    KernelSpec s;
    s.family = one_token ? Family::kMatVec : Family::kGemm;
    ApplySchedule(k, s);
    const Value* w = mm->operand(1);
    ASSIGN_OR_RETURN(s.weight, FormatOf(w->type().dtype));
    s.rows = w->type().shape[0].value();
    s.cols = w->type().shape[1].value();
    ASSIGN_OR_RETURN(Location wl, At(w));
    Location scales = wl;  // unused pointer parameters get a valid address
    if (mm->num_operands() == 3) {
      ASSIGN_OR_RETURN(scales, At(mm->operand(2)));
    }
    const Value* x = mm->operand(0);
    Location norm_w = wl;
    if (const Op* norm = FindIn(k, ir::OpKind::kRmsNorm); norm && norm->result() == x) {
      s.prologue = codegen::Prologue::kRmsNorm;
      s.eps = norm->GetFloat("eps");
      ASSIGN_OR_RETURN(norm_w, At(norm->operand(1)));
      x = norm->operand(0);
    }
    if (last_row != nullptr) {
      if (last_row->result() != x) return Unsupported(k, "a last_row that does not feed the matmul's input");
      x = last_row->operand(0);
    }
    ASSIGN_OR_RETURN(Location xl, At(Outer(k, x)));
    if (last_row != nullptr) {  // + (T - 1) rows of f32
      if (xl.offset.div() > 1 || xl.offset.p() != 0 || xl.offset.c() != 0)
        return Unsupported(k, "a last_row of a value not placed at a*T + b");
      const int64_t row = 4 * s.cols;
      xl.offset.set_t(xl.offset.t() + row);
      xl.offset.set_constant(xl.offset.constant() - row);
    }
    const runtime::Expr tokens = last_row != nullptr ? ConstExpr(1) : t_;
    ASSIGN_OR_RETURN(Location out, At(k.result(0)));
    if (const Op* add = FindIn(k, ir::OpKind::kAdd)) {
      s.epilogue = codegen::Epilogue::kAddInPlace;
      const Value* resid = Outer(k, add->operand(0) == mm->result() ? add->operand(1) : add->operand(0));
      ASSIGN_OR_RETURN(Location rl, At(resid));
      if (!SameLocation(rl, out))
        return absl::InternalError(absl::StrCat("residual add not in place:\n  ", ir::PrintOpLine(k)));
    } else if (const Op* sw = FindIn(k, ir::OpKind::kSwiglu)) {
      s.epilogue = codegen::Epilogue::kSiluMulPairs;
      s.pair_group = static_cast<int>(sw->GetInt("group"));
    } else if (const Op* silu = FindIn(k, ir::OpKind::kSilu)) {
      // out = silu(gate) * acc, the gate an extra input (gate/up not packed).
      s.epilogue = codegen::Epilogue::kSiluMulWith;
      ASSIGN_OR_RETURN(Location extra, At(Outer(k, silu->operand(0))));
      if (one_token) s.matvec.max_tokens = 1;
      return ctx_.Launch(plan_, s,
                         {Ptr(wl), Ptr(scales), Ptr(xl), Ptr(norm_w), Ptr(out), I32(tokens), Ptr(extra)}, tokens);
    }
    if (one_token) s.matvec.max_tokens = 1;
    std::vector<LaunchArg> args = {Ptr(wl), Ptr(scales), Ptr(xl), Ptr(norm_w), Ptr(out), I32(tokens)};
    if (qkv_part_) return QkvPart({s, std::move(args), tokens, read_});
    return ctx_.Launch(plan_, s, args, tokens);
  }

  absl::Status Embed(const Op& k) {
    const Op* e = FindIn(k, ir::OpKind::kEmbed);
    KernelSpec s;
    s.family = Family::kEmbed;
    ApplySchedule(k, s);
    const Value* table = e->operand(0);
    ASSIGN_OR_RETURN(s.weight, FormatOf(table->type().dtype));
    s.rows = table->type().shape[0].value();
    s.cols = table->type().shape[1].value();
    ASSIGN_OR_RETURN(Location tl, At(table));
    ASSIGN_OR_RETURN(Location ids, At(Outer(k, e->operand(1))));
    ASSIGN_OR_RETURN(Location out, At(k.result(0)));
    return ctx_.Launch(plan_, s, {Ptr(tl), Ptr(ids), Ptr(out), I32(t_)}, t_);
  }

  // What a kernel with a q/k-norm + rope + kv_store group reads:
  // kQkNormRopeStore, or kAttentionDecode with rope_fused.
  struct RopeInputs {
    Location qkv, pos, q_norm, k_norm, k_cache, v_cache;
  };

  // Fills the spec's norm/rope fields from the kernel's group and finds its
  // inputs.
  absl::StatusOr<RopeInputs> RopeGroup(const Op& k, KernelSpec& s) {
    const Op* store = FindIn(k, ir::OpKind::kKvStore);
    const Op* qnorm = FindIn(k, ir::OpKind::kRmsNorm, 0);
    const Op* knorm = FindIn(k, ir::OpKind::kRmsNorm, 1);
    const Op* rope = FindIn(k, ir::OpKind::kRope);
    if (!store || !qnorm || !knorm || !rope) return Unsupported(k, "this q/k-norm + rope + store group");
    s.n_head = c_.n_head;
    s.n_head_kv = c_.n_head_kv;
    s.head_dim = c_.head_dim;
    s.eps = qnorm->GetFloat("eps");
    s.rope_base = rope->GetFloat("base");
    s.rope_scaling.freq_scale = rope->GetFloat("freq_scale", 1.0f);
    s.rope_scaling.ext_factor = rope->GetFloat("ext_factor", 0.0f);
    s.rope_scaling.ramp_low = rope->GetFloat("ramp_low", 0.0f);
    s.rope_scaling.ramp_high = rope->GetFloat("ramp_high", 0.0f);
    s.rope_scaling.mscale = rope->GetFloat("mscale", 1.0f);
    s.kv_f16 = store->operand(2)->type().dtype == ir::DType::kF16;
    // Which norm is q's: the one whose weight feeds the rotated q that is yielded.
    const Value* qn_w = qnorm->operand(1);
    const Value* kn_w = knorm->operand(1);
    if (absl::StrContains(kn_w->name(), "attn_q_norm")) std::swap(qn_w, kn_w);
    // The qkv input: one packed operand, or q/k/v assembled into scratch.
    RopeInputs in;
    const Value* pos = nullptr;
    const std::vector<const Value*> parts = QkvOperands(k, &pos);
    if (parts.size() == 1) {
      ASSIGN_OR_RETURN(in.qkv, At(parts[0]));
    } else if ((parts.size() == 2 || parts.size() == 3) && decode_) {
      in.qkv = {io_.qkv_scratch, ConstExpr(0)};  // the matvecs wrote there (PlaceQkvParts)
    } else if (parts.size() == 2 || parts.size() == 3) {
      ASSIGN_OR_RETURN(in.qkv, AssembleQkv(k, parts));
    } else {
      return Unsupported(k, "a q/k/v input split this way");
    }
    ASSIGN_OR_RETURN(in.pos, At(pos));
    ASSIGN_OR_RETURN(in.q_norm, At(qn_w));
    ASSIGN_OR_RETURN(in.k_norm, At(kn_w));
    ASSIGN_OR_RETURN(in.k_cache, At(store->operand(2)));
    ASSIGN_OR_RETURN(in.v_cache, At(store->operand(3)));
    return in;
  }

  absl::Status QkNormRopeStore(const Op& k) {
    KernelSpec s;
    s.family = Family::kQkNormRopeStore;
    ApplySchedule(k, s);
    ASSIGN_OR_RETURN(RopeInputs in, RopeGroup(k, s));
    ASSIGN_OR_RETURN(Location out, At(k.result(0)));
    return ctx_.Launch(plan_, s,
                       {Ptr(in.qkv), Ptr(in.q_norm), Ptr(in.k_norm), Ptr(in.pos), Ptr(in.k_cache), Ptr(in.v_cache),
                        Ptr(out), I32(t_)},
                       t_);
  }

  // The float operands of a kernel with a q/k-norm + rope + store group
  // (qk_norm_rope_store, fused attention_decode): the packed qkv, q and k
  // packed with v apart, or q, k and v; its i32 operand, the position, goes
  // to `pos`.
  std::vector<const Value*> QkvOperands(const Op& k, const Value** pos = nullptr) {
    std::vector<const Value*> parts;
    for (int i = 0; i < k.num_operands(); ++i) {
      const Value* v = k.operand(i);
      if (v->type().dtype != ir::DType::kI32) parts.push_back(v);
      else if (pos != nullptr) *pos = v;
    }
    return parts;
  }

  // The [T, q + 2 kv] rows the qk_norm_rope_store kernel reads, made once.
  void EnsureQkvScratch() {
    const int64_t per_token = c_.n_head / c_.n_head_kv + 2;
    if (io_.qkv_scratch == UINT32_MAX)
      io_.qkv_scratch = ctx_.AddBuffer("qkv_scratch", Buffer::ACTIVATION, AffineT(per_token * c_.kv_dim() * 4, 0));
  }

  // Where part `p` (q [T, q_dim], packed q and k [T, q_dim + kv_dim], or k
  // or v [T, kv_dim], in either operand order, told apart by width and by
  // the kv_store's v operand) starts in a qkv row, in rows of kv_dim floats:
  // q (and packed qk) 0, k g, v g + 1.
  int64_t QkvRow0(const Op& k, const Value* p) {
    const int64_t g = c_.n_head / c_.n_head_kv;
    const Value* v = Outer(k, FindIn(k, ir::OpKind::kKvStore)->operand(1));
    const int64_t width = p->type().shape.back().value();
    if (width == c_.q_dim() || width == c_.q_dim() + c_.kv_dim()) return 0;
    return Root(p) == Root(v) ? g + 1 : g;
  }

  // Three parts told apart by QkvRow0 must land on distinct rows: with as
  // many query as KV heads, q and k have one width and cannot be told apart.
  absl::Status CheckQkvParts(const Op& k, const std::vector<const Value*>& parts) {
    absl::flat_hash_set<int64_t> rows;
    for (const Value* p : parts) rows.insert(QkvRow0(k, p));
    if (rows.size() == parts.size()) return absl::OkStatus();
    return Unsupported(k, "separate q, k and v of one width (as many query heads as KV heads)");
  }

  // Decode (T = 1): a [1, rows] matvec result is already a qkv row segment,
  // so separately computed q, k and v are written straight into the qkv
  // scratch at their offsets, and no copies are needed. (Prefill's [T, rows]
  // results are not; AssembleQkv copies them.)
  absl::Status PlaceQkvParts() {
    for (const auto& op : f_.body().ops()) {
      const ir::Attribute* fam = op->attr("family");
      if (op->kind() != ir::OpKind::kKernel || fam == nullptr ||
          (fam->string_value() != "qk_norm_rope_store" && fam->string_value() != "attention_decode") ||
          FindIn(*op, ir::OpKind::kKvStore) == nullptr)
        continue;
      const std::vector<const Value*> parts = QkvOperands(*op);
      if (parts.size() != 2 && parts.size() != 3) continue;
      RETURN_IF_ERROR(CheckQkvParts(*op, parts));
      EnsureQkvScratch();
      for (const Value* p : parts) {
        if (Root(p)->is_global() || fixed_.count(Root(p)))
          return Unsupported(*op, "a q/k/v part that is not a kernel result of its own");
        fixed_[Root(p)] = {io_.qkv_scratch, ConstExpr(QkvRow0(*op, p) * c_.kv_dim() * 4)};
      }
    }
    return absl::OkStatus();
  }

  // Prefill: q, k and v copied into [T, q+2kv] rows, viewing every tensor as
  // rows of kv_dim floats.
  absl::StatusOr<Location> AssembleQkv(const Op& k, const std::vector<const Value*>& parts) {
    const int64_t per_token = c_.n_head / c_.n_head_kv + 2;
    RETURN_IF_ERROR(CheckQkvParts(k, parts));
    EnsureQkvScratch();
    for (const Value* p : parts) {
      int64_t width = p->type().shape.back().value();
      int64_t row0 = QkvRow0(k, p);
      int64_t group = width / c_.kv_dim();
      ASSIGN_OR_RETURN(Location src, At(p));
      KernelSpec s;
      s.family = Family::kCopyRows;
      s.row_bytes = c_.kv_dim() * 4;
      Expr rows = decode_ ? ConstExpr(group) : AffineT(group, 0);
      RETURN_IF_ERROR(ctx_.Launch(plan_, s,
                                  {Ptr(src), Ptr({io_.qkv_scratch, ConstExpr(0)}), I32(rows), I32(ConstExpr(row0)),
                                   I32(ConstExpr(group)), I32(ConstExpr(per_token))},
                                  t_, 0, &rows));
    }
    return Location{io_.qkv_scratch, ConstExpr(0)};
  }

  absl::Status Attention(const Op& k) {
    const Op* a = FindIn(k, ir::OpKind::kAttention);
    KernelSpec s;
    s.family = decode_ ? Family::kAttentionDecode : Family::kAttentionPrefill;
    ApplySchedule(k, s);
    s.n_head = c_.n_head;
    s.n_head_kv = c_.n_head_kv;
    s.head_dim = c_.head_dim;
    s.attn_scale = a->GetFloat("scale");
    s.kv_f16 = a->operand(1)->type().dtype == ir::DType::kF16;
    ASSIGN_OR_RETURN(Location out, At(k.result(0)));
    // Decode with the q/k-norm + rope + store group in front (fuse): the
    // kernel reads the raw qkv row and writes the new K/V row itself.
    std::optional<RopeInputs> rope;
    if (decode_ && FindIn(k, ir::OpKind::kKvStore) != nullptr) {
      s.rope_fused = true;
      ASSIGN_OR_RETURN(rope, RopeGroup(k, s));
    }
    Location q, pos;
    if (rope.has_value()) {
      q = rope->qkv;
      pos = rope->pos;
    } else {
      ASSIGN_OR_RETURN(q, At(Outer(k, a->operand(0))));
      ASSIGN_OR_RETURN(pos, At(Outer(k, a->operand(3))));
    }
    ASSIGN_OR_RETURN(Location kc, At(a->operand(1)));
    ASSIGN_OR_RETURN(Location vc, At(a->operand(2)));
    // The fused kernel writes the new K/V row into the caches it reads.
    if (rope.has_value() && !(SameLocation(rope->k_cache, kc) && SameLocation(rope->v_cache, vc)))
      return absl::InternalError(
          absl::StrCat("attention reads other caches than its kv_store writes:\n  ", ir::PrintOpLine(k)));
    if (!decode_) return ctx_.Launch(plan_, s, {Ptr(q), Ptr(kc), Ptr(vc), Ptr(pos), Ptr(out), I32(t_)}, t_);
    // A split takes at most split_positions positions (its length follows
    // the position at run time), so the max_splits splits must cover the
    // whole context.
    if (static_cast<int64_t>(s.attention.max_splits) * s.attention.split_positions < c_.context_length)
      return absl::InternalError(absl::StrCat("attention_decode covers ", s.attention.max_splits, " x ",
                                              s.attention.split_positions, " positions, less than the context ",
                                              c_.context_length));
    const int64_t g = c_.n_head / c_.n_head_kv;
    if (io_.attn_partial == UINT32_MAX) {
      io_.attn_partial = ctx_.AddBuffer(
          "attn_partial", Buffer::ACTIVATION,
          ConstExpr(4 * c_.n_head_kv * s.attention.max_splits * g * (c_.head_dim + 2)));
      io_.attn_counter = ctx_.AddBuffer("attn_counter", Buffer::ACTIVATION, ConstExpr(4 * c_.n_head_kv));
    }
    std::vector<LaunchArg> args = {Ptr(q),   Ptr(kc), Ptr(vc), Ptr(pos), Ptr(out), Ptr({io_.attn_partial, ConstExpr(0)}),
                                   Ptr({io_.attn_counter, ConstExpr(0)})};
    if (rope.has_value()) {
      args.push_back(Ptr(rope->q_norm));
      args.push_back(Ptr(rope->k_norm));
    }
    return ctx_.Launch(plan_, s, args, t_);
  }

  absl::Status Argmax(const Op& k) {
    const Op* a = FindIn(k, ir::OpKind::kArgmax);
    KernelSpec s;
    s.family = Family::kArgmax;
    ApplySchedule(k, s);
    const ir::TensorType& t = a->operand(0)->type();
    s.rows = 1;
    s.cols = t.shape.back().value();
    ASSIGN_OR_RETURN(Location in, At(Outer(k, a->operand(0))));
    ASSIGN_OR_RETURN(Location out, At(k.result(0)));
    const std::vector<LaunchArg> scratch = ArgmaxScratch(ctx_, io_, s);
    return ctx_.Launch(plan_, s, {Ptr(in), Ptr(out), scratch[0], scratch[1], I32(ConstExpr(s.cols))}, t_);
  }

  const ir::Function& f_;
  LoweringContext& ctx_;
  Io& io_;
  const models::Qwen3Config& c_;
  runtime::Plan& plan_;
  bool decode_;
  bool join_matvecs_;
  Expr t_;
  absl::flat_hash_map<const Value*, Location> where_, fixed_;
  std::vector<int> qkv_part_launches_;
  ReadBytes read_;                          // the kernel being lowered
  bool qkv_part_ = false;                   // the kernel being lowered writes q/k/v rows (IsQkvPart)
  bool consumed_part_ = false;              // QkvPart took the kernel being lowered
  std::optional<MatVecLaunch> pending_part_;  // a q/k/v part held for a join
};

absl::StatusOr<Expr> ArenaBytes(const ir::Function& f) {
  for (const auto& op : f.body().ops())
    if (op->kind() == ir::OpKind::kArena) return ParseAffine(op->attr("bytes")->string_value());
  return absl::InternalError(absl::StrCat("function @", f.name(), " has no arena (run plan-buffers)"));
}

void FillConfig(const models::Qwen3Config& c, runtime::ModelConfig& m) {
  m.set_architecture("qwen3");
  m.set_n_layer(c.n_layer);
  m.set_n_embd(c.n_embd);
  m.set_n_ff(c.n_ff);
  m.set_n_head(c.n_head);
  m.set_n_head_kv(c.n_head_kv);
  m.set_head_dim(c.head_dim);
  m.set_n_vocab(c.n_vocab);
  m.set_context_length(c.context_length);
  m.set_rms_eps(c.rms_eps);
  m.set_rope_base(c.rope_base);
  m.set_tied_embeddings(c.tied_embeddings);
}

// The GGUF's model keys (runtime/bundle/model_keys.h), which define the
// model the kernels compute.
absl::Status FillModelKeys(const gguf::GgufFile& file, runtime::Manifest& m) {
  for (const auto& [key, value] : file.metadata()) {
    if (!runtime::IsModelKey(key)) continue;
    std::string text = value.ExactString();
    // The bundle's strings are UTF-8, as GGUF's must be.
    if (!tokenizer::IsValidUtf8(text))
      return absl::InvalidArgumentError(absl::StrCat("metadata '", key, "' is not valid UTF-8"));
    runtime::ModelKey* k = m.add_model_keys();
    k->set_key(key);
    k->set_value(std::move(text));
  }
  return absl::OkStatus();
}

void FillTokenizer(const tokenizer::Vocab& v, runtime::Tokenizer& t) {
  t.set_model(v.model);
  t.set_pre(v.pre);
  for (const std::string& s : v.tokens) t.add_tokens(s);
  for (tokenizer::TokenType x : v.token_types) t.add_token_types(static_cast<int32_t>(x));
  for (const std::string& s : v.merges) t.add_merges(s);
  t.set_bos_id(v.bos_id);
  t.set_eos_id(v.eos_id);
  t.set_pad_id(v.pad_id);
  t.set_add_bos(v.add_bos);
  t.set_chat_template(v.chat_template);
}

}  // namespace

absl::StatusOr<LoweredModel> LowerToKernels(const ir::Module& module, const gguf::GgufFile& file,
                                            const models::Qwen3Config& config, const tokenizer::Vocab& vocab,
                                            const LowerOptions& options) {
  const ir::Function* load = module.FindFunction("load");
  const ir::Function* prefill = module.FindFunction("prefill");
  const ir::Function* decode = module.FindFunction("decode");
  if (!load || !prefill || !decode) return absl::InternalError("module lacks load, prefill or decode");
  LoweringContext ctx(module, file, options.target, options.programmatic_launch);
  runtime::Manifest& m = ctx.manifest();
  m.set_format_version(1);
  m.set_producer("kilnc");
  m.set_target(options.target.Name());
  FillConfig(config, *m.mutable_config());
  RETURN_IF_ERROR(FillModelKeys(file, m));
  FillTokenizer(vocab, *m.mutable_tokenizer());

  const int64_t T = options.max_prefill_tokens;
  // The prefill's logits: one row per token, or its last token's alone
  // (models::GraphOptions::prefill_last_logits), at row 0.
  if (prefill->result_types().size() != 1 || prefill->result_types()[0].rank() != 2)
    return absl::InternalError("prefill does not return logits [rows, V]");
  const ir::Dim logits_rows = prefill->result_types()[0].shape[0];
  const bool last_logits = logits_rows.is_static() && logits_rows.value() == 1;
  Io io;
  io.tokens = ctx.AddBuffer("tokens", Buffer::IO, ConstExpr(4 * T));
  io.position = ctx.AddBuffer("position", Buffer::IO, ConstExpr(4));
  io.logits = ctx.AddBuffer("logits", Buffer::IO, ConstExpr(4 * (last_logits ? 1 : T) * config.n_vocab));
  io.sampled = ctx.AddBuffer("sampled", Buffer::IO, ConstExpr(4));
  ASSIGN_OR_RETURN(Expr prefill_arena, ArenaBytes(*prefill));
  ASSIGN_OR_RETURN(Expr decode_arena, ArenaBytes(*decode));
  // One arena for both: a*T + max(b, decode's size) bounds both for T >= 1.
  Expr arena = prefill_arena;
  arena.set_constant(std::max(prefill_arena.constant(), decode_arena.constant() + decode_arena.t()));
  io.arena = ctx.AddBuffer("arena", Buffer::ACTIVATION, arena);
  m.set_tokens_buffer(io.tokens);
  m.set_position_buffer(io.position);
  m.set_logits_buffer(io.logits);
  m.set_sampled_buffer(io.sampled);

  m.mutable_prefill()->set_max_tokens(T);
  RETURN_IF_ERROR(StepLowering(*prefill, ctx, io, config, *m.mutable_prefill(), false).Run());
  {
    // The runtime reads the next token of a greedy generation from
    // sampled_buffer after a prefill too: argmax of the last logits row,
    // at byte (T - 1) * n_vocab * 4 (0 with the last row alone).
    KernelSpec s;
    s.family = Family::kArgmax;
    s.rows = 1;
    s.cols = config.n_vocab;
    const int64_t row = 4 * config.n_vocab;
    const std::vector<LaunchArg> scratch = ArgmaxScratch(ctx, io, s);
    RETURN_IF_ERROR(ctx.Launch(*m.mutable_prefill(), s,
                               {{LaunchArg::kPointer, {io.logits, last_logits ? ConstExpr(0) : AffineT(row, -row)}, {}},
                                {LaunchArg::kPointer, {io.sampled, ConstExpr(0)}, {}}, scratch[0], scratch[1],
                                {LaunchArg::kI32, {}, ConstExpr(config.n_vocab)}},
                               AffineT(1, 0)));
  }
  m.mutable_decode()->set_max_tokens(1);
  StepLowering decode_lowering(*decode, ctx, io, config, *m.mutable_decode(), true, options.join_matvecs);
  RETURN_IF_ERROR(decode_lowering.Run());
  if (options.concurrent_launches)
    RETURN_IF_ERROR(PairBesideLaunches(m, *m.mutable_decode(), decode_lowering.qkv_part_launches()));
  RETURN_IF_ERROR(LowerLoad(*load, ctx, *m.mutable_load()));

  LoweredModel out;
  out.manifest = std::move(m);
  out.kernels = std::move(ctx.kernels());
  return out;
}

}  // namespace kiln::compiler
