// The pieces of `kiln bench` and `kiln profile`. CPU tests (CI): list
// parsing and the context they need, bytes read per token from the
// manifest, percentiles, kernel families, the per-kernel table, the report's
// table and JSON, the attribution's launch groups, table and JSON, and the
// JSON writer and text tables under them. GPU tests (suites PerfGpuTest and
// ExecutorPerfGpuTest, CTest label `gpu`): the bandwidth probe on the real
// GPU, and the executor's per-launch timings, host counters, swapped decode
// graphs and attribution on the toy bundle (toy_bundle.h).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/bundle/expr.h"
#include "runtime/executor.h"
#include "runtime/perf/attribution.h"
#include "runtime/perf/bandwidth_probe.h"
#include "runtime/perf/bench_options.h"
#include "runtime/perf/bench_report.h"
#include "runtime/perf/kernel_table.h"
#include "runtime/perf/launch_floor.h"
#include "runtime/perf/measure.h"
#include "runtime/perf/read_bytes.h"
#include "runtime/perf/stats.h"
#include "runtime/sampler.h"
#include "support/json_writer.h"
#include "support/status_macros.h"
#include "support/text_table.h"
#include "tests/runtime/json_test_util.h"
#include "tests/runtime/toy_bundle.h"

namespace kiln::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace toy;  // NOLINT: the toy bundle's manifest is the test input

// ------------------------------------------------------------ stats, options

