// The GPU-free half of `kilnc tune` (docs/tuning.md): the search spaces and
// their enumeration, the results cache (one line per finished candidate,
// appended as each finishes, so an interrupted search resumes), and the
// export of the winners as a ScheduleTable like schedules/sm_90.txtpb.
#ifndef KILN_SCHEDULES_TUNING_H_
#define KILN_SCHEDULES_TUNING_H_

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "schedules/schedule.pb.h"
#include "schedules/schedules.h"

namespace kiln::schedules {

// ---- search spaces ----

// schedules/spaces.txtpb, parsed and checked (every axis names an int or
// bool field of its family's schedule message and has values).
absl::StatusOr<SearchSpaces> BuiltinSpaces();
absl::Status CheckSpaces(const SearchSpaces& spaces, std::string_view origin);
// The first space for the key's family whose dtype matches; nullptr if none.
const SearchSpace* FindSpace(const SearchSpaces& spaces, const ScheduleKey& key);

// The candidates of `space` over `base` (an entry with the family's schedule
// set): `base` first, then the cartesian product of the axes (the last axis
// varies fastest), each applied over base's schedule; repeats are dropped.
absl::StatusOr<std::vector<ScheduleEntry>> EnumerateSchedules(const SearchSpace& space, const ScheduleEntry& base);

// Every field of the entry's schedule message on one line, defaults
// included ("threads: 64 rows_per_block: 8 ..."): the candidate's identity in
// the cache. ParseSchedule reads it back into `entry` (whose family must be
// set).
std::string CanonicalSchedule(const ScheduleEntry& entry);
// The schedule message of the entry's family (ScheduleCaseOf), made the set
// oneof member if it was not; InvalidArgument for an unknown family.
absl::StatusOr<google::protobuf::Message*> MutableScheduleOf(ScheduleEntry* entry);
absl::Status ParseSchedule(std::string_view text, ScheduleEntry* entry);

// ---- results ----

enum class TuneStatus {
  kOk,        // correct; its time counts
  kWrong,     // ran, but the output differs from the reference
  kFault,     // the device faulted (the worker's context died)
  kTimeout,   // exceeded the per-candidate time limit (the worker was killed)
  kRejected,  // ptxas refused it, or it spilled
  kError,     // anything else (the worker died, a driver call failed, ...)
};
std::string_view TuneStatusName(TuneStatus status);  // "ok", "wrong", ...
absl::StatusOr<TuneStatus> ParseTuneStatus(std::string_view name);

// The GPU a result was measured on (the tables' Provenance).
struct DeviceProvenance {
  std::string gpu;     // "NVIDIA H200"
  int sm_count = 0;
  std::string driver;  // "580.65.06 (CUDA 13.0)"
};

struct TuneRecord {
  DeviceProvenance device;
  std::string target;    // "sm_90"
  ScheduleKey key;       // family, weight dtype, rows, cols (schedule.proto ScheduleEntry)
  std::string schedule;  // CanonicalSchedule
  std::string variant;   // empty for real candidates; the test hook's synthetic kernels name theirs
  // The candidate's code: a digest of its PTX (compiler/tune CodeDigest),
  // so a search after a codegen change measures again what now compiles
  // differently. Empty in caches written before it was recorded (v1).
  std::string code;
  // Not in the file: when the cache read or appended the record (its line;
  // appends after the last), so the newest of a schedule's records is the
  // highest. 0 for records made outside a cache.
  int64_t seq = 0;
  TuneStatus status = TuneStatus::kError;
  double us = 0;         // median time per launch
  double gbps = 0;       // bytes read / median time
  double rel_err = 0;    // max |gpu - ref| / max |ref|
  std::string detail;    // why it failed; registers; ...
  std::string date;      // ISO 8601 day it was measured
};

// gpu, target, family, dtype, rows, cols, schedule, variant, code: what a
// resumed search skips.
std::string RecordKey(const TuneRecord& record);
// One tab-separated line (no newline); tabs and newlines in text fields
// become spaces. ParseRecord is DataLoss naming the problem; it reads the
// 17 fields FormatRecord writes and the 16 of a v1 cache (no code), and
// spells the schedule in full (CanonicalSchedule) where it parses.
std::string FormatRecord(const TuneRecord& record);
absl::StatusOr<TuneRecord> ParseRecord(std::string_view line);

// The cache file: a header line, then one FormatRecord line per finished
// candidate, appended and flushed as each finishes.
class TuneCache {
 public:
  // Reads `path` (missing: empty). A last line without its newline (an
  // interrupted write) is dropped with a warning and cut off before the
  // next append; any other bad line is DataLoss naming the line number.
  static absl::StatusOr<TuneCache> Open(const std::string& path, std::vector<std::string>* warnings);
  TuneCache(TuneCache&& other) noexcept;
  TuneCache& operator=(TuneCache&& other) noexcept;
  ~TuneCache();

