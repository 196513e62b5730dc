// The CPU interpreter: binding, the block loop, and dispatch to the kernels.
#include "ir/interpreter.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/absl_compat.h"
#include "ir/kernels.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "support/parallel_for.h"
#include "support/status_macros.h"

namespace kiln::ir {

struct Interpreter::Frame {
  SymbolValues symbols = {-1, -1, -1};
  absl::flat_hash_map<const Value*, HostTensor> values;    // owned locals
  absl::flat_hash_map<const Value*, HostTensor*> aliases;  // region arguments
  int threads = 1;
};

namespace {

std::string DimsToString(const std::vector<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}

absl::StatusOr<std::vector<int64_t>> Resolve(const TensorType& t, const SymbolValues& symbols) {
  std::vector<int64_t> dims;
  for (const Dim& d : t.shape) {
    if (d.is_static()) {
      dims.push_back(d.value());
      continue;
    }
    const int64_t v = symbols[static_cast<int>(d.symbol()) - 1];
    if (v < 0)
      return absl::InvalidArgumentError(absl::StrCat("symbol ", ToAbsl(SymbolName(d.symbol())), " of ",
                                                     t.ToString(), " is not bound for this call"));
    dims.push_back(v);
  }
  return dims;
}

// Drops GGUF's trailing 1s (ne order) and the IR's leading 1s, so that
// f32[1024] matches ne = [1024, 1] and f32[1, 1024] matches ne = [1024].
std::vector<int64_t> Canonical(std::vector<int64_t> row_major) {
  while (row_major.size() > 1 && row_major.front() == 1) row_major.erase(row_major.begin());
  return row_major;
}

// For each op of `block`, the values (defined in or passed to the block)
// whose last use it is; values with no use die at their definition.
std::vector<std::vector<const Value*>> LastUses(const Block& block) {
  absl::flat_hash_map<const Value*, size_t> last;
  const auto& ops = block.ops();
  for (const auto& a : block.args()) last[a.get()] = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    for (int r = 0; r < ops[i]->num_results(); ++r) last[ops[i]->result(r)] = i;
    std::vector<const Op*> stack = {ops[i].get()};
    while (!stack.empty()) {
      const Op* op = stack.back();
      stack.pop_back();
      for (const Value* v : op->operands())
        if (auto it = last.find(v); it != last.end()) it->second = i;
      for (int r = 0; r < op->num_regions(); ++r)
        for (const auto& inner : op->region(r)->ops()) stack.push_back(inner.get());
    }
  }
  std::vector<std::vector<const Value*>> dying(ops.size());
  for (const auto& [v, i] : last)
    if (i < dying.size()) dying[i].push_back(v);
  return dying;
}

}  // namespace

Interpreter::Interpreter(const Module& module, InterpreterOptions options)
    : module_(module), options_(options) {
  if (options_.threads <= 0) options_.threads = DefaultThreads();
}

Interpreter::~Interpreter() = default;

absl::StatusOr<std::unique_ptr<Interpreter>> Interpreter::Create(const Module& module,
                                                                 const WeightSource& weights,
                                                                 InterpreterOptions options) {
  RETURN_IF_ERROR(Verify(module));
  std::unique_ptr<Interpreter> interp(new Interpreter(module, options));
  RETURN_IF_ERROR(interp->BindWeights(weights));
  RETURN_IF_ERROR(interp->AllocateStates());
  return interp;
}

absl::Status Interpreter::BindWeights(const WeightSource& weights) {
  for (const auto& w : module_.weights()) {
    const TensorType& t = w->type();
    const std::string where =
        absl::StrCat("weight @", w->name(), " : ", t.ToString(), " = \"", w->binding(), "\"");
    absl::StatusOr<WeightView> view = weights.Find(w->binding());
    if (!view.ok()) return absl::NotFoundError(absl::StrCat(where, ": ", view.status().message()));
    std::optional<DType> dtype = DTypeFromGgml(view->type);
    if (!dtype || *dtype != t.dtype)
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the tensor is ", ToAbsl(gguf::TypeName(view->type))));
    std::vector<int64_t> dims = *Resolve(t, {-1, -1, -1});  // weights are static (verified)
    std::vector<int64_t> ne_rev(view->ne.rbegin(), view->ne.rend());
    if (Canonical(ne_rev) != Canonical(dims))
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the tensor has ne = ", DimsToString(view->ne)));
    HostTensor tensor = HostTensor::RawView(t.dtype, dims, view->bytes);
    const uint64_t want = static_cast<uint64_t>(tensor.num_rows()) * tensor.row_bytes();
    if (view->bytes.size() != want)
      return absl::DataLossError(
          absl::StrCat(where, ": the tensor has ", view->bytes.size(), " bytes, expected ", want));
    globals_[w.get()] = std::move(tensor);
  }
  return absl::OkStatus();
}

absl::Status Interpreter::AllocateStates() {
  const SymbolValues symbols = {-1, -1, options_.max_context > 0 ? options_.max_context : -1};
  for (const auto& s : module_.states()) {
    absl::StatusOr<std::vector<int64_t>> dims = Resolve(s->type(), symbols);
    if (!dims.ok())
      return absl::InvalidArgumentError(absl::StrCat("state @", s->name(), " : ", s->type().ToString(),
                                                     " needs InterpreterOptions::max_context"));
    globals_[s.get()] = HostTensor::Filled(s->type().dtype, *std::move(dims), 0.0f);
  }
  return absl::OkStatus();
}

