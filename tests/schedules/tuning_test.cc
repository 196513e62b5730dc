// The GPU-free half of `kilnc tune`: search spaces enumerate their
// cartesian product over the current schedule; records round-trip through
// the cache file, which resumes after an interrupted write; export picks
// the fastest correct candidate per shape and keeps the shipped entries.
#include "schedules/tuning.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

namespace kiln::schedules {
namespace {

ScheduleEntry MatVecBase() {
  ScheduleEntry e;
  e.set_family("matvec");
  e.mutable_matvec()->set_threads(256);
  e.mutable_matvec()->set_rows_per_block(4);
  return e;
}

SearchSpace Space(const std::string& text) {
  SearchSpace s;
  EXPECT_TRUE(ParseTextProto(text, "test", &s).ok());
  return s;
}

TEST(Tuning, BuiltinSpacesParseAndCoverTheDecodeFamilies) {
  auto spaces = BuiltinSpaces();
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  for (const char* dtype : {"q8_0_planar", "q4_k", "q5_k", "q6_k", "q4_0", "f16", "bf16"})
    EXPECT_NE(FindSpace(*spaces, {"matvec", dtype, 4096, 4096}), nullptr) << dtype;
  EXPECT_NE(FindSpace(*spaces, {"attention_decode", "f16", 32, 128}), nullptr);
  EXPECT_EQ(FindSpace(*spaces, {"embed", "q8_0", 10, 10}), nullptr);
  // The q4_k, q6_k and planar q8_0 spaces are their own, not the catch-all
  // listed after them, which the rest (q4_0, the float formats) take.
  for (const char* dtype : {"q4_k", "q6_k", "q8_0_planar"})
    EXPECT_EQ(FindSpace(*spaces, {"matvec", dtype, 1, 1})->weight_dtype(), dtype);
  EXPECT_TRUE(FindSpace(*spaces, {"matvec", "q4_0", 1, 1})->weight_dtype().empty());
}

TEST(Tuning, CheckSpacesRejectsUnknownFieldsAndEmptyAxes) {
  SearchSpaces bad;
  *bad.add_spaces() = Space(R"(family: "matvec" axes { field: "tile_m" values: [1] })");
  absl::Status s = CheckSpaces(bad, "x.txtpb");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tile_m"), std::string::npos) << s;
  SearchSpaces empty;
  *empty.add_spaces() = Space(R"(family: "matvec" axes { field: "threads" })");
  EXPECT_FALSE(CheckSpaces(empty, "x.txtpb").ok());
  SearchSpaces good;
  *good.add_spaces() = Space(R"(family: "gemm" axes { field: "tensor_cores" values: [0, 1] })");
  EXPECT_TRUE(CheckSpaces(good, "x.txtpb").ok());
}

TEST(Tuning, EnumerationIsTheProductOverTheBaseWithTheBaseFirst) {
  SearchSpace space = Space(R"(family: "matvec"
      axes { field: "threads" values: [64, 128] }
      axes { field: "unroll" values: [1, 2, 3] })");
  auto all = EnumerateSchedules(space, MatVecBase());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 7u);  // the base, then 2 x 3
  EXPECT_EQ((*all)[0].matvec().threads(), 256);
  // The last axis varies fastest; fields without an axis keep the base's.
  EXPECT_EQ((*all)[1].matvec().threads(), 64);
  EXPECT_EQ((*all)[1].matvec().unroll(), 1);
  EXPECT_EQ((*all)[2].matvec().unroll(), 2);
  EXPECT_EQ((*all)[4].matvec().threads(), 128);
  for (const ScheduleEntry& e : *all) EXPECT_EQ(e.matvec().rows_per_block(), 4);
}

TEST(Tuning, EnumerationDropsRepeatsOfTheBase) {
  SearchSpace space = Space(R"(family: "matvec" axes { field: "threads" values: [256, 64] })");
  auto all = EnumerateSchedules(space, MatVecBase());
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].matvec().threads(), 64);
}

TEST(Tuning, EnumerationRejectsAMismatchedFamily) {
  SearchSpace space = Space(R"(family: "attention_decode" axes { field: "threads" values: [64] })");
  EXPECT_FALSE(EnumerateSchedules(space, MatVecBase()).ok());
}

