// Builds the OpInfo table from ir/ops.def.
#include "ir/op_info.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "ir/absl_compat.h"

namespace kiln::ir {
namespace {

// Parses "eps: float, freq_scale?: float, *" into specs; false if malformed.
bool ParseAttrSpecs(std::string_view spec_text, std::vector<AttrSpec>& specs, bool& open) {
  open = false;
  const absl::string_view text = ToAbsl(spec_text);
  if (absl::StripAsciiWhitespace(text).empty()) return true;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    if (item == "*") {
      open = true;
      continue;
    }
    std::vector<absl::string_view> parts = absl::StrSplit(item, ':');
    if (parts.size() != 2) return false;
    absl::string_view name = absl::StripAsciiWhitespace(parts[0]);
    const std::string kind(absl::StripAsciiWhitespace(parts[1]));
    AttrSpec spec;
    spec.required = true;
    if (!name.empty() && name.back() == '?') {
      spec.required = false;
      name.remove_suffix(1);
    }
    if (name.empty()) return false;
    spec.name = std::string(name);
    bool found = false;
    for (auto k : {Attribute::Kind::kInt, Attribute::Kind::kFloat, Attribute::Kind::kString,
                   Attribute::Kind::kInts, Attribute::Kind::kType, Attribute::Kind::kDict}) {
      if (AttrKindName(k) == kind) {
        spec.kind = k;
        found = true;
      }
    }
    if (!found) return false;
    specs.push_back(std::move(spec));
  }
  return true;
}

OpInfo MakeInfo(OpKind kind, std::string_view name, std::string_view mnemonic, int operands, int results,
                int regions, uint32_t traits, uint32_t writes, std::string_view attrs,
                std::string_view semantics) {
  OpInfo info{kind, name, mnemonic, operands, results, regions, traits, writes, {}, false, false, semantics};
  info.attr_spec_ok = ParseAttrSpecs(attrs, info.attrs, info.open_attrs);
  return info;
}

const std::vector<OpInfo>& Table() {
  static const std::vector<OpInfo>* table = [] {
    auto* t = new std::vector<OpInfo>;
#define OP(name, mnemonic, operands, results, regions, traits, writes, attrs, semantics)                     \
  t->push_back(MakeInfo(OpKind::k##name, #name, mnemonic, operands, results, regions, traits, writes, attrs, \
                        semantics));
#include "ir/ops.def"
#undef OP
    return t;
  }();
  return *table;
}

}  // namespace

const AttrSpec* OpInfo::FindAttr(std::string_view attr) const {
  for (const AttrSpec& s : attrs)
    if (s.name == attr) return &s;
  return nullptr;
}

const OpInfo& GetOpInfo(OpKind kind) { return Table()[static_cast<int>(kind)]; }

const OpInfo* LookupOp(std::string_view mnemonic) {
  for (const OpInfo& info : Table())
    if (info.mnemonic == mnemonic) return &info;
  return nullptr;
}

absl::Span<const OpInfo> AllOps() { return Table(); }

}  // namespace kiln::ir
