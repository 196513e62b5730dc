// The op kinds and their static description, generated from ir/ops.def.
// Everything that needs to know an op's arity, attributes or effects asks
// GetOpInfo() instead of switching on the kind.
#ifndef KILN_IR_OP_INFO_H_
#define KILN_IR_OP_INFO_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "ir/attributes.h"

namespace kiln::ir {

enum class OpKind : uint8_t {
#define OP(name, ...) k##name,
#include "ir/ops.def"
#undef OP
};

inline constexpr int kVariadic = -1;

enum OpTrait : uint32_t {
  kNoTraits = 0,
  kElementwise = 1u << 0,  // may be fused as a prologue/epilogue
  kAnchor = 1u << 1,       // heavy op a kernel is built around (matmul, attention, reduction)
  kTerminator = 1u << 2,   // ends a block
  kLayout = 1u << 3,       // moves or reinterprets data without arithmetic
};

struct AttrSpec {
  std::string name;
  Attribute::Kind kind;
  bool required;
};

struct OpInfo {
  OpKind kind;
  std::string_view name;      // C++ name, "MatMul"
  std::string_view mnemonic;  // text name, "matmul"
  int num_operands;           // or kVariadic
  int num_results;            // or kVariadic
  int num_regions;
  uint32_t traits;
  uint32_t written_operands;  // bit i: operand i is a state buffer the op writes
  std::vector<AttrSpec> attrs;
  bool open_attrs;    // attributes beyond `attrs` are allowed
  bool attr_spec_ok;  // the table's attribute string parsed (tests check it)
  std::string_view semantics;

  bool has(OpTrait t) const { return (traits & t) != 0; }
  bool writes_operand(int i) const { return i < 32 && (written_operands >> i & 1u) != 0; }
  const AttrSpec* FindAttr(std::string_view attr) const;
};

const OpInfo& GetOpInfo(OpKind kind);
const OpInfo* LookupOp(std::string_view mnemonic);  // null if unknown
absl::Span<const OpInfo> AllOps();

}  // namespace kiln::ir

#endif  // KILN_IR_OP_INFO_H_
