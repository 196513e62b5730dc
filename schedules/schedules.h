// Schedule tables per GPU target (schedule.proto), embedded in the binary at
// build time so kilnc runs on the GPU host without the source tree, and the
// lookup passes/select-schedules uses: first matching entry of the target's
// table, else built-in heuristic defaults flagged `fallback` (kilnc warns).
#ifndef KILN_SCHEDULES_SCHEDULES_H_
#define KILN_SCHEDULES_SCHEDULES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "schedules/schedule.pb.h"

namespace kiln::schedules {

// What a kernel is, for lookup (schedule.proto ScheduleEntry says what
// rows/cols mean per family).
struct ScheduleKey {
  std::string family;        // "matvec", "gemm", "attention_decode", ...
  std::string weight_dtype;  // "q8_0", "q8_0_planar", "f16", ...
  int64_t rows = 0;
  int64_t cols = 0;
};

struct ScheduleChoice {
  ScheduleEntry entry;    // the matched entry; its schedule oneof is set
  Provenance provenance;  // the entry's, else its table's
  std::string target;     // the target asked for
  bool fallback = false;  // no table (or no entry) for it: heuristic defaults, warn
};

// A table file compiled into the binary (schedules/embedded_tables.cc,
// generated from schedules/*.txtpb).
struct EmbeddedTable {
  std::string_view file;  // "sm_90.txtpb"
  std::string_view text;
};
absl::Span<const EmbeddedTable> EmbeddedTables();
// schedules/spaces.txtpb, the tuner's search spaces (schedules/tuning.h).
absl::Span<const EmbeddedTable> EmbeddedSpaces();

// Parses a text-format proto; InvalidArgument "<origin>:<line>:<col>: ..."
// naming the first error.
absl::Status ParseTextProto(std::string_view text, std::string_view origin, google::protobuf::Message* out);

// A target's name as tables and lookups compare it ("SM_90" is "sm_90").
std::string NormalizeTarget(std::string_view target);

// The schedule message a family uses; InvalidArgument for unknown families.
absl::StatusOr<ScheduleEntry::ScheduleCase> ScheduleCaseOf(std::string_view family);

// Built-in defaults for any target (the same reasoning as the shipped
// tables): used when a target or entry is missing.
ScheduleEntry HeuristicSchedule(const ScheduleKey& key);

class ScheduleLibrary {
 public:
  // The embedded tables, parsed and checked.
  static absl::StatusOr<ScheduleLibrary> Builtin();

  // Checks and adds a table: a target, known families, a schedule of the
  // family's kind in every entry, sane ranges. Errors are InvalidArgument
  // naming `origin` and the entry index. A second table for a target is an
  // error.
  absl::Status AddTable(ScheduleTable table, std::string_view origin);
  absl::Status AddTableText(std::string_view text, std::string_view origin);

  std::vector<std::string> Targets() const;
  bool HasTarget(std::string_view target) const;

  // First entry of `target`'s table matching the key; else the heuristic
  // with fallback = true. InvalidArgument for an unknown family.
  absl::StatusOr<ScheduleChoice> Lookup(const ScheduleKey& key, std::string_view target) const;

 private:
  std::vector<ScheduleTable> tables_;
};

// Lookup on the built-in tables (parses them on every call: prefer a
// ScheduleLibrary when looking up many kernels).
absl::StatusOr<ScheduleChoice> LookupSchedule(std::string_view family, std::string_view weight_dtype,
                                              int64_t rows, int64_t cols, std::string_view target);

}  // namespace kiln::schedules

#endif  // KILN_SCHEDULES_SCHEDULES_H_
