#include "compiler/lower/beside_launches.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kiln::compiler {

absl::Status PairBesideLaunches(const runtime::Manifest& manifest, runtime::Plan& plan, std::vector<int> parts) {
  for (int i : parts)
    if (i < 0 || i >= plan.launches_size())
      return absl::InternalError(
          absl::StrCat("launch ", i, " to pair is outside the plan's ", plan.launches_size(), " launches"));
  std::sort(parts.begin(), parts.end());
  auto bytes = [&](int i) { return manifest.kernels(plan.launches(i).kernel()).bytes_read(); };
  for (size_t j = 0; j + 1 < parts.size(); ++j) {
    const int i = parts[j];
    if (parts[j + 1] != i + 1 || (i > 0 && plan.launches(i - 1).beside_next())) continue;
    if (bytes(i + 1) < bytes(i)) plan.mutable_launches()->SwapElements(i, i + 1);
    plan.mutable_launches(i)->set_beside_next(true);
    ++j;  // i + 1 is taken
  }
  return absl::OkStatus();
}

}  // namespace kiln::compiler
