// Candidate tables for choosing schedules inside the decode graph
// (docs/tuning.md, "Choosing inside the graph"). `kilnc tune` times each
// kernel alone, back to back with itself; inside the decode graph its
// neighbours change what wins (bench/RESULTS.md, session 18). For each shape
// the base table has an exact entry for, this takes the K fastest distinct
// correct schedules the tune records hold and makes one table per schedule:
// the base with only that entry's schedule replaced. Compiling a bundle with
// each and timing it with `kiln bench` (tools/gpu_graph_select.sh) picks the
// shape's schedule as the step sees it.
#ifndef KILN_SCHEDULES_GRAPH_CANDIDATES_H_
#define KILN_SCHEDULES_GRAPH_CANDIDATES_H_

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
  int top = 6;                        // schedules per shape
};

struct CandidateTable {
  std::string name;      // "matvec_q4_k_5120x4096-0": family, dtype, shape, rank (0 the fastest alone)
  ScheduleKey shape;
  double us = 0;         // its fastest correct time alone
  std::string schedule;  // CanonicalSchedule
  ScheduleTable table;   // the base with the shape's entry set to `schedule`
};

// Per shape of `records` with an exact entry in `base` (min = max rows and
// cols; the options' families, dtypes and shapes), the `top` fastest
// distinct schedules among the correct records (status ok, no variant,
// `target`, the chosen GPU), fastest first, shapes in ShapeKey order. A
// schedule counts once at its fastest time, however a record spelled it
// (old caches leave out fields at their default) and whatever code measured
// it: the graph times it again. InvalidArgument for top < 1, a record whose
// schedule does not parse, or no candidate at all.
absl::StatusOr<std::vector<CandidateTable>> GraphCandidates(absl::Span<const TuneRecord> records,
                                                            const ScheduleTable& base,
                                                            const CandidateOptions& options);

// A candidate's table as a .txtpb file, with a header comment saying what
// it is.
std::string FormatCandidateTable(const CandidateTable& candidate);
// index.tsv: one line per candidate: name, "family dtype RxC", µs alone
// (3 decimals), schedule.
std::string FormatCandidateIndex(absl::Span<const CandidateTable> candidates);

}  // namespace kiln::schedules

#endif  // KILN_SCHEDULES_GRAPH_CANDIDATES_H_
