#include "compiler/lower/lower_load.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/printer.h"
#include "support/status_macros.h"

namespace kiln::compiler {
namespace {

using ir::Op;
using ir::Value;

int64_t Rows(const ir::TensorType& t) {
  int64_t r = 1;
  for (size_t i = 0; i + 1 < t.shape.size(); ++i) r *= t.shape[i].value();
  return r;
}

class LoadLowering {
 public:
  LoadLowering(const ir::Function& f, LoweringContext& ctx, runtime::Plan& plan)
      : f_(f), ctx_(ctx), plan_(plan) {}

  absl::Status Run() {
    for (const auto& op : f_.body().ops()) {
      for (Value* v : op->operands()) ++uses_[v];
      if (op->kind() == ir::OpKind::kStore) store_of_[op->operand(0)] = op.get();
    }
    for (const auto& op : f_.body().ops()) RETURN_IF_ERROR(Lower(*op));
    if (scratch_high_ > 0)
      ctx_.manifest().mutable_buffers(scratch_)->mutable_bytes()->set_constant(scratch_high_);
    // Weights read directly after load: copy them out of their GGUF buffers.
    for (size_t i = 0; i < ctx_.weight_copies().size(); ++i) {
      const Value* w = ctx_.weight_copies()[i];
      ASSIGN_OR_RETURN(uint32_t src, ctx_.GgufBuffer(w));
      ASSIGN_OR_RETURN(uint32_t dst, ctx_.RuntimeBuffer(w));
      RETURN_IF_ERROR(CopyRows({src, ConstExpr(0)}, {dst, ConstExpr(0)}, w->type(), 0, 0, 0));
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Unsupported(const Op& op) {
    return absl::UnimplementedError(absl::StrCat("lower-to-kernels: no load kernel for\n  ", ir::PrintOpLine(op)));
  }

  // Where an operand is read from.
  absl::StatusOr<Location> Source(const Value* v) {
    if (v->kind() == Value::Kind::kWeight) {
      ASSIGN_OR_RETURN(uint32_t b, ctx_.GgufBuffer(v));
      return Location{b, ConstExpr(0)};
    }
    if (v->kind() == Value::Kind::kState) {
      ASSIGN_OR_RETURN(uint32_t b, ctx_.RuntimeBuffer(v));
      return Location{b, ConstExpr(0)};
    }
    auto it = where_.find(v);
    if (it == where_.end()) return absl::InternalError(absl::StrCat("load value %", v->name(), " has no place"));
    return it->second;
  }

  // Where a result is written: its state if a store is its only use, else scratch.
  absl::StatusOr<Location> Destination(const Value* v) {
    if (auto it = store_of_.find(v); it != store_of_.end() && uses_[v] == 1) {
      ASSIGN_OR_RETURN(uint32_t b, ctx_.RuntimeBuffer(it->second->operand(1)));
      stored_in_place_.insert(it->second);
      return Location{b, ConstExpr(0)};
    }
    if (scratch_ == UINT32_MAX) scratch_ = ctx_.AddBuffer("load_scratch", runtime::Buffer::WEIGHT, ConstExpr(256));
    ASSIGN_OR_RETURN(int64_t bytes, TypeBytes(v->type()));
    Location at{scratch_, ConstExpr(scratch_used_)};
    scratch_used_ += (bytes + 255) / 256 * 256;
    scratch_high_ = std::max(scratch_high_, scratch_used_);
    ++scratch_live_;
    return at;
  }

  void Consumed(const Value* v) {
    if (--uses_[v] == 0 && v->kind() == Value::Kind::kResult && where_.count(v) &&
        where_[v].buffer == scratch_ && --scratch_live_ == 0)
      scratch_used_ = 0;  // every scratch value is dead: reuse from the start
  }

  absl::Status CopyRows(Location src, Location dst, const ir::TensorType& type, int64_t dst_row0,
                        int64_t group_rows, int64_t group_stride) {
    ASSIGN_OR_RETURN(int64_t row_bytes, RowBytesOf(type));
    const int64_t rows = Rows(type);
    codegen::KernelSpec s;
    s.family = codegen::Family::kCopyRows;
    s.row_bytes = row_bytes;
    LaunchArg a_src{LaunchArg::kPointer, src, {}}, a_dst{LaunchArg::kPointer, dst, {}};
    LaunchArg a_rows{LaunchArg::kI32, {}, ConstExpr(rows)};
    LaunchArg a_row0{LaunchArg::kI32, {}, ConstExpr(dst_row0)};
    LaunchArg a_group{LaunchArg::kI32, {}, ConstExpr(group_rows > 0 ? group_rows : rows)};
    LaunchArg a_stride{LaunchArg::kI32, {}, ConstExpr(group_stride > 0 ? group_stride : rows)};
    return ctx_.Launch(plan_, s, {a_src, a_dst, a_rows, a_row0, a_group, a_stride}, ConstExpr(0), rows);
  }

  absl::Status Lower(const Op& op) {
    switch (op.kind()) {
      case ir::OpKind::kReturn:
        return absl::OkStatus();
      case ir::OpKind::kConcatRows: {
        ASSIGN_OR_RETURN(Location dst, Destination(op.result()));
        int64_t row0 = 0;
        for (Value* part : op.operands()) {
          ASSIGN_OR_RETURN(Location src, Source(part));
          RETURN_IF_ERROR(CopyRows(src, dst, part->type(), row0, 0, 0));
          row0 += Rows(part->type());
          Consumed(part);
        }
        where_[op.result()] = dst;
        return absl::OkStatus();
      }
      case ir::OpKind::kInterleaveRows: {
        ASSIGN_OR_RETURN(Location dst, Destination(op.result()));
        const int64_t g = op.GetInt("group");
        for (int i = 0; i < 2; ++i) {
          ASSIGN_OR_RETURN(Location src, Source(op.operand(i)));
          RETURN_IF_ERROR(CopyRows(src, dst, op.operand(i)->type(), i * g, g, 2 * g));
          Consumed(op.operand(i));
        }
        where_[op.result()] = dst;
        return absl::OkStatus();
      }
      case ir::OpKind::kQ8_0Split:
      case ir::OpKind::kQ6_KSplit: {
        // The planes of a whole matrix: kPackQ8_0 or kPackQ6_K.
        ASSIGN_OR_RETURN(Location src, Source(op.operand(0)));
        ASSIGN_OR_RETURN(Location qs, Destination(op.result(0)));
        ASSIGN_OR_RETURN(Location d, Destination(op.result(1)));
        const ir::TensorType& t = op.operand(0)->type();
        codegen::KernelSpec s;
        s.family = op.kind() == ir::OpKind::kQ6_KSplit ? codegen::Family::kPackQ6_K : codegen::Family::kPackQ8_0;
        s.cols = t.shape.back().value();
        const int64_t rows = Rows(t);
        RETURN_IF_ERROR(ctx_.Launch(plan_, s,
                                    {{LaunchArg::kPointer, src, {}}, {LaunchArg::kPointer, qs, {}},
                                     {LaunchArg::kPointer, d, {}}, {LaunchArg::kI32, {}, ConstExpr(rows)}},
                                    ConstExpr(0), rows));
        where_[op.result(0)] = qs;
        where_[op.result(1)] = d;
        Consumed(op.operand(0));
        return absl::OkStatus();
      }
      case ir::OpKind::kStore: {
        Value* x = op.operand(0);
        if (!stored_in_place_.count(&op)) {
          ASSIGN_OR_RETURN(Location src, Source(x));
          ASSIGN_OR_RETURN(uint32_t dst, ctx_.RuntimeBuffer(op.operand(1)));
          RETURN_IF_ERROR(CopyRows(src, {dst, ConstExpr(0)}, x->type(), 0, 0, 0));
        }
        Consumed(x);
        return absl::OkStatus();
      }
      default:
        return Unsupported(op);
    }
  }

  const ir::Function& f_;
  LoweringContext& ctx_;
  runtime::Plan& plan_;
  absl::flat_hash_map<const Value*, int> uses_;
  absl::flat_hash_map<const Value*, Location> where_;
  absl::flat_hash_map<const Value*, const Op*> store_of_;  // value -> a store of it
  absl::flat_hash_set<const Op*> stored_in_place_;
  uint32_t scratch_ = UINT32_MAX;
  int64_t scratch_used_ = 0, scratch_high_ = 0;
  int scratch_live_ = 0;
};

}  // namespace

absl::Status LowerLoad(const ir::Function& load, LoweringContext& ctx, runtime::Plan& plan) {
  return LoadLowering(load, ctx, plan).Run();
}

}  // namespace kiln::compiler
