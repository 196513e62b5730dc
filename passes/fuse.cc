#include "passes/fuse.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace kiln::passes {
namespace {

using ir::Attribute;
using ir::AttrDict;
using ir::Block;
using ir::Op;
using ir::OpKind;
using ir::TensorType;
using ir::Value;

// One kernel to outline: `ops` in region order (producers first). Ops in
// `cloned` are copied into the region and left in place (a shared rms_norm
// prologue, erased once its last matmul is fused); the others move.
struct Group {
  std::vector<Op*> ops;
  absl::flat_hash_set<const Op*> cloned;
  std::vector<Value*> leading;  // the kernel's first operands, in order
  std::vector<Value*> results;  // values the kernel yields
  const Op* anchor = nullptr;
  std::string family;
  bool inplace = false;
};

bool StaticRows(const TensorType& t) {
  for (int d = 0; d + 1 < t.rank(); ++d)
    if (!t.shape[d].is_static()) return false;
  return true;
}

class Fuser {
 public:
  explicit Fuser(Block& body) : body_(body) {}

  bool Run() {
    for (Op* op : Snapshot())
      if (op->kind() == OpKind::kKvStore && Live(op)) FuseQkNormRopeStore(op);
    for (Op* op : Snapshot())
      if (op->kind() == OpKind::kMatMul && Live(op)) FuseMatMul(op);
    for (Op* op : Snapshot()) {
      if (!Live(op)) continue;
      switch (op->kind()) {
        case OpKind::kAttention:
          Single(op, StaticRows(op->operand(0)->type()) ? "attention_decode" : "attention_prefill");
          break;
        case OpKind::kEmbed: Single(op, "embed"); break;
        case OpKind::kArgmax: Single(op, "argmax"); break;
        default: break;
      }
    }
    return changed_;
  }

 private:
  std::vector<Op*> Snapshot() const {
    std::vector<Op*> ops;
    for (const auto& op : body_.ops()) ops.push_back(op.get());
    return ops;
  }
  bool Live(const Op* op) const { return op->parent() == &body_ && body_.IndexOf(op) >= 0; }
  Op* TopLevelDef(const Value* v) const {
    Op* d = v->kind() == Value::Kind::kResult ? v->defining_op() : nullptr;
    return d != nullptr && Live(d) ? d : nullptr;
  }
  std::vector<Op*> Users(const Value* v) const { return ir::UsersOf(body_, v); }

  void Single(Op* op, std::string family) {
    Group g;
    g.ops = {op};
    g.results = op->results();
    g.anchor = op;
    g.family = std::move(family);
    Outline(g);
  }

  // (b): kv_store and its producers through slice/reshape/per-head
  // rms_norm/rope, plus the q chain of the attention reading the cache.
  void FuseQkNormRopeStore(Op* store) {
    absl::flat_hash_set<Op*> cone;
    auto walk = [&](auto&& self, Value* v) -> void {
      Op* d = TopLevelDef(v);
      if (d == nullptr || cone.contains(d)) return;
      const OpKind k = d->kind();
      const bool head_norm = k == OpKind::kRmsNorm && d->operand(0)->type().rank() == 3;
      if (k != OpKind::kSlice && k != OpKind::kReshape && k != OpKind::kRope && !head_norm) return;
      cone.insert(d);
      for (Value* o : d->operands()) self(self, o);
    };
    walk(walk, store->operand(0));
    walk(walk, store->operand(1));
    absl::flat_hash_set<Op*> kv_cone = cone;
    Value* q = nullptr;
    Op* attention = nullptr;
    for (Op* user : Users(store->operand(2))) {
      if (user->kind() == OpKind::kAttention && user->operand(1) == store->operand(2) &&
          body_.IndexOf(user) > body_.IndexOf(store)) {
        Op* rope = TopLevelDef(user->operand(0));
        if (rope != nullptr && rope->kind() == OpKind::kRope) {
          q = user->operand(0);
          walk(walk, q);
          attention = user;
        }
        break;
      }
    }
    auto make = [&](const absl::flat_hash_set<Op*>& ops, Value* yielded) {
      Group g;
      g.ops.assign(ops.begin(), ops.end());
      g.ops.push_back(store);
      std::sort(g.ops.begin(), g.ops.end(),
                [&](Op* a, Op* b) { return body_.IndexOf(a) < body_.IndexOf(b); });
      if (yielded != nullptr) g.results = {yielded};
      g.anchor = store;
      g.family = "qk_norm_rope_store";
      return g;
    };
    // Decode: the attention too, one kernel per layer fewer, when it reads
    // the caches and the position the store writes (the kernel writes the
    // new row where it then reads it).
    if (attention != nullptr && StaticRows(q->type()) && attention->operand(2) == store->operand(3) &&
        attention->operand(3) == store->operand(4)) {
      Group g = make(cone, nullptr);
      g.ops.push_back(attention);
      g.results = attention->results();
      g.anchor = attention;
      g.family = "attention_decode";
      if (Outline(g)) return;
    }
    if (q != nullptr && Outline(make(cone, q))) return;
    Outline(make(kv_cone, nullptr));
  }