  const std::vector<TuneRecord>& records() const { return records_; }
  // The record with the same RecordKey, or nullptr.
  const TuneRecord* Find(const TuneRecord& key) const;
  // Appends the line and flushes it to the file (a later record with the
  // same key replaces the earlier one in records()).
  absl::Status Append(const TuneRecord& record);
  const std::string& path() const { return path_; }

 private:
  TuneCache() = default;
  std::string path_;
  std::vector<TuneRecord> records_;
  std::map<std::string, size_t> index_;
  int64_t good_bytes_ = -1;  // >= 0: cut the file to this length before appending
  int64_t next_seq_ = 1;     // TuneRecord::seq of the next record read or appended
  std::FILE* out_ = nullptr;
};

// ---- export ----

// The GPU whose results to use: `gpu` if the correct results for `target`
// (status ok, no variant) include it, else the only GPU they come from;
// InvalidArgument when `gpu` has none, when there is none, or when there are
// several and `gpu` is empty.
absl::StatusOr<std::string> ChooseGpu(absl::Span<const TuneRecord> records, std::string_view target,
                                      const std::string& gpu);

// Of the records for `target` on `gpu` without a variant, each schedule's
// newest: the highest seq, among equal ones the later in `records` (a
// schedule measured again, by this kilnc or another, counts as measured
// last). Where `current_codes` lists a record's shape ("family|dtype|rows|
// cols", ShapeKey), only records of those codes count. In the order of each
// schedule's first record; pointers into `records`.
struct NewestRecords {
  std::vector<const TuneRecord*> records;
  int superseded = 0;   // older records of a schedule left out
  int not_current = 0;  // records of a listed shape with another code
};
NewestRecords NewestOfEachSchedule(absl::Span<const TuneRecord> records, std::string_view target,
                                   const std::string& gpu,
                                   const std::map<std::string, std::set<std::string>>& current_codes);

struct ExportOptions {
  std::string target = "sm_90";
  std::string gpu;  // the GPU whose results to export; empty: the only one in the records
  // Per shape ("family|dtype|rows|cols", ShapeKey), the codes of the
  // candidates as this kilnc compiles them (a search just run): records of
  // those shapes with another code are left out. Shapes not listed take
  // every record.
  std::map<std::string, std::set<std::string>> current_codes;
};

// "family|dtype|rows|cols" of a record's shape (ExportOptions).
std::string ShapeKey(const ScheduleKey& key);

struct ExportedTable {
  ScheduleTable table;
  std::vector<std::string> comments;  // per entry of `table` ("" for none): what was measured
  int tuned_entries = 0;
  // Records left out because the same schedule has a newer one of another
  // code (another kilnc measured it), and records of a searched shape left
  // out for not being of the search's codes.
  int superseded = 0, not_current = 0;
};

// For every (family, dtype, rows, cols) of `records` (target and GPU
// matching, status ok, no variant, a current code where the options list
// the shape's; of records of the same schedule with different codes, the
// newest: the highest seq, then the later in `records`), the fastest
// schedule, as an entry for
// exactly that shape; then `base`'s entries (the shipped table: catch-alls
// for unknown shapes), minus those for exactly a shape tuned now, each
// keeping its own provenance (base's, if it had none). The table's
// provenance is TUNED with the GPU, SM count and driver of the winners and
// the latest date they were measured. InvalidArgument when no record is
// usable or the records come from several GPUs and none is chosen.
absl::StatusOr<ExportedTable> ExportTable(absl::Span<const TuneRecord> records, const ScheduleTable& base,
                                          const ExportOptions& options);
// The table as a .txtpb file: a header comment, then one entry per line,
// each tuned entry preceded by its comment.
std::string FormatTable(const ExportedTable& exported);

}  // namespace kiln::schedules

#endif  // KILN_SCHEDULES_TUNING_H_
