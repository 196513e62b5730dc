// plan-buffers (plan_buffers.h).
#include "passes/plan_buffers.h"

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/builder.h"
#include "ir/printer.h"
#include "support/status_macros.h"

namespace kiln::passes {
namespace {

using ir::Block;
using ir::Builder;
using ir::Op;
using ir::OpKind;
using ir::Value;

constexpr int64_t kAlign = 256;

// a * S + b bytes for the symbol S (T in the arena, C for the KV cache).
struct Lin {
  int64_t a = 0, b = 0;
  Lin operator+(const Lin& o) const { return {a + o.a, b + o.b}; }
  bool operator==(const Lin& o) const { return a == o.a && b == o.b; }
  // Coefficient-wise <=: then <= for every S >= 0.
  bool AtMost(const Lin& o) const { return a <= o.a && b <= o.b; }
  static Lin Max(const Lin& x, const Lin& y) { return {std::max(x.a, y.a), std::max(x.b, y.b)}; }
  std::string ToString(std::string_view s) const {
    std::string lin = a == 0 ? "" : (a == 1 ? std::string(s) : absl::StrCat(a, "*", std::string(s)));
    if (lin.empty()) return absl::StrCat(b);
    return b == 0 ? lin : absl::StrCat(lin, " + ", b);
  }
};

int64_t AlignUp(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// Bytes of `t` as a * S + b, where S is the only symbol allowed (to the
// first power); nullopt otherwise.
std::optional<Lin> BytesOf(const ir::TensorType& t, ir::Symbol s) {
  const ir::ElementCount n = ir::CountElements(t.shape);
  for (ir::Symbol other : ir::kAllSymbols) {
    const int p = n.powers[static_cast<int>(other) - 1];
    if (other == s ? p > 1 : p > 0) return std::nullopt;
  }
  const ir::DTypeInfo& d = ir::GetDTypeInfo(t.dtype);
  const int64_t bytes = n.constant / d.block_elems * d.block_bytes;
  return n.powers[static_cast<int>(s) - 1] == 1 ? Lin{bytes, 0} : Lin{0, bytes};
}

bool StaysOutsideKernels(const Op& op) {
  return op.kind() == OpKind::kKernel || op.kind() == OpKind::kReshape || op.kind() == OpKind::kArena ||
         op.info().has(ir::kTerminator);
}

// Puts `op` in a kernel of its own: the kernel takes its local operands
// (globals stay referenced inside) and yields its results.
void WrapInKernel(Block& body, Op* op) {
  std::vector<Value*> operands;
  for (Value* v : op->operands())
    if (!v->is_global() && std::find(operands.begin(), operands.end(), v) == operands.end())
      operands.push_back(v);
  std::vector<ir::TensorType> types;
  for (int r = 0; r < op->num_results(); ++r) types.push_back(op->result(r)->type());
  ir::AttrDict attrs;
  if (op->info().has(ir::kAnchor)) attrs.Set("anchor", ir::Attribute::Int(0));
  Builder b(&body);
  b.SetInsertionPoint(&body, op);
  Op* kernel = b.Kernel(operands, types, attrs);
  Block* region = kernel->region();
  std::vector<Value*> inner_operands;
  for (Value* v : op->operands()) {
    auto it = std::find(operands.begin(), operands.end(), v);
    inner_operands.push_back(it == operands.end() ? v : region->arg(static_cast<int>(it - operands.begin())));
  }
  Builder rb(region);
  Op* inner = rb.Create(op->kind(), inner_operands, op->attrs(), types, op->num_results() > 0 ? op->result()->name() : "");
  std::vector<Value*> yielded;
  for (int r = 0; r < op->num_results(); ++r) {
    inner->result(r)->set_name(op->result(r)->name());
    kernel->result(r)->set_name(op->result(r)->name());
    yielded.push_back(inner->result(r));
    ir::ReplaceAllUsesWith(body, op->result(r), kernel->result(r));
  }
  rb.Yield(yielded);
  body.Erase(op);
}

struct FunctionPlan {
  Lin arena;
  int64_t kernels = 0;
};

class Planner {
 public:
  explicit Planner(ir::Function& f) : f_(f), body_(f.body()) {}

  absl::StatusOr<FunctionPlan> Run() {
    std::vector<Op*> wrap;
    for (const auto& op : body_.ops())
      if (!StaysOutsideKernels(*op)) wrap.push_back(op.get());
    for (Op* op : wrap) WrapInKernel(body_, op);
    RETURN_IF_ERROR(Liveness());
    Place();
    return Annotate();
  }

 private:
  struct Storage {
    Lin size;
    int first = 0, last = 0;  // op indices of the live range, inclusive
    Lin offset;
  };

  int RootOf(const Value* v) const {
    auto it = root_.find(v);
    return it == root_.end() ? -1 : it->second;
  }

  absl::Status Liveness() {
    const auto& ops = body_.ops();
    const int n = static_cast<int>(ops.size());
    absl::flat_hash_map<const Value*, int> last_use;
    for (int i = 0; i < n; ++i) {
      const int at = ops[i]->info().has(ir::kTerminator) ? n : i;  // returned values live to the end
      for (const Value* v : ops[i]->operands()) last_use[v] = at;
    }
    auto last_of = [&](const Value* v, int def) {
      auto it = last_use.find(v);
      return it == last_use.end() ? def : std::max(def, it->second);
    };
    for (int i = 0; i < n; ++i) {
      Op* op = ops[i].get();
      if (op->kind() == OpKind::kReshape) {
        const int r = RootOf(op->operand(0));
        if (r < 0) continue;  // a view of IO or of a global
        root_[op->result()] = r;
        storages_[r].last = std::max(storages_[r].last, last_of(op->result(), i));
        continue;
      }
      if (op->kind() != OpKind::kKernel) continue;
      for (int res = 0; res < op->num_results(); ++res) {
        Value* v = op->result(res);
        std::optional<Lin> size = BytesOf(v->type(), ir::Symbol::kT);
        if (!size)
          return absl::UnimplementedError(absl::StrCat("plan-buffers: @", f_.name(), ": ", v->type().ToString(),
                                                       " is not linear in T\n  ", ir::PrintOpLine(*op)));
        const Lin aligned{AlignUp(size->a), AlignUp(size->b)};
        if (res == 0 && Inplace(*op, i, aligned)) {
          const int r = RootOf(op->operand(static_cast<int>(op->GetInt("inplace"))));
          root_[v] = r;
          storages_[r].last = std::max(storages_[r].last, last_of(v, i));
          continue;
        }
        if (res == 0) op->mutable_attrs().Erase("inplace");
        root_[v] = static_cast<int>(storages_.size());
        storages_.push_back({aligned, i, last_of(v, i), {}});
      }
    }
    return absl::OkStatus();
  }

  // True if result 0 of kernel `op` (index i) may overwrite its operand
  // `inplace`: that operand's storage is in the arena, has the same size and
  // is not used after this op.
  bool Inplace(const Op& op, int i, const Lin& size) const {
    const ir::Attribute* a = op.attr("inplace");
    if (a == nullptr || a->kind() != ir::Attribute::Kind::kInt) return false;
    const int64_t k = a->int_value();
    if (k < 0 || k >= op.num_operands()) return false;
    const int r = RootOf(op.operand(static_cast<int>(k)));
    return r >= 0 && storages_[r].last == i && storages_[r].size == size;
  }

  // Greedy by size (largest first, ties by definition order): each storage
  // takes the lowest candidate offset (0 or the end of a storage it
  // overlaps in time) clear of every such storage for all T >= 1.
  void Place() {
    std::vector<int> order(storages_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::sort(order.begin(), order.end(), [&](int x, int y) {
      const Storage& a = storages_[x];
      const Storage& b = storages_[y];
      return std::make_tuple(-a.size.a, -a.size.b, a.first, x) < std::make_tuple(-b.size.a, -b.size.b, b.first, y);
    });
    std::vector<int> placed;
    for (int s : order) {
      Storage& me = storages_[s];
      std::vector<const Storage*> busy;
      for (int p : placed)
        if (storages_[p].first <= me.last && me.first <= storages_[p].last) busy.push_back(&storages_[p]);
      std::vector<Lin> candidates = {Lin{}};
      Lin top;
      for (const Storage* o : busy) {
        candidates.push_back(o->offset + o->size);
        top = Lin::Max(top, o->offset + o->size);
      }
      candidates.push_back(top);  // clear of all: always fits
      std::sort(candidates.begin(), candidates.end(),
                [](const Lin& x, const Lin& y) { return std::tie(x.a, x.b) < std::tie(y.a, y.b); });
      for (const Lin& c : candidates) {
        bool fits = true;
        for (const Storage* o : busy)
          if (!(c + me.size).AtMost(o->offset) && !(o->offset + o->size).AtMost(c)) fits = false;
        if (fits) {
          me.offset = c;
          break;
        }
      }
      placed.push_back(s);
    }
  }

  absl::StatusOr<FunctionPlan> Annotate() {
    FunctionPlan plan;
    for (const Storage& s : storages_) plan.arena = Lin::Max(plan.arena, s.offset + s.size);
    for (const auto& op : body_.ops()) {
      if (op->kind() != OpKind::kKernel) continue;
      ++plan.kernels;
      std::vector<std::string> offsets;
      for (int r = 0; r < op->num_results(); ++r) {
        const int root = RootOf(op->result(r));
        RET_CHECK(root >= 0);
        offsets.push_back(storages_[root].offset.ToString("T"));
      }
      if (offsets.empty()) {
        op->mutable_attrs().Erase("offset");
      } else {
        op->SetAttr("offset", ir::Attribute::String(absl::StrJoin(offsets, ", ")));
      }
    }
    Op* arena = nullptr;
    if (!body_.empty() && body_.ops().front()->kind() == OpKind::kArena) arena = body_.ops().front().get();
    if (arena == nullptr) {
      Builder b(&body_);
      b.SetInsertionPoint(&body_, body_.empty() ? nullptr : body_.ops().front().get());
      arena = b.Create(OpKind::kArena, {}, ir::AttrDict{{"bytes", ir::Attribute::String("0")}});
    }
    arena->SetAttr("bytes", ir::Attribute::String(plan.arena.ToString("T")));
    arena->SetAttr("kernels", ir::Attribute::Int(plan.kernels));
    return plan;
  }

  ir::Function& f_;
  Block& body_;
  absl::flat_hash_map<const Value*, int> root_;  // planned value -> its storage
  std::vector<Storage> storages_;
};

}  // namespace

absl::StatusOr<bool> PlanBuffersPass::Run(ir::Module& module, const PassContext& context) {
  summary_.clear();
  bool changed = false;
  Lin arena;
  std::string kernels_per_token = "-";
  for (const auto& f : module.functions()) {
    if (f->name() == "load") continue;
    const std::string before = ir::PrintFunction(*f);
    Planner planner(*f);
    ASSIGN_OR_RETURN(FunctionPlan plan, planner.Run());
    changed |= ir::PrintFunction(*f) != before;
    arena = Lin::Max(arena, plan.arena);
    if (f->name() == "decode") kernels_per_token = absl::StrCat(plan.kernels);
  }
  Lin kv, other;
  for (const auto& s : module.states()) {
    std::optional<Lin> bytes = BytesOf(s->type(), ir::Symbol::kC);
    if (!bytes)
      return absl::UnimplementedError(
          absl::StrCat("plan-buffers: state @", s->name(), " : ", s->type().ToString(), " is not linear in C"));
    if (bytes->a != 0) {
      kv = kv + *bytes;
    } else {
      other = other + *bytes;
    }
  }
  summary_ = {{"arena_bytes", arena.ToString("T")},
              {"kv_bytes", kv.ToString("C")},
              {"state_bytes", other.ToString("C")},
              {"kernels_per_token", kernels_per_token}};
  return changed;
}

}  // namespace kiln::passes