  // (a), (f): [[last_row] rms_norm] matmul [add residual | swiglu | silu(extra) * acc].
  void FuseMatMul(Op* mm) {
    Group g;
    Value* in = mm->operand(0);
    Op* norm = TopLevelDef(in);
    if (norm != nullptr && norm->kind() == OpKind::kRmsNorm) {
      bool all_matmuls = true;
      for (Op* u : Users(in))
        all_matmuls &= u->kind() == OpKind::kMatMul && u->operand(0) == in &&
                       std::count(u->operands().begin(), u->operands().end(), in) == 1;
      if (all_matmuls) {
        in = norm->operand(0);
        // A last_row feeding only the norm (a prefill's last-token logits)
        // comes along: the kernel reads that row of the full input.
        Op* last = TopLevelDef(in);
        if (last != nullptr && last->kind() == OpKind::kLastRow && Users(in).size() == 1) {
          g.ops.push_back(last);
          g.cloned.insert(last);
          in = last->operand(0);
        }
        g.ops.push_back(norm);
        g.cloned.insert(norm);
      }
    }
    g.ops.push_back(mm);
    g.leading = {in};
    g.anchor = mm;
    g.family = StaticRows(mm->operand(0)->type()) ? "matvec" : "gemm";
    Group plain = g;
    plain.results = mm->results();

    std::vector<Op*> users = Users(mm->result());
    Op* u = users.size() == 1 ? users[0] : nullptr;
    if (u != nullptr && std::count(u->operands().begin(), u->operands().end(), mm->result()) == 1) {
      if (u->kind() == OpKind::kAdd) {
        Value* resid = u->operand(0) == mm->result() ? u->operand(1) : u->operand(0);
        if (ResidualDiesAt(resid, u)) {
          g.ops.push_back(u);
          g.leading.push_back(resid);
          g.inplace = true;
        } else {
          u = nullptr;
        }
      } else if (u->kind() == OpKind::kSwiglu) {
        g.ops.push_back(u);
      } else if (u->kind() == OpKind::kMul) {
        Value* other = u->operand(0) == mm->result() ? u->operand(1) : u->operand(0);
        Op* silu = TopLevelDef(other);
        if (silu != nullptr && silu->kind() == OpKind::kSilu && Users(other).size() == 1) {
          g.ops.push_back(silu);
          g.ops.push_back(u);
          g.leading.push_back(silu->operand(0));
        } else {
          u = nullptr;
        }
      } else {
        u = nullptr;
      }
    } else {
      u = nullptr;
    }
    if (u != nullptr) {
      g.results = u->results();
      if (Outline(g)) return;
    }
    Outline(plain);
  }

  // The residual's buffer can take the sum: a local result (not an argument
  // or global) with no use after the add.
  bool ResidualDiesAt(const Value* resid, const Op* add) const {
    if (resid->kind() != Value::Kind::kResult || TopLevelDef(resid) == nullptr) return false;
    const int at = body_.IndexOf(add);
    for (Op* user : Users(resid))
      if (user != add && body_.IndexOf(user) > at) return false;
    return std::count(add->operands().begin(), add->operands().end(), resid) == 1;
  }

  // True if `a` and `b` cannot be reordered: one writes a state the other
  // uses.
  static bool Conflict(const Op& a, const Op& b) {
    auto writes_used_by = [](const Op& w, const Op& r) {
      for (int i = 0; i < w.num_operands(); ++i) {
        if (!w.info().writes_operand(i)) continue;
        for (Value* o : r.operands())
          if (o == w.operand(i)) return true;
      }
      return false;
    };
    return writes_used_by(a, b) || writes_used_by(b, a) || (ir::HasEffects(a) && ir::HasEffects(b));
  }

