// Parses the IR text form of ir/printer.h. Errors are InvalidArgument and
// start with "line:column: expected ..." (or another reason), followed by the
// source line and a caret. Parsing checks syntax and names only; run the
// verifier for types and op rules.
#ifndef KILN_IR_PARSER_H_
#define KILN_IR_PARSER_H_

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "ir/ir.h"

namespace kiln::ir {

absl::StatusOr<std::unique_ptr<Module>> ParseModule(std::string_view text);

}  // namespace kiln::ir

#endif  // KILN_IR_PARSER_H_
