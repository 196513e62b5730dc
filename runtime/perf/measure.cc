#include "runtime/perf/measure.h"

#include <time.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "runtime/perf/read_bytes.h"
#include "runtime/perf/stats.h"
#include "support/read_file.h"
#include "support/status_macros.h"

namespace kiln::runtime {
namespace {

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double PerToken(int64_t count, int64_t tokens) { return static_cast<double>(count) / static_cast<double>(tokens); }

}  // namespace

std::vector<int32_t> BenchTokens(int64_t n, int64_t n_vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int32_t& id : ids) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;  // Knuth's MMIX LCG
    id = static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(n_vocab > 0 ? n_vocab : 1));
  }
  return ids;
}

absl::StatusOr<double> ProcessAgeSeconds() {
  // proc(5): field 22 of /proc/self/stat is the start time in clock ticks
  // after boot; the fields after the parenthesized command name are split
  // by spaces (the name itself may hold any).
  absl::StatusOr<std::string> read = ReadTextFile("/proc/self/stat");
  const std::string stat = read.ok() ? *std::move(read) : "";
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return absl::NotFoundError("/proc/self/stat is not readable");
  std::vector<std::string> fields = absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipEmpty());
  // fields[0] is field 3 (state), so field 22 is fields[19].
  uint64_t start_ticks = 0;
  if (fields.size() < 20 || !absl::SimpleAtoi(fields[19], &start_ticks))
    return absl::NotFoundError("/proc/self/stat has no start time");
  timespec now;
  if (clock_gettime(CLOCK_BOOTTIME, &now) != 0) return absl::NotFoundError("no CLOCK_BOOTTIME");
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec) -
         static_cast<double>(start_ticks) / ticks;
}

absl::StatusOr<double> TimeToFirstToken(Executor& ex, absl::Span<const int32_t> prompt) {
  RETURN_IF_ERROR(ex.Rewind(0));
  const auto t0 = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(ex.Prefill(prompt, Logits::kNone).status());
  return MsSince(t0);
}

absl::StatusOr<PrefillResult> MeasurePrefill(Executor& ex, int64_t tokens, int64_t reps) {
  const std::vector<int32_t> prompt = BenchTokens(tokens, ex.n_vocab());
  std::vector<double> ms;
  for (int64_t r = 0; r < reps; ++r) {
    ASSIGN_OR_RETURN(double t, TimeToFirstToken(ex, prompt));
    ms.push_back(t);
  }
  return PrefillResult{tokens, Median(ms)};
}

absl::StatusOr<DecodeRun> RunDecode(Executor& ex, const Manifest& m, int64_t depth, int64_t warmup, int64_t steps,
                                    int64_t profile_steps, bool ahead) {
  if (depth + warmup + steps > ex.context())
    return absl::InvalidArgumentError(absl::StrCat("decode from depth ", depth, " for ", warmup, " + ", steps,
                                                   " steps exceeds the context of ", ex.context(), " tokens"));
  DecodeRun run;
  DecodeResult& d = run.result;
  d.depth = depth;
  d.steps = steps;
  RETURN_IF_ERROR(ex.Rewind(0));
  int32_t next = BenchTokens(1, ex.n_vocab())[0];
  if (depth > 0) {
    ASSIGN_OR_RETURN(StepResult r, ex.Prefill(BenchTokens(depth, ex.n_vocab()), Logits::kNone));
    next = r.argmax;
  }
  // `n` greedy steps from `next`, which becomes the last step's argmax.
  auto greedy = [&](int64_t n) -> absl::Status {
    if (n == 0) return absl::OkStatus();
    if (ahead) {
      ASSIGN_OR_RETURN(int64_t ran, ex.DecodeGreedy(next, n, [&](int32_t id) {
        next = id;
        return true;
      }));
      RET_CHECK(ran == n);
      return absl::OkStatus();
    }
    for (int64_t i = 0; i < n; ++i) {
      ASSIGN_OR_RETURN(StepResult r, ex.Decode(next, Logits::kNone));
      next = r.argmax;
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(greedy(warmup));
  const int64_t start = ex.position();
  const int32_t start_token = next;
  ex.ResetCounters();
  const auto t0 = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(greedy(steps));
  d.ms_per_token = MsSince(t0) / static_cast<double>(steps);
  const ExecutorCounters c = ex.counters();
  d.launches_per_token = PerToken(c.launches, steps);
  d.syncs_per_token = PerToken(c.syncs, steps);
  d.copies_per_token = PerToken(c.copies, steps);
  d.bytes_position = start + steps / 2;
  ASSIGN_OR_RETURN(d.bytes_per_token, PlanReadBytes(m, m.decode(), 1, d.bytes_position, ex.context()));

  // The same positions again, eagerly, every launch timed.
  RETURN_IF_ERROR(ex.Rewind(start));
  run.profile_position = start;
  next = start_token;
  double kernel_us = 0;
  for (int64_t i = 0; i < profile_steps && ex.position() < ex.context(); ++i) {
    ASSIGN_OR_RETURN(ProfiledStep p, ex.ProfileDecode(next));
    next = p.result.argmax;
    for (double us : p.launch_us) kernel_us += us;
    run.launch_us.push_back(std::move(p.launch_us));
  }
  if (!run.launch_us.empty())
    d.kernel_ms_per_token = 1e-3 * kernel_us / static_cast<double>(run.launch_us.size());
  return run;
}

absl::StatusOr<std::vector<std::vector<double>>> ProfilePrefillChunks(Executor& ex, int64_t tokens, int64_t reps) {
  const std::vector<int32_t> prompt = BenchTokens(tokens, ex.n_vocab());
  std::vector<std::vector<double>> out;
  for (int64_t r = 0; r < reps; ++r) {
    RETURN_IF_ERROR(ex.Rewind(0));
    ASSIGN_OR_RETURN(ProfiledStep p, ex.ProfilePrefill(prompt));
    out.push_back(std::move(p.launch_us));
  }
  return out;
}

}  // namespace kiln::runtime
