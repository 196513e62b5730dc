// pack-weights (pack_weights.h).
#include "passes/pack_weights.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ir/builder.h"
#include "support/status_macros.h"

namespace kiln::passes {
namespace {

using ir::Block;
using ir::Builder;
using ir::DType;
using ir::Op;
using ir::OpKind;
using ir::TensorType;
using ir::Value;

enum class GroupKind { kQkv, kGateUp };

// Weights packed into one matrix, and the matmuls that read them.
struct Group {
  GroupKind kind;
  std::string name;              // the packed matrix: "blk.0.attn_qkv"
  std::vector<Value*> parts;     // q, k, v or gate, up
  std::vector<std::vector<Op*>> matches;  // per use site: the matmuls (and silu, mul) replaced
};

// Where a packed or split matrix lives after `load`.
struct Packed {
  Value* matrix = nullptr;  // other types: the state
  Value* qs = nullptr;      // q8_0 (qs) and q6_k (the blocks without d): the planes
  Value* d = nullptr;
  std::vector<Value*> Operands(Value* x) const {
    return matrix != nullptr ? std::vector<Value*>{x, matrix} : std::vector<Value*>{x, qs, d};
  }
};

// Types whose matrices load keeps as two planes.
bool IsSplit(DType dtype) { return dtype == DType::kQ8_0 || dtype == DType::kQ6_K; }

bool IsPlainMatMul(const Op& op) { return op.kind() == OpKind::kMatMul && op.num_operands() == 2; }

bool IsStaticMatrix(const Value* w) {
  return w != nullptr && w->kind() == Value::Kind::kWeight && w->type().rank() == 2 && w->type().is_static();
}

// Weights that can be stacked row-wise into one matrix: one dtype, one width.
bool Packable(const std::vector<Value*>& parts) {
  for (const Value* p : parts)
    if (!IsStaticMatrix(p) || p->type().dtype != parts[0]->type().dtype ||
        p->type().shape[1] != parts[0]->type().shape[1])
      return false;
  return true;
}

absl::flat_hash_map<const Value*, int> UseCounts(const Block& block) {
  absl::flat_hash_map<const Value*, int> uses;
  ir::WalkOps(block, [&](const Op* op) {
    for (const Value* v : op->operands()) ++uses[v];
  });
  return uses;
}

// "l0.q" -> "l0.qkv"; the hint only names the printed value.
std::string Hint(const Value* v, const std::string& suffix) { return absl::StrCat(v->name(), suffix); }

// Q/K(/V) matmuls of one input in `block`: one per part, in part order, per
// match.
void MatchQkv(Block& block, Group& g, absl::flat_hash_set<const Op*>& taken) {
  absl::flat_hash_map<std::pair<const Value*, const Value*>, std::vector<Op*>> by_input_weight;
  for (const auto& op : block.ops())
    if (IsPlainMatMul(*op) && !taken.contains(op.get()))
      by_input_weight[{op->operand(0), op->operand(1)}].push_back(op.get());
  for (const auto& op : block.ops()) {
    if (!IsPlainMatMul(*op) || op->operand(1) != g.parts[0] || taken.contains(op.get())) continue;
    std::vector<Op*> m = {op.get()};
    for (size_t i = 1; i < g.parts.size(); ++i) {
      auto it = by_input_weight.find({op->operand(0), g.parts[i]});
      if (it == by_input_weight.end()) break;
      for (Op* cand : it->second)
        if (!taken.contains(cand)) {
          m.push_back(cand);
          break;
        }
    }
    if (m.size() != g.parts.size()) continue;
    for (Op* o : m) taken.insert(o);
    g.matches.push_back(std::move(m));
  }
}

// mul(silu(matmul(x, gate)), matmul(x, up)) (either operand order) with
// single-use intermediates: [gate matmul, up matmul, silu, mul] per match.
void MatchGateUp(Block& block, Group& g, absl::flat_hash_set<const Op*>& taken) {
  const absl::flat_hash_map<const Value*, int> uses = UseCounts(block);
  auto single = [&](const Value* v) {
    auto it = uses.find(v);
    return it != uses.end() && it->second == 1;
  };
  auto def = [](const Value* v, OpKind kind) -> Op* {
    return v->kind() == Value::Kind::kResult && v->defining_op()->kind() == kind ? v->defining_op() : nullptr;
  };
  for (const auto& op : block.ops()) {
    if (op->kind() != OpKind::kMul) continue;
    for (int a = 0; a < 2; ++a) {
      Op* silu = def(op->operand(a), OpKind::kSilu);
      Op* up = def(op->operand(1 - a), OpKind::kMatMul);
      Op* gate = silu != nullptr ? def(silu->operand(0), OpKind::kMatMul) : nullptr;
      if (gate == nullptr || up == nullptr || !IsPlainMatMul(*gate) || !IsPlainMatMul(*up)) continue;
      if (gate->operand(1) != g.parts[0] || up->operand(1) != g.parts[1] ||
          gate->operand(0) != up->operand(0) || taken.contains(gate) || taken.contains(up))
        continue;
      if (!single(gate->result()) || !single(silu->result()) || !single(up->result())) continue;
      if (gate->result()->type() != up->result()->type() || op->result()->type() != up->result()->type())
        continue;
      for (Op* o : {gate, up, silu, op.get()}) taken.insert(o);
      g.matches.push_back({gate, up, silu, op.get()});
      break;
    }
  }
}

class Packer {
 public:
  Packer(ir::Module& m, ir::Function& load, int64_t group) : m_(m), load_(load), group_(group) {}

