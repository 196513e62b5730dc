#include "support/cli_args.h"

namespace kiln {

std::vector<std::string> NormalizeArgs(const std::vector<std::string>& args,
                                       const std::vector<ShortFlag>& shorts) {
  std::vector<std::string> out;
  bool flags_done = false;
  for (const std::string& a : args) {
    if (flags_done || a.size() < 2 || a[0] != '-') {
      out.push_back(a);
      continue;
    }
    if (a == "--") {
      flags_done = true;
      out.push_back(a);
      continue;
    }
    bool replaced = false;
    for (const ShortFlag& s : shorts) {
      std::string sn = s.short_name;
      if (a == sn) {
        out.push_back(std::string("--") + s.long_name);
        replaced = true;
      } else if (a.rfind(sn + "=", 0) == 0) {
        out.push_back(std::string("--") + s.long_name + a.substr(sn.size()));
        replaced = true;
      }
      if (replaced) break;
    }
    if (replaced) continue;
    // --n-predict=8 -> --n_predict=8 (only the name part).
    size_t start = a[1] == '-' ? 2 : 1;
    size_t eq = a.find('=');
    std::string fixed = a;
    for (size_t i = start; i < (eq == std::string::npos ? a.size() : eq); ++i)
      if (fixed[i] == '-') fixed[i] = '_';
    out.push_back(fixed);
  }
  return out;
}

bool WantsHelp(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a == "-h" || a == "--help" || a == "-help") return true;
  }
  return false;
}

}  // namespace kiln
