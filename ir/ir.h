// The kiln tensor IR: Module, Function, Block, Op and Value.
//
// Semantics.
// * A Module holds named globals and functions. A `weight @w : q8_0[M, K] =
//   "blk.0.attn_q.weight"` is read-only and bound to the GGUF tensor of that
//   name, type and shape (ne = [K, M]); bundles bind by name, never by offset.
//   A `state @s : f16[C, 1024]` is a buffer that lives as long as the loaded
//   model and persists across calls: KV caches, and packed weights that
//   `load` writes. States start zeroed. Globals are referenced as `@name`.
// * Functions `load`, `prefill(%tokens: i32[T], %pos: i32[1])` and
//   `decode(%token: i32[1], %pos: i32[1])` are the entry points (the IR allows
//   any names; these three are what the runtime calls). %pos holds P, the
//   position of the first token. A body is one block of ops, run in program
//   order, ended by `return`; its values are SSA: each value is defined once,
//   before its uses.
// * Values are tensors of a TensorType (ir/types.h). Dims are static or one
//   of the symbols T, P, C, bound per call (T by the arguments, C by the
//   maximum context the model is loaded with).
// * Ops are described once in ir/ops.def (operands, results, attributes,
//   effects, one-line semantics); the shape rules are ir/shape_rules.cc and
//   the executable semantics the CPU interpreter's kernels (ir/kernels_*.cc).
//   Activations are float32 (reductions may accumulate wider; the
//   interpreter uses double); a result of type f16/bf16 is rounded to that
//   type. Quantized values are only read (dequantized on use).
// * Effects: an op whose table entry marks operand i as written (kv_store,
//   store) writes that operand, which must be a state. Effects happen in
//   program order; every other op is pure.
// * `kernel` owns one region, a block whose arguments take the kernel's
//   operands one for one; the region is isolated from above (it may use its
//   arguments, its own values and globals, nothing else) and ends in `yield`,
//   whose operands are the kernel's results. Its attributes say how it is
//   generated: `anchor` (index of the anchor op in the region), `schedule`.
//
// Ownership: a Module owns its globals and functions, a Function its body
// block, a Block its arguments and ops, an Op its results and regions.
// Operands are non-owning Value pointers; there are no use lists (see
// ReplaceAllUsesWith). Objects never move once created.
#ifndef KILN_IR_IR_H_
#define KILN_IR_IR_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "ir/attributes.h"
#include "ir/op_info.h"
#include "ir/types.h"

namespace kiln::ir {

class Block;
class Function;
class Module;
class Op;

class Value {
 public:
  enum class Kind : uint8_t { kResult, kArgument, kWeight, kState };

  Kind kind() const { return kind_; }
  bool is_global() const { return kind_ == Kind::kWeight || kind_ == Kind::kState; }
  const TensorType& type() const { return type_; }
  void set_type(TensorType type) { type_ = std::move(type); }
  // Locals: a name hint for printing (the printer makes names unique).
  // Globals: the symbol, unique in the module (the verifier checks).
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  Op* defining_op() const { return op_; }                  // kResult only
  Block* owner_block() const { return block_; }            // kArgument only
  int index() const { return index_; }                     // result or argument index
  const std::string& binding() const { return binding_; }  // kWeight: GGUF tensor name

 private:
  friend class Op;
  friend class Block;
  friend class Module;
  Value(Kind kind, TensorType type, std::string name)
      : kind_(kind), type_(std::move(type)), name_(std::move(name)) {}
  Kind kind_;
  TensorType type_;
  std::string name_;
  std::string binding_;
  Op* op_ = nullptr;
  Block* block_ = nullptr;
  int index_ = 0;
};

class Op {
 public:
  // Results get `result_types`; regions are added with AddRegion().
  Op(OpKind kind, std::vector<Value*> operands, absl::Span<const TensorType> result_types,
     AttrDict attrs = {});
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  OpKind kind() const { return kind_; }
  const OpInfo& info() const { return GetOpInfo(kind_); }
  std::string_view mnemonic() const { return info().mnemonic; }

  int num_operands() const { return static_cast<int>(operands_.size()); }
  Value* operand(int i) const { return operands_[i]; }
  absl::Span<Value* const> operands() const { return operands_; }
  void set_operand(int i, Value* v) { operands_[i] = v; }
  void set_operands(std::vector<Value*> v) { operands_ = std::move(v); }

  int num_results() const { return static_cast<int>(results_.size()); }
  Value* result(int i = 0) const { return results_[i].get(); }
  std::vector<Value*> results() const;
  Value* AddResult(TensorType type, std::string name = "");

