// kiln profile: where the time of one decode step and of one prefill chunk
// goes, kernel by kernel.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/commands/commands.h"
#include "runtime/commands/perf_common.h"
#include "runtime/commands/session.h"
#include "runtime/perf/attribution.h"
#include "runtime/perf/bandwidth_probe.h"
#include "runtime/perf/bench_options.h"
#include "runtime/perf/kernel_table.h"
#include "runtime/perf/measure.h"
#include "runtime/perf/read_bytes.h"
#include "support/command_line.h"
#include "support/json_writer.h"
#include "support/status_macros.h"

ABSL_FLAG(int64_t, depth, 0, "profile decode at this context depth");
ABSL_FLAG(int64_t, prompt_length, 0, "prefill chunk to profile, in tokens; 0 = the prefill plan's chunk");
ABSL_FLAG(std::string, by, "kernel", "one row per kernel or per family");
ABSL_FLAG(bool, attribution, false, "also time the decode graph with each kernel swapped for perfect reads");

namespace kiln::runtime {
namespace {

constexpr char kProfileUsageHead[] = R"(usage: kiln profile -b X.kiln -m X.gguf [--depth D] [--steps N]
                    [--prompt-length L] [--by kernel|family] [--attribution] [--json]

Times every kernel launch of decode steps and of prefill chunks (eagerly,
a CUDA event between launches, the GPU held until all are queued) and prints
a table for each, most time first: per kernel (or per family) its launches
per step, total ms per step, p50/p90/max us of one launch, GB/s from the
bytes the bundle says it reads, and its share of the step's wall time on the
normal path (the decode graph; the prefill as `kiln run` feeds it).

