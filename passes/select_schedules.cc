#include "passes/select_schedules.h"

#include <string>
#include <string_view>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "ir/printer.h"
#include "schedules/schedule.pb.h"
#include "schedules/schedules.h"

namespace kiln::passes {
namespace {

using ir::Attribute;
using ir::AttrDict;
using ir::Op;
using ir::OpKind;
using ir::TensorType;

absl::Status Bad(const Op& kernel, std::string why) {
  return absl::InvalidArgumentError(absl::StrCat("select-schedules: ", why, "\n  ", ir::PrintOpLine(kernel)));
}

int64_t StaticOr0(const ir::Dim& d) { return d.is_static() ? d.value() : 0; }

// The lookup key of a kernel, from its anchor (schedule.proto ScheduleEntry
// says what rows and cols mean per family).
absl::StatusOr<schedules::ScheduleKey> KeyOf(const Op& kernel, const std::string& family) {
  const ir::Block& region = *kernel.region();
  const int64_t a = kernel.GetInt("anchor", -1);
  if (a < 0 || a >= static_cast<int64_t>(region.ops().size()))
    return Bad(kernel, absl::StrCat("anchor ", a, " is not an op of the region"));
  const Op& anchor = *region.ops()[a];
  schedules::ScheduleKey key;
  key.family = family;
  auto expect = [&](OpKind kind) -> absl::Status {
    if (anchor.kind() == kind) return absl::OkStatus();
    return Bad(kernel, absl::StrCat("a '", family, "' kernel's anchor is '", std::string(anchor.mnemonic()),
                                    "', expected '", std::string(ir::GetOpInfo(kind).mnemonic), "'"));
  };
  if (family == "matvec" || family == "gemm") {
    if (absl::Status s = expect(OpKind::kMatMul); !s.ok()) return s;
    const TensorType& w = anchor.operand(1)->type();
    // Tables key planar Q8_0 as "q8_0_planar" and planar Q6_K as its GGUF
    // type, "q6_k" (the tables' q6_k entries are for the planar kernels);
    // the GGUF Q6_K blocks kept as stored (a tied embedding's) are
    // "q6_k_blocks", so the planar kernels' tuned entries never reach them.
    key.weight_dtype = w.dtype == ir::DType::kI8 && anchor.num_operands() == 3 ? "q8_0_planar"
                       : w.dtype == ir::DType::kQ6_KData                 ? "q6_k"
                       : w.dtype == ir::DType::kQ6_K                     ? "q6_k_blocks"
                                                                         : std::string(ir::DTypeName(w.dtype));
    key.rows = StaticOr0(w.shape[0]);
    key.cols = StaticOr0(w.shape[1]);
  } else if (family == "attention_decode" || family == "attention_prefill") {
    if (absl::Status s = expect(OpKind::kAttention); !s.ok()) return s;
    const TensorType& q = anchor.operand(0)->type();
    key.weight_dtype = std::string(ir::DTypeName(anchor.operand(1)->type().dtype));
    key.rows = StaticOr0(q.shape[1]);
    key.cols = StaticOr0(q.shape[2]);
  } else if (family == "qk_norm_rope_store") {
    if (absl::Status s = expect(OpKind::kKvStore); !s.ok()) return s;
    const TensorType& k = anchor.operand(0)->type();
    key.weight_dtype = std::string(ir::DTypeName(anchor.operand(2)->type().dtype));
    key.rows = k.rank() == 3 ? StaticOr0(k.shape[1]) : 1;
    key.cols = StaticOr0(k.shape.back());
  } else if (family == "embed") {
    if (absl::Status s = expect(OpKind::kEmbed); !s.ok()) return s;
    const TensorType& table = anchor.operand(0)->type();
    key.weight_dtype = std::string(ir::DTypeName(table.dtype));
    key.rows = StaticOr0(table.shape[0]);
    key.cols = StaticOr0(table.shape[1]);
  } else if (family == "argmax") {
    if (absl::Status s = expect(OpKind::kArgmax); !s.ok()) return s;
    const TensorType& x = anchor.operand(0)->type();
    key.weight_dtype = std::string(ir::DTypeName(x.dtype));
    key.rows = 1;
    key.cols = StaticOr0(x.shape.back());
  } else {
    return Bad(kernel, absl::StrCat("unknown kernel family '", family, "'"));
  }
  return key;
}

// Every field of the chosen schedule message as an int attribute (bools as
// 0/1), but those schedule.proto's `families` option gives to other
// families (the prefill attention has no splits, the decode one no key
// blocks).
void AddFields(const google::protobuf::Message& m, const std::string& family, AttrDict& out) {
  const google::protobuf::Descriptor* d = m.GetDescriptor();
  const google::protobuf::Reflection* r = m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    const std::string& n = f->name();
    const std::string& families = f->options().GetExtension(schedules::families);
    if (!families.empty() && !absl::c_linear_search(absl::StrSplit(families, ','), family)) continue;
    if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_INT32)
      out.Set(n, Attribute::Int(r->GetInt32(m, f)));
    else if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_BOOL)
      out.Set(n, Attribute::Int(r->GetBool(m, f) ? 1 : 0));
  }
}

