// ScanArgs (support/cli_args.h): values taken verbatim, only the command's
// flags accepted, errors naming the argument.
#include "support/cli_args.h"

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "gtest/gtest.h"

ABSL_FLAG(std::string, cli_text, "", "a string flag");
ABSL_FLAG(int, cli_count, 0, "an int flag");
ABSL_FLAG(bool, cli_switch, false, "a bool flag");
ABSL_FLAG(std::string, cli_other, "", "a flag no test command lists");

namespace kiln {
namespace {

const std::vector<ShortFlag> kShorts = {{"-x", "cli_text"}, {"-k", "cli_count"}};
const std::vector<absl::string_view> kAllowed = {"cli_text", "cli_count", "cli_switch"};

class ScanArgsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::SetFlag(&FLAGS_cli_text, "");
    absl::SetFlag(&FLAGS_cli_count, 0);
    absl::SetFlag(&FLAGS_cli_switch, false);
  }
};

TEST_F(ScanArgsTest, ValuesAreTakenVerbatimEvenWithDashes) {
  auto s = ScanArgs({"-x", "- a - b --help", "pos-1", "--cli-count", "-3"}, kShorts, kAllowed);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(absl::GetFlag(FLAGS_cli_text), "- a - b --help");
  EXPECT_EQ(absl::GetFlag(FLAGS_cli_count), -3);
  EXPECT_EQ(s->positional, std::vector<std::string>{"pos-1"});
  EXPECT_FALSE(s->help);
}

TEST_F(ScanArgsTest, SpellingsOfNamesAndValues) {
  auto s = ScanArgs({"--cli-text=a-b", "-k=7", "--cli_switch", "-", "--", "--cli-count", "-h"}, kShorts, kAllowed);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(absl::GetFlag(FLAGS_cli_text), "a-b");
  EXPECT_EQ(absl::GetFlag(FLAGS_cli_count), 7);
  EXPECT_TRUE(absl::GetFlag(FLAGS_cli_switch));
  EXPECT_EQ(s->positional, (std::vector<std::string>{"-", "--cli-count", "-h"}));
  ASSERT_TRUE(ScanArgs({"--nocli-switch"}, kShorts, kAllowed).ok());
  EXPECT_FALSE(absl::GetFlag(FLAGS_cli_switch));
  absl::SetFlag(&FLAGS_cli_switch, true);
  ASSERT_TRUE(ScanArgs({"--no-cli-switch"}, kShorts, kAllowed).ok());
  EXPECT_FALSE(absl::GetFlag(FLAGS_cli_switch));
}

TEST_F(ScanArgsTest, UsageErrorsNameTheArgument) {
  auto expect = [](std::vector<std::string> args, const std::string& message) {
    auto s = ScanArgs(args, kShorts, kAllowed);
    ASSERT_FALSE(s.ok()) << message;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(IsUsageError(s.status()));
    EXPECT_EQ(s.status().message(), message);
  };
  expect({"--bogus"}, "unknown flag '--bogus' (see --help)");
  expect({"--cli-other", "v"}, "unknown flag '--cli-other' (see --help)");  // defined, not the command's
  expect({"--helpfull"}, "unknown flag '--helpfull' (see --help)");         // Abseil's own
  expect({"-k"}, "flag '-k' needs a value");
  expect({"-k", "x"}, "bad value 'x' for flag '-k': Illegal value 'x' specified for flag 'cli_count'");
  expect({"--cli-switch=maybe"},
         "bad value 'maybe' for flag '--cli-switch': Illegal value 'maybe' specified for flag 'cli_switch'");
  expect({"--nocli-text"}, "unknown flag '--nocli-text' (see --help)");  // only bool flags negate
  // An empty string flag value (say, -x "$UNSET") is not "not given".
  expect({"-x", ""}, "flag '-x' has an empty value");
  expect({"--cli-text="}, "flag '--cli-text' has an empty value");
}

TEST_F(ScanArgsTest, HelpWinsOverErrors) {
  auto s = ScanArgs({"--bogus", "-h"}, kShorts, kAllowed);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->help);
}

TEST_F(ScanArgsTest, AnUndefinedAllowedNameIsAnInternalError) {
  auto s = ScanArgs({}, kShorts, {"cli_text", "not_defined_anywhere"});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace kiln