TEST(PercentileTest, InterpolatesBetweenClosestRanks) {
  EXPECT_DOUBLE_EQ(Percentile({4, 1, 3, 2}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(Percentile({4, 1, 3, 2}, 0.9), 3.7);
  EXPECT_DOUBLE_EQ(Percentile({4, 1, 3, 2}, 1.0), 4);
  EXPECT_DOUBLE_EQ(Percentile({4, 1, 3, 2}, 0.0), 1);
  EXPECT_DOUBLE_EQ(Percentile({7}, 0.9), 7);
  EXPECT_DOUBLE_EQ(Percentile({}, 0.5), 0);
  EXPECT_DOUBLE_EQ(Median({5, 1, 9}), 5);
}

TEST(BenchOptionsTest, ListsParseAndBadValuesNameTheFlag) {
  EXPECT_THAT(*ParseLengthList("512,3700", "prompt-lengths", false), ElementsAre(512, 3700));
  EXPECT_THAT(*ParseLengthList("0, 4096 16384", "depths", true), ElementsAre(0, 4096, 16384));
  absl::StatusOr<std::vector<int64_t>> bad = ParseLengthList("512,x", "prompt-lengths", false);
  EXPECT_THAT(bad.status().message(), HasSubstr("bad value 'x' in --prompt-lengths"));
  EXPECT_FALSE(ParseLengthList("0", "prompt-lengths", false).ok());
  EXPECT_FALSE(ParseLengthList("-1", "depths", true).ok());
  EXPECT_THAT(ParseLengthList(" , ", "depths", true).status().message(), HasSubstr("--depths is empty"));
  BenchOptions o;
  EXPECT_TRUE(CheckBenchOptions(o).ok());
  o.steps = 0;
  EXPECT_THAT(CheckBenchOptions(o).message(), HasSubstr("--steps 0"));
}

TEST(BenchOptionsTest, TheContextHoldsTheDeepestDecodeAndTheLongestPrompt) {
  BenchOptions o;  // 512,3700; 0,4096,16384; 4 + 128 steps
  EXPECT_EQ(RequiredContext(o), 16384 + 4 + 128);
  EXPECT_EQ(*ChooseBenchContext(o, 0, 40960), 16516);
  EXPECT_EQ(*ChooseBenchContext(o, 20000, 40960), 20000);
  absl::StatusOr<int64_t> small = ChooseBenchContext(o, 0, 4096);
  EXPECT_THAT(small.status().message(), HasSubstr("need a context of 16516 tokens, more than the model's context "
                                                  "length 4096; measure less (--depths, --prompt-lengths, --steps)"));
  EXPECT_THAT(ChooseBenchContext(o, 0, 4096, "--depth, --prompt-length, --steps").status().message(),
              HasSubstr("; measure less (--depth, --prompt-length, --steps)"));
  EXPECT_THAT(ChooseBenchContext(o, 8000, 40960).status().message(), HasSubstr("--ctx-size 8000 is less"));
  EXPECT_FALSE(ChooseBenchContext(o, 50000, 40960).ok());
  o.depths = {0};
  o.prompt_lengths = {3700};
  EXPECT_EQ(RequiredContext(o), 3700);
  // Sums past INT64_MAX saturate, so they fail the check instead of wrapping.
  o.depths = {0, std::numeric_limits<int64_t>::max()};
  EXPECT_EQ(RequiredContext(o), std::numeric_limits<int64_t>::max());
  EXPECT_FALSE(ChooseBenchContext(o, 0, 40960).ok());
  o.depths = {0};
  o.steps = std::numeric_limits<int64_t>::max() - 2;
  EXPECT_EQ(RequiredContext(o), std::numeric_limits<int64_t>::max());
}

TEST(BenchTokensTest, FixedAndInTheVocabulary) {
  std::vector<int32_t> a = BenchTokens(1000, 17), b = BenchTokens(1000, 17);
  EXPECT_EQ(a, b);
  int distinct = 0;
  std::vector<bool> seen(17, false);
  for (int32_t id : a) {
    ASSERT_GE(id, 0);
    ASSERT_LT(id, 17);
    distinct += !seen[id];
    seen[id] = true;
  }
  EXPECT_EQ(distinct, 17);
}

TEST(ProcessAgeTest, IsPositiveAndSane) {
  absl::StatusOr<double> age = ProcessAgeSeconds();
  ASSERT_TRUE(age.ok()) << age.status();
  EXPECT_GE(*age, 0.0);
  EXPECT_LT(*age, 86400.0);
}

TEST(ProbeBytesTest, AFractionOfFreeMemoryCappedAndWholeMiB) {
  ProbeOptions o;
  EXPECT_EQ(ProbeBytes(uint64_t{80} << 30, o), uint64_t{4} << 30);
  EXPECT_EQ(ProbeBytes(uint64_t{1} << 30, o), uint64_t{512} << 20);
  EXPECT_EQ(ProbeBytes((uint64_t{1} << 30) + 3, o), uint64_t{512} << 20);
  EXPECT_EQ(ProbeBytes(uint64_t{300} << 20, o), 0u);  // 150 MiB: the L2 would serve too much
}

// ------------------------------------------------------------ bytes read

Kernel ReadingKernel(const std::string& name, uint64_t weights, int64_t per_position) {
  Kernel k;
  k.set_name(name);
  k.set_bytes_read(weights);
  if (per_position > 0) *k.mutable_bytes_read_per_position() = MakeExpr(per_position);
  return k;
}

TEST(ReadBytesTest, WeightsOnceAndKvPerPositionAttended) {
  Kernel k = ReadingKernel("attention_decode_5", 100, 1024);
  ReadBytes b = *LaunchReadBytes(k, 1, 0, 4096);
  EXPECT_EQ(b.weights, 100u);
  EXPECT_EQ(b.kv, 1024u);  // position 0 attends to itself
  b = *LaunchReadBytes(k, 1, 4095, 4096);
  EXPECT_EQ(b.kv, 1024u * 4096);
  b = *LaunchReadBytes(k, 512, 100, 4096);  // a prefill chunk of 512 at 100
  EXPECT_EQ(b.kv, 1024u * 612);
  EXPECT_EQ(b.total(), 100u + 1024u * 612);
  EXPECT_FALSE(LaunchReadBytes(k, 1, -1, 4096).ok());
}

TEST(ReadBytesTest, Qwen3_8BKvAtFourThousandPositionsIsPointSixGigabytes) {
  // Qwen3-8B: 36 layers, 8 KV heads of 128, f16 K and V: +0.60 GB at 4k.
  Manifest m;
  *m.add_kernels() = ReadingKernel("matvec_q8_0_planar_6144x4096_0", 6144 * 4096 / 32 * 34, 0);
  *m.add_kernels() = ReadingKernel("attention_decode_1", 0, 2 * 8 * 128 * 2);
  for (int layer = 0; layer < 36; ++layer)
    for (uint32_t k : {0u, 1u}) m.mutable_decode()->add_launches()->set_kernel(k);
  ReadBytes b = *PlanReadBytes(m, m.decode(), 1, 4095, 40960);
  EXPECT_EQ(b.kv, uint64_t{2} * 36 * 8 * 128 * 4096 * 2);
  EXPECT_NEAR(1e-9 * static_cast<double>(b.kv), 0.60, 0.005);
  EXPECT_EQ(b.weights, uint64_t{36} * 6144 * 4096 / 32 * 34);
  EXPECT_TRUE(HasReadBytes(m));
  m.mutable_decode()->add_launches()->set_kernel(7);
  EXPECT_THAT(PlanReadBytes(m, m.decode(), 1, 0, 1).status().message(), HasSubstr("out of range"));
}

TEST(ReadBytesTest, ABundleWithoutFiguresSaysSo) {
  EXPECT_FALSE(HasReadBytes(MakeToyBundle().manifest));
}

// ------------------------------------------------------------ kernel table

TEST(KernelFamilyTest, TheManifestsFamilyElseTheNameWithoutSuffixes) {
  Kernel k;
  k.set_name("matvec_q8_0_planar_4096x12288_3");
  EXPECT_EQ(KernelFamily(k), "matvec_q8_0_planar");
  k.set_name("attention_decode_17");
  EXPECT_EQ(KernelFamily(k), "attention_decode");
  k.set_name("toy_store");
  EXPECT_EQ(KernelFamily(k), "toy_store");
  k.set_family("matvec");
  EXPECT_EQ(KernelFamily(k), "matvec");
}

// The toy decode plan: store, logits, argmax (kernels 1, 2, 3).
Manifest ToyWithBytes() {
  Manifest m = MakeToyBundle().manifest;
  m.mutable_kernels(kLogitsKernel)->set_bytes_read(1000);
  *m.mutable_kernels(kStore)->mutable_bytes_read_per_position() = MakeExpr(4);
  return m;
}

TEST(KernelTableTest, RowsPerKernelSortedByTimeWithPercentilesBytesAndWallShare) {
  Manifest m = ToyWithBytes();
  // Three steps; launch order store, logits, argmax.
  std::vector<std::vector<double>> us = {{4, 10, 2}, {5, 20, 2}, {6, 30, 2}};
  absl::StatusOr<KernelTable> t = BuildKernelTable(m, m.decode(), "decode step", {1, 9, 64}, us, 0.050,
                                                   GroupBy::kKernel);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->steps, 3);
  EXPECT_EQ(t->launches_per_step, 3);
  ASSERT_EQ(t->rows.size(), 3u);
  EXPECT_EQ(t->rows[0].name, "toy_logits");
  EXPECT_EQ(t->rows[0].family, "toy");
  EXPECT_EQ(t->rows[0].per_step, 1);
  EXPECT_NEAR(t->rows[0].ms_per_step, 0.020, 1e-12);
  EXPECT_DOUBLE_EQ(t->rows[0].p50_us, 20);
  EXPECT_DOUBLE_EQ(t->rows[0].p90_us, 28);
  EXPECT_DOUBLE_EQ(t->rows[0].max_us, 30);
  EXPECT_EQ(t->rows[0].bytes_per_step, 1000u);
  EXPECT_NEAR(t->rows[0].gb_per_s, 0.05, 1e-12);  // 1000 bytes in 20 us
  EXPECT_NEAR(t->rows[0].wall_percent, 40, 1e-9);
  EXPECT_EQ(t->rows[1].name, "toy_store");
  EXPECT_EQ(t->rows[1].bytes_per_step, 4u * 10);  // positions 0..9 attended at P = 9
  EXPECT_EQ(t->rows[2].name, "toy_argmax");
  EXPECT_EQ(t->rows[2].bytes_per_step, 0u);
  EXPECT_NEAR(t->kernel_ms_per_step, 0.020 + 0.005 + 0.002, 1e-12);

  std::string text = FormatKernelTable(*t);
  EXPECT_THAT(text, HasSubstr("decode step (T=1, P=9), 3 profiled: 3 launches"));
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 7u);  // title, header, rule, 3 kernels, total
  EXPECT_THAT(lines[1], HasSubstr("kernel"));
  EXPECT_THAT(lines[3], ::testing::StartsWith("toy_logits"));
  EXPECT_THAT(lines[5], HasSubstr(" - "));  // argmax reads no stated bytes
  EXPECT_THAT(lines[6], ::testing::StartsWith("total"));
  EXPECT_EQ(lines[3].substr(12, 4), "toy ");  // the family column, after the widest name
  EXPECT_EQ(lines[4].substr(12, 4), "toy ");
}

