#include "compiler/tune/spec_entries.h"

#include <type_traits>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/kernel_abi.h"
#include "compiler/codegen/kernel_spec_fields.h"
#include "google/protobuf/descriptor.h"
#include "schedules/tuning.h"
#include "support/status_macros.h"

namespace kiln::tune {
namespace {

namespace pb = ::google::protobuf;
using codegen::Family;
using codegen::KernelSpec;

// Each schedule field of the spec's family, by its schedule.proto name
// (kernel_spec.h mirrors schedule.proto field for field; the lists are
// codegen/kernel_spec_fields.h's).
template <typename F>
void VisitScheduleFields(KernelSpec& s, F&& f) {
  switch (s.family) {
    case Family::kMatVec:
      return codegen::VisitMatVecScheduleFields(s.matvec, f);
    case Family::kGemm:
      return codegen::VisitGemmScheduleFields(s.gemm, f);
    case Family::kAttentionDecode:
    case Family::kAttentionPrefill:
      return codegen::VisitAttentionScheduleFields(s.attention, f);
    default:
      return codegen::VisitElementwiseScheduleFields(s.elementwise, f);
  }
}

enum class Direction { kToEntry, kToSpec };

// Copies every schedule field of the spec's family between the spec and
// `m`, its family's schedule message.
absl::Status CopyFields(Direction direction, KernelSpec& spec, pb::Message* m) {
  const pb::Reflection* r = m->GetReflection();
  absl::Status status;
  VisitScheduleFields(spec, [&](absl::string_view name, auto& v) {
    const pb::FieldDescriptor* f = m->GetDescriptor()->FindFieldByName(std::string(name));
    if (f == nullptr) {
      status = absl::InternalError(absl::StrCat("schedule.proto has no field '", name, "'"));
    } else if constexpr (std::is_same_v<std::remove_reference_t<decltype(v)>, bool>) {
      if (direction == Direction::kToEntry) r->SetBool(m, f, v);
      else v = r->GetBool(*m, f);
    } else if (direction == Direction::kToEntry) {
      r->SetInt32(m, f, static_cast<int32_t>(v));
    } else {
      v = r->GetInt32(*m, f);
    }
  });
  return status;
}

}  // namespace

std::string TableDtype(codegen::WeightFormat format) {
  // Tables key planar Q8_0 as "q8_0_planar", planar Q6_K as "q6_k" and
  // the stored Q6_K blocks as "q6_k_blocks" (passes/select_schedules.cc:
  // the same keys).
  if (format == codegen::WeightFormat::kQ8_0Planar) return "q8_0_planar";
  if (format == codegen::WeightFormat::kQ6_KPlanar) return "q6_k";
  if (format == codegen::WeightFormat::kQ6_K) return "q6_k_blocks";
  return codegen::WeightFormatName(format);
}

absl::StatusOr<schedules::ScheduleKey> KeyOfSpec(const KernelSpec& spec) {
  schedules::ScheduleKey key;
  key.family = codegen::FamilyName(spec.family);
  switch (spec.family) {
    case Family::kMatVec:
    case Family::kGemm:
      key.weight_dtype = TableDtype(spec.weight);
      key.rows = spec.rows;
      key.cols = spec.cols;
      return key;
    case Family::kAttentionDecode:
    case Family::kAttentionPrefill:
      key.weight_dtype = spec.kv_f16 ? "f16" : "f32";
      key.rows = spec.n_head;
      key.cols = spec.head_dim;
      return key;
    default:
      return absl::UnimplementedError(absl::StrCat("no tuning key for a '", key.family, "' kernel"));
  }
}

absl::StatusOr<schedules::ScheduleEntry> EntryOfSpec(const KernelSpec& spec) {
  schedules::ScheduleEntry e;
  e.set_family(codegen::FamilyName(spec.family));
  ASSIGN_OR_RETURN(pb::Message * m, schedules::MutableScheduleOf(&e));
  KernelSpec copy = spec;
  RETURN_IF_ERROR(CopyFields(Direction::kToEntry, copy, m));
  return e;
}

absl::Status ApplyEntry(const schedules::ScheduleEntry& entry, KernelSpec* spec) {
  if (entry.family() != codegen::FamilyName(spec->family))
    return absl::InvalidArgumentError(absl::StrCat("a '", entry.family(), "' schedule for a '",
                                                   codegen::FamilyName(spec->family), "' kernel"));
  schedules::ScheduleEntry copy = entry;
  ASSIGN_OR_RETURN(pb::Message * m, schedules::MutableScheduleOf(&copy));
  return CopyFields(Direction::kToSpec, *spec, m);
}

}  // namespace kiln::tune
