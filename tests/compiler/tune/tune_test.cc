// kilnc tune's pieces that need no GPU: the worker protocol, the candidates
// of a unit (ABI filter, attention covering the context), the synthetic
// test kernels (they must assemble, or the GPU test proves nothing).
#include <unistd.h>

#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/kernel_validation.h"
#include "compiler/lower/lower_to_kernels.h"
#include "compiler/pipelines.h"
#include "compiler/tune/candidates.h"
#include "compiler/tune/wire.h"
#include "compiler/tune/worker_process.h"
#include "gtest/gtest.h"
#include "models/qwen3_config.h"
#include "models/qwen3_graph.h"
#include "models/vocab_from_gguf.h"
#include "passes/pipeline.h"
#include "schedules/schedules.h"
#include "schedules/tuning.h"
#include "tests/models/test_models.h"

namespace kiln::tune {
namespace {

using codegen::Epilogue;
using codegen::Family;
using codegen::KernelSpec;
using codegen::WeightFormat;

KernelSpec MatVec(int64_t rows, int64_t cols, WeightFormat f = WeightFormat::kQ4_K) {
  KernelSpec s;
  s.name = "mv";
  s.family = Family::kMatVec;
  s.weight = f;
  s.rows = rows;
  s.cols = cols;
  s.programmatic_launch = true;
  return s;
}

TEST(TuneWire, MessagesRoundTripBinaryFieldsInPieces) {
  Message m;
  m.Set("image", std::string("a\nb\0c end\n", 10));
  m.SetInt("seed", -42);
  m.SetDouble("us", 12.345678901234);
  const std::string bytes = EncodeMessage(m) + EncodeMessage(m);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  MessageReader reader(fds[0]);
  // Half a message: not complete yet.
  ASSERT_EQ(::write(fds[1], bytes.data(), 7), 7);
  EXPECT_TRUE(absl::IsDeadlineExceeded(reader.Read(absl::Milliseconds(20)).status()));
  ASSERT_EQ(::write(fds[1], bytes.data() + 7, bytes.size() - 7), static_cast<ssize_t>(bytes.size() - 7));
  for (int i = 0; i < 2; ++i) {
    auto got = reader.Read(absl::Seconds(5));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->Get("image"), m.Get("image"));
    EXPECT_EQ(got->GetInt("seed"), -42);
    EXPECT_EQ(got->GetDouble("us"), 12.345678901234);
  }
  ::close(fds[1]);
  EXPECT_TRUE(absl::IsUnavailable(reader.Read(absl::Seconds(5)).status()));
  ::close(fds[0]);
}

TEST(TuneWire, SpecsRoundTrip) {
  KernelSpec s = MatVec(6144, 4096);
  s.epilogue = Epilogue::kSiluMulPairs;
  s.pair_group = 2;
  s.eps = 1e-6f;
  s.matvec.row_groups = 4;
  s.matvec.stage_all = true;
  s.attn_scale = 0.08838834764831845f;
  s.attention.release_after_wait = true;
  s.rope_scaling = {0.125f, 1.0f, 3.0f, 12.0f, 1.0871497f};
  Message m;
  EncodeSpec(s, &m);
  auto back = DecodeSpec(m);
  ASSERT_TRUE(back.ok()) << back.status();
  Message again;
  EncodeSpec(*back, &again);
  EXPECT_EQ(again.fields, m.fields);
  EXPECT_EQ(back->attn_scale, s.attn_scale);
  EXPECT_TRUE(back->attention.release_after_wait);
  EXPECT_EQ(back->rope_scaling.ramp_high, 12.0f);
  EXPECT_EQ(back->rope_scaling.mscale, 1.0871497f);
  m.fields.erase("spec.rows");
  EXPECT_EQ(DecodeSpec(m).status().code(), absl::StatusCode::kDataLoss);
}

TEST(TuneCandidates, EntryAndSpecConvertBothWays) {
  KernelSpec s = MatVec(6144, 4096);
  s.matvec.threads = 64;
  s.matvec.stage_all = true;
  auto e = EntryOfSpec(s);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->matvec().threads(), 64);
  EXPECT_TRUE(e->matvec().stage_all());
  KernelSpec t = MatVec(6144, 4096);
  ASSERT_TRUE(ApplyEntry(*e, &t).ok());
  EXPECT_EQ(t.matvec.threads, 64);
  EXPECT_TRUE(t.matvec.stage_all);
  schedules::ScheduleEntry attention;
  attention.set_family("attention_decode");
  EXPECT_FALSE(ApplyEntry(attention, &t).ok());
  // A decode attention's schedule, release_after_wait among its fields.
  KernelSpec d;
  d.name = "dec";
  d.family = codegen::Family::kAttentionDecode;
  d.attention.release_after_wait = true;
  d.attention.blocks_per_sm = 2;
  auto de = EntryOfSpec(d);
  ASSERT_TRUE(de.ok()) << de.status();
  EXPECT_TRUE(de->attention().release_after_wait());
  KernelSpec d2 = d;
  d2.attention = {};
  ASSERT_TRUE(ApplyEntry(*de, &d2).ok());
  EXPECT_TRUE(d2.attention.release_after_wait);
  EXPECT_EQ(d2.attention.blocks_per_sm, 2);
  auto key = KeyOfSpec(MatVec(100, 256, WeightFormat::kQ8_0Planar));
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(key->weight_dtype, "q8_0_planar");
}

