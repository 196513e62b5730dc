#include "schedules/graph_candidates.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/text_format.h"
#include "support/status_macros.h"

namespace kiln::schedules {
namespace {

bool Takes(const std::set<std::string>& allowed, const std::string& value) {
  return allowed.empty() || allowed.count(value) > 0;
}

// The index of base's first entry for exactly the shape, or -1.
int ExactEntry(const ScheduleTable& base, const ScheduleKey& key) {
  for (int i = 0; i < base.entries_size(); ++i) {
    const ScheduleEntry& e = base.entries(i);
    if (e.family() == key.family && e.weight_dtype() == key.weight_dtype && e.min_rows() == key.rows &&
        e.max_rows() == key.rows && e.min_cols() == key.cols && e.max_cols() == key.cols)
      return i;
  }
  return -1;
}

// "matvec q4_k 5120x4096": a shape in messages, headers and index.tsv.
std::string ShapeName(const ScheduleKey& k) {
  return absl::StrCat(k.family, " ", k.weight_dtype, " ", k.rows, "x", k.cols);
}

// The table loads like a shipped one and gives the shape `want`.
absl::Status CheckTable(const CandidateTable& c, const ScheduleEntry& want) {
  ScheduleLibrary lib;
  RETURN_IF_ERROR(lib.AddTable(c.table, c.name));
  ASSIGN_OR_RETURN(ScheduleChoice got, lib.Lookup(c.shape, c.table.target()));
  if (got.entry.SerializeAsString() != want.SerializeAsString())
    return absl::InvalidArgumentError(absl::StrCat("the base table's exact entry for ", ShapeName(c.shape),
                                                   " is hidden by an earlier entry that also matches it: "
                                                   "its candidates would not change the kernel"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CandidateSet> GraphCandidates(absl::Span<const TuneRecord> records, const ScheduleTable& base,
                                             const CandidateOptions& options) {
  if (options.top < 1) return absl::InvalidArgumentError(absl::StrCat("--top ", options.top, ": give at least 1"));
  const std::string target = NormalizeTarget(options.target);
  if (NormalizeTarget(base.target()) != target)
    return absl::InvalidArgumentError(
        absl::StrCat("the base table is for ", base.target(), ", not for ", target, " (--base, --target)"));
  ASSIGN_OR_RETURN(const std::string gpu, ChooseGpu(records, target, options.gpu));
  // The records in scope. ParseRecord spelled each cached schedule in full,
  // so one schedule has one CandidateKey however a cache wrote it.
  std::map<std::string, int> entry_of;  // ShapeKey -> base's exact entry, -1 for none
  std::vector<TuneRecord> scoped;
  for (const TuneRecord& r : records) {
    const std::string shape = ShapeKey(r.key);
    if (!Takes(options.families, r.key.family) || !Takes(options.dtypes, r.key.weight_dtype) ||
        !Takes(options.shapes, shape))
      continue;
    auto [it, fresh] = entry_of.try_emplace(shape, -1);
    if (fresh) it->second = ExactEntry(base, r.key);
    if (it->second >= 0) scoped.push_back(r);  // else not a shape the table tunes
  }
  const NewestRecords newest = NewestOfEachSchedule(scoped, target, gpu, options.current_codes);
  CandidateSet out;
  out.superseded = newest.superseded;
  out.not_current = newest.not_current;
  std::map<std::string, std::vector<const TuneRecord*>> by_shape;
  for (const TuneRecord* r : newest.records) {
    if (r->status != TuneStatus::kOk) continue;
    ScheduleEntry e;
    e.set_family(r->key.family);
    if (!ParseSchedule(r->schedule, &e).ok()) {
      ++out.unparsed;
      continue;
    }
    by_shape[ShapeKey(r->key)].push_back(r);
  }
  for (auto& [shape, ranked] : by_shape) {
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const TuneRecord* a, const TuneRecord* b) { return a->us < b->us; });
    if (ranked.size() > static_cast<size_t>(options.top)) ranked.resize(static_cast<size_t>(options.top));
    const int entry = entry_of[shape];
    for (size_t i = 0; i < ranked.size(); ++i) {
      const TuneRecord& r = *ranked[i];
      CandidateTable c;
      c.name = absl::StrCat(r.key.family, "_", r.key.weight_dtype, "_", r.key.rows, "x", r.key.cols, "-", i);
      c.shape = r.key;
      c.schedule = r.schedule;
      c.us = r.us;
      c.table = base;
      ScheduleEntry* e = c.table.mutable_entries(entry);
      RETURN_IF_ERROR(ParseSchedule(c.schedule, e));
      c.schedule = CanonicalSchedule(*e);
      RETURN_IF_ERROR(CheckTable(c, *e));
      out.tables.push_back(std::move(c));
    }
  }
  if (out.tables.empty())
    return absl::InvalidArgumentError(absl::StrCat(
        "no correct result for ", target, " on '", gpu, "' of a shape with an exact entry in the base table (families ",
        options.families.empty() ? "any" : absl::StrJoin(options.families, ","), ", dtypes ",
        options.dtypes.empty() ? "any" : absl::StrJoin(options.dtypes, ","),
        out.unparsed > 0 ? absl::StrCat("; ", out.unparsed, " whose schedule no longer parses") : "", ")"));
  return out;
}

std::string FormatCandidateTable(const CandidateTable& c) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(c.table, &text);
  return absl::StrFormat(
      "# Graph candidate %s (kilnc tune --candidates): the base table with its %s entry set to\n"
      "# { %s }, %.3f us alone. Time it inside the decode graph: tools/gpu_graph_select.sh.\n%s",
      c.name, ShapeName(c.shape), c.schedule, c.us, text);
}

std::string FormatCandidateIndex(absl::Span<const CandidateTable> candidates) {
  std::string out;
  for (const CandidateTable& c : candidates)
    absl::StrAppendFormat(&out, "%s\t%s\t%.3f\t%s\n", c.name, ShapeName(c.shape), c.us, c.schedule);
  return out;
}

}  // namespace kiln::schedules
