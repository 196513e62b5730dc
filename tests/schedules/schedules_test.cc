// The schedule tables: every shipped table is embedded, parses and passes
// the checks; lookup takes the first matching entry, honours shape ranges
// and dtypes, carries provenance, and falls back to flagged heuristics for
// an unknown target; malformed tables are rejected with the entry named.
#include "schedules/schedules.h"

#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

namespace kiln::schedules {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Schedules, EmbeddedTablesEqualTheSourceFilesAndParse) {
  ASSERT_EQ(EmbeddedTables().size(), 3u);
  for (const EmbeddedTable& t : EmbeddedTables()) {
    EXPECT_EQ(std::string(t.text), ReadFile(std::string(KILN_SCHEDULES_DIR) + "/" + std::string(t.file)))
        << t.file;
  }
  auto lib = ScheduleLibrary::Builtin();
  ASSERT_TRUE(lib.ok()) << lib.status();
  EXPECT_EQ(lib->Targets(), (std::vector<std::string>{"sm_80", "sm_89", "sm_90"}));
}

TEST(Schedules, EveryFamilyOfEveryTableHasAnEntryOfItsKind) {
  auto lib = *ScheduleLibrary::Builtin();
  for (const std::string& target : lib.Targets()) {
    for (const char* family : {"embed", "matvec", "gemm", "qk_norm_rope_store", "attention_decode",
                               "attention_prefill", "argmax"}) {
      for (const char* dtype : {"f16", "bf16", "q8_0", "q8_0_planar", "q4_0", "q4_k", "q5_k", "q6_k"}) {
        auto c = lib.Lookup({family, dtype, 4096, 4096}, target);
        ASSERT_TRUE(c.ok()) << c.status();
        EXPECT_FALSE(c->fallback) << target << " " << family << " " << dtype;
        EXPECT_EQ(c->entry.schedule_case(), *ScheduleCaseOf(family)) << family;
        EXPECT_FALSE(c->provenance.gpu().empty());
        // Tuned entries name the GPU they were measured on.
        if (c->provenance.source() == Provenance::TUNED) {
          EXPECT_GT(c->provenance.sm_count(), 0) << target << " " << family << " " << dtype;
          EXPECT_FALSE(c->provenance.driver().empty());
          EXPECT_FALSE(c->provenance.date().empty());
        }
      }
    }
  }
}