TEST(Tuning, CanonicalScheduleListsEveryFieldAndParsesBack) {
  ScheduleEntry e = MatVecBase();
  const std::string c = CanonicalSchedule(e);
  EXPECT_NE(c.find("threads: 256"), std::string::npos) << c;
  EXPECT_NE(c.find("vector_bytes: 16"), std::string::npos) << c;  // a default, spelled out
  EXPECT_EQ(c.find('\n'), std::string::npos);
  ScheduleEntry back;
  back.set_family("matvec");
  ASSERT_TRUE(ParseSchedule(c, &back).ok());
  EXPECT_EQ(CanonicalSchedule(back), c);
  EXPECT_EQ(back.matvec().rows_per_block(), 4);
  ScheduleEntry other;
  other.set_family("matvec");
  EXPECT_FALSE(ParseSchedule("tile_m: 3", &other).ok());
}

TuneRecord Record(const std::string& gpu, int64_t rows, int threads, TuneStatus status, double us,
                  const std::string& variant = "") {
  TuneRecord r;
  r.device = {gpu, 132, "580.65.06 (CUDA 13.0)"};
  r.target = "sm_90";
  r.key = {"matvec", "q4_k", rows, 4096};
  ScheduleEntry e = MatVecBase();
  e.mutable_matvec()->set_threads(threads);
  r.schedule = CanonicalSchedule(e);
  r.variant = variant;
  r.status = status;
  r.us = us;
  r.gbps = us > 0 ? 1000.0 / us : 0;
  r.rel_err = 1e-6;
  r.detail = "150 regs";
  r.date = "2026-12-02";
  return r;
}

TEST(Tuning, RecordsRoundTripThroughALine) {
  TuneRecord r = Record("NVIDIA H200", 6144, 64, TuneStatus::kFault, 0);
  r.detail = "cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS\twith\na tab";
  r.code = "0123456789abcdef";
  const std::string line = FormatRecord(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto back = ParseRecord(line);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(RecordKey(*back), RecordKey(r));
  EXPECT_EQ(back->code, "0123456789abcdef");
  // A v1 cache's line: no code field.
  std::string v1 = line;
  v1.erase(v1.find("\t0123456789abcdef"), 17);
  auto old = ParseRecord(v1);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->code, "");
  EXPECT_EQ(old->status, TuneStatus::kFault);
  EXPECT_EQ(old->detail, back->detail);
  EXPECT_NE(RecordKey(*old), RecordKey(r));  // measured again by a search that knows the code
  EXPECT_EQ(back->status, TuneStatus::kFault);
  EXPECT_EQ(back->device.sm_count, 132);
  EXPECT_EQ(back->detail, "cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS with a tab");
  EXPECT_EQ(ParseRecord("a\tb").status().code(), absl::StatusCode::kDataLoss);
  std::string bad_status = line;
  bad_status.replace(bad_status.find("\tfault\t"), 7, "\tweird\t");
  EXPECT_EQ(ParseRecord(bad_status).status().code(), absl::StatusCode::kDataLoss);
}

