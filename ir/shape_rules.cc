// Shape rules of the ops in ir/ops.def (semantics in the table's last column).
#include "ir/shape_rules.h"

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "support/status_macros.h"

namespace kiln::ir {
namespace {

using Types = std::vector<TensorType>;

absl::Status OperandError(const ShapeQuery& q, int i, absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat("operand ", i, " of '", ToAbsl(q.info.mnemonic),
                                                 "' has type ", q.operands[i].ToString(), ", expected ",
                                                 expected));
}

absl::Status OperandShapeError(const ShapeQuery& q, int i, absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat("operand ", i, " of '", ToAbsl(q.info.mnemonic),
                                                 "' has shape ", q.operands[i].ToString(), ", expected ",
                                                 expected));
}

bool IsFloat(const TensorType& t) { return GetDTypeInfo(t.dtype).is_float; }
bool IsWeightLike(const TensorType& t) {
  return GetDTypeInfo(t.dtype).is_float || GetDTypeInfo(t.dtype).is_quantized;
}
bool IsPos(const TensorType& t) { return t.dtype == DType::kI32 && t.shape == Shape{1}; }

absl::Status ExpectFloat(const ShapeQuery& q, int i, int min_rank = 0) {
  if (!IsFloat(q.operands[i])) return OperandError(q, i, "a float type (f32, f16, bf16)");
  if (q.operands[i].rank() < min_rank) return OperandShapeError(q, i, absl::StrCat("rank >= ", min_rank));
  return absl::OkStatus();
}

absl::Status ExpectPos(const ShapeQuery& q, int i) {
  if (!IsPos(q.operands[i])) return OperandError(q, i, "the position i32[1]");
  return absl::OkStatus();
}

absl::Status CheckAttrs(const ShapeQuery& q) {
  for (const AttrSpec& spec : q.info.attrs) {
    const Attribute* a = q.attrs.Find(spec.name);
    if (a == nullptr) {
      if (spec.required)
        return absl::InvalidArgumentError(absl::StrCat("'", ToAbsl(q.info.mnemonic), "' needs attribute '",
                                                       spec.name, "' (", ToAbsl(AttrKindName(spec.kind)),
                                                       ")"));
      continue;
    }
    if (a->kind() != spec.kind)
      return absl::InvalidArgumentError(
          absl::StrCat("attribute '", spec.name, "' of '", ToAbsl(q.info.mnemonic), "' is ",
                       ToAbsl(AttrKindName(a->kind())), ", expected ", ToAbsl(AttrKindName(spec.kind))));
  }
  if (!q.info.open_attrs) {
    for (const NamedAttribute& e : q.attrs.entries())
      if (q.info.FindAttr(e.name) == nullptr)
        return absl::InvalidArgumentError(
            absl::StrCat("unknown attribute '", e.name, "' on '", ToAbsl(q.info.mnemonic), "'"));
  }
  return absl::OkStatus();
}

// `shape` without its last dim, then `last`.
Shape ReplaceLast(const Shape& shape, Dim last) {
  Shape s(shape.begin(), shape.end() - 1);
  s.push_back(last);
  return s;
}

}  // namespace

absl::StatusOr<Types> InferResultTypes(const ShapeQuery& q) {
  if (q.info.num_operands != kVariadic && static_cast<int>(q.operands.size()) != q.info.num_operands)
    return absl::InvalidArgumentError(absl::StrCat(
        "'", ToAbsl(q.info.mnemonic), "' takes ", q.info.num_operands, " operands, got ", q.operands.size()));
  RETURN_IF_ERROR(CheckAttrs(q));
  using Rule = absl::StatusOr<Types> (*)(const ShapeQuery&);
  static constexpr Rule kRules[] = {
#define OP(name, ...) &Infer##name,
#include "ir/ops.def"
#undef OP
  };
  return kRules[static_cast<int>(q.info.kind)](q);
}

