#include "runtime/perf/kernel_table.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "runtime/perf/read_bytes.h"
#include "runtime/perf/stats.h"
#include "support/status_macros.h"
#include "support/text_table.h"

namespace kiln::runtime {
namespace {

bool AllDigits(absl::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isdigit(c); });
}

// "4096x12288"
bool IsShape(absl::string_view s) {
  const size_t x = s.find('x');
  return x != absl::string_view::npos && AllDigits(s.substr(0, x)) && AllDigits(s.substr(x + 1));
}

double GbPerS(uint64_t bytes, double ms) { return ms > 0 ? 1e-6 * static_cast<double>(bytes) / ms : 0.0; }

}  // namespace

std::string KernelFamily(const Kernel& k) {
  if (!k.family().empty()) return k.family();
  std::vector<std::string> parts = absl::StrSplit(k.name(), '_');
  if (parts.size() > 1 && AllDigits(parts.back())) parts.pop_back();
  if (parts.size() > 1 && IsShape(parts.back())) parts.pop_back();
  return absl::StrJoin(parts, "_");
}

absl::StatusOr<KernelTable> BuildKernelTable(const Manifest& m, const Plan& plan, std::string title,
                                             const StepShape& shape, const std::vector<std::vector<double>>& launch_us,
                                             double wall_ms_per_step, GroupBy group) {
  if (launch_us.empty()) return absl::InvalidArgumentError(absl::StrCat(title, ": no profiled steps"));
  KernelTable t;
  t.title = std::move(title);
  t.shape = shape;
  t.steps = static_cast<int64_t>(launch_us.size());
  t.launches_per_step = plan.launches_size();
  t.wall_ms_per_step = wall_ms_per_step;
  struct Acc {
    KernelRow row;
    std::vector<double> us;
  };
  std::map<std::string, Acc> by_key;
  for (int i = 0; i < plan.launches_size(); ++i) {
    const uint32_t index = plan.launches(i).kernel();
    if (index >= static_cast<uint32_t>(m.kernels_size()))
      return absl::InvalidArgumentError(absl::StrCat(t.title, ": launch ", i, " names kernel ", index,
                                                     ", which is out of range"));
    const Kernel& k = m.kernels(index);
    const std::string family = KernelFamily(k);
    Acc& acc = by_key[group == GroupBy::kFamily ? family : k.name()];
    acc.row.name = group == GroupBy::kFamily ? family : k.name();
    acc.row.family = family;
    acc.row.per_step += 1;
    ASSIGN_OR_RETURN(ReadBytes b, LaunchReadBytes(k, shape.tokens, shape.position, shape.context));
    acc.row.bytes_per_step += b.total();
    for (size_t s = 0; s < launch_us.size(); ++s) {
      if (launch_us[s].size() != static_cast<size_t>(plan.launches_size()))
        return absl::InvalidArgumentError(absl::StrCat(t.title, ": profiled step ", s, " has ", launch_us[s].size(),
                                                       " launch times, the plan has ", plan.launches_size(),
                                                       " launches"));
      acc.us.push_back(launch_us[s][i]);
    }
  }
  for (auto& [key, acc] : by_key) {
    KernelRow& r = acc.row;
    double sum_us = 0;
    for (double us : acc.us) sum_us += us;
    r.ms_per_step = 1e-3 * sum_us / static_cast<double>(t.steps);
    r.p50_us = Percentile(acc.us, 0.5);
    r.p90_us = Percentile(acc.us, 0.9);
    r.max_us = Percentile(acc.us, 1.0);
    r.gb_per_s = GbPerS(r.bytes_per_step, r.ms_per_step);
    r.wall_percent = wall_ms_per_step > 0 ? 100.0 * r.ms_per_step / wall_ms_per_step : 0.0;
    t.kernel_ms_per_step += r.ms_per_step;
    t.rows.push_back(std::move(r));
  }
  std::sort(t.rows.begin(), t.rows.end(), [](const KernelRow& a, const KernelRow& b) {
    if (a.ms_per_step != b.ms_per_step) return a.ms_per_step > b.ms_per_step;
    return a.name < b.name;
  });
  return t;
}

std::string FormatKernelTable(const KernelTable& t) {
  std::string out = absl::StrFormat(
      "%s (T=%d, P=%d), %d profiled: %d launches, %.3f ms of kernels, %.3f ms wall per step\n", t.title,
      t.shape.tokens, t.shape.position, t.steps, t.launches_per_step, t.kernel_ms_per_step, t.wall_ms_per_step);
  TextTable table({"kernel", "family", "count", "total ms", "p50 us", "p90 us", "max us", "GB/s", "% wall"}, 2);
  uint64_t bytes = 0;
  for (const KernelRow& r : t.rows) {
    bytes += r.bytes_per_step;
    table.AddRow({r.name, r.family, absl::StrCat(r.per_step), absl::StrFormat("%.3f", r.ms_per_step),
                  absl::StrFormat("%.1f", r.p50_us), absl::StrFormat("%.1f", r.p90_us),
                  absl::StrFormat("%.1f", r.max_us), r.bytes_per_step ? absl::StrFormat("%.0f", r.gb_per_s) : "-",
                  absl::StrFormat("%.1f", r.wall_percent)});
  }
  table.AddRow({"total", "", absl::StrCat(t.launches_per_step), absl::StrFormat("%.3f", t.kernel_ms_per_step), "",
                "", "", bytes ? absl::StrFormat("%.0f", GbPerS(bytes, t.kernel_ms_per_step)) : "-",
                absl::StrFormat("%.1f", t.wall_ms_per_step > 0 ? 100.0 * t.kernel_ms_per_step / t.wall_ms_per_step
                                                               : 0.0)});
  return out + table.Render();
}

void WriteKernelTableJson(const KernelTable& t, JsonWriter& w) {
  w.BeginObject();
  w.Key("title").String(t.title);
  w.Key("tokens").Int(t.shape.tokens);
  w.Key("position").Int(t.shape.position);
  w.Key("steps_profiled").Int(t.steps);
  w.Key("launches_per_step").Int(t.launches_per_step);
  w.Key("kernel_ms_per_step").Double(t.kernel_ms_per_step);
  w.Key("wall_ms_per_step").Double(t.wall_ms_per_step);
  w.Key("kernels").BeginArray();
  for (const KernelRow& r : t.rows) {
    w.BeginObject();
    w.Key("name").String(r.name);
    w.Key("family").String(r.family);
    w.Key("count").Int(r.per_step);
    w.Key("total_ms").Double(r.ms_per_step);
    w.Key("p50_us").Double(r.p50_us);
    w.Key("p90_us").Double(r.p90_us);
    w.Key("max_us").Double(r.max_us);
    w.Key("bytes").Int(static_cast<int64_t>(r.bytes_per_step));
    w.Key("gb_per_s").Double(r.gb_per_s);
    w.Key("wall_percent").Double(r.wall_percent);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

}  // namespace kiln::runtime