// An old cache's schedule without its default fields is the same candidate
// as the tuner's full spelling: one key, so a resumed search and an export
// count it once.
TEST(Tuning, RecordsSpellTheirScheduleInFull) {
  TuneRecord full = Record("G", 6144, 64, TuneStatus::kOk, 9);
  TuneRecord brief = full;
  brief.schedule = "threads: 64 rows_per_block: 4";
  auto back = ParseRecord(FormatRecord(brief));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->schedule, full.schedule);
  EXPECT_EQ(RecordKey(*back), RecordKey(full));
  // A schedule that does not parse (a field since removed) keeps its text.
  brief.schedule = "threads: 64 tile_q: 3";
  auto kept = ParseRecord(FormatRecord(brief));
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->schedule, "threads: 64 tile_q: 3");
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name()))
      .string();
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Tuning, CacheResumesWhatFinished) {
  const std::string path = TempPath("kiln_tune_cache.tsv");
  std::filesystem::remove(path);
  {
    auto cache = TuneCache::Open(path, nullptr);
    ASSERT_TRUE(cache.ok()) << cache.status();
    EXPECT_TRUE(cache->records().empty());  // a missing file is an empty cache
    ASSERT_TRUE(cache->Append(Record("G", 6144, 64, TuneStatus::kOk, 10)).ok());
    ASSERT_TRUE(cache->Append(Record("G", 6144, 128, TuneStatus::kTimeout, 0)).ok());
  }
  std::vector<std::string> warnings;
  auto cache = TuneCache::Open(path, &warnings);
  ASSERT_TRUE(cache.ok()) << cache.status();
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(cache->records().size(), 2u);
  EXPECT_NE(cache->Find(Record("G", 6144, 64, TuneStatus::kError, 0)), nullptr);  // the key ignores the outcome
  EXPECT_EQ(cache->Find(Record("G", 6144, 256, TuneStatus::kOk, 0)), nullptr);
  EXPECT_EQ(cache->Find(Record("other GPU", 6144, 64, TuneStatus::kOk, 0)), nullptr);
  EXPECT_EQ(cache->Find(Record("G", 6144, 64, TuneStatus::kOk, 0, "test_fault")), nullptr);
  TuneRecord recompiled = Record("G", 6144, 64, TuneStatus::kOk, 0);
  recompiled.code = "fedcba9876543210";  // the same schedule, compiled differently
  EXPECT_EQ(cache->Find(recompiled), nullptr);
  std::filesystem::remove(path);
}

TEST(Tuning, CacheDropsAnInterruptedLastLineAndCutsItBeforeAppending) {
  const std::string path = TempPath("kiln_tune_cut.tsv");
  std::filesystem::remove(path);
  {
    auto cache = TuneCache::Open(path, nullptr);
    ASSERT_TRUE(cache->Append(Record("G", 6144, 64, TuneStatus::kOk, 10)).ok());
  }
  const std::string good = ReadAll(path);
  const std::string partial = FormatRecord(Record("G", 6144, 128, TuneStatus::kOk, 9)).substr(0, 40);
  { std::ofstream(path, std::ios::app) << partial; }
  std::vector<std::string> warnings;
  auto cache = TuneCache::Open(path, &warnings);
  ASSERT_TRUE(cache.ok()) << cache.status();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("incomplete"), std::string::npos) << warnings[0];
  EXPECT_EQ(cache->records().size(), 1u);
  ASSERT_TRUE(cache->Append(Record("G", 6144, 128, TuneStatus::kOk, 9)).ok());
  EXPECT_EQ(ReadAll(path), good + FormatRecord(Record("G", 6144, 128, TuneStatus::kOk, 9)) + "\n");
  auto again = TuneCache::Open(path, &warnings);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->records().size(), 2u);
  std::filesystem::remove(path);
}

