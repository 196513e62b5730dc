#include "compiler/tune/spec_entries.h"

#include <type_traits>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/kernel_abi.h"
#include "google/protobuf/descriptor.h"
#include "schedules/tuning.h"
#include "support/status_macros.h"

namespace kiln::tune {
namespace {

namespace pb = ::google::protobuf;
using codegen::Family;
using codegen::KernelSpec;

// Each schedule field of the spec's family, by its schedule.proto name
// (kernel_spec.h mirrors schedule.proto field for field).
template <typename F>
void VisitScheduleFields(KernelSpec& s, F&& f) {
  switch (s.family) {
    case Family::kMatVec:
      f("threads", s.matvec.threads);
      f("rows_per_block", s.matvec.rows_per_block);
      f("vector_bytes", s.matvec.vector_bytes);
      f("k_split", s.matvec.k_split);
      f("max_tokens", s.matvec.max_tokens);
      f("unroll", s.matvec.unroll);
      f("row_groups", s.matvec.row_groups);
      f("stage_all", s.matvec.stage_all);
      f("int8_activations", s.matvec.int8_activations);
      f("row_tiles", s.matvec.row_tiles);
      f("stream_stages", s.matvec.stream_stages);
      f("release_early", s.matvec.release_early);
      f("pipeline_loads", s.matvec.pipeline_loads);
      f("pipeline_rows", s.matvec.pipeline_rows);
      f("blocks_per_sm", s.matvec.blocks_per_sm);
      f("warp_reduce", s.matvec.warp_reduce);
      return;
    case Family::kGemm:
      f("tile_m", s.gemm.tile_m);
      f("tile_n", s.gemm.tile_n);
      f("tile_k", s.gemm.tile_k);
      f("threads", s.gemm.threads);
      f("stages", s.gemm.stages);
      f("tensor_cores", s.gemm.tensor_cores);
      return;
    case Family::kAttentionDecode:
    case Family::kAttentionPrefill:
      f("threads", s.attention.threads);
      f("split_positions", s.attention.split_positions);
      f("max_splits", s.attention.max_splits);
      f("min_split_positions", s.attention.min_split_positions);
      f("blocks_per_sm", s.attention.blocks_per_sm);
      f("release_after_wait", s.attention.release_after_wait);
      f("query_block", s.attention.query_block);
      f("key_block", s.attention.key_block);
      f("stage_keys", s.attention.stage_keys);
      return;
    default:
      f("threads", s.elementwise.threads);
      f("block_cols", s.elementwise.block_cols);
      f("max_blocks", s.elementwise.max_blocks);
      return;
  }
}

enum class Direction { kToEntry, kToSpec };

// Copies every schedule field of the spec's family between the spec and
// `m`, its family's schedule message.
absl::Status CopyFields(Direction direction, KernelSpec& spec, pb::Message* m) {
  const pb::Reflection* r = m->GetReflection();
  absl::Status status;
  VisitScheduleFields(spec, [&](const char* name, auto& v) {
    const pb::FieldDescriptor* f = m->GetDescriptor()->FindFieldByName(name);
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
