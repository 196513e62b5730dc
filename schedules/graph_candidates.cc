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

// The record's schedule with every field (a cache may leave out defaults).
absl::StatusOr<std::string> Canonical(const TuneRecord& r) {
  ScheduleEntry e;
  e.set_family(r.key.family);
  if (absl::Status s = ParseSchedule(r.schedule, &e); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat("a record of ", r.key.family, " ", r.key.weight_dtype, " ",
                                                   r.key.rows, "x", r.key.cols, " has a bad schedule '", r.schedule,
                                                   "': ", s.message()));
  return CanonicalSchedule(e);
}

}  // namespace

absl::StatusOr<std::vector<CandidateTable>> GraphCandidates(absl::Span<const TuneRecord> records,
                                                            const ScheduleTable& base,
                                                            const CandidateOptions& options) {
  if (options.top < 1) return absl::InvalidArgumentError(absl::StrCat("--top ", options.top, ": give at least 1"));
  const std::string target = NormalizeTarget(options.target);
  ASSIGN_OR_RETURN(const std::string gpu, ChooseGpu(records, target, options.gpu));
  // Per shape (ShapeKey order), each schedule's fastest time.
  struct Shape {
    ScheduleKey key;
    int entry = -1;
    std::map<std::string, double> fastest;
  };
  std::map<std::string, Shape> shapes;
  for (const TuneRecord& r : records) {
    if (NormalizeTarget(r.target) != target || r.device.gpu != gpu || r.status != TuneStatus::kOk ||
        !r.variant.empty() || !Takes(options.families, r.key.family) || !Takes(options.dtypes, r.key.weight_dtype) ||
        !Takes(options.shapes, ShapeKey(r.key)))
      continue;
    auto [it, fresh] = shapes.try_emplace(ShapeKey(r.key));
    Shape& s = it->second;
    if (fresh) {
      s.key = r.key;
      s.entry = ExactEntry(base, r.key);
    }
    if (s.entry < 0) continue;  // no exact entry: not a shape the table tunes
    ASSIGN_OR_RETURN(const std::string schedule, Canonical(r));
    auto [t, added] = s.fastest.try_emplace(schedule, r.us);
    if (!added) t->second = std::min(t->second, r.us);
  }
  std::vector<CandidateTable> out;
  for (const auto& [shape_key, s] : shapes) {
    std::vector<std::pair<std::string, double>> ranked(s.fastest.begin(), s.fastest.end());
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    if (ranked.size() > static_cast<size_t>(options.top)) ranked.resize(static_cast<size_t>(options.top));
    for (size_t i = 0; i < ranked.size(); ++i) {
      CandidateTable c;
      c.name = absl::StrCat(s.key.family, "_", s.key.weight_dtype, "_", s.key.rows, "x", s.key.cols, "-", i);
      c.shape = s.key;
      c.schedule = ranked[i].first;
      c.us = ranked[i].second;
      c.table = base;
      RETURN_IF_ERROR(ParseSchedule(c.schedule, c.table.mutable_entries(s.entry)));
      out.push_back(std::move(c));
    }
  }
  if (out.empty())
    return absl::InvalidArgumentError(absl::StrCat("no correct result for ", target, " on '", gpu,
                                                   "' of a shape with an exact entry in the base table",
                                                   options.families.empty() && options.dtypes.empty()
                                                       ? ""
                                                       : " (of the families and dtypes asked for)"));
  return out;
}

std::string FormatCandidateTable(const CandidateTable& c) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(c.table, &text);
  return absl::StrFormat(
      "# Graph candidate %s (kilnc tune --candidates): the base table with its %s %s %dx%d entry set to\n"
      "# { %s }, %.3f us alone. Time it inside the decode graph: tools/gpu_graph_select.sh.\n%s",
      c.name, c.shape.family, c.shape.weight_dtype, c.shape.rows, c.shape.cols, c.schedule, c.us, text);
}

std::string FormatCandidateIndex(absl::Span<const CandidateTable> candidates) {
  std::string out;
  for (const CandidateTable& c : candidates)
    absl::StrAppendFormat(&out, "%s\t%s %s %dx%d\t%.3f\t%s\n", c.name, c.shape.family, c.shape.weight_dtype,
                          c.shape.rows, c.shape.cols, c.us, c.schedule);
  return out;
}

}  // namespace kiln::schedules