TEST(Schedules, LookupPicksByDtypeAndShapeRange) {
  auto lib = *ScheduleLibrary::Builtin();
  auto q4 = *lib.Lookup({"matvec", "q4_k", 4096, 1536}, "sm_90");
  auto f16 = *lib.Lookup({"matvec", "f16", 4096, 4096}, "sm_90");
  // The 8B shapes tuned on the H200 take their exact entries, listed first;
  // other large shapes the ranges after them: long rows (down), tall
  // matrices (gate/up), the rest.
  auto q4_tuned = *lib.Lookup({"matvec", "q4_k", 24576, 4096}, "sm_90");
  EXPECT_EQ(q4_tuned.provenance.source(), Provenance::TUNED);
  EXPECT_EQ(q4_tuned.provenance.gpu(), "NVIDIA H200");
  EXPECT_TRUE(q4_tuned.entry.matvec().stage_all());
  EXPECT_TRUE(q4_tuned.entry.matvec().int8_activations());
  EXPECT_EQ(q4_tuned.entry.matvec().row_tiles(), 4);
  auto q4_down = *lib.Lookup({"matvec", "q4_k", 5120, 13824}, "sm_90");
  auto q4_tall = *lib.Lookup({"matvec", "q4_k", 27648, 5120}, "sm_90");
  auto q4_qkv = *lib.Lookup({"matvec", "q4_k", 7168, 5120}, "sm_90");
  EXPECT_EQ(q4_down.provenance.source(), Provenance::HEURISTIC);
  EXPECT_EQ(q4_down.entry.matvec().threads(), 64);
  EXPECT_EQ(q4_tall.entry.matvec().row_groups(), 4);
  EXPECT_EQ(q4_qkv.entry.matvec().rows_per_block(), 16);
  EXPECT_EQ(q4_qkv.entry.matvec().row_groups(), 2);
  EXPECT_EQ(q4.entry.matvec().rows_per_block(), 8);
  EXPECT_EQ(f16.entry.matvec().rows_per_block(), 2);
  EXPECT_EQ(q4.entry.matvec().threads(), 256);
  EXPECT_EQ(q4.entry.matvec().vector_bytes(), 16);
  // Short rows (cols <= 1024) take the row-group entry listed first.
  auto q4_short = *lib.Lookup({"matvec", "q4_k", 4096, 1024}, "sm_90");
  EXPECT_EQ(q4_short.entry.matvec().row_groups(), 2);
  EXPECT_EQ(q4.entry.matvec().row_groups(), 1);
  // An unlisted dtype gets the family's catch-all entry, not the fallback.
  auto other = *lib.Lookup({"matvec", "i8", 64, 64}, "sm_90");
  EXPECT_FALSE(other.fallback);
  EXPECT_EQ(other.entry.matvec().rows_per_block(), 4);
  // Gemm tile_k: the format's column window at least, deep enough on sm_90
  // that each thread of the 128 x 128 tiles decodes a piece of each k tile.
  EXPECT_EQ(lib.Lookup({"gemm", "q6_k", 4096, 4096}, "sm_90")->entry.gemm().tile_k(), 128);
  EXPECT_EQ(lib.Lookup({"gemm", "q8_0_planar", 4096, 4096}, "sm_90")->entry.gemm().tile_k(), 64);
  EXPECT_EQ(lib.Lookup({"gemm", "q8_0_planar", 4096, 4096}, "sm_80")->entry.gemm().tile_k(), 32);
  // Q6_K blocks kept as stored (q6_k_blocks) take the q6_k catch-alls on
  // every target, never the planar kernels' tuned entries of their shape.
  for (const char* sm : {"sm_80", "sm_89", "sm_90"}) {
    auto blocks = *lib.Lookup({"gemm", "q6_k_blocks", 151936, 4096}, sm);
    auto planar = *lib.Lookup({"gemm", "q6_k", 151936, 4096}, sm);
    EXPECT_FALSE(blocks.fallback) << sm;
    EXPECT_EQ(blocks.entry.weight_dtype(), "q6_k_blocks") << sm;
    EXPECT_EQ(blocks.entry.gemm().SerializeAsString(), planar.entry.gemm().SerializeAsString()) << sm;
    EXPECT_EQ(lib.Lookup({"matvec", "q6_k_blocks", 151936, 4096}, sm)->entry.weight_dtype(), "q6_k_blocks") << sm;
  }
  auto head = *lib.Lookup({"matvec", "q6_k_blocks", 151936, 4096}, "sm_90");
  EXPECT_EQ(head.entry.max_rows(), 0);  // a range entry, not the planar head's exact one
  EXPECT_EQ(head.entry.matvec().threads(), 64);
  EXPECT_EQ(lib.Lookup({"matvec", "q6_k", 151936, 4096}, "sm_90")->entry.max_rows(), 151936);
  auto attn = *lib.Lookup({"attention_decode", "f16", 32, 128}, "SM_90");
  // Decode attention: a fixed count of splits whose length follows the
  // position, covering Qwen3's 40960 positions.
  EXPECT_EQ(attn.provenance.source(), Provenance::TUNED);
  EXPECT_EQ(attn.entry.attention().max_splits(), 32);
  EXPECT_EQ(attn.entry.attention().min_split_positions(), 64);
  EXPECT_GE(int64_t{attn.entry.attention().max_splits()} * attn.entry.attention().split_positions(), 40960);
  EXPECT_EQ(attn.target, "sm_90");
}

// lower-to-kernels rejects a decode attention whose splits cannot cover the
// model's context: every table, and the heuristic, covers Qwen3's 40960.
TEST(Schedules, DecodeAttentionCoversQwen3Context) {
  auto lib = *ScheduleLibrary::Builtin();
  std::vector<AttentionSchedule> all = {HeuristicSchedule({"attention_decode", "f16", 32, 128}).attention()};
  for (const std::string& target : lib.Targets())
    for (int64_t heads : {16, 32, 40, 64})
      all.push_back(lib.Lookup({"attention_decode", "f16", heads, 128}, target)->entry.attention());
  for (const AttentionSchedule& a : all) {
    EXPECT_GE(int64_t{a.max_splits()} * a.split_positions(), 40960) << a.ShortDebugString();
    EXPECT_LE(a.min_split_positions(), a.split_positions()) << a.ShortDebugString();
  }
}

