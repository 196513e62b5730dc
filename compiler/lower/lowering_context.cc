#include "compiler/lower/lowering_context.h"

#include <type_traits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "compiler/codegen/kernel_spec_fields.h"
#include "support/status_macros.h"

namespace kiln::compiler {

using runtime::Buffer;
using runtime::Expr;

bool SameLocation(const Location& a, const Location& b) {
  return a.buffer == b.buffer && a.offset.SerializeAsString() == b.offset.SerializeAsString();
}

Expr ConstExpr(int64_t c) {
  Expr e;
  e.set_constant(c);
  return e;
}

Expr AffineT(int64_t a, int64_t b) {
  Expr e;
  e.set_t(a);
  e.set_constant(b);
  return e;
}

absl::StatusOr<Expr> ParseAffine(const std::string& text) {
  // Terms joined by '+': "c", "a*T", "T".
  Expr e;
  std::string s = absl::StrReplaceAll(text, {{" ", ""}});
  for (absl::string_view term : absl::StrSplit(s, '+', absl::SkipEmpty())) {
    int64_t coef = 1;
    bool has_t = false;
    for (absl::string_view factor : absl::StrSplit(term, '*')) {
      if (factor == "T") {
        has_t = true;
      } else if (int64_t v; absl::SimpleAtoi(factor, &v)) {
        coef *= v;
      } else {
        return absl::InternalError(absl::StrCat("cannot read the size expression '", text, "'"));
      }
    }
    if (has_t) e.set_t(e.t() + coef);
    else e.set_constant(e.constant() + coef);
  }
  return e;
}

absl::StatusOr<int64_t> RowBytesOf(const ir::TensorType& type) {
  const ir::DTypeInfo& info = ir::GetDTypeInfo(type.dtype);
  if (type.shape.empty()) return static_cast<int64_t>(info.block_bytes);
  const ir::Dim& last = type.shape.back();
  if (!last.is_static()) return absl::InternalError("row length is symbolic");
  if (last.value() % info.block_elems != 0)
    return absl::InternalError(absl::StrCat("row of ", last.value(), " is not whole ", std::string(info.name), " blocks"));
  return last.value() / info.block_elems * info.block_bytes;
}

absl::StatusOr<int64_t> TypeBytes(const ir::TensorType& type, int64_t t_value, int64_t c_value) {
  ASSIGN_OR_RETURN(int64_t row, RowBytesOf(type));
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < type.shape.size(); ++i) {
    const ir::Dim& d = type.shape[i];
    if (d.is_static()) rows *= d.value();
    else if (d == ir::Dim::T()) rows *= t_value;
    else if (d == ir::Dim::C()) rows *= c_value;
    else return absl::InternalError("a buffer's shape depends on P");
  }
  return rows * row;
}

absl::StatusOr<codegen::WeightFormat> FormatOf(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kF32: return codegen::WeightFormat::kF32;
    case ir::DType::kF16: return codegen::WeightFormat::kF16;
    case ir::DType::kBF16: return codegen::WeightFormat::kBF16;
    case ir::DType::kI8: return codegen::WeightFormat::kQ8_0Planar;
    case ir::DType::kQ8_0: return codegen::WeightFormat::kQ8_0;
    case ir::DType::kQ4_0: return codegen::WeightFormat::kQ4_0;
    case ir::DType::kQ4_K: return codegen::WeightFormat::kQ4_K;
    case ir::DType::kQ5_K: return codegen::WeightFormat::kQ5_K;
    case ir::DType::kQ6_K: return codegen::WeightFormat::kQ6_K;
    case ir::DType::kQ6_KData: return codegen::WeightFormat::kQ6_KPlanar;
    default:
      return absl::UnimplementedError(absl::StrCat("no GPU weight format for ",
                                                   std::string(ir::DTypeName(dtype))));
  }
}

uint32_t LoweringContext::AddBuffer(const std::string& name, Buffer::Kind kind, Expr bytes) {
  Buffer* b = manifest_.add_buffers();
  b->set_name(name);
  b->set_kind(kind);
  *b->mutable_bytes() = std::move(bytes);
  b->set_alignment(256);
  return static_cast<uint32_t>(manifest_.buffers_size() - 1);
}

absl::StatusOr<uint32_t> LoweringContext::GgufBuffer(const ir::Value* w) {
  if (auto it = gguf_buffers_.find(w); it != gguf_buffers_.end()) return it->second;
  const gguf::TensorInfo* t = file_.FindTensor(w->binding());
  if (t == nullptr) return absl::InternalError(absl::StrCat("no tensor '", w->binding(), "'"));
  uint32_t index = AddBuffer("gguf:" + w->binding(), Buffer::GGUF_TENSOR,
                             ConstExpr(static_cast<int64_t>(t->nbytes)));
  runtime::TensorBinding* b = manifest_.add_bindings();
  b->set_name(t->name);
  b->set_ggml_type(static_cast<uint32_t>(t->type));
  for (int64_t d : t->dims) b->add_dims(d);
  b->set_nbytes(t->nbytes);
  b->set_buffer(index);
  gguf_buffers_[w] = index;
  return index;
}

absl::StatusOr<uint32_t> LoweringContext::RuntimeBuffer(const ir::Value* g) {
  if (auto it = runtime_buffers_.find(g); it != runtime_buffers_.end()) return it->second;
  uint32_t index;
  const ir::TensorType& type = g->type();
  bool kv = false;
  for (const ir::Dim& d : type.shape) kv |= d == ir::Dim::C();
  if (kv) {
    ASSIGN_OR_RETURN(int64_t row, RowBytesOf(type));
    Expr bytes;
    bytes.set_c(row);
    index = AddBuffer(g->name(), Buffer::KV_CACHE, bytes);
  } else {
    ASSIGN_OR_RETURN(int64_t bytes, TypeBytes(type));
    index = AddBuffer(g->name(), Buffer::WEIGHT, ConstExpr(bytes));
    if (g->kind() == ir::Value::Kind::kWeight) weight_copies_.push_back(g);
  }
  runtime_buffers_[g] = index;
  return index;
}

