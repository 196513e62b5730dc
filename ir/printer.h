// The IR's text form (the parser reads it back: print(parse(print(m))) ==
// print(m)). One op per line, types after a colon, attributes in braces,
// regions indented:
//
//   weight @blk.0.attn_q : q8_0[2048, 1024] = "blk.0.attn_q.weight"
//   state @k_cache.0 : f16[C, 1024]
//
//   func @decode(%token: i32[1], %pos: i32[1]) -> (f32[1, 151936]) {
//     %x = embed(@token_embd, %token) : f32[1, 1024]
//     %h = rms_norm(%x, @blk.0.attn_norm) {eps = 1e-06} : f32[1, 1024]
//     %y = kernel(%h) {anchor = 0, schedule = {rows = 4}} : f32[1, 2048] {
//     ^(%a: f32[1, 1024]):
//       %q = matmul(%a, @blk.0.attn_q) : f32[1, 2048]
//       yield(%q)
//     }
//     kv_store(%k, %v, @k_cache.0, @v_cache.0, %pos)
//     return(%logits)
//   }
//
// Local names come from the values' name hints, made unique per function in
// definition order ("x", "x.1", ...; "0", "1", ... for values without one),
// so the same module always prints the same text.
#ifndef KILN_IR_PRINTER_H_
#define KILN_IR_PRINTER_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "ir/ir.h"

namespace kiln::ir {

// The printed names of one function's local values.
class NameTable {
 public:
  NameTable() = default;  // names locals by their hints alone
  explicit NameTable(const Function& f);
  // "%x" for locals ("%hint" or "%?" for a value outside the function),
  // "@name" for globals.
  std::string Name(const Value* v) const;

 private:
  void Assign(const Value* v);
  void AssignBlock(const Block& b);
  absl::flat_hash_map<const Value*, std::string> names_;
  absl::flat_hash_set<std::string> used_;
  int next_number_ = 0;
};

std::string PrintModule(const Module& m);
std::string PrintFunction(const Function& f);
// The op's first line, without indentation or newline (for a kernel, the
// line that opens its region, ending in " {").
std::string PrintOpLine(const Op& op, const NameTable& names);
// The op's first line, naming values as PrintFunction would (for diagnostics
// on ops that belong to a function).
std::string PrintOpLine(const Op& op);

// True if `name` can be printed as a @global or %local name as is.
bool IsValidName(std::string_view name);

}  // namespace kiln::ir

#endif  // KILN_IR_PRINTER_H_