HostTensor* Interpreter::state(std::string_view name) {
  Value* v = module_.FindGlobal(name);
  if (v == nullptr || v->kind() != Value::Kind::kState) return nullptr;
  return &globals_[v];
}

absl::StatusOr<HostTensor*> Interpreter::Lookup(const Value* v, Frame& frame) {
  if (v->is_global()) {
    auto it = globals_.find(v);
    if (it != globals_.end()) return &it->second;
  } else if (auto a = frame.aliases.find(v); a != frame.aliases.end()) {
    return a->second;
  } else if (auto it = frame.values.find(v); it != frame.values.end()) {
    return &it->second;
  }
  return absl::InternalError(absl::StrCat("no value for ", v->name()));
}

absl::StatusOr<std::vector<HostTensor>> Interpreter::Run(std::string_view name, std::vector<HostTensor> args,
                                                         int64_t p) {
  const Function* f = module_.FindFunction(name);
  if (f == nullptr) return absl::NotFoundError(absl::StrCat("no function @", ToAbsl(name)));
  const Block& body = f->body();
  if (static_cast<int>(args.size()) != body.num_args())
    return absl::InvalidArgumentError(
        absl::StrCat("@", ToAbsl(name), " takes ", body.num_args(), " arguments, got ", args.size()));
  Frame frame;
  frame.threads = options_.threads;
  frame.symbols = {-1, p, options_.max_context > 0 ? options_.max_context : -1};
  for (int i = 0; i < body.num_args(); ++i) {
    const TensorType& want = body.arg(i)->type();
    HostTensor& got = args[i];
    const std::string where = absl::StrCat("argument ", i, " of @", ToAbsl(name), " (", want.ToString(), ")");
    if (got.dtype() != want.dtype || static_cast<int>(got.dims().size()) != want.rank())
      return absl::InvalidArgumentError(
          absl::StrCat(where, " got ", ToAbsl(DTypeName(got.dtype())), DimsToString(got.dims())));
    for (int d = 0; d < want.rank(); ++d) {
      const Dim& dim = want.shape[d];
      int64_t expect = dim.is_static() ? dim.value() : frame.symbols[static_cast<int>(dim.symbol()) - 1];
      if (expect < 0) {
        frame.symbols[static_cast<int>(dim.symbol()) - 1] = got.dims()[d];
      } else if (expect != got.dims()[d]) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, " got ", ToAbsl(DTypeName(got.dtype())), DimsToString(got.dims())));
      }
    }
    frame.values[body.arg(i)] = std::move(got);
  }
  std::vector<HostTensor> results;
  RETURN_IF_ERROR(RunBlock(body, frame, results));
  return results;
}

absl::Status Interpreter::RunBlock(const Block& block, Frame& frame, std::vector<HostTensor>& returned) {
  const std::vector<std::vector<const Value*>> dying = LastUses(block);
  const auto& ops = block.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = *ops[i];
    std::vector<HostTensor*> operands;
    for (const Value* v : op.operands()) {
      ASSIGN_OR_RETURN(HostTensor * t, Lookup(v, frame));
      operands.push_back(t);
    }
    if (op.info().has(kTerminator)) {
      returned.clear();
      for (HostTensor* t : operands) returned.push_back(*t);
      return absl::OkStatus();
    }
    EvalContext ctx{op,     std::move(operands), {}, std::vector<HostTensor>(op.num_results()), frame.threads,
                    nullptr};
    for (int r = 0; r < op.num_results(); ++r) {
      ASSIGN_OR_RETURN(std::vector<int64_t> dims, Resolve(op.result(r)->type(), frame.symbols));
      ctx.result_dims.push_back(std::move(dims));
    }
    ctx.run_region = [this, &frame](const Block& region, absl::Span<HostTensor* const> args,
                                    std::vector<HostTensor>& yielded) -> absl::Status {
      Frame inner;
      inner.symbols = frame.symbols;
      inner.threads = frame.threads;
      for (int a = 0; a < region.num_args(); ++a) inner.aliases[region.arg(a)] = args[a];
      return RunBlock(region, inner, yielded);
    };
    using Kernel = absl::Status (*)(EvalContext&);
    static constexpr Kernel kKernels[] = {
#define OP(name, ...) &Eval##name,
#include "ir/ops.def"
#undef OP
    };
    absl::Status s = kKernels[static_cast<int>(op.kind())](ctx);
    if (!s.ok()) {
      const Function* f = block.function();
      return absl::Status(s.code(),
                          absl::StrCat(s.message(), "\n  in: ",
                                       f != nullptr ? PrintOpLine(op, NameTable(*f)) : PrintOpLine(op)));
    }
    for (int r = 0; r < op.num_results(); ++r) {
      HostTensor& t = ctx.results[r];
      if (t.dtype() != op.result(r)->type().dtype || t.dims() != ctx.result_dims[r])
        return absl::InternalError(
            absl::StrCat("kernel of '", ToAbsl(op.mnemonic()), "' produced ", ToAbsl(DTypeName(t.dtype())),
                         DimsToString(t.dims()), " for result ", r, " of type ",
                         ToAbsl(DTypeName(op.result(r)->type().dtype)), DimsToString(ctx.result_dims[r])));
      t.RoundToDType();
      frame.values[op.result(r)] = std::move(t);
    }
    for (const Value* v : dying[i]) frame.values.erase(v);
  }
  return absl::InternalError("block ended without a terminator");
}

}  // namespace kiln::ir
