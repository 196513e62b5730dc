// Text printer of the IR (format in ir/printer.h).
#include "ir/printer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/absl_compat.h"

namespace kiln::ir {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

std::string Sanitize(std::string_view hint) {
  std::string s(hint);
  for (char& c : s)
    if (!IsNameChar(c)) c = '_';
  return s;
}

std::string TypeList(const std::vector<TensorType>& types) {
  return absl::StrJoin(types, ", ", [](std::string* out, const TensorType& t) { out->append(t.ToString()); });
}

void PrintBlockOps(const Block& block, const NameTable& names, int indent, std::string& out);

void PrintOp(const Op& op, const NameTable& names, int indent, std::string& out) {
  const std::string pad(indent, ' ');
  absl::StrAppend(&out, pad, PrintOpLine(op, names), "\n");
  for (int r = 0; r < op.num_regions(); ++r) {
    const Block& region = *op.region(r);
    std::vector<std::string> args;
    for (const auto& a : region.args())
      args.push_back(absl::StrCat(names.Name(a.get()), ": ", a->type().ToString()));
    absl::StrAppend(&out, pad, "^(", absl::StrJoin(args, ", "), "):\n");
    PrintBlockOps(region, names, indent + 2, out);
    absl::StrAppend(&out, pad, "}", r + 1 < op.num_regions() ? " {" : "", "\n");
  }
}

void PrintBlockOps(const Block& block, const NameTable& names, int indent, std::string& out) {
  for (const auto& op : block.ops()) PrintOp(*op, names, indent, out);
}

}  // namespace

bool IsValidName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!IsNameChar(c)) return false;
  return true;
}

NameTable::NameTable(const Function& f) { AssignBlock(f.body()); }

void NameTable::AssignBlock(const Block& b) {
  for (const auto& a : b.args()) Assign(a.get());
  for (const auto& op : b.ops()) {
    for (int i = 0; i < op->num_results(); ++i) Assign(op->result(i));
    for (int r = 0; r < op->num_regions(); ++r) AssignBlock(*op->region(r));
  }
}

void NameTable::Assign(const Value* v) {
  std::string base = Sanitize(v->name());
  std::string name;
  if (base.empty()) {
    do {
      name = absl::StrCat(next_number_++);
    } while (used_.contains(name));
  } else {
    name = base;
    for (int i = 1; used_.contains(name); ++i) name = absl::StrCat(base, ".", i);
  }
  used_.insert(name);
  names_[v] = std::move(name);
}

std::string NameTable::Name(const Value* v) const {
  if (v == nullptr) return "%<null>";
  if (v->is_global()) return absl::StrCat("@", v->name());
  auto it = names_.find(v);
  if (it == names_.end()) return absl::StrCat("%", v->name().empty() ? "?" : Sanitize(v->name()));
  return absl::StrCat("%", it->second);
}

std::string PrintOpLine(const Op& op, const NameTable& names) {
  std::string line;
  if (op.num_results() > 0) {
    std::vector<std::string> rs;
    for (int i = 0; i < op.num_results(); ++i) rs.push_back(names.Name(op.result(i)));
    absl::StrAppend(&line, absl::StrJoin(rs, ", "), " = ");
  }
  std::vector<std::string> os;
  for (Value* v : op.operands()) os.push_back(names.Name(v));
  absl::StrAppend(&line, ToAbsl(op.mnemonic()), "(", absl::StrJoin(os, ", "), ")");
  if (!op.attrs().empty()) absl::StrAppend(&line, " ", AttrDictToString(op.attrs()));
  if (op.num_results() > 0) {
    std::vector<TensorType> types;
    for (int i = 0; i < op.num_results(); ++i) types.push_back(op.result(i)->type());
    absl::StrAppend(&line, " : ", TypeList(types));
  }
  if (op.num_regions() > 0) line += " {";
  return line;
}

std::string PrintOpLine(const Op& op) {
  const Function* f = op.parent() != nullptr ? op.parent()->function() : nullptr;
  if (f != nullptr) return PrintOpLine(op, NameTable(*f));
  return PrintOpLine(op, NameTable());  // detached: values print by their hints
}

std::string PrintFunction(const Function& f) {
  NameTable names(f);
  std::vector<std::string> args;
  for (const auto& a : f.body().args())
    args.push_back(absl::StrCat(names.Name(a.get()), ": ", a->type().ToString()));
  std::string out = absl::StrCat("func @", f.name(), "(", absl::StrJoin(args, ", "), ")");
  if (!f.result_types().empty()) absl::StrAppend(&out, " -> (", TypeList(f.result_types()), ")");
  out += " {\n";
  PrintBlockOps(f.body(), names, 2, out);
  out += "}\n";
  return out;
}

std::string PrintModule(const Module& m) {
  std::vector<std::string> sections;
  std::string weights, states;
  for (const auto& w : m.weights())
    absl::StrAppend(&weights, "weight @", w->name(), " : ", w->type().ToString(), " = ",
                    QuoteString(w->binding()), "\n");
  for (const auto& s : m.states())
    absl::StrAppend(&states, "state @", s->name(), " : ", s->type().ToString(), "\n");
  if (!weights.empty()) sections.push_back(std::move(weights));
  if (!states.empty()) sections.push_back(std::move(states));
  for (const auto& f : m.functions()) sections.push_back(PrintFunction(*f));
  return absl::StrJoin(sections, "\n");
}

}  // namespace kiln::ir