absl::StatusOr<Types> InferResultTypes(const Op& op) {
  Types operands;
  for (Value* v : op.operands()) operands.push_back(v->type());
  Types declared;
  for (int i = 0; i < op.num_results(); ++i) declared.push_back(op.result(i)->type());
  return InferResultTypes(
      ShapeQuery{op.info(), operands, op.attrs(), declared, op.num_regions() > 0 ? op.region(0) : nullptr});
}

absl::StatusOr<Types> InferEmbed(const ShapeQuery& q) {
  const TensorType& table = q.operands[0];
  const TensorType& ids = q.operands[1];
  if (!IsWeightLike(table)) return OperandError(q, 0, "a float or quantized table");
  if (table.rank() != 2) return OperandShapeError(q, 0, "[V, E]");
  if (ids.dtype != DType::kI32 || ids.rank() < 1) return OperandError(q, 1, "i32 token ids");
  Shape s = ids.shape;
  s.push_back(table.shape[1]);
  return Types{{DType::kF32, s}};
}

absl::StatusOr<Types> InferMatMul(const ShapeQuery& q) {
  if (q.operands.size() != 2 && q.operands.size() != 3)
    return absl::InvalidArgumentError(
        absl::StrCat("'matmul' takes 2 operands (x, W) or 3 (x, qs, d), got ", q.operands.size()));
  RETURN_IF_ERROR(ExpectFloat(q, 0, 1));
  const TensorType& x = q.operands[0];
  const TensorType& w = q.operands[1];
  if (q.operands.size() == 3) {
    // Planar Q8_0 (q8_0_split's planes): qs i8[M, K], d f16[M, K/32];
    // planar Q6_K (q6_k_split's): data q6_kd[M, K], d f16[M, K/256].
    const int64_t block = w.dtype == DType::kQ6_KData ? 256 : 32;
    if ((w.dtype != DType::kI8 && w.dtype != DType::kQ6_KData) || w.rank() != 2)
      return OperandError(q, 1, "the quant plane i8[M, K] or q6_kd[M, K]");
    if (w.shape[1] != x.shape.back())
      return OperandShapeError(q, 1, absl::StrCat("inner dim ", x.shape.back().ToString()));
    if (!w.shape[1].is_static() || w.shape[1].value() % block != 0)
      return OperandShapeError(q, 1, absl::StrCat("a static inner dim that is a multiple of ", block));
    const TensorType want{DType::kF16, {w.shape[0], w.shape[1].value() / block}};
    if (q.operands[2] != want) return OperandError(q, 2, absl::StrCat("the scale plane ", want.ToString()));
    return Types{{DType::kF32, ReplaceLast(x.shape, w.shape[0])}};
  }
  if (!IsWeightLike(w) || w.dtype == DType::kQ6_KData)
    return OperandError(q, 1, "a float or quantized matrix (a q6_kd plane needs its d plane)");
  if (w.rank() != 2) return OperandShapeError(q, 1, "a matrix [M, K]");
  if (w.shape[1] != x.shape.back())
    return OperandShapeError(q, 1, absl::StrCat("inner dim ", x.shape.back().ToString()));
  return Types{{DType::kF32, ReplaceLast(x.shape, w.shape[0])}};
}

absl::StatusOr<Types> InferRmsNorm(const ShapeQuery& q) {
  RETURN_IF_ERROR(ExpectFloat(q, 0, 1));
  const TensorType& x = q.operands[0];
  const TensorType& w = q.operands[1];
  if (!IsWeightLike(w)) return OperandError(q, 1, "a float weight");
  if (w.shape != Shape{x.shape.back()})
    return OperandShapeError(q, 1, absl::StrCat("[", x.shape.back().ToString(), "]"));
  return Types{x};
}

absl::StatusOr<Types> InferRope(const ShapeQuery& q) {
  RETURN_IF_ERROR(ExpectFloat(q, 0));
  const TensorType& x = q.operands[0];
  if (x.rank() != 3 || !x.shape[2].is_static() || x.shape[2].value() % 2 != 0)
    return OperandShapeError(q, 0, "[T, heads, head_dim] with an even static head_dim");
  RETURN_IF_ERROR(ExpectPos(q, 1));
  return Types{x};
}