TEST(Schedules, UnknownTargetFallsBackToFlaggedHeuristics) {
  auto c = LookupSchedule("matvec", "q8_0_planar", 4096, 4096, "sm_75");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->fallback);
  EXPECT_EQ(c->target, "sm_75");
  EXPECT_EQ(c->provenance.source(), Provenance::HEURISTIC);
  EXPECT_NE(c->provenance.note().find("no table"), std::string::npos);
  EXPECT_EQ(c->entry.matvec().rows_per_block(), 4);
  // A known target is not flagged.
  auto known = LookupSchedule("matvec", "q8_0_planar", 4096, 4096, "sm_90");
  ASSERT_TRUE(known.ok());
  EXPECT_FALSE(known->fallback);
}

TEST(Schedules, UnknownFamilyIsAnError) {
  auto c = LookupSchedule("softmax", "f32", 1, 1, "sm_90");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("softmax"), std::string::npos);
}

TEST(Schedules, ProvenanceOfAnEntryOverridesTheTables) {
  ScheduleLibrary lib;
  ASSERT_TRUE(lib.AddTableText(R"pb(
    target: "sm_90"
    provenance { source: HEURISTIC gpu: "any" }
    entries {
      family: "matvec" weight_dtype: "q8_0_planar" min_rows: 1000 max_rows: 5000
      matvec { rows_per_block: 6 }
      provenance { source: TUNED gpu: "NVIDIA H200" sm_count: 132 driver: "550.54" date: "2025-02-01" }
    }
    entries { family: "matvec" matvec { threads: 128 } }
  )pb", "test.txtpb").ok());
  auto tuned = *lib.Lookup({"matvec", "q8_0_planar", 4096, 4096}, "sm_90");
  EXPECT_EQ(tuned.provenance.source(), Provenance::TUNED);
  EXPECT_EQ(tuned.provenance.sm_count(), 132);
  EXPECT_EQ(tuned.entry.matvec().rows_per_block(), 6);
  EXPECT_EQ(tuned.entry.matvec().threads(), 256);  // the kernel_spec.h default
  auto rest = *lib.Lookup({"matvec", "q8_0_planar", 8192, 4096}, "sm_90");  // rows out of range
  EXPECT_EQ(rest.provenance.source(), Provenance::HEURISTIC);
  EXPECT_EQ(rest.entry.matvec().threads(), 128);
  // No entry for the family at a known target: flagged heuristics.
  auto none = *lib.Lookup({"gemm", "q8_0", 64, 64}, "sm_90");
  EXPECT_TRUE(none.fallback);
  EXPECT_EQ(none.entry.gemm().tile_m(), 64);
}

TEST(Schedules, BadTablesAreRejectedNamingTheEntry) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"entries { family: \"matvec\" matvec {} }", "no target"},
      {"target: \"sm_90\" entries { family: \"matvec\" gemm {} }", "entry 0 (family \"matvec\"): has a gemm"},
      {"target: \"sm_90\" entries { family: \"embed\" elementwise {} } entries { family: \"fft\" }",
       "entry 1 (family \"fft\"): unknown kernel family"},
      {"target: \"sm_90\" entries { family: \"matvec\" min_rows: 9 max_rows: 3 matvec {} }", "empty or negative"},
      {"target: \"sm_90\" entries { family: \"matvec\" matvec { threds: 1 } }", "bad.txtpb:1:"},
  };
  for (const Case& c : cases) {
    ScheduleLibrary lib;
    absl::Status s = lib.AddTableText(c.text, "bad.txtpb");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(s.message().find(c.want), std::string::npos) << s.message();
  }
  ScheduleLibrary lib;
  ASSERT_TRUE(lib.AddTableText("target: \"sm_90\"", "a").ok());
  EXPECT_NE(lib.AddTableText("target: \"SM_90\"", "b").message().find("second table"), std::string::npos);
}

}  // namespace
}  // namespace kiln::schedules
