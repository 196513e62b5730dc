// Checks a module against the rules of ir/ir.h and the op table: unique
// valid names, static weight types, SSA order and region isolation, operand
// counts and attributes, result types equal to the shape rules', effects only
// on states, terminators in place. The first violation is returned as
// InvalidArgument:
//
//   error: operand 1 of 'matmul' has shape q8_0[2048, 512], expected inner dim 1024
//     %q = matmul(%h, @blk.0.attn_q) : f32[T, 2048]
//
// (the op's printed line, plus "  // line N" when the op was parsed).
#ifndef KILN_IR_VERIFIER_H_
#define KILN_IR_VERIFIER_H_

#include "absl/status/status.h"
#include "ir/ir.h"

namespace kiln::ir {

absl::Status Verify(const Module& module);

}  // namespace kiln::ir

#endif  // KILN_IR_VERIFIER_H_