TEST(Tuning, CacheRejectsACorruptLineInTheMiddle) {
  const std::string path = TempPath("kiln_tune_bad.tsv");
  { std::ofstream(path) << "garbage\n" << FormatRecord(Record("G", 1, 64, TuneStatus::kOk, 1)) << "\n"; }
  auto cache = TuneCache::Open(path, nullptr);
  EXPECT_EQ(cache.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(cache.status().message().find(":1:"), std::string::npos) << cache.status();
  std::filesystem::remove(path);
}

TEST(Tuning, CacheNamesAGzippedFile) {
  const std::string path = TempPath("kiln_tune.tsv.gz");
  { std::ofstream(path) << "\x1f\x8b\x08" << std::string(20, '\0'); }
  auto cache = TuneCache::Open(path, nullptr);
  EXPECT_EQ(cache.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(cache.status().message().find("gzip-compressed"), std::string::npos) << cache.status();
  std::filesystem::remove(path);
}

// The table an export appends after its tuned entries: fixed here, not the
// shipped sm_90 table, whose tuned entries change with every tuning run.
ScheduleTable BaseSm90() {
  ScheduleTable t;
  EXPECT_TRUE(ParseTextProto(R"pb(
    target: "sm_90"
    provenance { source: HEURISTIC gpu: "any" sm_count: 132 date: "2026-12-01" }
    entries { family: "matvec" weight_dtype: "q4_k" matvec { threads: 256 rows_per_block: 8 } }
    entries { family: "matvec" matvec { threads: 256 rows_per_block: 4 } }
    entries { family: "attention_decode" attention { threads: 128 split_positions: 256 } }
  )pb", "base", &t).ok());
  return t;
}

TEST(Tuning, ExportPicksTheFastestCorrectCandidatePerShape) {
  std::vector<TuneRecord> rs = {
      Record("NVIDIA H200", 6144, 64, TuneStatus::kOk, 12),
      Record("NVIDIA H200", 6144, 128, TuneStatus::kOk, 9),
      Record("NVIDIA H200", 6144, 256, TuneStatus::kWrong, 1),                 // fast but wrong
      Record("NVIDIA H200", 6144, 512, TuneStatus::kOk, 0.5, "test_fault"),    // synthetic: never exported
      Record("NVIDIA H200", 4096, 64, TuneStatus::kOk, 7),
      Record("NVIDIA H200", 1024, 64, TuneStatus::kFault, 0),                  // nothing correct: no entry
  };
  rs[4].date = "2026-12-03";
  auto out = ExportTable(rs, BaseSm90(), {"sm_90", "", {}});
  ASSERT_TRUE(out.ok()) << out.status();
  const ScheduleTable& t = out->table;
  ASSERT_EQ(out->tuned_entries, 2);
  EXPECT_EQ(t.provenance().source(), Provenance::TUNED);
  EXPECT_EQ(t.provenance().gpu(), "NVIDIA H200");
  EXPECT_EQ(t.provenance().sm_count(), 132);
  EXPECT_EQ(t.provenance().driver(), "580.65.06 (CUDA 13.0)");
  EXPECT_EQ(t.provenance().date(), "2026-12-03");
  // Both tuned entries are for exactly their shape, shipped entries follow.
  const ScheduleEntry& e6144 = t.entries(1);
  EXPECT_EQ(e6144.min_rows(), 6144);
  EXPECT_EQ(e6144.max_rows(), 6144);
  EXPECT_EQ(e6144.min_cols(), 4096);
  EXPECT_EQ(e6144.max_cols(), 4096);
  EXPECT_EQ(e6144.matvec().threads(), 128);
  EXPECT_EQ(t.entries_size(), 2 + BaseSm90().entries_size());
  EXPECT_EQ(t.entries(2).provenance().source(), Provenance::HEURISTIC);

  // The exported text loads like a shipped table and looks up as expected.
  ScheduleLibrary lib;
  ASSERT_TRUE(lib.AddTableText(FormatTable(*out), "exported").ok());
  auto tuned = lib.Lookup({"matvec", "q4_k", 6144, 4096}, "sm_90");
  ASSERT_TRUE(tuned.ok());
  EXPECT_EQ(tuned->entry.matvec().threads(), 128);
  EXPECT_EQ(tuned->provenance.source(), Provenance::TUNED);
  auto other = lib.Lookup({"matvec", "q4_k", 1024, 4096}, "sm_90");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->provenance.source(), Provenance::HEURISTIC);
  EXPECT_FALSE(other->fallback);
}

// Of one schedule measured under two codes (kilnc changed between the
// searches), the newer record counts; an export right after a search keeps
// only the codes that search compiled.
TEST(Tuning, ExportTakesEachSchedulesNewestRecordAndTheCurrentCodes) {
  TuneRecord old_fast = Record("G", 6144, 64, TuneStatus::kOk, 5);
  old_fast.code = "a";
  TuneRecord now_slow = Record("G", 6144, 64, TuneStatus::kOk, 9);
  now_slow.code = "b";
  TuneRecord other = Record("G", 6144, 128, TuneStatus::kOk, 8);
  other.code = "b";
  TuneRecord stale_only = Record("G", 6144, 256, TuneStatus::kOk, 7);
  stale_only.code = "a";
  const std::vector<TuneRecord> rs = {old_fast, now_slow, other, stale_only};
  auto newest = ExportTable(rs, BaseSm90(), {"sm_90", "", {}});
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->table.entries(0).matvec().threads(), 256);  // 7 us: nothing newer replaced it
  EXPECT_EQ(newest->superseded, 1);  // 64 threads' code a
  EXPECT_EQ(newest->not_current, 0);
  ExportOptions current{"sm_90", "", {}};
  current.current_codes[ShapeKey(other.key)] = {"b"};
  auto now = ExportTable(rs, BaseSm90(), current);
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_EQ(now->table.entries(0).matvec().threads(), 128);  // 8 us, against this kilnc's 9
  EXPECT_EQ(now->not_current, 2);  // code a's two
  EXPECT_EQ(now->superseded, 0);
  EXPECT_NE(now->comments[0].find("best of 2"), std::string::npos) << now->comments[0];
  current.current_codes[ShapeKey(other.key)] = {"c"};
  EXPECT_FALSE(ExportTable(rs, BaseSm90(), current).ok());  // nothing of the shape is current
}

// Through a cache file: a schedule's lines under codes A, B, then A again
// (two searches sharing a cache, or joined caches) keep A's last line as
// the newest, though A's record sits in the slot of its first line.
TEST(Tuning, TheCachesNewestRecordOfAScheduleIsItsLastLine) {
  const std::string path = TempPath("kiln_tune_seq.tsv");
  std::filesystem::remove(path);
  {
    auto cache = TuneCache::Open(path, nullptr);
    ASSERT_TRUE(cache.ok()) << cache.status();
    for (auto [code, us] : {std::pair<const char*, double>{"a", 9}, {"b", 5}, {"a", 10}}) {
      TuneRecord r = Record("G", 6144, 64, TuneStatus::kOk, us);
      r.code = code;
      ASSERT_TRUE(cache->Append(r).ok());
    }
    TuneRecord other = Record("G", 6144, 128, TuneStatus::kOk, 7);
    other.code = "a";
    ASSERT_TRUE(cache->Append(other).ok());
  }
  auto cache = TuneCache::Open(path, nullptr);
  ASSERT_TRUE(cache.ok()) << cache.status();
  ASSERT_EQ(cache->records().size(), 3u);  // a's two lines are one record
  auto out = ExportTable(cache->records(), BaseSm90(), {"sm_90", "", {}});
  ASSERT_TRUE(out.ok()) << out.status();
  // 64 threads' newest is a's 10 us (not b's 5): the 7-us schedule wins.
  EXPECT_EQ(out->table.entries(0).matvec().threads(), 128);
  std::filesystem::remove(path);
}

TEST(Tuning, ReExportReplacesTheOldEntryOfAShape) {
  std::vector<TuneRecord> first = {Record("G", 6144, 64, TuneStatus::kOk, 12)};
  auto one = ExportTable(first, BaseSm90(), {"sm_90", "", {}});
  ASSERT_TRUE(one.ok());
  std::vector<TuneRecord> second = {Record("G", 6144, 128, TuneStatus::kOk, 9),
                                    Record("G", 4096, 64, TuneStatus::kOk, 9)};
  auto two = ExportTable(second, one->table, {"sm_90", "", {}});
  ASSERT_TRUE(two.ok()) << two.status();
  int exact_6144 = 0;
  for (const ScheduleEntry& e : two->table.entries())
    if (e.min_rows() == 6144 && e.max_rows() == 6144) ++exact_6144;
  EXPECT_EQ(exact_6144, 1);
  EXPECT_EQ(two->table.entries_size(), one->table.entries_size() + 1);
}

TEST(Tuning, ExportNeedsOneGpuAndSomethingCorrect) {
  std::vector<TuneRecord> two_gpus = {Record("A", 6144, 64, TuneStatus::kOk, 12),
                                      Record("B", 6144, 64, TuneStatus::kOk, 10)};
  auto ambiguous = ExportTable(two_gpus, BaseSm90(), {"sm_90", "", {}});
  EXPECT_EQ(ambiguous.status().code(), absl::StatusCode::kInvalidArgument);
  auto chosen = ExportTable(two_gpus, BaseSm90(), {"sm_90", "A", {}});
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  EXPECT_EQ(chosen->table.provenance().gpu(), "A");
  EXPECT_FALSE(ExportTable(two_gpus, BaseSm90(), {"sm_80", "", {}}).ok());  // no results for that target
  std::vector<TuneRecord> failed = {Record("A", 6144, 64, TuneStatus::kTimeout, 0)};
  EXPECT_FALSE(ExportTable(failed, BaseSm90(), {"sm_90", "", {}}).ok());
}

}  // namespace
}  // namespace kiln::schedules