TEST(TuneCandidates, TheAbiFilterDropsWhatCodegenRejects) {
  auto spaces = schedules::BuiltinSpaces();
  ASSERT_TRUE(spaces.ok());
  auto target = codegen::Target::FromName("sm_90");
  TuneUnit unit;
  unit.spec = MatVec(24576, 4096);
  unit.spec.epilogue = Epilogue::kSiluMulPairs;
  unit.spec.pair_group = 4;  // rows_per_block must be a multiple of 8
  unit.spec.matvec.rows_per_block = 8;
  unit.key = *KeyOfSpec(unit.spec);
  int rejected = 0;
  auto cs = EnumerateCandidates(unit, 0, *spaces, *target, 0, &rejected);
  ASSERT_TRUE(cs.ok()) << cs.status();
  EXPECT_GT(rejected, 0);  // e.g. 64 threads in 4 row groups
  ASSERT_FALSE(cs->empty());
  EXPECT_EQ((*cs)[0].schedule, schedules::CanonicalSchedule(*EntryOfSpec(unit.spec)));  // current first
  for (const Candidate& c : *cs) {
    EXPECT_TRUE(codegen::ValidateKernelSpec(c.spec, *target).ok()) << c.schedule;
    EXPECT_EQ(c.spec.matvec.rows_per_block % 8, 0);
  }
  auto limited = EnumerateCandidates(unit, 0, *spaces, *target, 3);
  ASSERT_TRUE(limited.ok());
  EXPECT_EQ(limited->size(), 3u);
}

// Qwen3-8B's decode attention (32 query heads on 8 KV heads of 128) at its
// full context.
TuneUnit DecodeAttentionUnit(bool rope_fused) {
  TuneUnit unit;
  KernelSpec& s = unit.spec;
  s.name = "att";
  s.family = Family::kAttentionDecode;
  s.n_head = 32;
  s.n_head_kv = 8;
  s.head_dim = 128;
  s.attn_scale = 0.088f;
  s.attention.split_positions = 640;
  if (rope_fused) {
    s.rope_fused = true;
    s.rope_base = 1e6f;
    s.eps = 1e-6f;
    s.kv_f16 = true;
  }
  unit.context = 40960;
  unit.key = *KeyOfSpec(s);
  return unit;
}

TEST(TuneCandidates, DecodeAttentionCoversTheContext) {
  auto spaces = schedules::BuiltinSpaces();
  const TuneUnit unit = DecodeAttentionUnit(false);
  EXPECT_EQ(unit.key.rows, 32);
  EXPECT_EQ(unit.key.cols, 128);
  auto cs = EnumerateCandidates(unit, 0, *spaces, *codegen::Target::FromName("sm_90"), 0);
  ASSERT_TRUE(cs.ok()) << cs.status();
  EXPECT_GE(cs->size(), 10u);
  std::set<int> split_counts;
  for (const Candidate& c : *cs) {
    const auto& a = c.spec.attention;
    split_counts.insert(a.max_splits);
    // The smallest cap (a multiple of 32, at least the shortest split)
    // that covers the context with max_splits splits.
    EXPECT_GE(int64_t{a.max_splits} * a.split_positions, unit.context) << c.schedule;
    EXPECT_EQ(a.split_positions % 32, 0) << c.schedule;
    EXPECT_GE(a.split_positions, a.min_split_positions) << c.schedule;
    if (a.split_positions > a.min_split_positions) {
      EXPECT_LT(int64_t{a.max_splits} * (a.split_positions - 32), unit.context) << c.schedule;
    }
  }
  EXPECT_GE(split_counts.size(), 3u);  // the space's max_splits axis
}

