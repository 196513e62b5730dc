#include "runtime/perf/attribution.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/perf/launch_floor.h"
#include "runtime/perf/measure.h"
#include "runtime/perf/read_bytes.h"
#include "support/status_macros.h"
#include "support/text_table.h"

namespace kiln::runtime {

absl::StatusOr<std::vector<LaunchGroup>> GroupLaunchesByKernel(const Manifest& m, const Plan& plan) {
  std::vector<LaunchGroup> groups;
  std::map<uint32_t, size_t> at;  // kernel index -> its group
  for (int i = 0; i < plan.launches_size(); ++i) {
    const uint32_t k = plan.launches(i).kernel();
    if (k >= static_cast<uint32_t>(m.kernels_size()))
      return absl::InvalidArgumentError(absl::StrCat("launch ", i, " names kernel ", k, ", which is out of range"));
    auto [it, added] = at.emplace(k, groups.size());
    if (added) groups.push_back({m.kernels(static_cast<int>(k)).name(), {}});
    groups[it->second].launches.push_back(i);
  }
  return groups;
}

absl::StatusOr<Attribution> MeasureAttribution(Executor& ex, const Manifest& m, const ReadProbeKernel& probe,
                                               const ReadBuffer& ring, int64_t depth, int64_t warmup,
                                               int64_t steps) {
  Attribution a;
  a.depth = depth;
  a.steps = steps;
  a.position = depth + warmup + steps / 2;
  ASSIGN_OR_RETURN(std::vector<LaunchGroup> groups, GroupLaunchesByKernel(m, m.decode()));
  ASSIGN_OR_RETURN(std::vector<ReadBytes> each, PlanLaunchReadBytes(m, m.decode(), 1, a.position, ex.context()));
  ASSIGN_OR_RETURN(DecodeRun compiled, RunDecode(ex, m, depth, warmup, steps, 0, /*ahead=*/true));
  a.compiled_ms = compiled.result.ms_per_token;
  // Whatever happens below, decoding goes on through the compiled graph
  // (an empty swap cannot fail) before the ring and the probe go.
  absl::Cleanup restore = [&] { (void)ex.SwapDecodeLaunches({}); };
  for (const LaunchGroup& g : groups) {
    AttributionRow row;
    row.kernel = g.kernel;
    row.per_step = static_cast<int64_t>(g.launches.size());
    std::vector<uint64_t> bytes;
    for (int i : g.launches) bytes.push_back(each[static_cast<size_t>(i)].total());
    absl::StatusOr<std::vector<uint64_t>> offsets = RingOffsets(bytes, ring.buffer.size());
    if (!offsets.ok()) return absl::FailedPreconditionError(offsets.status().message());
    std::map<int, size_t> slot;  // launch -> its read
    for (size_t j = 0; j < g.launches.size(); ++j) {
      slot[g.launches[j]] = j;
      row.bytes += bytes[j];
    }
    RETURN_IF_ERROR(ex.SwapDecodeLaunches([&](int launch, const cuda::Stream& stream) -> absl::StatusOr<bool> {
      auto it = slot.find(launch);
      if (it == slot.end()) return false;
      RETURN_IF_ERROR(probe.Launch(stream, ring.buffer.ptr() + (*offsets)[it->second], bytes[it->second]));
      return true;
    }));
    ASSIGN_OR_RETURN(DecodeRun run, RunDecode(ex, m, depth, warmup, steps, 0, /*ahead=*/true));
    row.ms_per_token = run.result.ms_per_token;
    a.rows.push_back(std::move(row));
  }
  std::sort(a.rows.begin(), a.rows.end(), [](const AttributionRow& x, const AttributionRow& y) {
    if (x.ms_per_token != y.ms_per_token) return x.ms_per_token < y.ms_per_token;
    return x.kernel < y.kernel;
  });
  return a;
}

std::string FormatAttribution(const Attribution& a) {
  std::string out = absl::StrFormat(
      "decode step in the graph from depth %d (bytes at P=%d), %d steps each: every launch of one kernel "
      "swapped for a perfect read of its bytes, the rest as compiled\n",
      a.depth, a.position, a.steps);
  TextTable table({"kernel", "count", "MB", "step ms", "saved ms", "saved %"});
  table.AddRow({"(as compiled)", "", "", absl::StrFormat("%.3f", a.compiled_ms), "", ""});
  for (const AttributionRow& r : a.rows)
    table.AddRow({r.kernel, absl::StrCat(r.per_step), absl::StrFormat("%.1f", 1e-6 * static_cast<double>(r.bytes)),
                  absl::StrFormat("%.3f", r.ms_per_token), absl::StrFormat("%.3f", a.saved_ms(r)),
                  absl::StrFormat("%.1f", a.compiled_ms > 0 ? 100.0 * a.saved_ms(r) / a.compiled_ms : 0.0)});
  return out + table.Render();
}

void WriteAttributionJson(const Attribution& a, JsonWriter& w) {
  w.BeginObject();
  w.Key("depth").Int(a.depth);
  w.Key("position").Int(a.position);
  w.Key("steps").Int(a.steps);
  w.Key("compiled_ms_per_token").Double(a.compiled_ms);
  w.Key("kernels").BeginArray();
  for (const AttributionRow& r : a.rows) {
    w.BeginObject();
    w.Key("name").String(r.kernel);
    w.Key("count").Int(r.per_step);
    w.Key("bytes").Int(static_cast<int64_t>(r.bytes));
    w.Key("swapped_ms_per_token").Double(r.ms_per_token);
    w.Key("saved_ms_per_token").Double(a.saved_ms(r));
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

}  // namespace kiln::runtime