TEST(KernelTableTest, GroupedByFamilyTheCountsSumToThePlansLaunches) {
  Manifest m = ToyWithBytes();
  absl::StatusOr<KernelTable> t =
      BuildKernelTable(m, m.decode(), "decode step", {1, 0, 64}, {{1, 2, 3}}, 0.01, GroupBy::kFamily);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(t->rows[0].name, "toy");
  EXPECT_EQ(t->rows[0].per_step, 3);
  EXPECT_NEAR(t->rows[0].ms_per_step, 0.006, 1e-12);
}

TEST(KernelTableTest, SamplesMustMatchThePlan) {
  Manifest m = ToyWithBytes();
  EXPECT_THAT(BuildKernelTable(m, m.decode(), "decode step", {}, {{1, 2}}, 1, GroupBy::kKernel).status().message(),
              HasSubstr("profiled step 0 has 2 launch times, the plan has 3 launches"));
  EXPECT_FALSE(BuildKernelTable(m, m.decode(), "decode step", {}, {}, 1, GroupBy::kKernel).ok());
}

TEST(KernelTableTest, JsonHasEveryField) {
  Manifest m = ToyWithBytes();
  KernelTable t = *BuildKernelTable(m, m.decode(), "decode step", {1, 0, 64}, {{1, 2, 3}}, 0.01, GroupBy::kKernel);
  JsonWriter w;
  WriteKernelTableJson(t, w);
  google::protobuf::Struct s = ParseJson(w.str());
  for (const char* key : {"title", "tokens", "position", "steps_profiled", "launches_per_step", "kernel_ms_per_step",
                          "wall_ms_per_step", "kernels"})
    Field(s, key);
  EXPECT_EQ(Field(s, "launches_per_step").number_value(), 3);
  const auto& rows = Field(s, "kernels").list_value().values();
  ASSERT_EQ(rows.size(), 3);
  double count = 0;
  for (const auto& row : rows) {
    for (const char* key : {"name", "family", "count", "total_ms", "p50_us", "p90_us", "max_us", "bytes", "gb_per_s",
                            "wall_percent"})
      Field(row.struct_value(), key);
    count += Field(row.struct_value(), "count").number_value();
  }
  EXPECT_EQ(count, 3);
}

