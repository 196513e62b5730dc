// The candidate tables for choosing inside the decode graph: per shape with
// an exact base entry, the K fastest schedules whose newest record is
// correct, each table the base with only that entry's schedule replaced;
// records that must not count do not; the filters; clear errors.
#include "schedules/graph_candidates.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kiln::schedules {
namespace {

// A base with exact entries for q8_0_planar 6144x4096 and 4096x4096 and for
// the decode attention 32x128, then catch-alls.
ScheduleTable Base() {
  ScheduleTable t;
  EXPECT_TRUE(ParseTextProto(R"pb(
    target: "sm_90"
    provenance { source: HEURISTIC gpu: "any" sm_count: 132 date: "2026-12-01" }
    entries { family: "matvec" weight_dtype: "q8_0_planar" min_rows: 6144 max_rows: 6144 min_cols: 4096
              max_cols: 4096 matvec { threads: 128 rows_per_block: 8 } }
    entries { family: "matvec" weight_dtype: "q8_0_planar" min_rows: 4096 max_rows: 4096 min_cols: 4096
              max_cols: 4096 matvec { threads: 128 rows_per_block: 8 } }
    entries { family: "matvec" weight_dtype: "q4_k" min_rows: 16384 matvec { threads: 256 rows_per_block: 4 } }
    entries { family: "matvec" matvec { threads: 256 rows_per_block: 4 } }
    entries { family: "attention_decode" weight_dtype: "f16" min_rows: 32 max_rows: 32 min_cols: 128
              max_cols: 128 attention { threads: 128 split_positions: 256 } }
    entries { family: "attention_decode" attention { threads: 128 split_positions: 256 } }
  )pb", "base", &t).ok());
  return t;
}

// A record as a cache reads it back (ParseRecord spells its schedule in
// full where it parses).
TuneRecord Rec(const std::string& family, const std::string& dtype, int64_t rows, int64_t cols,
               const std::string& schedule, double us, TuneStatus status = TuneStatus::kOk) {
  TuneRecord r;
  r.device = {"NVIDIA H200", 132, "580"};
  r.target = "sm_90";
  r.key = {family, dtype, rows, cols};
  r.schedule = schedule;
  r.status = status;
  r.us = us;
  absl::StatusOr<TuneRecord> read = ParseRecord(FormatRecord(r));
  EXPECT_TRUE(read.ok()) << read.status();
  return read.ok() ? *read : r;
}

TuneRecord Planar(int64_t rows, const std::string& schedule, double us, TuneStatus status = TuneStatus::kOk) {
  return Rec("matvec", "q8_0_planar", rows, 4096, schedule, us, status);
}

std::string Full(const std::string& schedule) {
  ScheduleEntry e;
  e.set_family("matvec");
  EXPECT_TRUE(ParseSchedule(schedule, &e).ok()) << schedule;
  return CanonicalSchedule(e);
}

TEST(GraphCandidates, TheFastestDistinctCorrectSchedulesOfEachExactShape) {
  const std::string a = "threads: 256 rows_per_block: 16", b = "threads: 512 rows_per_block: 16",
                    c = "threads: 256 rows_per_block: 16 stage_all: true";
  std::vector<TuneRecord> rs = {
      Planar(6144, a, 9.0),
      Planar(6144, Full(a), 8.6),                       // a again, spelled in full: counts once, at 8.6
                                                         // (the later record of the two)
      Planar(6144, b, 8.7),
      Planar(6144, c, 8.5),
      Planar(6144, "threads: 64", 1.0, TuneStatus::kWrong),  // fast but wrong
      Planar(4096, b, 6.0),
      Planar(1000, a, 1.0),                              // no exact entry in the base
      Rec("matvec", "q4_k", 16384, 4096, a, 1.0),        // only a range entry
  };
  TuneRecord variant = Planar(6144, "threads: 32", 0.5);
  variant.variant = "test_fault";
  TuneRecord other_target = Planar(6144, "threads: 32", 0.5);
  other_target.target = "sm_89";
  rs.push_back(variant);
  rs.push_back(other_target);
  CandidateOptions o;
  o.top = 2;
  auto out = GraphCandidates(rs, Base(), o);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->tables.size(), 3u);
  // ShapeKey order ("...|4096|4096" before "...|6144|4096"), fastest first.
  EXPECT_EQ(out->tables[0].name, "matvec_q8_0_planar_4096x4096-0");
  EXPECT_EQ(out->tables[1].name, "matvec_q8_0_planar_6144x4096-0");
  EXPECT_EQ(out->tables[1].schedule, Full(c));
  EXPECT_DOUBLE_EQ(out->tables[1].us, 8.5);
  EXPECT_EQ(out->tables[2].name, "matvec_q8_0_planar_6144x4096-1");
  EXPECT_EQ(out->tables[2].schedule, Full(a));
  EXPECT_DOUBLE_EQ(out->tables[2].us, 8.6);

  // Each table is the base with that one entry changed, and loads like a
  // shipped table.
  const ScheduleTable& t = out->tables[2].table;
  ASSERT_EQ(t.entries_size(), Base().entries_size());
  for (int i = 1; i < t.entries_size(); ++i)
    EXPECT_EQ(t.entries(i).SerializeAsString(), Base().entries(i).SerializeAsString()) << i;
  EXPECT_EQ(t.entries(0).min_rows(), 6144);
  EXPECT_EQ(t.entries(0).matvec().threads(), 256);
  EXPECT_EQ(t.entries(0).matvec().rows_per_block(), 16);
  ScheduleLibrary lib;
  ASSERT_TRUE(lib.AddTableText(FormatCandidateTable(out->tables[2]), "candidate").ok());
  auto chosen = lib.Lookup({"matvec", "q8_0_planar", 6144, 4096}, "sm_90");
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  EXPECT_EQ(chosen->entry.matvec().rows_per_block(), 16);
  EXPECT_FALSE(chosen->entry.matvec().stage_all());

  const std::string index = FormatCandidateIndex(out->tables);
  EXPECT_NE(index.find("matvec_q8_0_planar_6144x4096-1\tmatvec q8_0_planar 6144x4096\t8.600\t" + Full(a) + "\n"),
            std::string::npos)
      << index;
}

TEST(GraphCandidates, FamiliesDtypesAndShapesFilter) {
  const std::vector<TuneRecord> rs = {
      Planar(6144, "threads: 256", 9.0), Planar(4096, "threads: 256", 6.0),
      Rec("attention_decode", "f16", 32, 128, "threads: 128 split_positions: 1280 max_splits: 32", 5.0)};
  CandidateOptions o;
  o.families = {"attention_decode"};
  auto att = GraphCandidates(rs, Base(), o);
  ASSERT_TRUE(att.ok()) << att.status();
  ASSERT_EQ(att->tables.size(), 1u);
  EXPECT_EQ(att->tables[0].name, "attention_decode_f16_32x128-0");
  EXPECT_EQ(att->tables[0].table.entries(4).attention().split_positions(), 1280);
  o.families.clear();
  o.dtypes = {"q8_0_planar"};
  o.shapes = {ShapeKey({"matvec", "q8_0_planar", 6144, 4096})};
  auto one = GraphCandidates(rs, Base(), o);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->tables.size(), 1u);
  EXPECT_EQ(one->tables[0].shape.rows, 6144);
  o.dtypes = {"q4_k"};
  auto none = GraphCandidates(rs, Base(), o);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("exact entry in the base table (families any, dtypes q4_k)"),
            std::string::npos)
      << none.status();
}

