// The pipeline's contract (passes/pipeline.h): numbered dumps and index.tsv,
// stop-after, disabled passes, unknown pass names, verifier failures blamed
// on the pass, print-after-all, timing; and the compiler's pass list.
#include "passes/pipeline.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "compiler/pipelines.h"
#include "gtest/gtest.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/canonicalize.h"
#include "passes/pack_weights.h"
#include "passes/plan_buffers.h"

namespace kiln::passes {
namespace {

constexpr char kModule[] = R"(weight @blk.0.attn_q : q8_0[64, 64] = "blk.0.attn_q.weight"
weight @blk.0.attn_k : q8_0[32, 64] = "blk.0.attn_k.weight"
weight @blk.0.attn_v : q8_0[32, 64] = "blk.0.attn_v.weight"

func @load() {
  return()
}

func @decode(%x: f32[1, 64]) -> (f32[1, 64], f32[1, 32]) {
  %q = matmul(%x, @blk.0.attn_q) : f32[1, 64]
  %k = matmul(%x, @blk.0.attn_k) : f32[1, 32]
  %v = matmul(%x, @blk.0.attn_v) : f32[1, 32]
  %dead = silu(%v) : f32[1, 32]
  %kv = add(%k, %v) : f32[1, 32]
  return(%q, %kv)
}
)";

std::unique_ptr<ir::Module> Parse() {
  auto m = ir::ParseModule(kModule);
  EXPECT_TRUE(m.ok()) << m.status();
  return std::move(*m);
}

std::string TempDir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path p = std::filesystem::temp_directory_path() /
                            (std::string("kiln_pipeline_") + info->name() + "_" + name);
  std::filesystem::remove_all(p);
  return p.string();
}

std::string Read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void AddPasses(Pipeline& p) {
  p.AddPass<CanonicalizePass>();
  p.AddPass<PackWeightsPass>();
  p.AddPass<PlanBuffersPass>();
}

// A pass that breaks the module (a dangling operand type) and says so.
class BreakingPass : public Pass {
 public:
  std::string_view name() const override { return "breaking"; }
  absl::StatusOr<bool> Run(ir::Module& module, const PassContext&) override {
    ir::Function* f = module.FindFunction("decode");
    f->body().ops().front()->result()->set_type({ir::DType::kF32, {1, 3}});
    return true;
  }
};

TEST(Pipeline, DumpsEveryPassAndAnIndex) {
  auto m = Parse();
  Pipeline p;
  AddPasses(p);
  PipelineOptions o;
  o.dump_dir = TempDir("dumps");
  std::ostringstream log;
  o.log = &log;
  ASSERT_TRUE(p.Run(*m, {}, o).ok());
  const std::filesystem::path d = o.dump_dir;
  for (const char* f : {"000-input.kir", "001-canonicalize.kir", "002-pack-weights.kir", "003-plan-buffers.kir"})
    EXPECT_TRUE(std::filesystem::exists(d / f)) << f;
  EXPECT_EQ(Read(d / "000-input.kir"), ir::PrintModule(*Parse()));
  EXPECT_EQ(Read(d / "003-plan-buffers.kir"), ir::PrintModule(*m));
  EXPECT_TRUE(absl::StrContains(Read(d / "002-pack-weights.kir"), "concat_rows(@blk.0.attn_q"));
  const std::vector<std::string> rows = absl::StrSplit(Read(d / "index.tsv"), '\n', absl::SkipEmpty());
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0], "index\tpass\tchanged\tseconds\top_count\tarena_bytes\tkv_bytes\tstate_bytes\tkernels_per_token");
  EXPECT_TRUE(absl::StartsWith(rows[1], "000\tinput\t-\t")) << rows[1];
  EXPECT_TRUE(absl::StartsWith(rows[2], "001\tcanonicalize\tyes\t")) << rows[2];
  EXPECT_TRUE(absl::StartsWith(rows[3], "002\tpack-weights\tyes\t")) << rows[3];
  EXPECT_TRUE(absl::StrContains(rows[4], "\t1280\t0\t8704\t5")) << rows[4];
  EXPECT_EQ(p.records().size(), 3u);
  EXPECT_EQ(p.records()[2].op_count, CountOps(*m));
  EXPECT_TRUE(log.str().empty()) << log.str();

  // A second run on a fresh module writes the same dumps.
  auto m2 = Parse();
  Pipeline p2;
  AddPasses(p2);
  PipelineOptions o2 = o;
  o2.dump_dir = TempDir("dumps2");
  ASSERT_TRUE(p2.Run(*m2, {}, o2).ok());
  for (const char* f : {"000-input.kir", "001-canonicalize.kir", "002-pack-weights.kir", "003-plan-buffers.kir"})
    EXPECT_EQ(Read(d / f), Read(std::filesystem::path(o2.dump_dir) / f)) << f;
}

