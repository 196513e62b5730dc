// Golden-text harness for pass tests (style.md): `<name>.kir` holds cases
// separated by `// -----`; the pass's output for each case, printed, must
// equal the same case of `<name>.expected.kir`. A case's first comment line
// says what it checks: "// does not ..." cases must report changed = false
// and print unchanged (unless a "// partial: ..." line says what still
// changes), the others changed = true. Every case must verify
// after the pass, and a second run must change nothing. A "// target: sm_xx"
// line sets PassContext.target. KILN_UPDATE_GOLDENS=1 rewrites the expected
// file (review it as a diff).
#ifndef KILN_TESTS_PASSES_FUSE_GOLDEN_H_
#define KILN_TESTS_PASSES_FUSE_GOLDEN_H_

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pass.h"

namespace kiln::passes::testing {

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<std::string> SplitCases(const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view c : absl::StrSplit(text, "// -----\n")) out.push_back(std::string(c));
  return out;
}

// The leading comment lines of a case, joined (the case's description).
inline std::string Header(const std::string& c) {
  std::vector<std::string> lines;
  for (absl::string_view l : absl::StrSplit(c, '\n')) {
    if (!absl::StartsWith(l, "//")) break;
    lines.push_back(std::string(l));
  }
  return absl::StrJoin(lines, "\n");
}

template <typename P>
void RunGoldenFile(const std::string& input_path, const std::string& expected_path) {
  const std::vector<std::string> cases = SplitCases(ReadText(input_path));
  std::vector<std::string> outputs;
  for (const std::string& c : cases) {
    const std::string header = Header(c);
    SCOPED_TRACE(header);
    auto m = ir::ParseModule(c);
    ASSERT_TRUE(m.ok()) << m.status();
    ASSERT_TRUE(ir::Verify(**m).ok()) << ir::Verify(**m);
    PassContext ctx;
    std::string target;
    if (size_t at = header.find("// target: "); at != std::string::npos) {
      target = header.substr(at + 11, header.find('\n', at) - at - 11);
      ctx.target = target;
    }
    const std::string before = ir::PrintModule(**m);
    P pass;
    auto changed = pass.Run(**m, ctx);
    ASSERT_TRUE(changed.ok()) << changed.status();
    absl::Status v = ir::Verify(**m);
    ASSERT_TRUE(v.ok()) << v << "\n" << ir::PrintModule(**m);
    const std::string after = ir::PrintModule(**m);
    const bool negative = header.find("// does not") != std::string::npos;
    const bool partial = header.find("// partial:") != std::string::npos;
    EXPECT_EQ(*changed, !negative || partial);
    if (negative && !partial) {
      EXPECT_EQ(after, before);
    }
    auto again = pass.Run(**m, ctx);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_FALSE(*again) << "a second run changed the module";
    EXPECT_EQ(ir::PrintModule(**m), after);
    std::string out = header + "\n" + after;
    outputs.push_back(out);
  }
  const std::string joined = absl::StrJoin(outputs, "// -----\n");
  const char* update = std::getenv("KILN_UPDATE_GOLDENS");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(expected_path) << joined;
    GTEST_SKIP() << "rewrote " << expected_path;
  }
  const std::vector<std::string> want = SplitCases(ReadText(expected_path));
  ASSERT_EQ(want.size(), outputs.size()) << expected_path << " has another number of cases";
  for (size_t i = 0; i < outputs.size(); ++i) EXPECT_EQ(outputs[i], want[i]) << "case " << i;
}

}  // namespace kiln::passes::testing

#endif  // KILN_TESTS_PASSES_FUSE_GOLDEN_H_
