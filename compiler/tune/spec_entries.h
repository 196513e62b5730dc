// Kernel specs and schedule table entries, one in terms of the other: a
// spec's lookup key and its schedule as an entry, and an entry applied to a
// spec (kernel_spec.h mirrors schedule.proto field for field). The tuner
// builds its candidates with them; tests apply the shipped tables' entries
// to specs. CPU-only (kiln_tune_entries): no CUDA, no lowering.
#ifndef KILN_COMPILER_TUNE_SPEC_ENTRIES_H_
#define KILN_COMPILER_TUNE_SPEC_ENTRIES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/codegen/kernel_spec.h"
#include "schedules/schedule.pb.h"
#include "schedules/schedules.h"

namespace kiln::tune {

// The schedule table's dtype name of a weight format ("q8_0_planar" for
// planar Q8_0, "q6_k" for planar Q6_K, "q6_k_blocks" for the stored Q6_K
// blocks, else codegen's name), as passes/select_schedules.cc keys the
// compiler's lookups.
std::string TableDtype(codegen::WeightFormat format);
// The lookup key of a lowered kernel (schedule.proto ScheduleEntry: matvec
// rows x cols of the weight; attention query heads x head_dim, KV dtype).
absl::StatusOr<schedules::ScheduleKey> KeyOfSpec(const codegen::KernelSpec& spec);
// The spec's schedule as a table entry of its family, every field set.
absl::StatusOr<schedules::ScheduleEntry> EntryOfSpec(const codegen::KernelSpec& spec);
// Sets the spec's schedule from an entry of its family.
absl::Status ApplyEntry(const schedules::ScheduleEntry& entry, codegen::KernelSpec* spec);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_SPEC_ENTRIES_H_