TEST(GraphCandidates, ClearErrors) {
  CandidateOptions o;
  o.top = 0;
  EXPECT_EQ(GraphCandidates({Planar(6144, "threads: 256", 9)}, Base(), o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.top = 6;
  TuneRecord other_gpu = Planar(6144, "threads: 128", 8);
  other_gpu.device.gpu = "NVIDIA A100";
  auto two = GraphCandidates({Planar(6144, "threads: 256", 9), other_gpu}, Base(), o);
  EXPECT_NE(two.status().message().find("several GPUs"), std::string::npos) << two.status();
  o.gpu = "NVIDIA A100";
  auto chosen = GraphCandidates({Planar(6144, "threads: 256", 9), other_gpu}, Base(), o);
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  ASSERT_EQ(chosen->tables.size(), 1u);
  EXPECT_EQ(chosen->tables[0].table.entries(0).matvec().threads(), 128);
  EXPECT_FALSE(GraphCandidates({Planar(6144, "threads: 256", 9, TuneStatus::kFault)}, Base(), {}).ok());
}


// A schedule's newest record decides: measured correct by an older kilnc
// and wrong by a newer one, it is no candidate; after a search only the
// searched codes count.
TEST(GraphCandidates, EachSchedulesNewestRecordDecides) {
  TuneRecord old_ok = Planar(6144, "threads: 256", 5);
  old_ok.code = "a";
  old_ok.seq = 1;
  TuneRecord now_wrong = Planar(6144, "threads: 256", 0, TuneStatus::kWrong);
  now_wrong.code = "b";
  now_wrong.seq = 3;
  TuneRecord other = Planar(6144, "threads: 512", 8);
  other.code = "b";
  other.seq = 2;
  TuneRecord stale = Planar(6144, "threads: 128", 7);
  stale.code = "a";
  stale.seq = 4;
  const std::vector<TuneRecord> rs = {old_ok, now_wrong, other, stale};
  auto newest = GraphCandidates(rs, Base(), {});
  ASSERT_TRUE(newest.ok()) << newest.status();
  ASSERT_EQ(newest->tables.size(), 2u);  // 128 threads (7 us), then 512 (8 us); 256's newest is wrong
  EXPECT_EQ(newest->tables[0].table.entries(0).matvec().threads(), 128);
  EXPECT_EQ(newest->tables[1].table.entries(0).matvec().threads(), 512);
  EXPECT_EQ(newest->superseded, 1);
  CandidateOptions o;
  o.current_codes[ShapeKey(other.key)] = {"b"};
  auto current = GraphCandidates(rs, Base(), o);
  ASSERT_TRUE(current.ok()) << current.status();
  ASSERT_EQ(current->tables.size(), 1u);  // code a's records are another kilnc's
  EXPECT_EQ(current->tables[0].table.entries(0).matvec().threads(), 512);
  EXPECT_EQ(current->not_current, 2);
}

TEST(GraphCandidates, AScheduleThatNoLongerParsesIsLeftOutAndCounted) {
  auto out = GraphCandidates({Planar(6144, "threads: 256", 9), Planar(6144, "threads: 64 tile_q: 2", 1)}, Base(), {});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->tables.size(), 1u);
  EXPECT_EQ(out->unparsed, 1);
  auto none = GraphCandidates({Planar(6144, "threads: 64 tile_q: 2", 1)}, Base(), {});
  EXPECT_NE(none.status().message().find("1 whose schedule no longer parses"), std::string::npos) << none.status();
}

TEST(GraphCandidates, TheBaseMustBeForTheTargetAndItsExactEntryMustBeTheOneUsed) {
  ScheduleTable sm80 = Base();
  sm80.set_target("sm_80");
  auto other = GraphCandidates({Planar(6144, "threads: 256", 9)}, sm80, {});
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(other.status().message().find("the base table is for sm_80"), std::string::npos) << other.status();
  // A range entry before the exact one would win the lookup: the tables
  // could not change the kernel.
  ScheduleTable hidden = Base();
  ScheduleEntry range = hidden.entries(2);
  range.set_weight_dtype("q8_0_planar");
  range.set_min_rows(0);
  ScheduleTable reordered;
  reordered.set_target("sm_90");
  *reordered.add_entries() = range;
  for (const ScheduleEntry& e : hidden.entries()) *reordered.add_entries() = e;
  auto hid = GraphCandidates({Planar(6144, "threads: 256", 9)}, reordered, {});
  EXPECT_NE(hid.status().message().find("hidden by an earlier entry"), std::string::npos) << hid.status();
}

}  // namespace
}  // namespace kiln::schedules