// The swiglu group of a kernel's epilogue, 0 if none.
int64_t SwigluGroup(const Op& kernel) {
  for (const auto& op : kernel.region()->ops())
    if (op->kind() == OpKind::kSwiglu) return op->GetInt("group");
  return 0;
}

int RoundUp(int v, int64_t m) { return static_cast<int>((v + m - 1) / m * m); }

}  // namespace

absl::StatusOr<bool> SelectSchedulesPass::Run(ir::Module& module, const PassContext& context) {
  absl::StatusOr<schedules::ScheduleLibrary> lib = schedules::ScheduleLibrary::Builtin();
  if (!lib.ok())
    return absl::InternalError(absl::StrCat("select-schedules: built-in tables: ", lib.status().message()));
  if (!context.schedule_table.empty()) {
    // A given table replaces the built-in one; it must be for the target.
    lib = schedules::ScheduleLibrary();
    if (absl::Status s = lib->AddTableText(context.schedule_table, context.schedule_table_origin); !s.ok()) return s;
    if (!lib->HasTarget(context.target))
      return absl::InvalidArgumentError(absl::StrCat("select-schedules: ", std::string(context.schedule_table_origin),
                                                     " is not a table for target ", std::string(context.target)));
  }
  bool changed = false;
  for (const auto& f : module.functions()) {
    for (const auto& op : f->body().ops()) {
      const Attribute* family = op->attr("family");
      if (op->kind() != OpKind::kKernel || family == nullptr || op->attr("schedule") != nullptr) continue;
      if (family->kind() != Attribute::Kind::kString) return Bad(*op, "attribute 'family' is not a string");
      absl::StatusOr<schedules::ScheduleKey> key = KeyOf(*op, family->string_value());
      if (!key.ok()) return key.status();
      absl::StatusOr<schedules::ScheduleChoice> choice = lib->Lookup(*key, context.target);
      if (!choice.ok()) return Bad(*op, std::string(choice.status().message()));
      schedules::ScheduleEntry& e = choice->entry;
      if (const int64_t g = SwigluGroup(*op); g > 0) {
        if (e.has_matvec()) e.mutable_matvec()->set_rows_per_block(RoundUp(e.matvec().rows_per_block(), 2 * g));
        if (e.has_gemm()) e.mutable_gemm()->set_tile_m(RoundUp(e.gemm().tile_m(), 2 * g));
      }
      AttrDict s;
      s.Set("family", Attribute::String(key->family));
      s.Set("weight", Attribute::String(key->weight_dtype));
      s.Set("rows", Attribute::Int(key->rows));
      s.Set("cols", Attribute::Int(key->cols));
      s.Set("target", Attribute::String(choice->target));
      s.Set("source", Attribute::String(choice->fallback ? "fallback"
                                        : choice->provenance.source() == schedules::Provenance::TUNED
                                            ? "tuned"
                                            : "heuristic"));
      switch (e.schedule_case()) {
        case schedules::ScheduleEntry::kMatvec: AddFields(e.matvec(), key->family, s); break;
        case schedules::ScheduleEntry::kGemm: AddFields(e.gemm(), key->family, s); break;
        case schedules::ScheduleEntry::kAttention: AddFields(e.attention(), key->family, s); break;
        case schedules::ScheduleEntry::kElementwise: AddFields(e.elementwise(), key->family, s); break;
        case schedules::ScheduleEntry::SCHEDULE_NOT_SET:
          return absl::InternalError(absl::StrCat("select-schedules: no schedule for ", key->family));
      }
      op->SetAttr("schedule", Attribute::Dict(std::move(s)));
      changed = true;
    }
  }
  return changed;
}

}  // namespace kiln::passes