  absl::StatusOr<bool> Run() {
    FindGroups();
    FindSplits();
    if (groups_.empty() && splits_.empty()) return false;
    RETURN_IF_ERROR(EmitLoad());
    RewriteGroups();
    RewriteSplits();
    return true;
  }

 private:
  std::vector<ir::Function*> Compute() const {
    std::vector<ir::Function*> fs;
    for (const auto& f : m_.functions())
      if (f.get() != &load_) fs.push_back(f.get());
    return fs;
  }

  void FindGroups() {
    for (const auto& w : m_.weights()) {
      for (GroupKind kind : {GroupKind::kQkv, GroupKind::kGateUp}) {
        const std::string first = kind == GroupKind::kQkv ? "attn_q" : "ffn_gate";
        if (!absl::EndsWith(w->name(), first)) continue;
        const std::string prefix = w->name().substr(0, w->name().size() - first.size());
        Group g{kind, prefix + (kind == GroupKind::kQkv ? "attn_qkv" : "ffn_gate_up"), {w.get()}, {}};
        for (const char* part : kind == GroupKind::kQkv ? std::vector<const char*>{"attn_k", "attn_v"}
                                                         : std::vector<const char*>{"ffn_up"})
          g.parts.push_back(m_.FindGlobal(prefix + part));
        if (kind == GroupKind::kQkv && !Packable(g.parts)) {
          // V in another format (Q4_K_M gives some layers a Q6_K attn_v):
          // q and k still share one matrix, v keeps its own matmul.
          g.parts.pop_back();
          g.name = prefix + "attn_qk";
        }
        if (!Packable(g.parts)) continue;
        if (kind == GroupKind::kGateUp &&
            (g.parts[0]->type() != g.parts[1]->type() || g.parts[0]->type().shape[0].value() % group_ != 0))
          continue;
        for (ir::Function* f : Compute()) {
          if (kind == GroupKind::kQkv) MatchQkv(f->body(), g, taken_);
          if (kind == GroupKind::kGateUp) MatchGateUp(f->body(), g, taken_);
        }
        if (!g.matches.empty()) groups_.push_back(std::move(g));
      }
    }
  }

  // q8_0 and q6_k weights read by a matmul that no group replaces (an
  // embedding reading the same weight keeps reading it as stored).
  void FindSplits() {
    for (ir::Function* f : Compute())
      ir::WalkOps(f->body(), [&](const Op* op) {
        if (!IsPlainMatMul(*op) || taken_.contains(op)) return;
        const Value* w = op->operand(1);
        if (IsStaticMatrix(w) && IsSplit(w->type().dtype)) split_set_.insert(w);
      });
    for (const auto& w : m_.weights())  // module order, for a deterministic load
      if (split_set_.contains(w.get())) splits_.push_back(w.get());
  }

  absl::StatusOr<Value*> NewState(const std::string& name, TensorType type) {
    if (m_.FindGlobal(name) != nullptr)
      return absl::InvalidArgumentError(
          absl::StrCat("pack-weights would create state @", name, ", but a global of that name exists"));
    return m_.AddState(name, std::move(type));
  }

  // Stores `matrix` (a load value or a weight) in new states named `name`:
  // q8_0 and q6_k as their two planes (q8_0_split, q6_k_split), so the
  // matvecs load them 16-byte aligned.
  absl::StatusOr<Packed> StoreMatrix(Builder& b, Value* matrix, const std::string& name) {
    Packed p;
    if (!IsSplit(matrix->type().dtype)) {
      ASSIGN_OR_RETURN(p.matrix, NewState(name, matrix->type()));
      b.Store(matrix, p.matrix);
      return p;
    }
    Op* split = b.Create(matrix->type().dtype == DType::kQ8_0 ? OpKind::kQ8_0Split : OpKind::kQ6_KSplit, {matrix},
                         {}, {}, name + ".qs");
    split->result(1)->set_name(name + ".d");
    ASSIGN_OR_RETURN(p.qs, NewState(name + ".qs", split->result(0)->type()));
    ASSIGN_OR_RETURN(p.d, NewState(name + ".d", split->result(1)->type()));
    b.Store(split->result(0), p.qs);
    b.Store(split->result(1), p.d);
    return p;
  }

