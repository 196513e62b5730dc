// What `kiln bench` measured, and its two renderings: an aligned table for
// people and `--json` for machines (the same fields).
#ifndef KILN_RUNTIME_PERF_BENCH_REPORT_H_
#define KILN_RUNTIME_PERF_BENCH_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/perf/read_bytes.h"

namespace kiln::runtime {

struct PrefillResult {
  int64_t tokens = 0;
  double ms = 0;  // median wall time of the whole prompt, first token's argmax included
  double tok_per_s() const { return ms > 0 ? 1e3 * static_cast<double>(tokens) / ms : 0.0; }
};

struct DecodeResult {
  int64_t depth = 0;              // tokens in the context before the timed steps
  int64_t steps = 0;              // timed steps
  double ms_per_token = 0;        // wall, through the decode graph (the normal path)
  double kernel_ms_per_token = 0; // GPU time of every kernel, summed (eager, timed per launch)
  double launches_per_token = 0;  // host calls per timed token (Executor::counters)
  double syncs_per_token = 0;
  double copies_per_token = 0;
  ReadBytes bytes_per_token;      // weights + KV at the timed steps' middle position
  int64_t bytes_position = 0;     // that position
  // The launch floor (launch_floor.h): the decode graph's launches as perfect
  // reads of their bytes, one after another; 0 when not measured.
  double floor_ms_per_token = 0;
  double tok_per_s() const { return ms_per_token > 0 ? 1e3 / ms_per_token : 0.0; }
  double gb_per_s() const {
    return ms_per_token > 0 ? 1e-6 * static_cast<double>(bytes_per_token.total()) / ms_per_token : 0.0;
  }
  double kernel_fraction() const { return ms_per_token > 0 ? kernel_ms_per_token / ms_per_token : 0.0; }
  // The step's wall time against its launch floor, as a percentage (100:
  // the kernels lose nothing over perfect reads with the same launches).
  double FloorPercent() const { return ms_per_token > 0 ? 100.0 * floor_ms_per_token / ms_per_token : 0.0; }
};

struct BenchReport {
  std::string gpu;      // "NVIDIA H200"
  std::string kernels;  // "cubin sm_90" or "PTX sm_90 (JIT)"
  int64_t context = 0;
  int64_t kernels_per_token = 0;  // the decode graph's kernels: the plan's launches + the step advance
  bool decode_ahead = true;       // decode steps timed with the next one queued ahead (else one at a time)
  bool bytes_known = false;       // the bundle states what its kernels read
  double probe_gb_per_s = 0;      // read bandwidth of this GPU, measured in this run
  uint64_t probe_bytes = 0;
  double startup_to_first_token_ms = 0;  // from the process's start
  int64_t ttft_prompt_tokens = 0;
  double first_ttft_ms = 0;   // first request after start-up
  double second_ttft_ms = 0;  // the same prompt again
  std::vector<PrefillResult> prefill;
  std::vector<DecodeResult> decode;
  // Achieved bandwidth as a percentage of the probe's; 0 if either is unknown.
  double ProbePercent(const DecodeResult& d) const {
    return probe_gb_per_s > 0 && bytes_known ? 100.0 * d.gb_per_s() / probe_gb_per_s : 0.0;
  }
};

// A header block, then a prefill table and a decode table (one row per depth).
std::string FormatBenchReport(const BenchReport& r);
// The same data as one JSON document.
std::string BenchReportJson(const BenchReport& r);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_PERF_BENCH_REPORT_H_
