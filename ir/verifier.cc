// The IR verifier (rules in ir/verifier.h).
#include "ir/verifier.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "ir/printer.h"
#include "ir/shape_rules.h"
#include "support/status_macros.h"

namespace kiln::ir {
namespace {

absl::Status GlobalError(absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("error: ", message));
}

absl::Status CheckQuantizedRows(const TensorType& t, absl::string_view what) {
  const DTypeInfo& d = GetDTypeInfo(t.dtype);
  if (!d.is_quantized) return absl::OkStatus();
  if (t.rank() == 0 || !t.shape.back().is_static() || t.shape.back().value() % d.block_elems != 0)
    return GlobalError(absl::StrCat(what, " has type ", t.ToString(),
                                    ", whose last dim must be a multiple of ", d.block_elems, " (the ",
                                    ToAbsl(d.name), " block)"));
  return absl::OkStatus();
}

class FunctionVerifier {
 public:
  FunctionVerifier(const Module& m, const Function& f) : module_(m), f_(f), names_(f) {}

  absl::Status Run() {
    const Block& body = f_.body();
    absl::flat_hash_set<const Value*> visible;
    for (const auto& a : body.args()) {
      visible.insert(a.get());
      RETURN_IF_ERROR(
          CheckQuantizedRows(a->type(), absl::StrCat("argument ", names_.Name(a.get()), " of @", f_.name())));
    }
    const Op* ret = body.terminator();
    if (ret == nullptr || ret->kind() != OpKind::kReturn)
      return GlobalError(absl::StrCat("function @", f_.name(), " does not end in 'return'"));
    RETURN_IF_ERROR(VerifyBlock(body, visible));
    if (ret->num_operands() != static_cast<int>(f_.result_types().size()))
      return OpError(*ret, absl::StrCat("'return' gives ", ret->num_operands(), " values, @", f_.name(),
                                        " declares ", f_.result_types().size(), " results"));
    for (int i = 0; i < ret->num_operands(); ++i)
      if (ret->operand(i)->type() != f_.result_types()[i])
        return OpError(
            *ret, absl::StrCat("operand ", i, " of 'return' has type ", ret->operand(i)->type().ToString(),
                               ", @", f_.name(), " declares ", f_.result_types()[i].ToString()));
    return absl::OkStatus();
  }

 private:
  absl::Status OpError(const Op& op, absl::string_view message) const {
    std::string line = PrintOpLine(op, names_);
    if (op.line() > 0) absl::StrAppend(&line, "  // line ", op.line());
    return absl::InvalidArgumentError(absl::StrCat("error: ", message, "\n  ", line));
  }

  // `visible`: the values ops of `block` may use (grows as ops define values).
  absl::Status VerifyBlock(const Block& block, absl::flat_hash_set<const Value*>& visible) {
    const bool in_kernel = block.parent_op() != nullptr;
    for (size_t i = 0; i < block.ops().size(); ++i) {
      const Op& op = *block.ops()[i];
      const OpInfo& info = op.info();
      const bool last = i + 1 == block.ops().size();
      if (info.has(kTerminator) && !last)
        return OpError(op, absl::StrCat("'", ToAbsl(info.mnemonic), "' must be the last op of its block"));
      if (op.kind() == OpKind::kYield && !in_kernel) return OpError(op, "'yield' outside a kernel region");
      if (op.kind() == OpKind::kReturn && in_kernel) return OpError(op, "'return' inside a kernel region");
      if (last && in_kernel && op.kind() != OpKind::kYield)
        return OpError(*block.parent_op(), "'kernel' region does not end in 'yield'");
      RETURN_IF_ERROR(VerifyOp(op, visible));
      for (int r = 0; r < op.num_results(); ++r) visible.insert(op.result(r));
    }
    return absl::OkStatus();
  }