// ------------------------------------------------------------ attribution

TEST(AttributionTest, LaunchesGroupByKernelInFirstLaunchOrder) {
  Manifest m = ToyWithBytes();
  // The toy decode plan (store, logits, argmax) with the logits kernel
  // launched again at the end.
  *m.mutable_decode()->add_launches() = m.decode().launches(1);
  absl::StatusOr<std::vector<LaunchGroup>> g = GroupLaunchesByKernel(m, m.decode());
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->size(), 3u);
  EXPECT_EQ((*g)[0].kernel, "toy_store");
  EXPECT_THAT((*g)[0].launches, ElementsAre(0));
  EXPECT_EQ((*g)[1].kernel, "toy_logits");
  EXPECT_THAT((*g)[1].launches, ElementsAre(1, 3));
  EXPECT_EQ((*g)[2].kernel, "toy_argmax");
  EXPECT_THAT((*g)[2].launches, ElementsAre(2));
  m.mutable_decode()->mutable_launches(2)->set_kernel(99);
  EXPECT_THAT(GroupLaunchesByKernel(m, m.decode()).status().message(),
              HasSubstr("launch 2 names kernel 99, which is out of range"));
}

Attribution SampleAttribution() {
  Attribution a;
  a.depth = 0;
  a.steps = 64;
  a.position = 40;
  a.compiled_ms = 2.0;
  a.rows = {{"matvec_big_1", 36, 3'000'000'000, 1.7}, {"attention_decode_2", 36, 10'000'000, 1.9}};
  return a;
}

TEST(AttributionTest, TableSavesAgainstTheCompiledStep) {
  Attribution a = SampleAttribution();
  EXPECT_DOUBLE_EQ(a.saved_ms(a.rows[0]), 0.3);
  std::string text = FormatAttribution(a);
  EXPECT_THAT(text, HasSubstr("from depth 0 (bytes at P=40), 64 steps each"));
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 6u);  // title, header, rule, compiled, 2 kernels
  EXPECT_THAT(lines[3], ::testing::StartsWith("(as compiled)"));
  EXPECT_THAT(lines[4], ::testing::StartsWith("matvec_big_1"));
  EXPECT_THAT(lines[4], HasSubstr("3000.0"));  // MB
  EXPECT_THAT(lines[4], HasSubstr("0.300"));   // saved ms
  EXPECT_THAT(lines[4], ::testing::EndsWith("15.0"));
  EXPECT_THAT(lines[5], ::testing::EndsWith("5.0"));
}

TEST(AttributionTest, JsonHasEveryField) {
  JsonWriter w;
  WriteAttributionJson(SampleAttribution(), w);
  google::protobuf::Struct s = ParseJson(w.str());
  for (const char* key : {"depth", "position", "steps", "compiled_ms_per_token", "kernels"}) Field(s, key);
  const auto& rows = Field(s, "kernels").list_value().values();
  ASSERT_EQ(rows.size(), 2);
  for (const auto& row : rows)
    for (const char* key : {"name", "count", "bytes", "swapped_ms_per_token", "saved_ms_per_token"})
      Field(row.struct_value(), key);
  EXPECT_NEAR(Field(rows[1].struct_value(), "saved_ms_per_token").number_value(), 0.1, 1e-12);
}

// ------------------------------------------------------------ bench report

BenchReport SampleReport() {
  BenchReport r;
  r.gpu = "NVIDIA H200";
  r.kernels = "cubin sm_90";
  r.context = 16516;
  r.kernels_per_token = 221;
  r.bytes_known = true;
  r.probe_gb_per_s = 4000;
  r.probe_bytes = uint64_t{4} << 30;
  r.startup_to_first_token_ms = 9000;
  r.ttft_prompt_tokens = 512;
  r.first_ttft_ms = 40;
  r.second_ttft_ms = 39;
  r.prefill = {{512, 40}, {3700, 400}};
  DecodeResult d;
  d.depth = 0;
  d.steps = 128;
  d.ms_per_token = 2.0;
  d.kernel_ms_per_token = 1.8;
  d.launches_per_token = d.syncs_per_token = d.copies_per_token = 1;
  d.bytes_per_token = {6'000'000'000, 2'000'000'000};
  d.bytes_position = 16448;
  d.floor_ms_per_token = 1.5;
  r.decode = {d};
  return r;
}

TEST(BenchReportTest, DerivedFiguresAreConsistent) {
  BenchReport r = SampleReport();
  const DecodeResult& d = r.decode[0];
  EXPECT_DOUBLE_EQ(d.tok_per_s(), 500);
  EXPECT_DOUBLE_EQ(d.gb_per_s(), 4000);  // 8 GB in 2 ms
  EXPECT_DOUBLE_EQ(d.kernel_fraction(), 0.9);
  EXPECT_DOUBLE_EQ(r.ProbePercent(d), 100);
  EXPECT_DOUBLE_EQ(d.FloorPercent(), 75);  // 1.5 ms of perfect launches in a 2 ms step
  EXPECT_DOUBLE_EQ(r.prefill[1].tok_per_s(), 9250);
  r.bytes_known = false;
  EXPECT_DOUBLE_EQ(r.ProbePercent(d), 0);
}

TEST(BenchReportTest, TableShowsEveryMeasurement) {
  std::string text = FormatBenchReport(SampleReport());
  EXPECT_THAT(text, HasSubstr("kiln bench on NVIDIA H200 (cubin sm_90), context 16516"));
  EXPECT_THAT(text, HasSubstr("4000 GB/s over 4.29 GB"));
  EXPECT_THAT(text, HasSubstr("first request 40.00 ms, second 39.00 ms"));
  EXPECT_THAT(text, HasSubstr("9.000 s"));
  EXPECT_THAT(text, HasSubstr("221 (decode plan + step advance, one graph)"));
  EXPECT_THAT(text, HasSubstr("next step queued before the host waits for the last"));
  EXPECT_THAT(text, HasSubstr("% of probe"));
  EXPECT_THAT(text, HasSubstr("  3700  400.00   9250"));
  EXPECT_THAT(text, HasSubstr("100.0"));
  EXPECT_THAT(text, HasSubstr("% of floor"));
  EXPECT_THAT(text, HasSubstr("1.500        75.0"));
  BenchReport r = SampleReport();
  r.bytes_known = false;
  r.decode_ahead = false;
  text = FormatBenchReport(r);
  EXPECT_THAT(text, HasSubstr("does not state the bytes its kernels read"));
  EXPECT_THAT(text, HasSubstr("one step at a time (--no-decode-ahead)"));
}

TEST(BenchReportTest, JsonHasEveryField) {
  google::protobuf::Struct s = ParseJson(BenchReportJson(SampleReport()));
  for (const char* key : {"gpu", "kernels", "context", "kernels_per_token", "bytes_known", "probe_gb_per_s",
                          "probe_bytes", "startup_to_first_token_ms", "ttft_prompt_tokens", "first_ttft_ms",
                          "second_ttft_ms", "decode_ahead", "prefill", "decode"})
    Field(s, key);
  EXPECT_EQ(Field(s, "gpu").string_value(), "NVIDIA H200");
  EXPECT_TRUE(Field(s, "decode_ahead").bool_value());
  EXPECT_EQ(Field(s, "prefill").list_value().values_size(), 2);
  const google::protobuf::Struct& d = Field(s, "decode").list_value().values(0).struct_value();
  for (const char* key : {"depth", "steps", "tok_per_s", "ms_per_token", "kernel_ms_per_token", "kernel_fraction",
                          "host_launches_per_token", "host_syncs_per_token", "host_copies_per_token",
                          "weight_bytes_per_token", "kv_bytes_per_token", "gb_per_s", "probe_percent",
                          "bytes_position", "launch_floor_ms_per_token", "launch_floor_percent"})
    Field(d, key);
  EXPECT_EQ(Field(d, "launch_floor_percent").number_value(), 75);
  EXPECT_EQ(Field(d, "weight_bytes_per_token").number_value(), 6e9);
  EXPECT_EQ(Field(d, "probe_percent").number_value(), 100);
}

TEST(LaunchFloorTest, RingOffsetsPackReadsAndWrapWhole) {
  absl::StatusOr<std::vector<uint64_t>> o = RingOffsets({100, 0, 50, 40, 0}, 192);
  ASSERT_TRUE(o.ok()) << o.status();
  // 100 -> [0, 112), 0 at 112, 50 -> [112, 176), 40 would end at 216: wraps to 0.
  EXPECT_EQ(*o, (std::vector<uint64_t>{0, 112, 112, 0, 48}));
  absl::StatusOr<std::vector<uint64_t>> big = RingOffsets({100, 193}, 192);
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(big.status().message(), HasSubstr("more than the"));
}

// ------------------------------------------------------------ support

TEST(JsonWriterTest, NestsEscapesAndWritesNonFiniteAsNull) {
  JsonWriter w;
  w.BeginObject();
  w.Key("s").String("a\"b\\c\n\x01");
  w.Key("n").Int(-3);
  w.Key("x").Double(0.5);
  w.Key("nan").Double(std::nan(""));
  w.Key("empty").BeginArray().EndArray();
  w.Key("list").BeginArray().Int(1).BeginObject().Key("t").Bool(true).EndObject().EndArray();
  w.EndObject();
  EXPECT_EQ(w.str(),
            "{\n  \"s\": \"a\\\"b\\\\c\\n\\u0001\",\n  \"n\": -3,\n  \"x\": 0.5,\n  \"nan\": null,\n"
            "  \"empty\": [],\n  \"list\": [\n    1,\n    {\n      \"t\": true\n    }\n  ]\n}\n");
  google::protobuf::Struct s = ParseJson(w.str());
  EXPECT_EQ(Field(s, "s").string_value(), "a\"b\\c\n\x01");
}

TEST(TextTableTest, AlignsNamesLeftAndNumbersRight) {
  TextTable t({"name", "n"});
  t.AddRow({"a", "100"});
  t.AddRow({"longer", "2"});
  EXPECT_EQ(t.Render(), "name      n\n-----------\na       100\nlonger    2\n");
  TextTable body({"", ""});
  body.AddRow({"k", "v"});
  EXPECT_EQ(body.Render(), "k  v\n");
}

// ------------------------------------------------------------ GPU tests

// GPU 0's context, what the probe read, and its result.
struct ProbedGpu {
  ReadRing ring;
  ProbeResult probe;
};

absl::StatusOr<ProbedGpu> ProbeGpu0() {
  ProbedGpu g;
  ASSIGN_OR_RETURN(g.ring, OpenReadRing(0, "the probe test"));
  ASSIGN_OR_RETURN(g.probe, MeasureReadBandwidth(*g.ring.ctx, g.ring.buffer));
  return g;
}

TEST(PerfGpuTest, TheProbeReadsAtAPlausibleBandwidth) {
  absl::StatusOr<ProbedGpu> g = ProbeGpu0();
  ASSERT_TRUE(g.ok()) << g.status();
  const std::unique_ptr<cuda::Context>* ctx = &g->ring.ctx;
  const ProbeResult* p = &g->probe;
  std::printf("probe: %s reads %.0f GB/s (median of %d over %.2f GB; best %.3f ms; %d blocks of %d)\n",
              (*ctx)->device().name.c_str(), p->gb_per_s(), p->reps, 1e-9 * static_cast<double>(p->bytes),
              p->best_ms, p->blocks, p->threads);
  EXPECT_GE(p->bytes, kMinProbeBytes);
  EXPECT_EQ(p->blocks % (*ctx)->device().sm_count, 0);
  EXPECT_LE(p->best_ms, p->median_ms);
  // Any GPU kiln runs on reads at least 100 GB/s; none reads 20 TB/s.
  EXPECT_GT(p->gb_per_s(), 100.0);
  EXPECT_LT(p->gb_per_s(), 20000.0);
  if ((*ctx)->device().name.find("H200") != std::string::npos) {
    EXPECT_GT(p->gb_per_s(), 3500.0);  // about 4.4-4.5 TB/s measured on the H200 host
  }
}

// The launch floor never beats the probe's bandwidth, and launches cost
// time even with nothing to read.
TEST(PerfGpuTest, TheLaunchFloorCostsAtLeastTheBytesAndSomethingPerLaunch) {
  absl::StatusOr<ProbedGpu> g = ProbeGpu0();
  ASSERT_TRUE(g.ok()) << g.status();
  const std::unique_ptr<cuda::Context>* ctx = &g->ring.ctx;
  const ProbeResult* p = &g->probe;
  // 36 "layers" of 27, 18, 107 and 54 MB reads with an empty launch between
  // the first two (Qwen3-8B Q8_0's decode matvecs and attention).
  std::vector<uint64_t> layer = {26'738'688, 0, 17'825'792, 106'954'752, 53'477'376};
  std::vector<uint64_t> step;
  for (int l = 0; l < 36; ++l) step.insert(step.end(), layer.begin(), layer.end());
  absl::StatusOr<std::vector<LaunchFloor>> floors =
      MeasureLaunchFloors(**ctx, g->ring.buffer, {step, std::vector<uint64_t>(180, 0)});
  ASSERT_TRUE(floors.ok()) << floors.status();
  ASSERT_EQ(floors->size(), 2u);
  const LaunchFloor* f = &(*floors)[0];
  const LaunchFloor* empty = &(*floors)[1];
  const double ideal_ms = 1e-6 * static_cast<double>(f->bytes) / p->gb_per_s();
  std::printf("launch floor (%s): %d launches, %.2f GB: %.3f ms (%.3f ms at the probe's %.0f GB/s, %.1f %%); "
              "180 empty launches %.3f ms\n",
              f->programmatic ? "programmatic" : "plain", f->launches, 1e-9 * static_cast<double>(f->bytes), f->median_ms, ideal_ms, p->gb_per_s(),
              100.0 * ideal_ms / f->median_ms, empty->median_ms);
  EXPECT_EQ(f->launches, 180);
  EXPECT_EQ(empty->launches, 180);
  EXPECT_EQ(empty->bytes, 0u);
  EXPECT_EQ(f->programmatic, (*ctx)->device().supports_pdl());
  EXPECT_GE(f->median_ms, 0.97 * ideal_ms);
  EXPECT_GT(empty->median_ms, 0.0);
  EXPECT_LT(empty->median_ms, f->median_ms);
}

class ExecutorPerfGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bundle_ = MakeToyBundle();
    gguf_ = ToyGgufBytes();
    file_ = ParseGguf(gguf_);
    ExecutorOptions o;
    o.allow_ptx_jit = true;
    o.show_progress = false;
    absl::StatusOr<std::unique_ptr<Executor>> e = Executor::Create(bundle_.manifest, bundle_.sections(), *file_, o);
    ASSERT_TRUE(e.ok()) << e.status();
    ex_ = std::move(*e);
  }
  ToyBundle bundle_;
  std::vector<uint8_t> gguf_;
  std::unique_ptr<gguf::GgufFile> file_;
  std::unique_ptr<Executor> ex_;
};

