#include "runtime/perf/bench_options.h"

#include <algorithm>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "support/cli_args.h"
#include "support/command_line.h"

namespace kiln::runtime {

absl::StatusOr<std::vector<int64_t>> ParseLengthList(const std::string& text, const std::string& flag,
                                                     bool allow_zero) {
  std::optional<std::vector<absl::string_view>> items = ListItems(text);
  if (!items) return UsageError(absl::StrCat("--", flag, " '", text, "' has an empty item between commas"));
  std::vector<int64_t> out;
  for (absl::string_view part : *items) {
    int64_t v;
    const bool parsed = absl::SimpleAtoi(part, &v);
    if (!parsed || v < 0 || (v == 0 && !allow_zero)) {
      const std::string what = absl::StrCat("bad value '", std::string(part), "' in --", flag, ": want ",
                                            allow_zero ? "integers >= 0" : "integers >= 1", " separated by commas");
      // Not a number: the command line is wrong (exit 2); a number out of
      // range is an error of its value (exit 1).
      return parsed ? absl::InvalidArgumentError(what) : UsageError(what);
    }
    out.push_back(v);
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat("--", flag, " is empty"));
  return out;
}

absl::Status CheckBenchOptions(const BenchOptions& o) {
  if (o.prompt_lengths.empty()) return absl::InvalidArgumentError("no prompt lengths to measure");
  if (o.depths.empty()) return absl::InvalidArgumentError("no decode depths to measure");
  for (int64_t l : o.prompt_lengths)
    if (l < 1) return absl::InvalidArgumentError(absl::StrCat("prompt length ", l, " is not positive"));
  for (int64_t d : o.depths)
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat("depth ", d, " is negative"));
  if (o.steps < 1) return absl::InvalidArgumentError(absl::StrCat("--steps ", o.steps, " must be at least 1"));
  if (o.reps < 1) return absl::InvalidArgumentError(absl::StrCat("--reps ", o.reps, " must be at least 1"));
  if (o.warmup < 1 || o.profile_steps < 1)
    return absl::InvalidArgumentError(absl::StrCat("warm-up steps (", o.warmup, ") and profiled steps (",
                                                   o.profile_steps, ") must be at least 1"));
  return absl::OkStatus();
}

int64_t RequiredContext(const BenchOptions& o) {
  // Saturating: flags near INT64_MAX must fail the context check, not wrap.
  auto add = [](int64_t a, int64_t b) { return a > std::numeric_limits<int64_t>::max() - b ? std::numeric_limits<int64_t>::max() : a + b; };
  int64_t need = 0;
  for (int64_t l : o.prompt_lengths) need = std::max(need, l);
  for (int64_t d : o.depths) need = std::max(need, add(d, add(o.warmup, o.steps)));
  return need;
}

absl::StatusOr<int64_t> ChooseBenchContext(const BenchOptions& o, int64_t requested, int64_t context_length,
                                           absl::string_view flags) {
  const int64_t need = RequiredContext(o);
  const std::string why = absl::StrCat("prompts of up to ", *std::max_element(o.prompt_lengths.begin(),
                                                                              o.prompt_lengths.end()),
                                       " tokens and ", o.warmup, " + ", o.steps, " decode steps from depth ",
                                       *std::max_element(o.depths.begin(), o.depths.end()), " need a context of ",
                                       need, " tokens");
  if (need > context_length)
    return absl::InvalidArgumentError(absl::StrCat(why, ", more than the model's context length ", context_length,
                                                   "; measure less (", flags, ")"));
  if (requested < 0) return absl::InvalidArgumentError(absl::StrCat("--ctx-size ", requested, " is negative"));
  if (requested == 0) return need;
  if (requested < need) return absl::InvalidArgumentError(absl::StrCat(why, "; --ctx-size ", requested, " is less"));
  if (requested > context_length)
    return absl::InvalidArgumentError(
        absl::StrCat("--ctx-size ", requested, " exceeds the model's context length ", context_length));
  return requested;
}

}  // namespace kiln::runtime