TEST(Pipeline, StopAfterAndDisable) {
  auto m = Parse();
  Pipeline p;
  AddPasses(p);
  PipelineOptions o;
  o.dump_dir = TempDir("stop");
  o.stop_after = "pack-weights";
  o.disabled = {"canonicalize"};
  ASSERT_TRUE(p.Run(*m, {}, o).ok());
  ASSERT_EQ(p.records().size(), 2u);
  EXPECT_FALSE(p.records()[0].ran);
  EXPECT_TRUE(p.records()[1].ran);
  const std::filesystem::path d = o.dump_dir;
  EXPECT_FALSE(std::filesystem::exists(d / "001-canonicalize.kir"));
  EXPECT_TRUE(std::filesystem::exists(d / "002-pack-weights.kir"));
  EXPECT_FALSE(std::filesystem::exists(d / "003-plan-buffers.kir"));
  EXPECT_TRUE(absl::StrContains(Read(d / "index.tsv"), "001\tcanonicalize\tdisabled\t"));
  // canonicalize did not run: the dead silu is still there.
  EXPECT_TRUE(absl::StrContains(ir::PrintModule(*m), "silu"));
}

TEST(Pipeline, UnknownPassNamesListTheValidOnes) {
  auto m = Parse();
  Pipeline p;
  AddPasses(p);
  PipelineOptions o;
  o.stop_after = "fuze";
  absl::Status s = p.Run(*m, {}, o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "'fuze'")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "canonicalize, pack-weights, plan-buffers")) << s;
  o.stop_after.clear();
  o.disabled = {"nope"};
  s = p.Run(*m, {}, o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "'nope'")) << s;
  EXPECT_EQ(ir::PrintModule(*m), ir::PrintModule(*Parse()));  // nothing ran
}

TEST(Pipeline, VerifierFailureIsInternalAndNamesThePass) {
  auto m = Parse();
  Pipeline p;
  p.AddPass<CanonicalizePass>();
  p.AddPass<BreakingPass>();
  p.AddPass<PlanBuffersPass>();
  PipelineOptions o;
  o.dump_dir = TempDir("broken");
  absl::Status s = p.Run(*m, {}, o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(s.message(), "after pass 'breaking'")) << s;
  EXPECT_EQ(p.records().size(), 2u);  // plan-buffers never ran
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(o.dump_dir) / "002-breaking.kir"));
}

TEST(Pipeline, InvalidInputIsRejectedBeforeAnyPass) {
  auto m = Parse();
  m->FindFunction("decode")->body().ops().front()->result()->set_type({ir::DType::kF32, {1, 3}});
  Pipeline p;
  AddPasses(p);
  absl::Status s = p.Run(*m, {}, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(p.records().empty());
}

TEST(Pipeline, PrintAfterAllAndTiming) {
  auto m = Parse();
  Pipeline p;
  AddPasses(p);
  PipelineOptions o;
  std::ostringstream log;
  o.log = &log;
  o.print_after_all = true;
  o.time_passes = true;
  ASSERT_TRUE(p.Run(*m, {}, o).ok());
  const std::string text = log.str();
  EXPECT_TRUE(absl::StrContains(text, "// ----- IR after canonicalize -----")) << text;
  EXPECT_TRUE(absl::StrContains(text, "// ----- IR after plan-buffers -----")) << text;
  EXPECT_TRUE(absl::StrContains(text, "arena() {bytes = ")) << text;
  EXPECT_TRUE(absl::StrContains(text, "\ntotal ")) << text;
  EXPECT_TRUE(absl::StrContains(text, "pack-weights  yes")) << text;
}

TEST(CompilerPipeline, ListsThePassesInOrder) {
  Pipeline p;
  compiler::BuildPipeline(p);
  EXPECT_EQ(p.PassNames(), (std::vector<std::string>{"canonicalize", "pack-weights", "fuse", "select-schedules",
                                                     "plan-buffers"}));
}

}  // namespace
}  // namespace kiln::passes