TEST_F(ExecutorPerfGpuTest, GreedyDecodeIsOneLaunchOneSyncAndNoCopyPerToken) {
  Executor& ex = *ex_;
  EXPECT_EQ(ex.counters().launches, 0);  // Create's warm-up is not counted
  absl::StatusOr<StepResult> r = ex.Prefill(std::vector<int32_t>{1, 2, 3}, Logits::kNone);
  ASSERT_TRUE(r.ok()) << r.status();
  // 3 kernels, tokens + position in, the argmax out, one wait.
  EXPECT_EQ(ex.counters().launches, 3);
  EXPECT_EQ(ex.counters().copies, 3);
  EXPECT_EQ(ex.counters().syncs, 1);
  int32_t next = r->argmax;
  r = ex.Decode(next, Logits::kNone);  // writes the position: the prefill moved it
  ASSERT_TRUE(r.ok()) << r.status();
  next = r->argmax;
  ex.ResetCounters();
  for (int i = 0; i < 10; ++i) {
    r = ex.Decode(next, Logits::kNone);
    ASSERT_TRUE(r.ok()) << r.status();
    next = r->argmax;
  }
  EXPECT_EQ(ex.counters().launches, 10);
  EXPECT_EQ(ex.counters().copies, 0);  // the step advance writes the argmax into mapped memory
  EXPECT_EQ(ex.counters().syncs, 10);
}