  // Builds the kernel at the last moved op's place. Returns false (changing
  // nothing) if a value computed inside would be used outside without being
  // yielded, a yielded value is used before that place, or the move would
  // reorder an effect.
  bool Outline(const Group& g) {
    std::vector<Op*> moved;
    for (Op* op : g.ops)
      if (!g.cloned.contains(op)) moved.push_back(op);
    absl::flat_hash_set<const Op*> in_group(g.ops.begin(), g.ops.end());
    int last = -1;
    for (Op* op : moved) last = std::max(last, body_.IndexOf(op));
    const Op* last_op = body_.ops()[last].get();
    for (Op* op : moved) {
      for (Value* r : op->results()) {
        const bool yielded = std::find(g.results.begin(), g.results.end(), r) != g.results.end();
        for (Op* user : Users(r)) {
          if (in_group.contains(user) && !g.cloned.contains(user)) continue;
          if (!yielded || body_.IndexOf(user) <= last) return false;
        }
      }
      for (int i = body_.IndexOf(op) + 1; i < last; ++i) {
        const Op& between = *body_.ops()[i];
        if (!in_group.contains(&between) && Conflict(*op, between)) return false;
      }
    }

    // Operands: `leading`, then the other non-global values from outside in
    // first-use order.
    std::vector<Value*> operands;
    absl::flat_hash_map<const Value*, Value*> map;
    auto add_operand = [&](Value* v) {
      if (v->is_global() || map.contains(v)) return;
      map[v] = nullptr;  // block argument, filled below
      operands.push_back(v);
    };
    for (Value* v : g.leading) add_operand(v);
    for (Op* op : g.ops)
      for (Value* v : op->operands()) {
        Op* d = v->kind() == Value::Kind::kResult ? v->defining_op() : nullptr;
        if (d == nullptr || !in_group.contains(d)) add_operand(v);
      }
    std::vector<TensorType> result_types;
    for (Value* r : g.results) result_types.push_back(r->type());

    AttrDict attrs;
    attrs.Set("family", Attribute::String(g.family));
    attrs.Set("anchor", Attribute::Int(std::find(g.ops.begin(), g.ops.end(), g.anchor) - g.ops.begin()));
    if (g.inplace) attrs.Set("inplace", Attribute::Int(1));
    auto kernel = std::make_unique<Op>(OpKind::kKernel, operands, result_types, std::move(attrs));
    Block* region = kernel->AddRegion();
    for (Value* v : operands) map[v] = region->AddArg(v->type(), v->name());
    for (Op* op : g.ops) {
      std::vector<Value*> ins;
      for (Value* v : op->operands()) ins.push_back(v->is_global() ? v : map.at(v));
      std::vector<TensorType> types;
      for (Value* r : op->results()) types.push_back(r->type());
      Op* copy = region->Append(std::make_unique<Op>(op->kind(), ins, types, op->attrs()));
      for (int i = 0; i < op->num_results(); ++i) {
        copy->result(i)->set_name(op->result(i)->name());
        map[op->result(i)] = copy->result(i);
      }
    }
    std::vector<Value*> yielded;
    for (Value* r : g.results) yielded.push_back(map.at(r));
    region->Append(std::make_unique<Op>(OpKind::kYield, yielded, absl::Span<const TensorType>{}));

    Op* k = body_.InsertBefore(last_op, std::move(kernel));
    for (size_t i = 0; i < g.results.size(); ++i) {
      k->result(static_cast<int>(i))->set_name(g.results[i]->name());
      ir::ReplaceAllUsesWith(body_, g.results[i], k->result(static_cast<int>(i)));
    }
    for (Op* op : moved) graveyard_.push_back(body_.Remove(op));
    // Consumers first, so a cloned producer of a cloned op (last_row before
    // rms_norm) goes once its consumer has.
    std::vector<const Op*> cloned(g.cloned.begin(), g.cloned.end());
    std::sort(cloned.begin(), cloned.end(),
              [&](const Op* a, const Op* b) { return body_.IndexOf(a) > body_.IndexOf(b); });
    for (const Op* op : cloned) {
      bool used = false;
      for (Value* r : op->results()) used |= !Users(r).empty();
      if (!used) graveyard_.push_back(body_.Remove(op));
    }
    changed_ = true;
    return true;
  }

  Block& body_;
  bool changed_ = false;
  // Removed ops stay alive until the end so pointers in snapshots never
  // alias a new op.
  std::vector<std::unique_ptr<Op>> graveyard_;
};

}  // namespace

absl::StatusOr<bool> FusePass::Run(ir::Module& module, const PassContext& context) {
  bool changed = false;
  for (const auto& f : module.functions()) {
    if (f->name() == "load") continue;
    changed |= Fuser(f->body()).Run();
  }
  return changed;
}

}  // namespace kiln::passes
