// Module, Function, Block, Op and Value: construction and mutation.
#include "ir/ir.h"

#include <algorithm>

namespace kiln::ir {

Op::Op(OpKind kind, std::vector<Value*> operands, absl::Span<const TensorType> result_types, AttrDict attrs)
    : kind_(kind), operands_(std::move(operands)), attrs_(std::move(attrs)) {
  for (const TensorType& t : result_types) AddResult(t);
}

std::vector<Value*> Op::results() const {
  std::vector<Value*> out;
  out.reserve(results_.size());
  for (const auto& r : results_) out.push_back(r.get());
  return out;
}

Value* Op::AddResult(TensorType type, std::string name) {
  auto v = std::unique_ptr<Value>(new Value(Value::Kind::kResult, std::move(type), std::move(name)));
  v->op_ = this;
  v->index_ = static_cast<int>(results_.size());
  results_.push_back(std::move(v));
  return results_.back().get();
}

int64_t Op::GetInt(std::string_view name, int64_t def) const {
  const Attribute* a = attr(name);
  return a != nullptr && a->kind() == Attribute::Kind::kInt ? a->int_value() : def;
}

float Op::GetFloat(std::string_view name, float def) const {
  const Attribute* a = attr(name);
  return a != nullptr && a->kind() == Attribute::Kind::kFloat ? a->float_value() : def;
}

Block* Op::AddRegion() {
  regions_.push_back(std::unique_ptr<Block>(new Block()));
  regions_.back()->parent_op_ = this;
  return regions_.back().get();
}

Value* Block::AddArg(TensorType type, std::string name) {
  auto v = std::unique_ptr<Value>(new Value(Value::Kind::kArgument, std::move(type), std::move(name)));
  v->block_ = this;
  v->index_ = static_cast<int>(args_.size());
  args_.push_back(std::move(v));
  return args_.back().get();
}

Op* Block::terminator() const {
  Op* last = back();
  return last != nullptr && last->info().has(kTerminator) ? last : nullptr;
}

int Block::IndexOf(const Op* op) const {
  for (size_t i = 0; i < ops_.size(); ++i)
    if (ops_[i].get() == op) return static_cast<int>(i);
  return -1;
}

Op* Block::Append(std::unique_ptr<Op> op) { return InsertBefore(nullptr, std::move(op)); }

Op* Block::InsertBefore(const Op* before, std::unique_ptr<Op> op) {
  op->parent_ = this;
  Op* raw = op.get();
  int at = before == nullptr ? -1 : IndexOf(before);
  if (at < 0) {
    ops_.push_back(std::move(op));
  } else {
    ops_.insert(ops_.begin() + at, std::move(op));
  }
  return raw;
}

std::unique_ptr<Op> Block::Remove(const Op* op) {
  int at = IndexOf(op);
  if (at < 0) return nullptr;
  std::unique_ptr<Op> out = std::move(ops_[at]);
  ops_.erase(ops_.begin() + at);
  out->parent_ = nullptr;
  return out;
}

Function* Block::function() const {
  const Block* b = this;
  while (b->parent_op_ != nullptr) {
    if (b->parent_op_->parent() == nullptr) return nullptr;
    b = b->parent_op_->parent();
  }
  return b->function_;
}

Function::Function(Module* module, std::string name)
    : module_(module), name_(std::move(name)), body_(new Block()) {
  body_->function_ = this;
}

Value* Module::AddWeight(std::string name, TensorType type, std::string binding) {
  auto v = std::unique_ptr<Value>(new Value(Value::Kind::kWeight, std::move(type), std::move(name)));
  v->binding_ = std::move(binding);
  weights_.push_back(std::move(v));
  return weights_.back().get();
}

Value* Module::AddState(std::string name, TensorType type) {
  states_.push_back(std::unique_ptr<Value>(new Value(Value::Kind::kState, std::move(type), std::move(name))));
  return states_.back().get();
}

Function* Module::AddFunction(std::string name) {
  functions_.push_back(std::unique_ptr<Function>(new Function(this, std::move(name))));
  return functions_.back().get();
}

Value* Module::FindGlobal(std::string_view name) const {
  for (const auto& w : weights_)
    if (w->name() == name) return w.get();
  for (const auto& s : states_)
    if (s->name() == name) return s.get();
  return nullptr;
}

Function* Module::FindFunction(std::string_view name) const {
  for (const auto& f : functions_)
    if (f->name() == name) return f.get();
  return nullptr;
}

bool Module::RemoveGlobal(const Value* global) {
  for (auto* list : {&weights_, &states_}) {
    auto it = std::find_if(list->begin(), list->end(), [&](const auto& v) { return v.get() == global; });
    if (it != list->end()) {
      list->erase(it);
      return true;
    }
  }
  return false;
}

void ReplaceAllUsesWith(Block& block, const Value* from, Value* to) {
  WalkOps(block, [&](Op* op) {
    for (int i = 0; i < op->num_operands(); ++i)
      if (op->operand(i) == from) op->set_operand(i, to);
  });
}

std::vector<Op*> UsersOf(const Block& block, const Value* v) {
  std::vector<Op*> users;
  WalkOps(block, [&](Op* op) {
    for (Value* o : op->operands()) {
      if (o == v) {
        users.push_back(op);
        break;
      }
    }
  });
  return users;
}

bool HasEffects(const Op& op) {
  if (op.info().written_operands != 0) return true;
  for (int r = 0; r < op.num_regions(); ++r)
    for (const auto& inner : op.region(r)->ops())
      if (HasEffects(*inner)) return true;
  return false;
}

}  // namespace kiln::ir