  --depth D            decode at this context depth, prefilled first (default 0)
  --steps N            decode steps profiled (default 128)
  --prompt-length L    prefill chunk length (default: the prefill plan's chunk)
  --reps N             prefill chunks profiled (default 3)
  --by kernel|family   one row per kernel (default) or per kernel family
  --attribution        then time the decode step through its graph once as
                       compiled and once per kernel with all of that kernel's
                       launches swapped for perfect reads of their bytes (the
                       launch floor's read kernel): what the step saves is
                       what the kernel costs in the graph beyond a perfect
                       memory-bound kernel (--steps steps each; the swapped
                       steps' outputs are wrong by design, only time counts)
  --json               JSON instead of the tables
)";

constexpr int64_t kWarmupSteps = 4;

int Fail(const absl::Status& s) { return FailCommand("kiln", "profile", s); }

struct Profile {
  std::string gpu, kernels;
  int64_t context = 0;
  KernelTable decode, prefill;
  std::optional<Attribution> attribution;
};

absl::StatusOr<Profile> Measure(GroupBy group) {
  BenchOptions o;
  o.depths = {absl::GetFlag(FLAGS_depth)};
  o.steps = absl::GetFlag(FLAGS_steps);
  o.reps = absl::GetFlag(FLAGS_reps);
  o.warmup = kWarmupSteps;
  o.profile_steps = o.steps;
  if (o.depths[0] < 0) return absl::InvalidArgumentError(absl::StrCat("--depth ", o.depths[0], " is negative"));
  const int64_t chunk_flag = absl::GetFlag(FLAGS_prompt_length);
  if (chunk_flag < 0) return absl::InvalidArgumentError(absl::StrCat("--prompt-length ", chunk_flag, " is negative"));
  o.prompt_lengths = {std::max<int64_t>(chunk_flag, 1)};
  RETURN_IF_ERROR(CheckBenchOptions(o));
  absl::StatusOr<Session> session = OpenSession([&](const Manifest& m, int64_t ctx_size) -> absl::StatusOr<int64_t> {
    const int64_t max_tokens = m.prefill().max_tokens();
    if (chunk_flag > max_tokens)
      return absl::InvalidArgumentError(absl::StrCat("--prompt-length ", chunk_flag,
                                                     " exceeds the prefill plan's chunk of ", max_tokens, " tokens"));
    o.prompt_lengths = {chunk_flag > 0 ? chunk_flag : std::min(max_tokens, m.config().context_length())};
    return ChooseBenchContext(o, ctx_size, m.config().context_length(), "--depth, --prompt-length, --steps");
  });
  if (!session.ok()) return ExplainContext(session.status(), "--depth, --prompt-length and --steps");
  Executor& ex = *session->executor;
  const Manifest& m = session->bundle->manifest();
  if (absl::GetFlag(FLAGS_attribution) && !HasReadBytes(m))
    return absl::FailedPreconditionError("--attribution: the bundle states no bytes read per kernel (recompile it)");
  Profile p;
  p.gpu = ex.device().name;
  p.kernels = DescribeKernels(ex.sections());
  p.context = ex.context();

  PerfProgress("profile", absl::StrCat("decode at depth ", o.depths[0]));
  ASSIGN_OR_RETURN(DecodeRun run, RunDecode(ex, m, o.depths[0], o.warmup, o.steps, o.profile_steps, /*ahead=*/true));
  const int64_t profiled = static_cast<int64_t>(run.launch_us.size());
  ASSIGN_OR_RETURN(p.decode, BuildKernelTable(m, m.decode(), "decode step",
                                              {1, run.profile_position + profiled / 2, ex.context()}, run.launch_us,
                                              run.result.ms_per_token, group));

  const int64_t chunk = o.prompt_lengths[0];
  PerfProgress("profile", absl::StrCat("prefill chunk of ", chunk, " tokens"));
  ASSIGN_OR_RETURN(PrefillResult wall, MeasurePrefill(ex, chunk, o.reps));
  ASSIGN_OR_RETURN(std::vector<std::vector<double>> samples, ProfilePrefillChunks(ex, chunk, o.reps));
  ASSIGN_OR_RETURN(p.prefill, BuildKernelTable(m, m.prefill(), "prefill chunk", {chunk, 0, ex.context()}, samples,
                                               wall.ms, group));
  if (!absl::GetFlag(FLAGS_attribution)) return p;
  PerfProgress("profile", absl::StrCat("attribution: the decode graph with each of ", m.kernels_size(),
                                       " kernels swapped"));
  ASSIGN_OR_RETURN(ReadRing ring, OpenReadRing(ex.device().ordinal, "the attribution's reads"));
  ASSIGN_OR_RETURN(ReadProbeKernel probe, ReadProbeKernel::Load(*ring.ctx, ring.ctx->device().supports_pdl()));
  ASSIGN_OR_RETURN(p.attribution, MeasureAttribution(ex, m, probe, ring.buffer, o.depths[0], o.warmup, o.steps));
  return p;
}

std::string ProfileJson(const Profile& p) {
  JsonWriter w;
  w.BeginObject();
  w.Key("gpu").String(p.gpu);
  w.Key("kernels").String(p.kernels);
  w.Key("context").Int(p.context);
  w.Key("decode");
  WriteKernelTableJson(p.decode, w);
  w.Key("prefill");
  WriteKernelTableJson(p.prefill, w);
  if (p.attribution) {
    w.Key("attribution");
    WriteAttributionJson(*p.attribution, w);
  }
  w.EndObject();
  return w.str();
}

}  // namespace

int RunProfile(const std::vector<std::string>& args) {
  static const std::string usage = std::string(kProfileUsageHead) + ModelFlagsHelp("what the measurements need");
  ParsedArgs parsed = ParseCommandArgs("kiln", "profile", args, usage.c_str(), JoinFlags({kModelFlags, kPerfFlags, {"depth", "prompt_length", "by", "attribution"}}));
  if (parsed.exit_code) return *parsed.exit_code;
  if (!parsed.positional.empty())
    return Fail(UsageError("unexpected argument '" + parsed.positional[0] + "'"));
  const std::string by = absl::GetFlag(FLAGS_by);
  if (by != "kernel" && by != "family")
    return Fail(UsageError(absl::StrCat("--by ", by, ": want kernel or family")));
  absl::StatusOr<Profile> p = Measure(by == "family" ? GroupBy::kFamily : GroupBy::kKernel);
  if (!p.ok()) return Fail(p.status());
  const std::string out =
      absl::GetFlag(FLAGS_json)
          ? ProfileJson(*p)
          : absl::StrFormat("kiln profile on %s (%s), context %d\n\n%s\n%s%s", p->gpu, p->kernels, p->context,
                            FormatKernelTable(p->decode), FormatKernelTable(p->prefill),
                            p->attribution ? absl::StrCat("\n", FormatAttribution(*p->attribution)) : "");
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace kiln::runtime
