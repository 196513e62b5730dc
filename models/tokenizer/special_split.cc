#include "models/tokenizer/special_split.h"

namespace kiln::tokenizer {

std::vector<Fragment> SplitSpecialTokens(std::string_view text,
                                         const std::vector<SpecialToken>& candidates,
                                         bool parse_special) {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({-1, text});

  std::vector<Fragment> next;
  for (const SpecialToken& token : candidates) {
    if (token.text.empty() || (token.needs_parse_special && !parse_special)) continue;
    next.clear();
    bool changed = false;
    for (const Fragment& f : fragments) {
      if (f.id >= 0) {
        next.push_back(f);
        continue;
      }
      std::string_view rest = f.text;
      for (size_t hit = rest.find(token.text); hit != std::string_view::npos;
           hit = rest.find(token.text)) {
        changed = true;
        if (hit > 0) next.push_back({-1, rest.substr(0, hit)});
        next.push_back({token.id, rest.substr(hit, token.text.size())});
        rest.remove_prefix(hit + token.text.size());
      }
      if (!rest.empty()) next.push_back({-1, rest});
    }
    if (changed) fragments.swap(next);
  }
  return fragments;
}

}  // namespace kiln::tokenizer