TEST_F(ExecutorPerfGpuTest, ProfiledStepsTimeEveryLaunchAndComputeTheSameTokens) {
  Executor& ex = *ex_;
  ToyModel cpu;
  std::vector<float> last;
  const std::vector<int32_t> prompt = {4, 5, 6};
  absl::StatusOr<ProfiledStep> p = ex.ProfilePrefill(prompt);
  ASSERT_TRUE(p.ok()) << p.status();
  for (int32_t t : prompt) last = cpu.Feed(t);
  EXPECT_EQ(p->result.argmax, Argmax(last));
  ASSERT_EQ(p->launch_us.size(), static_cast<size_t>(bundle_.manifest.prefill().launches_size()));
  for (double us : p->launch_us) EXPECT_GT(us, 0.0);
  EXPECT_EQ(ex.position(), 3);

  // Eager profiled steps and graph steps interleaved stay exact.
  int32_t next = p->result.argmax;
  for (int step = 0; step < 12; ++step) {
    last = cpu.Feed(next);
    if (step % 3 == 0) {
      absl::StatusOr<ProfiledStep> d = ex.ProfileDecode(next);
      ASSERT_TRUE(d.ok()) << d.status();
      ASSERT_EQ(d->launch_us.size(), static_cast<size_t>(bundle_.manifest.decode().launches_size()));
      for (double us : d->launch_us) EXPECT_GT(us, 0.0);
      EXPECT_LT(d->launch_us[0], 10000.0) << "a span includes the hold or the host";
      ASSERT_EQ(d->result.argmax, Argmax(last)) << "profiled step " << step;
      next = d->result.argmax;
    } else {
      absl::StatusOr<StepResult> d = ex.Decode(next, Logits::kNone);
      ASSERT_TRUE(d.ok()) << d.status();
      ASSERT_EQ(d->argmax, Argmax(last)) << "graph step " << step;
      next = d->argmax;
    }
  }
  EXPECT_EQ(ex.position(), 15);
  std::vector<int32_t> too_long(static_cast<size_t>(bundle_.manifest.prefill().max_tokens()) + 1, 1);
  EXPECT_THAT(ex.ProfilePrefill(too_long).status().message(), HasSubstr("exceeds the plan's"));
}