TEST(TuneCandidates, SyntheticKernelsTakeTheAbiAndAssemble) {
  TuneUnit unit;
  unit.spec = MatVec(512, 256);
  unit.key = *KeyOfSpec(unit.spec);
  std::vector<Candidate> cs = SyntheticCandidates(unit, 0);
  ASSERT_EQ(cs.size(), 2u);
  const codegen::Target target = *codegen::Target::FromName("sm_90");
  for (const Candidate& c : cs) {
    auto ptx = SyntheticPtx(c.spec, target, c.variant);
    ASSERT_TRUE(ptx.ok()) << ptx.status();
    EXPECT_TRUE(absl::StrContains(*ptx, ".entry " + c.spec.name)) << *ptx;
    EXPECT_TRUE(absl::StrContains(*ptx, c.variant == "test_fault" ? "1099511627776" : "bra $Lspin")) << *ptx;
    if (!codegen::FindPtxas()) continue;
    codegen::PtxasReport report;
    auto cubin = codegen::RunPtxas(*ptx, target, &report);
    EXPECT_TRUE(cubin.ok()) << cubin.status() << "\n" << *ptx;
  }
  EXPECT_FALSE(SyntheticPtx(unit.spec, target, "nonsense").ok());
}

// A candidate's code identity is its PTX's digest under a fixed kernel
// name: the same schedule gives the same code on every run and at any place
// in a search, another schedule (other PTX) another one.
TEST(TuneCandidates, CodeIsADigestOfThePtx) {
  EXPECT_EQ(CodeDigest(""), "cbf29ce484222325");  // FNV-1a 64's offset basis
  EXPECT_EQ(CodeDigest("a"), "af63dc4c8601ec8c");
  TuneUnit unit;
  unit.spec = MatVec(512, 256);
  unit.key = *KeyOfSpec(unit.spec);
  auto spaces = schedules::BuiltinSpaces();
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  const codegen::Target target = *codegen::Target::FromName("sm_90");
  auto cs = EnumerateCandidates(unit, 0, *spaces, target, 2);
  ASSERT_TRUE(cs.ok()) << cs.status();
  ASSERT_EQ(cs->size(), 2u);
  Candidate moved = (*cs)[0];
  moved.spec.name = "tune_u7_c42";  // the same kernel at another place in a search
  auto a = IdentifyCandidate((*cs)[0], target), again = IdentifyCandidate(moved, target),
       b = IdentifyCandidate((*cs)[1], target);
  ASSERT_TRUE(a.ok() && again.ok() && b.ok());
  EXPECT_EQ(a->code, again->code);
  EXPECT_NE(a->code, b->code);
  EXPECT_EQ(a->code.size(), 16u);
  EXPECT_EQ(a->code, CodeDigest(a->ptx));
  Candidate fault = SyntheticCandidates(unit, 0)[0];
  auto synthetic = CandidatePtx(fault, target);
  ASSERT_TRUE(synthetic.ok()) << synthetic.status();
  EXPECT_TRUE(absl::StrContains(*synthetic, "1099511627776"));  // the test hook's kernel, not codegen's
}

// The search compiles the PTX of the code pass renamed (NamedPtx), not
// emitted again: renaming must give exactly what codegen emits under the
// candidate's own name, for every family the tuner searches (the decode
// attention's fused RoPE brings a .const table) and the test hook's kernels.
TEST(TuneCandidates, RenamedIdentityPtxIsTheCandidatesOwn) {
  const codegen::Target target = *codegen::Target::FromName("sm_90");
  auto spaces = schedules::BuiltinSpaces();
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  TuneUnit mv;
  mv.spec = MatVec(4096, 1024);
  mv.key = *KeyOfSpec(mv.spec);
  const TuneUnit att = DecodeAttentionUnit(true);
  std::vector<Candidate> all;
  for (const TuneUnit* u : std::vector<const TuneUnit*>{&mv, &att}) {
    auto cs = EnumerateCandidates(*u, 3, *spaces, target, 6);
    ASSERT_TRUE(cs.ok()) << cs.status();
    ASSERT_FALSE(cs->empty());
    all.insert(all.end(), cs->begin(), cs->end());
  }
  for (const Candidate& c : SyntheticCandidates(mv, 3)) all.push_back(c);
  for (const Candidate& c : all) {
    auto id = IdentifyCandidate(c, target);
    ASSERT_TRUE(id.ok()) << id.status();
    auto own = CandidatePtx(c, target);
    ASSERT_TRUE(own.ok()) << own.status();
    ASSERT_TRUE(absl::StrContains(id->ptx, std::string(kCodeIdentityName) + "(")) << c.schedule;
    EXPECT_EQ(NamedPtx(id->ptx, c.spec.name), *own) << c.spec.name << " [" << c.schedule << "] " << c.variant;
  }
}

