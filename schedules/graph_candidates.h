// Candidate tables for choosing schedules inside the decode graph
// (docs/tuning.md, "Choosing inside the decode graph"). `kilnc tune` times each
// kernel alone, back to back with itself; inside the decode graph its
// neighbours change what wins (bench/RESULTS.md, session 18). For each shape
// the base table has an exact entry for, this takes the K fastest distinct
// correct schedules the tune records hold and makes one table per schedule:
// the base with only that entry's schedule replaced. Compiling a bundle with
// each and timing it with `kiln bench` (tools/gpu_graph_select.sh) picks the
// shape's schedule as the step sees it.
#ifndef KILN_SCHEDULES_GRAPH_CANDIDATES_H_
#define KILN_SCHEDULES_GRAPH_CANDIDATES_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "schedules/schedule.pb.h"
#include "schedules/schedules.h"
#include "schedules/tuning.h"

namespace kiln::schedules {

struct CandidateOptions {
  std::string target = "sm_90";
  std::string gpu;                    // empty: the only GPU of the records (ChooseGpu)
  std::set<std::string> families;     // empty: every family
  std::set<std::string> dtypes;       // weight dtypes (the KV cache's for attention); empty: every one
  // ShapeKeys to take (the shapes a search just ran); empty: every shape.
  std::set<std::string> shapes;
  // Per ShapeKey, the codes of the candidates as this kilnc compiles them
  // (a search just run), as ExportOptions::current_codes.
  std::map<std::string, std::set<std::string>> current_codes;
  int top = 6;                        // schedules per shape
};

struct CandidateTable {
  std::string name;      // "matvec_q4_k_5120x4096-0": family, dtype, shape, rank (0 the fastest alone)
  ScheduleKey shape;
  double us = 0;         // its time alone (its newest record's)
  std::string schedule;  // CanonicalSchedule
  ScheduleTable table;   // the base with the shape's entry set to `schedule`
};

struct CandidateSet {
  std::vector<CandidateTable> tables;  // shapes in ShapeKey order, each fastest first
  int superseded = 0, not_current = 0;  // as NewestOfEachSchedule counts them
  // Newest correct records whose schedule no longer parses (a field since
  // removed from schedule.proto): left out.
  int unparsed = 0;
};

// Per shape of `records` with an exact entry in `base` (min = max rows and
// cols; the options' families, dtypes and shapes), the `top` fastest
// schedules whose newest record (NewestOfEachSchedule: `target`, the chosen
// GPU, no variant, the current codes where given) is correct, fastest
// first. A schedule is one candidate however a cache spelled it (old
// caches leave out fields at their default; ParseRecord spells them in
// full). Each table is checked to load
// and to give the shape the replaced entry. InvalidArgument for top < 1, a
// base for another target, ChooseGpu's errors, a base whose exact entry
// an earlier range entry hides, or no candidate at all.
absl::StatusOr<CandidateSet> GraphCandidates(absl::Span<const TuneRecord> records, const ScheduleTable& base,
                                             const CandidateOptions& options);

// A candidate's table as a .txtpb file, with a header comment saying what
// it is.
std::string FormatCandidateTable(const CandidateTable& candidate);
// index.tsv: one line per candidate: name, "family dtype RxC", µs alone
// (3 decimals), schedule.
std::string FormatCandidateIndex(absl::Span<const CandidateTable> candidates);

}  // namespace kiln::schedules

#endif  // KILN_SCHEDULES_GRAPH_CANDIDATES_H_