TEST_F(ExecutorPerfGpuTest, RunDecodeReportsPerTokenCountsAndProfiles) {
  Executor& ex = *ex_;
  Manifest m = ToyWithBytes();  // same plans as the executor's, with bytes stated
  // Both loops: one step at a time, and the next step queued ahead.
  for (bool ahead : {false, true}) {
    SCOPED_TRACE(ahead ? "ahead" : "one at a time");
    absl::StatusOr<DecodeRun> run = RunDecode(ex, m, 10, 4, 20, 8, ahead);
    ASSERT_TRUE(run.ok()) << run.status();
    const DecodeResult& d = run->result;
    EXPECT_EQ(d.depth, 10);
    EXPECT_EQ(d.launches_per_token, 1.0);
    EXPECT_EQ(d.syncs_per_token, 1.0);
    EXPECT_EQ(d.copies_per_token, 0.0);
    EXPECT_GT(d.ms_per_token, 0.0);
    EXPECT_GT(d.kernel_ms_per_token, 0.0);
    EXPECT_EQ(run->profile_position, 14);
    EXPECT_EQ(run->launch_us.size(), 8u);
    EXPECT_EQ(d.bytes_per_token.weights, 1000u);
    EXPECT_EQ(d.bytes_per_token.kv, 4u * (14 + 10 + 1));  // middle position 24 attends to 25
  }
  EXPECT_FALSE(RunDecode(ex, m, 60, 4, 20, 8, true).ok());  // past the toy's 64 positions
}

