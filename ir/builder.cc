// The IR builder: creates ops typed by their shape rules.
#include "ir/builder.h"

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "ir/printer.h"
#include "ir/shape_rules.h"

namespace kiln::ir {

Value* Builder::AddArg(TensorType type, std::string_view name) {
  return block_->AddArg(std::move(type), std::string(name));
}

Op* Builder::Insert(std::unique_ptr<Op> op) { return block_->InsertBefore(before_, std::move(op)); }

Op* Builder::Create(OpKind kind, std::vector<Value*> operands, AttrDict attrs,
                    std::vector<TensorType> declared, std::string_view name) {
  const OpInfo& info = GetOpInfo(kind);
  std::vector<TensorType> operand_types;
  bool null_operand = false;
  for (Value* v : operands) {
    if (v == nullptr) {
      null_operand = true;
      operand_types.emplace_back();
    } else {
      operand_types.push_back(v->type());
    }
  }
  absl::StatusOr<std::vector<TensorType>> inferred =
      null_operand
          ? absl::InvalidArgumentError(absl::StrCat("'", ToAbsl(info.mnemonic), "' got a null operand"))
          : InferResultTypes(ShapeQuery{info, operand_types, attrs, declared, nullptr});
  absl::Status error;
  std::vector<TensorType> results;
  if (inferred.ok()) {
    results = *std::move(inferred);
    if (!declared.empty() && declared != results)
      error = absl::InvalidArgumentError(absl::StrCat("'", ToAbsl(info.mnemonic),
                                                      "' was given result types that differ from "
                                                      "its shape rule's, ",
                                                      results.empty() ? "none" : results[0].ToString()));
  } else {
    error = inferred.status();
    results = declared;
    if (results.empty() && info.num_results > 0)
      results.assign(info.num_results, TensorType{DType::kF32, {}});
  }
  Op* op = Insert(std::make_unique<Op>(kind, std::move(operands), results, std::move(attrs)));
  if (op->num_results() > 0) op->result(0)->set_name(std::string(name));
  if (!error.ok() && status_.ok())
    status_ = absl::InvalidArgumentError(absl::StrCat("error: ", error.message(), "\n  ", PrintOpLine(*op)));
  return op;
}

Value* Builder::Embed(Value* table, Value* ids, std::string_view name) {
  return Create(OpKind::kEmbed, {table, ids}, {}, {}, name)->result();
}

Value* Builder::MatMul(Value* x, Value* w, std::string_view name) {
  return Create(OpKind::kMatMul, {x, w}, {}, {}, name)->result();
}

Value* Builder::RmsNorm(Value* x, Value* w, float eps, std::string_view name) {
  return Create(OpKind::kRmsNorm, {x, w}, {{"eps", Attribute::Float(eps)}}, {}, name)->result();
}

Value* Builder::Rope(Value* x, Value* pos, const RopeParams& p, std::string_view name) {
  AttrDict attrs{{"base", Attribute::Float(p.base)}};
  // Defaults are left out so plain RoPE prints as {base = ...}.
  if (p.freq_scale != 1.0f) attrs.Set("freq_scale", Attribute::Float(p.freq_scale));
  if (p.ext_factor != 0.0f) attrs.Set("ext_factor", Attribute::Float(p.ext_factor));
  if (p.mscale != 1.0f) attrs.Set("mscale", Attribute::Float(p.mscale));
  if (p.ramp_low != 0.0f) attrs.Set("ramp_low", Attribute::Float(p.ramp_low));
  if (p.ramp_high != 0.0f) attrs.Set("ramp_high", Attribute::Float(p.ramp_high));
  return Create(OpKind::kRope, {x, pos}, std::move(attrs), {}, name)->result();
}

Value* Builder::Attention(Value* q, Value* k_cache, Value* v_cache, Value* pos, int64_t n_kv_heads,
                          float scale, std::string_view name) {
  return Create(OpKind::kAttention, {q, k_cache, v_cache, pos},
                {{"n_kv_heads", Attribute::Int(n_kv_heads)}, {"scale", Attribute::Float(scale)}}, {}, name)
      ->result();
}

Op* Builder::KvStore(Value* k, Value* v, Value* k_cache, Value* v_cache, Value* pos) {
  return Create(OpKind::kKvStore, {k, v, k_cache, v_cache, pos});
}

Op* Builder::Store(Value* x, Value* state) { return Create(OpKind::kStore, {x, state}); }

Value* Builder::Silu(Value* x, std::string_view name) {
  return Create(OpKind::kSilu, {x}, {}, {}, name)->result();
}
Value* Builder::Mul(Value* a, Value* b, std::string_view name) {
  return Create(OpKind::kMul, {a, b}, {}, {}, name)->result();
}
Value* Builder::Add(Value* a, Value* b, std::string_view name) {
  return Create(OpKind::kAdd, {a, b}, {}, {}, name)->result();
}
Value* Builder::Argmax(Value* x, std::string_view name) {
  return Create(OpKind::kArgmax, {x}, {}, {}, name)->result();
}

Value* Builder::Reshape(Value* x, Shape shape, std::string_view name) {
  TensorType t{x != nullptr ? x->type().dtype : DType::kF32, std::move(shape)};
  return Create(OpKind::kReshape, {x}, {}, {t}, name)->result();
}

Value* Builder::LastRow(Value* x, std::string_view name) {
  return Create(OpKind::kLastRow, {x}, {}, {}, name)->result();
}

Op* Builder::Kernel(std::vector<Value*> operands, std::vector<TensorType> result_types, AttrDict attrs) {
  auto op = std::make_unique<Op>(OpKind::kKernel, operands, result_types, std::move(attrs));
  Block* body = op->AddRegion();
  for (Value* v : operands) body->AddArg(v->type(), v->name());
  // Typed by the caller: the region is empty until the body is built, and
  // the verifier checks the yield against `result_types`.
  return Insert(std::move(op));
}

Op* Builder::Yield(std::vector<Value*> values) { return Create(OpKind::kYield, std::move(values)); }

Op* Builder::Return(std::vector<Value*> values) {
  if (block_->function() != nullptr && block_->parent_op() == nullptr) {
    std::vector<TensorType> types;
    for (Value* v : values) types.push_back(v != nullptr ? v->type() : TensorType{});
    block_->function()->set_result_types(std::move(types));
  }
  return Create(OpKind::kReturn, std::move(values));
}

}  // namespace kiln::ir
