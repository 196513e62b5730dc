// kiln bench: how fast a bundle runs on this GPU, against the GPU's own read
// bandwidth measured in the same run (design.md, "The performance model").
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "runtime/commands/commands.h"
#include "runtime/commands/perf_common.h"
#include "runtime/commands/session.h"
#include "runtime/perf/bandwidth_probe.h"
#include "runtime/perf/bench_options.h"
#include "runtime/perf/launch_floor.h"
#include "runtime/perf/measure.h"
#include "runtime/perf/read_bytes.h"
#include "support/command_line.h"
#include "support/status_macros.h"

ABSL_FLAG(std::string, prompt_lengths, "512,3700",
          "prefill speed at these prompt lengths; the first also times the first token");
ABSL_FLAG(std::string, depths, "0,4096,16384", "decode speed at these context depths");
ABSL_FLAG(bool, no_decode_ahead, false,
          "time decode one step at a time, not with the next step queued before the host waits for the last "
          "(as `kiln run` decodes greedily)");

namespace kiln::runtime {
namespace {

constexpr char kBenchUsageHead[] = R"(usage: kiln bench -b X.kiln -m X.gguf [--json] [--steps N]
                  [--prompt-lengths 512,3700] [--depths 0,4096,16384] [--no-decode-ahead]

Measures the bundle on this GPU and prints one table (--json: the same
data): prefill tok/s per prompt length; decode tok/s and ms/token at each
context depth (prefilled first), through the decode graph as `kiln run`
decodes; kernel time per token (every launch timed, eagerly) against that
wall time; host launches, syncs and copies per token; the weight and KV
bytes read per token, the GB/s achieved, and that as a percentage of this
GPU's read bandwidth, measured in the same run by kiln's own probe; the
launch floor: the decode graph's launches replayed as perfect reads of
their bytes, one after another (what one kernel per launch costs at best),
and that against the step's time; the
time from process start to the first token, and the first request's time to
first token against the second's. The context is sized for what is measured
unless --ctx-size is given.

  --prompt-lengths L,..  prefill prompt lengths (default 512,3700)
  --depths D,..          decode context depths (default 0,4096,16384)
  --steps N              decode steps timed at each depth (default 128)
  --reps N               prefill repetitions; the median counts (default 3)
  --no-decode-ahead      time decode one step at a time (the host waits for
                         each token before it queues the next step) instead
                         of with the next step queued ahead, as `kiln run` does
  --json                 JSON instead of the table
)";

int Fail(const absl::Status& s) { return FailCommand("kiln", "bench", s); }

absl::StatusOr<BenchOptions> OptionsFromFlags() {
  BenchOptions o;
  ASSIGN_OR_RETURN(o.prompt_lengths, ParseLengthList(absl::GetFlag(FLAGS_prompt_lengths), "prompt-lengths", false));
  ASSIGN_OR_RETURN(o.depths, ParseLengthList(absl::GetFlag(FLAGS_depths), "depths", true));
  o.steps = absl::GetFlag(FLAGS_steps);
  o.reps = absl::GetFlag(FLAGS_reps);
  o.decode_ahead = !absl::GetFlag(FLAGS_no_decode_ahead);
  RETURN_IF_ERROR(CheckBenchOptions(o));
  return o;
}

absl::StatusOr<BenchReport> Bench(const BenchOptions& o) {
  absl::StatusOr<Session> session = OpenSession([&](const Manifest& m, int64_t ctx_size) {
    return ChooseBenchContext(o, ctx_size, m.config().context_length());
  });
  if (!session.ok()) return ExplainContext(session.status(), "--depths, --prompt-lengths and --steps");
  Executor& ex = *session->executor;
  const Manifest& m = session->bundle->manifest();
  BenchReport r;
  r.gpu = ex.device().name;
  r.kernels = DescribeKernels(ex.sections());
  r.context = ex.context();
  r.kernels_per_token = m.decode().launches_size() + 1;
  r.bytes_known = HasReadBytes(m);
  r.decode_ahead = o.decode_ahead;

  // The first request after start-up, then the same one again: warm-up in
  // Executor::Create should make them equal.
  PerfProgress("bench", "time to first token");
  const std::vector<int32_t> prompt = BenchTokens(o.prompt_lengths[0], ex.n_vocab());
  r.ttft_prompt_tokens = o.prompt_lengths[0];
  ASSIGN_OR_RETURN(r.first_ttft_ms, TimeToFirstToken(ex, prompt));
  absl::StatusOr<double> age = ProcessAgeSeconds();
  r.startup_to_first_token_ms = age.ok() ? 1e3 * *age : std::numeric_limits<double>::quiet_NaN();
  ASSIGN_OR_RETURN(r.second_ttft_ms, TimeToFirstToken(ex, prompt));

  for (int64_t tokens : o.prompt_lengths) {
    PerfProgress("bench", absl::StrCat("prefill of ", tokens, " tokens"));
    ASSIGN_OR_RETURN(PrefillResult p, MeasurePrefill(ex, tokens, o.reps));
    r.prefill.push_back(p);
  }
  for (int64_t depth : o.depths) {
    PerfProgress("bench", absl::StrCat("decode at depth ", depth));
    ASSIGN_OR_RETURN(DecodeRun run, RunDecode(ex, m, depth, o.warmup, o.steps, o.profile_steps, o.decode_ahead));
    r.decode.push_back(run.result);
  }

  PerfProgress("bench", "read bandwidth probe");
  ASSIGN_OR_RETURN(ReadRing ring, OpenReadRing(ex.device().ordinal, "the bandwidth probe"));
  ASSIGN_OR_RETURN(ProbeResult probe, MeasureReadBandwidth(*ring.ctx, ring.buffer));
  r.probe_gb_per_s = probe.gb_per_s();
  r.probe_bytes = probe.bytes;
  if (!r.bytes_known) return r;
  PerfProgress("bench", "launch floor at each depth");
  std::vector<std::vector<uint64_t>> steps;
  for (const DecodeResult& d : r.decode) {
    ASSIGN_OR_RETURN(std::vector<ReadBytes> each, PlanLaunchReadBytes(m, m.decode(), 1, d.bytes_position, r.context));
    std::vector<uint64_t>& launch_bytes = steps.emplace_back();
    for (const ReadBytes& b : each) launch_bytes.push_back(b.total());
    launch_bytes.push_back(0);  // the step advance
  }
  ASSIGN_OR_RETURN(std::vector<LaunchFloor> floors, MeasureLaunchFloors(*ring.ctx, ring.buffer, steps));
  for (size_t i = 0; i < r.decode.size(); ++i) r.decode[i].floor_ms_per_token = floors[i].median_ms;
  return r;
}

}  // namespace

int RunBench(const std::vector<std::string>& args) {
  static const std::string usage = std::string(kBenchUsageHead) + ModelFlagsHelp("what the measurements need");
  ParsedArgs parsed = ParseCommandArgs("kiln", "bench", args, usage.c_str(), JoinFlags({kModelFlags, kPerfFlags, {"prompt_lengths", "depths", "no_decode_ahead"}}));
  if (parsed.exit_code) return *parsed.exit_code;
  if (!parsed.positional.empty())
    return Fail(UsageError("unexpected argument '" + parsed.positional[0] + "'"));
  absl::StatusOr<BenchOptions> options = OptionsFromFlags();
  if (!options.ok()) return Fail(options.status());
  absl::StatusOr<BenchReport> report = Bench(*options);
  if (!report.ok()) return Fail(report.status());
  const std::string out = absl::GetFlag(FLAGS_json) ? BenchReportJson(*report) : FormatBenchReport(*report);
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace kiln::runtime