// A swapped decode graph leaves the swapped launches out (here the argmax:
// the device's token stops changing), and the empty swap brings the
// compiled graph back, exact again.
TEST_F(ExecutorPerfGpuTest, SwappedDecodeLaunchesAreLeftOutUntilRestored) {
  Executor& ex = *ex_;
  ToyModel cpu;
  absl::StatusOr<StepResult> r = ex.Prefill(std::vector<int32_t>{7, 8}, Logits::kNone);
  ASSERT_TRUE(r.ok()) << r.status();
  cpu.Feed(7);
  std::vector<float> last = cpu.Feed(8);
  ASSERT_EQ(r->argmax, Argmax(last));
  int swapped = 0;
  ASSERT_TRUE(ex.SwapDecodeLaunches([&](int launch, const cuda::Stream&) -> absl::StatusOr<bool> {
                  const bool argmax = bundle_.manifest.decode().launches(launch).kernel() == kArgmax;
                  swapped += argmax;
                  return argmax;
                }).ok());
  EXPECT_EQ(swapped, 1);
  // Each step stores its token and position: a fed token stays in the toy's
  // sums, so the argmax kernel would move; left out, it keeps the last one.
  const int32_t stale = r->argmax;
  int32_t next = stale;
  bool moves = false;  // the compiled graph's argmax would not have stayed
  for (int i = 0; i < 3; ++i) {
    last = cpu.Feed(next);
    moves |= Argmax(last) != stale;
    r = ex.Decode(next, Logits::kNone);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->argmax, stale);
    next = r->argmax;
  }
  EXPECT_TRUE(moves);
  ASSERT_TRUE(ex.SwapDecodeLaunches({}).ok());
  last = cpu.Feed(next);
  r = ex.Decode(next, Logits::kNone);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->argmax, Argmax(last));
  // A swap that fails leaves the compiled graph in use.
  EXPECT_THAT(ex.SwapDecodeLaunches([](int, const cuda::Stream&) -> absl::StatusOr<bool> {
                return absl::InternalError("the swap refuses");
              }).message(),
              HasSubstr("the swap refuses"));
  next = r->argmax;
  last = cpu.Feed(next);
  r = ex.Decode(next, Logits::kNone);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->argmax, Argmax(last));
}

TEST_F(ExecutorPerfGpuTest, AttributionTimesEveryDecodeKernelAndRestoresTheGraph) {
  Executor& ex = *ex_;
  Manifest m = ToyWithBytes();
  absl::StatusOr<std::unique_ptr<cuda::Context>> ctx = cuda::Context::Create(**cuda::Driver::Get(), 0);
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  ProbeOptions small;
  small.max_bytes = uint64_t{512} << 20;  // at least kMinProbeBytes
  absl::StatusOr<ReadBuffer> ring = PrepareReadBuffer(**ctx, small, "the test's reads");
  ASSERT_TRUE(ring.ok()) << ring.status();
  absl::StatusOr<ReadProbeKernel> probe = ReadProbeKernel::Load(**ctx, (*ctx)->device().supports_pdl());
  ASSERT_TRUE(probe.ok()) << probe.status();
  absl::StatusOr<Attribution> a = MeasureAttribution(ex, m, *probe, *ring, 5, 2, 16);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->position, 5 + 2 + 8);
  EXPECT_GT(a->compiled_ms, 0.0);
  ASSERT_EQ(a->rows.size(), 3u);
  for (const AttributionRow& row : a->rows) {
    EXPECT_EQ(row.per_step, 1) << row.kernel;
    EXPECT_GT(row.ms_per_token, 0.0) << row.kernel;
  }
  for (size_t i = 1; i < a->rows.size(); ++i) EXPECT_LE(a->rows[i - 1].ms_per_token, a->rows[i].ms_per_token);
  // The compiled graph is back: greedy decoding from a fresh prompt is exact.
  ToyModel cpu;
  ASSERT_TRUE(ex.Rewind(0).ok());
  absl::StatusOr<StepResult> r = ex.Prefill(std::vector<int32_t>{3}, Logits::kNone);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<float> last = cpu.Feed(3);
  for (int i = 0; i < 4; ++i) {
    last = cpu.Feed(r->argmax);
    r = ex.Decode(r->argmax, Logits::kNone);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->argmax, Argmax(last)) << "step " << i;
  }
}

}  // namespace
}  // namespace kiln::runtime