  absl::Status VerifyOp(const Op& op, absl::flat_hash_set<const Value*>& visible) {
    const OpInfo& info = op.info();
    for (int i = 0; i < op.num_operands(); ++i) {
      const Value* v = op.operand(i);
      if (v == nullptr)
        return OpError(op, absl::StrCat("operand ", i, " of '", ToAbsl(info.mnemonic), "' is null"));
      if (v->is_global()) {
        if (module_.FindGlobal(v->name()) != v)
          return OpError(op, absl::StrCat("operand ", i, " of '", ToAbsl(info.mnemonic),
                                          "' is a global of another module"));
      } else if (!visible.contains(v)) {
        return OpError(op, absl::StrCat("operand ", i, " of '", ToAbsl(info.mnemonic), "' (", names_.Name(v),
                                        ") is not defined before this op",
                                        op.parent()->parent_op() != nullptr ? " in this kernel region" : ""));
      }
      if (info.writes_operand(i) && v->kind() != Value::Kind::kState)
        return OpError(op, absl::StrCat("operand ", i, " of '", ToAbsl(info.mnemonic),
                                        "' is written, so must be a state, got ", names_.Name(v)));
    }
    if (op.num_regions() != info.num_regions)
      return OpError(op, absl::StrCat("'", ToAbsl(info.mnemonic), "' has ", op.num_regions(),
                                      " regions, expected ", info.num_regions));
    if (info.num_results != kVariadic && op.num_results() != info.num_results)
      return OpError(op, absl::StrCat("'", ToAbsl(info.mnemonic), "' has ", op.num_results(),
                                      " results, expected ", info.num_results));
    // Regions first: a kernel's result types come from its yield.
    for (int r = 0; r < op.num_regions(); ++r) {
      absl::flat_hash_set<const Value*> inner;  // isolated from above
      for (const auto& a : op.region(r)->args()) inner.insert(a.get());
      if (op.region(r)->empty())
        return OpError(op, absl::StrCat("'", ToAbsl(info.mnemonic), "' has an empty region"));
      RETURN_IF_ERROR(VerifyBlock(*op.region(r), inner));
    }
    absl::StatusOr<std::vector<TensorType>> inferred = InferResultTypes(op);
    if (!inferred.ok()) return OpError(op, inferred.status().message());
    if (static_cast<int>(inferred->size()) != op.num_results())
      return OpError(op, absl::StrCat("'", ToAbsl(info.mnemonic), "' has ", op.num_results(),
                                      " results, expected ", inferred->size()));
    for (int r = 0; r < op.num_results(); ++r) {
      if (op.result(r)->type() != (*inferred)[r])
        return OpError(op, absl::StrCat("result ", r, " of '", ToAbsl(info.mnemonic), "' is declared ",
                                        op.result(r)->type().ToString(), ", but its operands give ",
                                        (*inferred)[r].ToString()));
      RETURN_IF_ERROR(CheckQuantizedRows(op.result(r)->type(),
                                         absl::StrCat("result ", r, " of '", ToAbsl(info.mnemonic), "'")));
    }
    return absl::OkStatus();
  }

  const Module& module_;
  const Function& f_;
  NameTable names_;
};

}  // namespace

absl::Status Verify(const Module& module) {
  absl::flat_hash_set<std::string> symbols;
  auto check_symbol = [&](absl::string_view kind, const std::string& name) -> absl::Status {
    if (!IsValidName(name))
      return GlobalError(absl::StrCat(kind, " @", name, " has an invalid name (letters, digits, '_', '.')"));
    if (!symbols.insert(name).second) return GlobalError(absl::StrCat("@", name, " is defined twice"));
    return absl::OkStatus();
  };
  for (const auto& w : module.weights()) {
    RETURN_IF_ERROR(check_symbol("weight", w->name()));
    if (!w->type().is_static())
      return GlobalError(
          absl::StrCat("weight @", w->name(), " has type ", w->type().ToString(), ", expected static dims"));
    if (w->binding().empty())
      return GlobalError(absl::StrCat("weight @", w->name(), " is bound to no GGUF tensor"));
    RETURN_IF_ERROR(CheckQuantizedRows(w->type(), absl::StrCat("weight @", w->name())));
  }
  for (const auto& s : module.states()) {
    RETURN_IF_ERROR(check_symbol("state", s->name()));
    for (const Dim& d : s->type().shape)
      if (!d.is_static() && d.symbol() != Symbol::kC)
        return GlobalError(absl::StrCat("state @", s->name(), " has type ", s->type().ToString(),
                                        ", expected static dims or C"));
    RETURN_IF_ERROR(CheckQuantizedRows(s->type(), absl::StrCat("state @", s->name())));
  }
  for (const auto& f : module.functions()) {
    RETURN_IF_ERROR(check_symbol("function", f->name()));
    RETURN_IF_ERROR(FunctionVerifier(module, *f).Run());
  }
  return absl::OkStatus();
}

}  // namespace kiln::ir