absl::StatusOr<Types> InferAttention(const ShapeQuery& q) {
  RETURN_IF_ERROR(ExpectFloat(q, 0));
  const TensorType& qt = q.operands[0];
  if (qt.rank() != 3 || !qt.shape[1].is_static() || !qt.shape[2].is_static())
    return OperandShapeError(q, 0, "[T, heads, head_dim] with static heads and head_dim");
  RETURN_IF_ERROR(ExpectFloat(q, 1));
  RETURN_IF_ERROR(ExpectFloat(q, 2));
  RETURN_IF_ERROR(ExpectPos(q, 3));
  const int64_t heads = qt.shape[1].value(), dim = qt.shape[2].value();
  const int64_t kv_heads = q.attrs.Find("n_kv_heads")->int_value();
  if (kv_heads < 1 || heads % kv_heads != 0)
    return absl::InvalidArgumentError(absl::StrCat("attribute 'n_kv_heads' of 'attention' is ", kv_heads,
                                                   ", expected a divisor of the ", heads, " query heads"));
  const Shape want = {q.operands[1].rank() == 2 ? q.operands[1].shape[0] : Dim::C(), kv_heads * dim};
  if (q.operands[1].shape != want) return OperandShapeError(q, 1, ShapeToString(want));
  if (q.operands[2].shape != want) return OperandShapeError(q, 2, ShapeToString(want));
  return Types{{DType::kF32, qt.shape}};
}

absl::StatusOr<Types> InferKvStore(const ShapeQuery& q) {
  for (int i = 0; i < 4; ++i) RETURN_IF_ERROR(ExpectFloat(q, i, i < 2 ? 2 : 0));
  RETURN_IF_ERROR(ExpectPos(q, 4));
  const TensorType& kc = q.operands[2];
  if (kc.rank() != 2 || !kc.shape[1].is_static()) return OperandShapeError(q, 2, "a cache [C, width]");
  if (q.operands[3].shape != kc.shape) return OperandShapeError(q, 3, ShapeToString(kc.shape));
  // k and v: one row per token (dim 0), each row `width` elements, e.g.
  // k f32[T, 8, 128] after rope and v f32[T, 1024] straight from matmul.
  const int64_t width = kc.shape[1].value();
  for (int i = 0; i < 2; ++i) {
    const TensorType& t = q.operands[i];
    int64_t row = 1;
    for (int d = 1; d < t.rank() && row > 0; ++d)
      row = t.shape[d].is_static() ? row * t.shape[d].value() : -1;
    if (row != width)
      return OperandShapeError(q, i,
                               absl::StrCat("[", t.shape[0].ToString(), ", ...] with rows of ", width,
                                            " elements (the cache width)"));
  }
  if (q.operands[1].shape[0] != q.operands[0].shape[0])
    return OperandShapeError(q, 1,
                             absl::StrCat("as many rows as operand 0, ", q.operands[0].shape[0].ToString()));
  return Types{};
}

absl::StatusOr<Types> InferStore(const ShapeQuery& q) {
  const TensorType& x = q.operands[0];
  const TensorType& s = q.operands[1];
  if (x.shape != s.shape) return OperandShapeError(q, 0, ShapeToString(s.shape));
  const DTypeInfo& sd = GetDTypeInfo(s.dtype);
  const DTypeInfo& xd = GetDTypeInfo(x.dtype);
  if ((sd.is_quantized || xd.is_quantized) && x.dtype != s.dtype)
    return OperandError(q, 0, absl::StrCat(ToAbsl(sd.name), " (quantized data is copied, not converted)"));
  if (sd.is_float != xd.is_float || sd.is_int != xd.is_int)
    return OperandError(
        q, 0, absl::StrCat("a type convertible to ", ToAbsl(sd.name), " (float to float, int to int)"));
  return Types{};
}

absl::StatusOr<Types> InferSilu(const ShapeQuery& q) {
  RETURN_IF_ERROR(ExpectFloat(q, 0));
  return Types{q.operands[0]};
}

