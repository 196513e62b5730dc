// Golden text tests of canonicalize, pack-weights and plan-buffers: every
// tests/passes/<pass>/<name>.kir holds input cases separated by `// -----`;
// <name>.expected.kir holds, per case, its leading comment lines, whether the
// pass changed it, and the printed result. Every case must verify after the
// pass, a second run must change nothing, and each pass's cases must include
// one the pass acts on and one it leaves alone.
//
// Regenerate after an intended change, then review the diff:
//   KILN_UPDATE_GOLDENS=1 build/tests/passes/passes_golden_test
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/canonicalize.h"
#include "passes/pack_weights.h"
#include "passes/plan_buffers.h"

namespace kiln::passes {
namespace {

constexpr char kSeparator[] = "// -----\n";

std::unique_ptr<Pass> MakePass(const std::string& dir) {
  if (dir == "canonicalize") return std::make_unique<CanonicalizePass>();
  if (dir == "pack_weights") return std::make_unique<PackWeightsPass>();
  if (dir == "plan_buffers") return std::make_unique<PlanBuffersPass>();
  return nullptr;
}

std::string Read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> SplitCases(const std::string& text) {
  std::vector<std::string> cases;
  for (absl::string_view c : absl::StrSplit(text, kSeparator)) cases.emplace_back(c);
  return cases;
}

// The leading `//` lines of a case: what it checks.
std::string Header(const std::string& text) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, "//")) break;
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, MatchesExpected) {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "KILN_SOURCE_DIR is not set (run through ctest)";
  const std::filesystem::path dir = std::filesystem::path(src) / "tests/passes" / GetParam();
  std::vector<std::filesystem::path> inputs;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (absl::EndsWith(name, ".kir") && !absl::EndsWith(name, ".expected.kir")) inputs.push_back(e.path());
  }
  std::sort(inputs.begin(), inputs.end());
  ASSERT_FALSE(inputs.empty()) << dir;
  const bool update = std::getenv("KILN_UPDATE_GOLDENS") != nullptr;
  int acted = 0, left_alone = 0;
  for (const auto& input : inputs) {
    SCOPED_TRACE(input.string());
    std::vector<std::string> outputs;
    const std::vector<std::string> cases = SplitCases(Read(input));
    for (size_t i = 0; i < cases.size(); ++i) {
      SCOPED_TRACE(absl::StrCat("case ", i, ":\n", Header(cases[i])));
      auto m = ir::ParseModule(cases[i]);
      ASSERT_TRUE(m.ok()) << m.status();
      ASSERT_TRUE(ir::Verify(**m).ok()) << ir::Verify(**m);
      std::unique_ptr<Pass> pass = MakePass(GetParam());
      ASSERT_NE(pass, nullptr);
      absl::StatusOr<bool> changed = pass->Run(**m, PassContext{});
      ASSERT_TRUE(changed.ok()) << changed.status();
      (*changed ? acted : left_alone)++;
      EXPECT_TRUE(ir::Verify(**m).ok()) << ir::Verify(**m) << "\n" << ir::PrintModule(**m);
      const std::string printed = ir::PrintModule(**m);
      absl::StatusOr<bool> again = MakePass(GetParam())->Run(**m, PassContext{});
      ASSERT_TRUE(again.ok()) << again.status();
      EXPECT_FALSE(*again) << "a second run changed the module:\n" << ir::PrintModule(**m);
      // The printed result parses back to the same text.
      auto reparsed = ir::ParseModule(printed);
      ASSERT_TRUE(reparsed.ok()) << reparsed.status();
      EXPECT_EQ(ir::PrintModule(**reparsed), printed);
      outputs.push_back(absl::StrCat(Header(cases[i]), "// changed: ", *changed ? "yes" : "no", "\n", printed));
    }
    std::filesystem::path expected_path = input;
    expected_path.replace_extension(".expected.kir");
    const std::string got = absl::StrJoin(outputs, kSeparator);
    if (update) {
      std::ofstream(expected_path, std::ios::binary) << got;
      continue;
    }
    ASSERT_TRUE(std::filesystem::exists(expected_path))
        << expected_path << " is missing; run with KILN_UPDATE_GOLDENS=1";
    const std::vector<std::string> want = SplitCases(Read(expected_path));
    ASSERT_EQ(want.size(), outputs.size()) << "case count differs from " << expected_path;
    for (size_t i = 0; i < outputs.size(); ++i) EXPECT_EQ(outputs[i], want[i]) << "case " << i;
  }
  EXPECT_GT(acted, 0) << "no case the pass acts on";
  EXPECT_GT(left_alone, 0) << "no case the pass leaves alone";
}

INSTANTIATE_TEST_SUITE_P(Passes, Golden, ::testing::Values("canonicalize", "pack_weights", "plan_buffers"));

}  // namespace
}  // namespace kiln::passes
