// Result-type inference ("shape rules"), one function per op of ir/ops.def.
// The builder uses them to type new ops, the verifier to check typed ones.
// Errors are InvalidArgument with a message naming the operand or attribute,
// e.g. "operand 1 of 'matmul' has shape q8_0[2048, 512], expected inner dim
// 1024"; the caller adds the op's printed line.
#ifndef KILN_IR_SHAPE_RULES_H_
#define KILN_IR_SHAPE_RULES_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/ir.h"

namespace kiln::ir {

struct ShapeQuery {
  const OpInfo& info;
  absl::Span<const TensorType> operands;
  const AttrDict& attrs;
  // Result types the text or the builder gave; may be empty. Only ops whose
  // result cannot be inferred (reshape) read them.
  absl::Span<const TensorType> declared;
  const Block* region = nullptr;  // the op's region, if it has one
};

// Checks operand count and attributes against the op table, then applies the
// op's rule. Does not compare with `declared`: the verifier does.
absl::StatusOr<std::vector<TensorType>> InferResultTypes(const ShapeQuery& q);

// Convenience for an existing op (its operands, attributes, region, result types).
absl::StatusOr<std::vector<TensorType>> InferResultTypes(const Op& op);

#define OP(name, ...) absl::StatusOr<std::vector<TensorType>> Infer##name(const ShapeQuery& q);
#include "ir/ops.def"
#undef OP

}  // namespace kiln::ir

#endif  // KILN_IR_SHAPE_RULES_H_