namespace {

// Everything of a spec but its name, as a key: identical kernels of
// different layers share one compiled kernel. A join's parts in order, each
// in brackets.
std::string SpecKey(const codegen::KernelSpec& s) {
  std::string key;
  codegen::VisitSpecFields(s, [&key](absl::string_view, const auto& v) {
    if constexpr (std::is_enum_v<std::remove_reference_t<decltype(v)>>)
      absl::StrAppend(&key, static_cast<int>(v), "|");
    else
      absl::StrAppend(&key, v, "|");
  });
  for (const codegen::KernelSpec& part : s.parts) absl::StrAppend(&key, "[", SpecKey(part), "]");
  return key;
}

// A readable, deterministic kernel name from the spec's content.
std::string SpecName(const codegen::KernelSpec& s, size_t index) {
  std::string name = absl::StrCat(codegen::FamilyName(s.family));
  switch (s.family) {
    case codegen::Family::kMatVec:
    case codegen::Family::kGemm:
    case codegen::Family::kEmbed:
      absl::StrAppend(&name, "_", codegen::WeightFormatName(s.weight), "_", s.rows, "x", s.cols);
      break;
    case codegen::Family::kMatVecJoin:
      for (const codegen::KernelSpec& p : s.parts)
        absl::StrAppend(&name, "_", codegen::WeightFormatName(p.weight), "_", p.rows, "x", p.cols);
      break;
    default:
      break;
  }
  return absl::StrCat(name, "_", index);
}

// Grid expression of the runtime from codegen's LaunchExpr
// ceil((constant + t*T + rows*R) / div), where the kernel's T argument is `t`
// (T itself in prefill, a constant in decode) and R the `rows` argument.
Expr GridExpr(const codegen::LaunchExpr& g, const Expr& t, int64_t rows_value, const Expr* rows_expr) {
  const Expr rows = rows_expr ? *rows_expr : ConstExpr(rows_value);
  Expr e;
  e.set_constant(g.constant + g.t * t.constant() + g.rows * rows.constant());
  e.set_t(g.t * t.t() + g.rows * rows.t());
  e.set_div(g.div > 1 ? g.div : 0);
  return e;
}

}  // namespace

absl::Status LoweringContext::Launch(runtime::Plan& plan, codegen::KernelSpec spec,
                                     const std::vector<LaunchArg>& args, const Expr& t, int64_t rows_value,
                                     const Expr* rows_expr) {
  // Programmatic dependent launch wherever the target has griddepcontrol
  // (unless turned off): every emitter waits before touching a
  // predecessor's data, so it only lets a kernel's launch overlap the
  // previous kernel's tail.
  spec.programmatic_launch = programmatic_launch_ && target_.HasGridDependencyControl();
  const std::string key = SpecKey(spec);
  uint32_t k;
  if (auto it = kernel_index_.find(key); it != kernel_index_.end()) {
    k = it->second;
  } else {
    k = static_cast<uint32_t>(kernels_.size());
    spec.name = SpecName(spec, k);
    ASSIGN_OR_RETURN(codegen::KernelAbi abi, codegen::DescribeKernel(spec, target_));
    runtime::Kernel* mk = manifest_.add_kernels();
    mk->set_name(spec.name);
    mk->set_family(codegen::FamilyName(spec.family));
    for (const codegen::KernelParam& p : abi.params) {
      runtime::Param* mp = mk->add_params();
      mp->set_name(p.name);
      mp->set_kind(p.type == codegen::ParamType::kPointer ? runtime::Param::POINTER : runtime::Param::I32);
    }
    mk->set_block_x(abi.block[0]);
    mk->set_block_y(abi.block[1]);
    mk->set_block_z(abi.block[2]);
    mk->set_shared_bytes(static_cast<uint32_t>(abi.dynamic_shared_bytes));
    mk->set_programmatic_launch(spec.programmatic_launch);
    kernels_.push_back(spec);
    abis_.push_back(std::move(abi));
    kernel_index_[key] = k;
  }
  const codegen::KernelAbi& abi = abis_[k];
  if (abi.params.size() != args.size())
    return absl::InternalError(absl::StrCat("kernel ", kernels_[k].name, " takes ", abi.params.size(),
                                            " parameters, lowering passed ", args.size()));
  runtime::Launch* l = plan.add_launches();
  l->set_kernel(k);
  *l->mutable_grid_x() = GridExpr(abi.grid[0], t, rows_value, rows_expr);
  *l->mutable_grid_y() = GridExpr(abi.grid[1], t, rows_value, rows_expr);
  *l->mutable_grid_z() = GridExpr(abi.grid[2], t, rows_value, rows_expr);
  for (size_t i = 0; i < args.size(); ++i) {
    const bool want_ptr = abi.params[i].type == codegen::ParamType::kPointer;
    if (want_ptr != (args[i].kind == LaunchArg::kPointer))
      return absl::InternalError(absl::StrCat("kernel ", kernels_[k].name, " parameter ", abi.params[i].name,
                                              ": lowering passed the wrong kind"));
    runtime::Arg* a = l->add_args();
    if (want_ptr) {
      a->mutable_buffer()->set_buffer(args[i].at.buffer);
      *a->mutable_buffer()->mutable_offset() = args[i].at.offset;
    } else {
      *a->mutable_i32() = args[i].i32;
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::compiler
