#include "support/cli_args.h"

#include <algorithm>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace kiln {
namespace {

bool IsFlag(absl::string_view a) { return a.size() >= 2 && a[0] == '-'; }

constexpr char kUsagePayload[] = "kiln.usage";

}  // namespace

absl::Status UsageError(absl::string_view message) {
  absl::Status s = absl::InvalidArgumentError(message);
  s.SetPayload(kUsagePayload, absl::Cord("1"));
  return s;
}

bool IsUsageError(const absl::Status& status) { return status.GetPayload(kUsagePayload).has_value(); }

absl::StatusOr<ScannedArgs> ScanArgs(const std::vector<std::string>& args, const std::vector<ShortFlag>& shorts,
                                     const std::vector<absl::string_view>& allowed) {
  for (absl::string_view name : allowed)
    if (absl::FindCommandLineFlag(name) == nullptr)
      return absl::InternalError(absl::StrCat("the command lists flag '", name, "', which is not defined"));
  auto is_allowed = [&](absl::string_view name) {
    return std::find(allowed.begin(), allowed.end(), name) != allowed.end();
  };
  ScannedArgs out;
  // The first error is returned after the scan, unless help was asked for.
  absl::Status error_seen;
  auto fail = [&](std::string message) {
    if (error_seen.ok()) error_seen = UsageError(message);
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      out.positional.insert(out.positional.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (!IsFlag(a)) {
      out.positional.push_back(a);
      continue;
    }
    if (a == "-h" || a == "-help" || a == "--help") {
      out.help = true;
      continue;
    }
    const size_t eq = a.find('=');
    absl::string_view spelled = absl::string_view(a).substr(0, eq);
    std::optional<std::string> value;
    if (eq != std::string::npos) value = a.substr(eq + 1);
    std::string name;
    for (const ShortFlag& s : shorts)
      if (spelled == s.short_name) name = s.long_name;
    if (name.empty())
      name = absl::StrReplaceAll(spelled.substr(spelled[1] == '-' ? 2 : 1), {{"-", "_"}});
    absl::CommandLineFlag* flag = is_allowed(name) ? absl::FindCommandLineFlag(name) : nullptr;
    if (flag == nullptr && name.size() > 2 && name.rfind("no", 0) == 0 && !value.has_value()) {
      // --nojson, --no-think: a bool flag set to false.
      const std::string base = name.substr(name[2] == '_' ? 3 : 2);
      absl::CommandLineFlag* negated = is_allowed(base) ? absl::FindCommandLineFlag(base) : nullptr;
      if (negated != nullptr && negated->IsOfType<bool>()) {
        flag = negated;
        value = "false";
      }
    }
    if (flag == nullptr) {
      fail(absl::StrCat("unknown flag '", spelled, "' (see --help)"));
      continue;
    }
    if (!value.has_value()) {
      if (flag->IsOfType<bool>()) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        fail(absl::StrCat("flag '", spelled, "' needs a value"));
        continue;
      }
    }
    // An empty string means "not given" for every string flag, so an empty
    // value is at best redundant and usually an unset shell variable
    // (-o "$OUT"): refused rather than read as "no output".
    if (value->empty() && flag->IsOfType<std::string>()) {
      fail(absl::StrCat("flag '", spelled, "' has an empty value"));
      continue;
    }
    std::string error;
    if (!flag->ParseFrom(*value, &error))
      fail(absl::StrCat("bad value '", *value, "' for flag '", spelled, "': ", error));
  }
  if (!out.help && !error_seen.ok()) return error_seen;
  return out;
}

}  // namespace kiln
