#include "runtime/perf/bench_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "support/json_writer.h"
#include "support/text_table.h"

namespace kiln::runtime {
namespace {

std::string Gb(uint64_t bytes) { return absl::StrFormat("%.3f", 1e-9 * static_cast<double>(bytes)); }

}  // namespace

std::string FormatBenchReport(const BenchReport& r) {
  std::string out = absl::StrFormat("kiln bench on %s (%s), context %d\n", r.gpu, r.kernels, r.context);
  TextTable head({"", ""}, 2);
  head.AddRow({"read bandwidth (probe, same run)",
               absl::StrFormat("%.0f GB/s over %.2f GB", r.probe_gb_per_s, 1e-9 * static_cast<double>(r.probe_bytes))});
  head.AddRow({"process start to first token", absl::StrFormat("%.3f s", 1e-3 * r.startup_to_first_token_ms)});
  head.AddRow({absl::StrFormat("time to first token, %d-token prompt", r.ttft_prompt_tokens),
               absl::StrFormat("first request %.2f ms, second %.2f ms", r.first_ttft_ms, r.second_ttft_ms)});
  head.AddRow({"kernels per token", absl::StrFormat("%d (decode plan + step advance, one graph)",
                                                    r.kernels_per_token)});
  head.AddRow({"decode loop", r.decode_ahead ? "next step queued before the host waits for the last"
                                             : "one step at a time (--no-decode-ahead)"});
  absl::StrAppend(&out, head.Render(), "\nprefill\n");

  TextTable prefill({"tokens", "ms", "tok/s"}, 0);
  for (const PrefillResult& p : r.prefill)
    prefill.AddRow({absl::StrCat(p.tokens), absl::StrFormat("%.2f", p.ms), absl::StrFormat("%.0f", p.tok_per_s())});
  absl::StrAppend(&out, prefill.Render(), "\ndecode\n");

  TextTable decode({"depth", "tok/s", "ms/tok", "kernel ms/tok", "kernel/wall", "launches/tok", "syncs/tok",
                    "copies/tok", "weights GB/tok", "KV GB/tok", "GB/s", "% of probe", "floor ms/tok", "% of floor"},
                   0);
  for (const DecodeResult& d : r.decode) {
    const bool bytes = r.bytes_known;
    decode.AddRow({absl::StrCat(d.depth), absl::StrFormat("%.1f", d.tok_per_s()),
                   absl::StrFormat("%.3f", d.ms_per_token), absl::StrFormat("%.3f", d.kernel_ms_per_token),
                   absl::StrFormat("%.2f", d.kernel_fraction()), absl::StrFormat("%.2f", d.launches_per_token),
                   absl::StrFormat("%.2f", d.syncs_per_token), absl::StrFormat("%.2f", d.copies_per_token),
                   bytes ? Gb(d.bytes_per_token.weights) : "-", bytes ? Gb(d.bytes_per_token.kv) : "-",
                   bytes ? absl::StrFormat("%.0f", d.gb_per_s()) : "-",
                   bytes ? absl::StrFormat("%.1f", r.ProbePercent(d)) : "-",
                   d.floor_ms_per_token > 0 ? absl::StrFormat("%.3f", d.floor_ms_per_token) : "-",
                   d.floor_ms_per_token > 0 ? absl::StrFormat("%.1f", d.FloorPercent()) : "-"});
  }
  absl::StrAppend(&out, decode.Render());
  absl::StrAppend(&out, "(floor: the same launches as perfect reads of their bytes, one after another; "
                        "% of floor: the floor against the step's time)\n");
  if (!r.bytes_known)
    absl::StrAppend(&out, "(the bundle does not state the bytes its kernels read: recompile it with a newer kilnc "
                          "for GB/s)\n");
  return out;
}

std::string BenchReportJson(const BenchReport& r) {
  JsonWriter w;
  w.BeginObject();
  w.Key("gpu").String(r.gpu);
  w.Key("kernels").String(r.kernels);
  w.Key("context").Int(r.context);
  w.Key("kernels_per_token").Int(r.kernels_per_token);
  w.Key("decode_ahead").Bool(r.decode_ahead);
  w.Key("bytes_known").Bool(r.bytes_known);
  w.Key("probe_gb_per_s").Double(r.probe_gb_per_s);
  w.Key("probe_bytes").Int(static_cast<int64_t>(r.probe_bytes));
  w.Key("startup_to_first_token_ms").Double(r.startup_to_first_token_ms);
  w.Key("ttft_prompt_tokens").Int(r.ttft_prompt_tokens);
  w.Key("first_ttft_ms").Double(r.first_ttft_ms);
  w.Key("second_ttft_ms").Double(r.second_ttft_ms);
  w.Key("prefill").BeginArray();
  for (const PrefillResult& p : r.prefill) {
    w.BeginObject();
    w.Key("tokens").Int(p.tokens);
    w.Key("ms").Double(p.ms);
    w.Key("tok_per_s").Double(p.tok_per_s());
    w.EndObject();
  }
  w.EndArray();
  w.Key("decode").BeginArray();
  for (const DecodeResult& d : r.decode) {
    w.BeginObject();
    w.Key("depth").Int(d.depth);
    w.Key("steps").Int(d.steps);
    w.Key("tok_per_s").Double(d.tok_per_s());
    w.Key("ms_per_token").Double(d.ms_per_token);
    w.Key("kernel_ms_per_token").Double(d.kernel_ms_per_token);
    w.Key("kernel_fraction").Double(d.kernel_fraction());
    w.Key("host_launches_per_token").Double(d.launches_per_token);
    w.Key("host_syncs_per_token").Double(d.syncs_per_token);
    w.Key("host_copies_per_token").Double(d.copies_per_token);
    w.Key("weight_bytes_per_token").Int(static_cast<int64_t>(d.bytes_per_token.weights));
    w.Key("kv_bytes_per_token").Int(static_cast<int64_t>(d.bytes_per_token.kv));
    w.Key("gb_per_s").Double(d.gb_per_s());
    w.Key("probe_percent").Double(r.ProbePercent(d));
    w.Key("bytes_position").Int(d.bytes_position);
    w.Key("launch_floor_ms_per_token").Double(d.floor_ms_per_token);
    w.Key("launch_floor_percent").Double(d.FloorPercent());
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.str();
}

}  // namespace kiln::runtime
