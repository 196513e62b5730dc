// Builds ops at an insertion point, typing results with the shape rules.
//
//   ir::Module m;
//   Value* wq = m.AddWeight("blk.0.attn_q", {DType::kQ8_0, {2048, 1024}}, "blk.0.attn_q.weight");
//   Function* f = m.AddFunction("prefill");
//   Builder b(f);
//   Value* tokens = b.AddArg({DType::kI32, {Dim::T()}}, "tokens");
//   ...
//   Value* q = b.MatMul(h, wq, "q");
//   b.Return({logits});                 // also sets f's result types
//   RETURN_IF_ERROR(b.status());
//
// A shape error does not stop building: the op is still created (results
// typed from `declared` or as f32[]), and the first error, naming the op's
// line, is kept in status(). Check it once at the end; the verifier would
// report the same error.
#ifndef KILN_IR_BUILDER_H_
#define KILN_IR_BUILDER_H_

#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "ir/ir.h"

namespace kiln::ir {

// Rotary embedding parameters (spec/qwen3-model.md §3.4). Plain RoPE sets
// only `base`. Linear scaling by s: freq_scale = 1/s. YaRN: freq_scale =
// 1/s, ext_factor, the ramp's [low, high] from corr_dim(beta_fast/slow), and
// mscale = attn_factor * (1 + 0.1 ln s) — computed by the model builder, so
// the IR holds exactly the numbers the kernel uses.
struct RopeParams {
  float base = 10000.0f;
  float freq_scale = 1.0f;
  float ext_factor = 0.0f;
  float mscale = 1.0f;
  float ramp_low = 0.0f;
  float ramp_high = 0.0f;
};

class Builder {
 public:
  explicit Builder(Block* block) : block_(block) {}  // appends to `block`
  explicit Builder(Function* f) : block_(&f->body()) {}
  // Inserts before `before` (null: at the end) in `block`.
  void SetInsertionPoint(Block* block, const Op* before = nullptr) {
    block_ = block;
    before_ = before;
  }
  Block* block() const { return block_; }

  Value* AddArg(TensorType type, std::string_view name = "");

  // The generic form: any op of the table. Results are typed by the shape
  // rule; `declared` gives the types where the rule needs them (reshape) and
  // must agree with it otherwise. `name` is the first result's name hint.
  Op* Create(OpKind kind, std::vector<Value*> operands, AttrDict attrs = {},
             std::vector<TensorType> declared = {}, std::string_view name = "");

  Value* Embed(Value* table, Value* ids, std::string_view name = "");
  Value* MatMul(Value* x, Value* w, std::string_view name = "");
  Value* RmsNorm(Value* x, Value* w, float eps, std::string_view name = "");
  Value* Rope(Value* x, Value* pos, const RopeParams& params, std::string_view name = "");
  Value* Attention(Value* q, Value* k_cache, Value* v_cache, Value* pos, int64_t n_kv_heads, float scale,
                   std::string_view name = "");
  Op* KvStore(Value* k, Value* v, Value* k_cache, Value* v_cache, Value* pos);
  Op* Store(Value* x, Value* state);
  Value* Silu(Value* x, std::string_view name = "");
  Value* Mul(Value* a, Value* b, std::string_view name = "");
  Value* Add(Value* a, Value* b, std::string_view name = "");
  Value* Argmax(Value* x, std::string_view name = "");
  Value* Reshape(Value* x, Shape shape, std::string_view name = "");
  Value* LastRow(Value* x, std::string_view name = "");

  // A kernel whose region takes `operands` (its arguments keep their names);
  // fill its body with Builder(kernel->region()) and end it with Yield().
  // `result_types` must equal the yielded values' types.
  Op* Kernel(std::vector<Value*> operands, std::vector<TensorType> result_types, AttrDict attrs = {});
  Op* Yield(std::vector<Value*> values);
  // Ends a function body and sets the function's result types.
  Op* Return(std::vector<Value*> values);

  // The first shape error of any op created by this builder, else OK.
  const absl::Status& status() const { return status_; }

 private:
  Op* Insert(std::unique_ptr<Op> op);

  Block* block_;
  const Op* before_ = nullptr;
  absl::Status status_;
};

}  // namespace kiln::ir

#endif  // KILN_IR_BUILDER_H_
