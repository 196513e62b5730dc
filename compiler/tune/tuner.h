// The search of `kilnc tune` (docs/tuning.md): for every tuning unit, its
// candidates are compiled here (LLVM, ptxas: a failure or a spill rejects a
// candidate), then run one at a time in a worker process
// (worker_process.h) that checks and times them on the GPU. A candidate
// that faults, hangs past the time limit or kills the worker is recorded
// with the reason and the worker is restarted. Every result is appended to
// the cache as it arrives; candidates already in the cache are skipped.
#ifndef KILN_COMPILER_TUNE_TUNER_H_
#define KILN_COMPILER_TUNE_TUNER_H_

#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "compiler/tune/candidates.h"
#include "schedules/tuning.h"

namespace kiln::tune {

struct TuneOptions {
  std::string target = "sm_90";
  // Stop starting candidates after this long (what finished is kept).
  absl::Duration budget = absl::InfiniteDuration();
  // A candidate without a result after this long is a timeout: the worker
  // is killed and restarted. Covers loading, checking and timing.
  absl::Duration candidate_timeout = absl::Seconds(30);
  int limit_per_shape = 0;          // > 0: only the first N candidates of each unit
  int samples = 15;                 // timed batches per candidate (the median counts)
  int64_t rotate_bytes = int64_t{512} << 20;  // weight copies cycled while timing (> the L2)
  int64_t attention_position = 4095;          // decode attention is timed at this position
  std::vector<std::string> worker_argv;       // how to start a worker (kilnc tune-worker)
  bool inject_test_candidates = false;        // the GPU test's faulting and hanging kernels
  int compile_threads = 0;                    // 0: every core
  bool verbose = false;                       // one log line per candidate
  std::string date;                           // recorded with each result (YYYY-MM-DD)
  // The search spaces (checked); unset: schedules/spaces.txtpb, built in.
  std::optional<schedules::SearchSpaces> spaces;
};

struct UnitReport {
  schedules::ScheduleKey key;
  int launches = 0;
  int candidates = 0;  // after the ABI filter (+ synthetic ones)
  int abi_rejected = 0;
  int ok = 0, wrong = 0, faults = 0, timeouts = 0, rejected = 0, errors = 0, not_run = 0;
  schedules::TuneRecord current;  // the unit's current schedule (us = 0: not measured)
  schedules::TuneRecord best;     // the fastest correct one (us = 0: none)
};

struct TuneReport {
  schedules::DeviceProvenance device;
  int total = 0;      // candidates of every unit
  int cached = 0;     // already in the cache at the start
  int measured = 0;   // finished now (any status)
  int faults = 0, timeouts = 0, worker_restarts = 0;
  bool budget_exhausted = false;
  std::vector<UnitReport> units;
  // Per shape (schedules::ShapeKey), the codes of this search's candidates:
  // what an export right after it keeps (ExportOptions::current_codes).
  std::map<std::string, std::set<std::string>> codes;
};

// Runs the search. `log` gets one line per finished unit (and per candidate
// when verbose); a progress line redraws on a terminal. Errors: no worker
// could start (FailedPrecondition, with the worker's reason), the cache
// cannot be written.
absl::StatusOr<TuneReport> RunTuning(const std::vector<TuneUnit>& units, schedules::TuneCache& cache,
                                     const TuneOptions& options, std::FILE* log);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_TUNER_H_