// The tuner times the matvecs of a matvec join (a Q4_K_M layer's q/k and V
// projections, one launch) as the matvecs they are: lowered with joins, the
// decode plan launches a join, and the units are those of the lowering
// without (the same keys, specs and launches a step).
TEST(TuneCandidates, AJoinsPartsAreTunedAsMatVecs) {
  models::SynthOptions o;
  o.recipe = models::Recipe::kQ4_K_M;
  o.seed = 5;
  auto f = models::SynthAndOpen(o, "m.gguf");
  ASSERT_NE(f, nullptr);
  const models::Qwen3Config c = *models::ReadQwen3Config(*f);
  auto m = models::BuildQwen3Module(*f, c);
  ASSERT_TRUE(m.ok()) << m.status();
  passes::Pipeline p;
  compiler::BuildPipeline(p);
  ASSERT_TRUE(p.Run(**m, passes::PassContext{}, {}).ok());
  compiler::LowerOptions lo;
  lo.join_matvecs = true;
  absl::StatusOr<compiler::LoweredModel> lowered =
      compiler::LowerToKernels(**m, *f, c, *models::ReadVocab(*f), lo);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  int joins = 0;
  for (const runtime::Launch& l : lowered->manifest.decode().launches())
    joins += lowered->kernels[l.kernel()].family == codegen::Family::kMatVecJoin;
  EXPECT_EQ(joins, 1);  // the tiny Q4_K_M: one of its two layers has a Q6_K V
  CollectOptions with, without;
  with.join_matvecs = true;
  without.join_matvecs = false;
  absl::StatusOr<std::vector<TuneUnit>> joined = CollectUnits(**m, *f, with);
  absl::StatusOr<std::vector<TuneUnit>> apart = CollectUnits(**m, *f, without);
  ASSERT_TRUE(joined.ok()) << joined.status();
  ASSERT_TRUE(apart.ok()) << apart.status();
  auto describe = [](const std::vector<TuneUnit>& units) {
    std::vector<std::string> out;
    for (const TuneUnit& u : units)
      out.push_back(absl::StrCat(schedules::ShapeKey(u.key), " ", u.launches, " ", u.spec.matvec.threads, " ",
                                 static_cast<int>(u.spec.prologue), " ", u.spec.parts.size()));
    return out;
  };
  EXPECT_EQ(describe(*joined), describe(*apart));
  std::set<std::string> keys;
  for (const TuneUnit& u : *joined) keys.insert(absl::StrCat(u.key.weight_dtype, " ", u.spec.rows, "x", u.spec.cols));
  EXPECT_TRUE(keys.count("q4_k 384x256") && keys.count("q6_k 128x256")) << absl::StrJoin(keys, ", ");
}

TEST(TuneWorkerProcess, ATimeoutKillsAndADeathIsReported) {
  // A "worker" that never answers, and one that exits at once.
  auto silent = WorkerProcess::Spawn({"/bin/sleep", "30"});
  ASSERT_TRUE(silent.ok()) << silent.status();
  EXPECT_TRUE(absl::IsDeadlineExceeded((*silent)->Receive(absl::Milliseconds(100)).status()));
  (*silent)->Kill();
  EXPECT_EQ((*silent)->ExitDescription(), "killed by signal 9");
  auto dying = WorkerProcess::Spawn({"/bin/sh", "-c", "exit 3"});
  ASSERT_TRUE(dying.ok());
  EXPECT_TRUE(absl::IsUnavailable((*dying)->Receive(absl::Seconds(10)).status()));
  EXPECT_EQ((*dying)->ExitDescription(), "exited with status 3");
  // The worker's fds 3 and 4 are the pipes: an echo through them comes back.
  auto echo = WorkerProcess::Spawn({"/bin/sh", "-c", "cat <&3 >&4"});
  ASSERT_TRUE(echo.ok());
  Message m;
  m.Set("kind", "hello");
  ASSERT_TRUE((*echo)->Send(m).ok());
  auto got = (*echo)->Receive(absl::Seconds(10));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->Get("kind"), "hello");
}

}  // namespace
}  // namespace kiln::tune