absl::StatusOr<Types> InferMul(const ShapeQuery& q) {
  RETURN_IF_ERROR(ExpectFloat(q, 0));
  if (q.operands[1] != q.operands[0]) return OperandError(q, 1, q.operands[0].ToString());
  return Types{q.operands[0]};
}

absl::StatusOr<Types> InferAdd(const ShapeQuery& q) { return InferMul(q); }

absl::StatusOr<Types> InferArgmax(const ShapeQuery& q) {
  RETURN_IF_ERROR(ExpectFloat(q, 0, 1));
  return Types{{DType::kI32, ReplaceLast(q.operands[0].shape, 1)}};
}

absl::StatusOr<Types> InferReshape(const ShapeQuery& q) {
  if (q.declared.size() != 1)
    return absl::InvalidArgumentError("'reshape' takes its shape from its result type, which is missing");
  const TensorType& x = q.operands[0];
  const TensorType& r = q.declared[0];
  if (r.dtype != x.dtype)
    return OperandError(q, 0, absl::StrCat("the result dtype ", ToAbsl(DTypeName(r.dtype))));
  if (!(CountElements(x.shape) == CountElements(r.shape)))
    return OperandShapeError(q, 0, absl::StrCat("as many elements as ", r.ToString()));
  if (GetDTypeInfo(x.dtype).is_quantized &&
      (x.rank() == 0 || r.rank() == 0 || x.shape.back() != r.shape.back()))
    return OperandShapeError(q, 0, "the same last dim (quantized rows are kept whole)");
  return Types{r};
}

namespace {

// A split of a `in`[M, K] matrix of `block`-weight blocks into its quant
// plane `plane`[M, K] and its f16 scale plane [M, K/block].
absl::StatusOr<Types> InferSplit(const ShapeQuery& q, DType in, int64_t block, DType plane) {
  const TensorType& w = q.operands[0];
  if (w.dtype != in) return OperandError(q, 0, absl::StrCat(ToAbsl(DTypeName(in)), "[M, K]"));
  if (w.rank() != 2 || !w.shape[1].is_static() || w.shape[1].value() % block != 0)
    return OperandShapeError(q, 0, absl::StrCat("[M, K] with a static K, a multiple of ", block));
  return Types{{plane, w.shape}, {DType::kF16, {w.shape[0], w.shape[1].value() / block}}};
}

}  // namespace

absl::StatusOr<Types> InferQ6_KSplit(const ShapeQuery& q) { return InferSplit(q, DType::kQ6_K, 256, DType::kQ6_KData); }

absl::StatusOr<Types> InferQ8_0Split(const ShapeQuery& q) { return InferSplit(q, DType::kQ8_0, 32, DType::kI8); }

absl::StatusOr<Types> InferConcatRows(const ShapeQuery& q) {
  if (q.operands.empty()) return absl::InvalidArgumentError("'concat_rows' needs at least one operand");
  const TensorType& a = q.operands[0];
  int64_t rows = 0;
  for (size_t i = 0; i < q.operands.size(); ++i) {
    const TensorType& t = q.operands[i];
    if (t.rank() != 2 || !t.shape[0].is_static())
      return OperandShapeError(q, static_cast<int>(i), "[rows, K] with static rows");
    if (t.dtype != a.dtype || t.shape[1] != a.shape[1])
      return OperandError(q, static_cast<int>(i),
                          absl::StrCat(ToAbsl(DTypeName(a.dtype)), "[rows, ", a.shape[1].ToString(), "]"));
    rows += t.shape[0].value();
  }
  return Types{{a.dtype, {rows, a.shape[1]}}};
}

absl::StatusOr<Types> InferInterleaveRows(const ShapeQuery& q) {
  const TensorType& a = q.operands[0];
  const int64_t g = q.attrs.Find("group")->int_value();
  if (a.rank() != 2 || !a.shape[0].is_static()) return OperandShapeError(q, 0, "[M, K] with static M");
  if (g < 1 || a.shape[0].value() % g != 0)
    return absl::InvalidArgumentError(absl::StrCat("attribute 'group' of 'interleave_rows' is ", g,
                                                   ", expected a divisor of the ", a.shape[0].value(), " rows"));
  if (q.operands[1] != a) return OperandError(q, 1, a.ToString());
  return Types{{a.dtype, {2 * a.shape[0].value(), a.shape[1]}}};
}