  // Load ops in weight order: a group where its first part is declared, a
  // split where its weight is.
  absl::Status EmitLoad() {
    Builder b(&load_);
    b.SetInsertionPoint(&load_.body(), load_.body().terminator());
    for (const auto& w : m_.weights()) {
      for (size_t i = 0; i < groups_.size(); ++i) {
        const Group& g = groups_[i];
        if (g.parts[0] != w.get()) continue;
        Op* pack = g.kind == GroupKind::kQkv
                       ? b.Create(OpKind::kConcatRows, g.parts, {}, {}, g.name)
                       : b.Create(OpKind::kInterleaveRows, g.parts,
                                  ir::AttrDict{{"group", ir::Attribute::Int(group_)}}, {}, g.name);
        ASSIGN_OR_RETURN(Packed p, StoreMatrix(b, pack->result(), g.name));
        group_packed_.push_back(p);
      }
      if (split_set_.contains(w.get())) {
        ASSIGN_OR_RETURN(split_packed_[w.get()], StoreMatrix(b, w.get(), w->name()));
      }
    }
    return b.status();
  }

  void RewriteGroups() {
    for (size_t i = 0; i < groups_.size(); ++i) {
      const Group& g = groups_[i];
      for (const std::vector<Op*>& m : g.matches) {
        Block& block = *m[0]->parent();
        if (g.kind == GroupKind::kQkv) {
          const Op* first = m[0];
          for (Op* o : m)
            if (block.IndexOf(o) < block.IndexOf(first)) first = o;
          Builder b(&block);
          b.SetInsertionPoint(&block, first);
          Value* x = m[0]->operand(0);
          Value* qkv = b.Create(OpKind::kMatMul, group_packed_[i].Operands(x), {}, {}, Hint(m[0]->result(), m.size() == 3 ? "kv" : "k"))
                           ->result();
          int64_t start = 0;
          for (Op* o : m) {
            const int64_t size = o->operand(1)->type().shape[0].value();
            Value* part = b.Create(OpKind::kSlice, {qkv},
                                   ir::AttrDict{{"size", ir::Attribute::Int(size)},
                                                {"start", ir::Attribute::Int(start)}},
                                   {}, o->result()->name())
                              ->result();
            start += size;
            ir::ReplaceAllUsesWith(block, o->result(), part);
          }
          for (Op* o : m) block.Erase(o);
        } else {
          Op* gate = m[0];
          Op* mul = m[3];
          Builder b(&block);
          b.SetInsertionPoint(&block, mul);
          Value* gu = b.Create(OpKind::kMatMul, group_packed_[i].Operands(gate->operand(0)), {}, {},
                               Hint(gate->result(), "_up"))
                          ->result();
          Value* act = b.Create(OpKind::kSwiglu, {gu}, ir::AttrDict{{"group", ir::Attribute::Int(group_)}}, {},
                                mul->result()->name())
                           ->result();
          ir::ReplaceAllUsesWith(block, mul->result(), act);
          for (int k = 3; k >= 0; --k) block.Erase(m[k]);
        }
      }
    }
  }

  void RewriteSplits() {
    for (ir::Function* f : Compute())
      ir::WalkOps(f->body(), [&](const Op* cop) {
        Op* op = const_cast<Op*>(cop);
        if (!IsPlainMatMul(*op)) return;
        auto it = split_packed_.find(op->operand(1));
        if (it != split_packed_.end()) op->set_operands(it->second.Operands(op->operand(0)));
      });
  }

  ir::Module& m_;
  ir::Function& load_;
  int64_t group_;
  absl::flat_hash_set<const Op*> taken_;
  std::vector<Group> groups_;
  std::vector<Packed> group_packed_;  // parallel to groups_
  absl::flat_hash_set<const Value*> split_set_;
  std::vector<Value*> splits_;
  absl::flat_hash_map<const Value*, Packed> split_packed_;
};

}  // namespace

absl::StatusOr<bool> PackWeightsPass::Run(ir::Module& module, const PassContext& context) {
  if (options_.group < 1)
    return absl::InvalidArgumentError(absl::StrCat("pack-weights: group must be >= 1, got ", options_.group));
  ir::Function* load = module.FindFunction("load");
  if (load == nullptr) return false;
  for (const auto& op : load->body().ops())
    if (!op->info().has(ir::kTerminator)) return false;  // load already packs
  Packer packer(module, *load, options_.group);
  return packer.Run();
}

}  // namespace kiln::passes
