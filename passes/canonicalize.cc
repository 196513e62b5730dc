// canonicalize (canonicalize.h).
#include "passes/canonicalize.h"

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ir/attributes.h"

namespace kiln::passes {
namespace {

using ir::Block;
using ir::Op;
using ir::OpKind;
using ir::Value;

bool MergeDuplicateWeights(ir::Module& module) {
  absl::flat_hash_map<std::string, Value*> first;  // "binding\ttype" -> weight
  std::vector<const Value*> duplicates;
  for (const auto& w : module.weights()) {
    auto [it, inserted] = first.try_emplace(absl::StrCat(w->binding(), "\t", w->type().ToString()), w.get());
    if (inserted) continue;
    for (const auto& f : module.functions()) ir::ReplaceAllUsesWith(f->body(), w.get(), it->second);
    duplicates.push_back(w.get());
  }
  for (const Value* w : duplicates) module.RemoveGlobal(w);
  return !duplicates.empty();
}

bool FoldReshapes(Block& block) {
  bool changed = false;
  std::vector<const Op*> dead;
  for (const auto& op : block.ops()) {
    for (int r = 0; r < op->num_regions(); ++r) changed |= FoldReshapes(*op->region(r));
    if (op->kind() != OpKind::kReshape) continue;
    Value* x = op->operand(0);
    if (x->kind() == Value::Kind::kResult && x->defining_op()->kind() == OpKind::kReshape) {
      x = x->defining_op()->operand(0);
      op->set_operand(0, x);
      changed = true;
    }
    if (x->type() == op->result()->type()) {
      ir::ReplaceAllUsesWith(block, op->result(), x);
      dead.push_back(op.get());
      changed = true;
    }
  }
  for (const Op* op : dead) block.Erase(op);
  return changed;
}

bool ReadsState(const Op& op) {
  for (const Value* v : op.operands())
    if (v->kind() == Value::Kind::kState) return true;
  return false;
}

// Identical pure ops of one block: the later one's results are replaced by
// the first's. The key holds operand identities, so it is only looked up,
// never iterated (output order is program order).
bool EliminateCommonOps(Block& block) {
  bool changed = false;
  absl::flat_hash_map<std::string, Op*> seen;
  std::vector<const Op*> dead;
  for (const auto& op : block.ops()) {
    for (int r = 0; r < op->num_regions(); ++r) changed |= EliminateCommonOps(*op->region(r));
    if (op->num_results() == 0 || op->num_regions() > 0 || ir::HasEffects(*op) || ReadsState(*op)) continue;
    std::string key = std::string(op->mnemonic());
    for (const Value* v : op->operands()) absl::StrAppend(&key, " ", reinterpret_cast<uintptr_t>(v));
    absl::StrAppend(&key, " ", ir::AttrDictToString(op->attrs()));
    for (int i = 0; i < op->num_results(); ++i) absl::StrAppend(&key, " ", op->result(i)->type().ToString());
    auto [it, inserted] = seen.try_emplace(key, op.get());
    if (inserted) continue;
    for (int i = 0; i < op->num_results(); ++i) ir::ReplaceAllUsesWith(block, op->result(i), it->second->result(i));
    dead.push_back(op.get());
    changed = true;
  }
  for (const Op* op : dead) block.Erase(op);
  return changed;
}

void CountUses(const Block& block, absl::flat_hash_map<const Value*, int>& uses) {
  ir::WalkOps(block, [&](const Op* op) {
    for (const Value* v : op->operands()) ++uses[v];
  });
}

void ForgetUses(const Op& op, absl::flat_hash_map<const Value*, int>& uses) {
  for (const Value* v : op.operands()) --uses[v];
  for (int r = 0; r < op.num_regions(); ++r)
    ir::WalkOps(*op.region(r), [&](const Op* inner) {
      for (const Value* v : inner->operands()) --uses[v];
    });
}

// Removes dead pure ops, last to first, so chains go in one sweep.
bool RemoveDeadOps(Block& block, absl::flat_hash_map<const Value*, int>& uses) {
  bool changed = false;
  const auto& ops = block.ops();
  for (size_t i = ops.size(); i-- > 0;) {
    Op* op = ops[i].get();
    bool dead = op->num_results() > 0 && !ir::HasEffects(*op) && !op->info().has(ir::kTerminator);
    for (int r = 0; dead && r < op->num_results(); ++r) dead = uses[op->result(r)] == 0;
    if (dead) {
      ForgetUses(*op, uses);
      block.Erase(op);
      changed = true;
      continue;
    }
    for (int r = 0; r < op->num_regions(); ++r) changed |= RemoveDeadOps(*op->region(r), uses);
  }
  return changed;
}

}  // namespace

absl::StatusOr<bool> CanonicalizePass::Run(ir::Module& module, const PassContext& context) {
  bool changed = MergeDuplicateWeights(module);
  for (const auto& f : module.functions()) {
    Block& body = f->body();
    for (bool again = true; again;) {
      again = FoldReshapes(body);
      again |= EliminateCommonOps(body);
      absl::flat_hash_map<const Value*, int> uses;
      CountUses(body, uses);
      again |= RemoveDeadOps(body, uses);
      changed |= again;
    }
  }
  return changed;
}

}  // namespace kiln::passes