  const AttrDict& attrs() const { return attrs_; }
  AttrDict& mutable_attrs() { return attrs_; }
  void SetAttr(std::string_view name, Attribute value) { attrs_.Set(name, std::move(value)); }
  const Attribute* attr(std::string_view name) const { return attrs_.Find(name); }
  // Typed getters with a default for absent (optional) or mistyped attributes;
  // the verifier has already checked kinds of the table's attributes.
  int64_t GetInt(std::string_view name, int64_t def = 0) const;
  float GetFloat(std::string_view name, float def = 0) const;

  int num_regions() const { return static_cast<int>(regions_.size()); }
  Block* region(int i = 0) const { return regions_[i].get(); }
  Block* AddRegion();

  Block* parent() const { return parent_; }
  int line() const { return line_; }  // source line when parsed, else 0
  void set_line(int line) { line_ = line; }

 private:
  friend class Block;
  OpKind kind_;
  std::vector<Value*> operands_;
  std::vector<std::unique_ptr<Value>> results_;
  AttrDict attrs_;
  std::vector<std::unique_ptr<Block>> regions_;
  Block* parent_ = nullptr;
  int line_ = 0;
};

class Block {
 public:
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  absl::Span<const std::unique_ptr<Value>> args() const { return args_; }
  int num_args() const { return static_cast<int>(args_.size()); }
  Value* arg(int i) const { return args_[i].get(); }
  Value* AddArg(TensorType type, std::string name = "");

  const std::vector<std::unique_ptr<Op>>& ops() const { return ops_; }
  bool empty() const { return ops_.empty(); }
  Op* back() const { return ops_.empty() ? nullptr : ops_.back().get(); }
  Op* terminator() const;           // the last op if it is a terminator, else null
  int IndexOf(const Op* op) const;  // -1 if not in this block

  Op* Append(std::unique_ptr<Op> op);
  Op* InsertBefore(const Op* before, std::unique_ptr<Op> op);  // before == null: append
  std::unique_ptr<Op> Remove(const Op* op);                    // detaches; null if not here
  void Erase(const Op* op) { Remove(op); }

  Op* parent_op() const { return parent_op_; }  // kernel owning this region
  Function* function() const;                   // the enclosing function

 private:
  friend class Op;
  friend class Function;
  Block() = default;
  std::vector<std::unique_ptr<Value>> args_;
  std::vector<std::unique_ptr<Op>> ops_;
  Op* parent_op_ = nullptr;
  Function* function_ = nullptr;  // set for function bodies
};

class Function {
 public:
  Function(const Function&) = delete;
  Function& operator=(const Function&) = delete;

  const std::string& name() const { return name_; }
  Block& body() const { return *body_; }
  const std::vector<TensorType>& result_types() const { return result_types_; }
  void set_result_types(std::vector<TensorType> types) { result_types_ = std::move(types); }
  Module* module() const { return module_; }

 private:
  friend class Module;
  Function(Module* module, std::string name);
  Module* module_;
  std::string name_;
  std::unique_ptr<Block> body_;
  std::vector<TensorType> result_types_;
};

class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Globals and functions are kept in insertion order (the printed order).
  Value* AddWeight(std::string name, TensorType type, std::string binding);
  Value* AddState(std::string name, TensorType type);
  Function* AddFunction(std::string name);

  const std::vector<std::unique_ptr<Value>>& weights() const { return weights_; }
  const std::vector<std::unique_ptr<Value>>& states() const { return states_; }
  const std::vector<std::unique_ptr<Function>>& functions() const { return functions_; }

  Value* FindGlobal(std::string_view name) const;  // weight or state
  Function* FindFunction(std::string_view name) const;
  // Removes a global no op refers to any more (e.g. a weight `load` repacked).
  bool RemoveGlobal(const Value* global);

 private:
  std::vector<std::unique_ptr<Value>> weights_;
  std::vector<std::unique_ptr<Value>> states_;
  std::vector<std::unique_ptr<Function>> functions_;
};

// Walks every op of `block` and of the regions nested in it, in program
// order (an op before the ops of its regions).
template <typename Fn>
void WalkOps(const Block& block, Fn&& fn) {
  for (const auto& op : block.ops()) {
    fn(op.get());
    for (int r = 0; r < op->num_regions(); ++r) WalkOps(*op->region(r), fn);
  }
}

// Replaces every use of `from` by `to` in `block` and its nested regions.
void ReplaceAllUsesWith(Block& block, const Value* from, Value* to);
// The ops in `block` (nested included) that use `v`, in program order.
std::vector<Op*> UsersOf(const Block& block, const Value* v);
// True if `op` or an op nested in it writes a state (has effects).
bool HasEffects(const Op& op);

}  // namespace kiln::ir

#endif  // KILN_IR_IR_H_