absl::StatusOr<Types> InferSlice(const ShapeQuery& q) {
  const TensorType& x = q.operands[0];
  if (GetDTypeInfo(x.dtype).is_quantized) return OperandError(q, 0, "a float or integer tensor");
  if (x.rank() < 1 || !x.shape.back().is_static()) return OperandShapeError(q, 0, "a static last dim");
  const int64_t start = q.attrs.Find("start")->int_value(), size = q.attrs.Find("size")->int_value();
  const int64_t n = x.shape.back().value();
  if (start < 0 || size < 0 || start + size > n)
    return absl::InvalidArgumentError(absl::StrCat("'slice' window [", start, ", ", start + size,
                                                   ") is outside the last dim of ", x.ToString()));
  return Types{{x.dtype, ReplaceLast(x.shape, size)}};
}

absl::StatusOr<Types> InferLastRow(const ShapeQuery& q) {
  const TensorType& x = q.operands[0];
  if (GetDTypeInfo(x.dtype).is_quantized) return OperandError(q, 0, "a float or integer tensor");
  if (x.rank() < 2) return OperandShapeError(q, 0, "rows [n, ...] of rank 2 or more");
  std::vector<Dim> shape = x.shape;
  shape[0] = Dim(1);
  return Types{{x.dtype, shape}};
}

absl::StatusOr<Types> InferSwiglu(const ShapeQuery& q) {
  RETURN_IF_ERROR(ExpectFloat(q, 0, 1));
  const TensorType& x = q.operands[0];
  const int64_t g = q.attrs.Find("group")->int_value();
  if (!x.shape.back().is_static()) return OperandShapeError(q, 0, "a static last dim");
  const int64_t n = x.shape.back().value();
  if (g < 1 || n % (2 * g) != 0)
    return absl::InvalidArgumentError(absl::StrCat("attribute 'group' of 'swiglu' is ", g,
                                                   ", expected 2 * group to divide the last dim ", n));
  return Types{{DType::kF32, ReplaceLast(x.shape, n / 2)}};
}

absl::StatusOr<Types> InferArena(const ShapeQuery& q) { return Types{}; }

absl::StatusOr<Types> InferKernel(const ShapeQuery& q) {
  if (q.region == nullptr) return absl::InvalidArgumentError("'kernel' has no region");
  const Block& body = *q.region;
  if (body.num_args() != static_cast<int>(q.operands.size()))
    return absl::InvalidArgumentError(absl::StrCat("'kernel' region has ", body.num_args(), " arguments for ",
                                                   q.operands.size(), " operands"));
  for (int i = 0; i < body.num_args(); ++i)
    if (body.arg(i)->type() != q.operands[i])
      return OperandError(
          q, i, absl::StrCat("the type of region argument ", i, ", ", body.arg(i)->type().ToString()));
  const Op* term = body.terminator();
  if (term == nullptr || term->kind() != OpKind::kYield)
    return absl::InvalidArgumentError("'kernel' region does not end in 'yield'");
  Types results;
  for (Value* v : term->operands()) results.push_back(v->type());
  if (const Attribute* a = q.attrs.Find("anchor")) {
    const int64_t n = static_cast<int64_t>(body.ops().size()) - 1;
    if (a->int_value() < 0 || a->int_value() >= n)
      return absl::InvalidArgumentError(absl::StrCat("attribute 'anchor' of 'kernel' is ", a->int_value(),
                                                     ", expected an op index in [0, ", n, ")"));
  }
  return results;
}

absl::StatusOr<Types> InferYield(const ShapeQuery& q) { return Types{}; }
absl::StatusOr<Types> InferReturn(const ShapeQuery& q) { return Types{}; }

}  // namespace kiln::ir
