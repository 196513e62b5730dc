#include "runtime/perf/read_bytes.h"

#include "absl/strings/str_cat.h"
#include "runtime/bundle/expr.h"
#include "support/status_macros.h"

namespace kiln::runtime {

absl::StatusOr<ReadBytes> LaunchReadBytes(const Kernel& k, int64_t tokens, int64_t position, int64_t context) {
  if (tokens < 0 || position < 0 || context < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("read bytes at T=", tokens, " P=", position, " C=", context, ": negative"));
  ReadBytes b;
  b.weights = k.bytes_read();
  absl::StatusOr<int64_t> per_position = Evaluate(k.bytes_read_per_position(), ExprEnv{tokens, position, context});
  if (!per_position.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("kernel '", k.name(), "': bytes_read_per_position: ", per_position.status().message()));
  if (*per_position < 0)
    return absl::DataLossError(
        absl::StrCat("kernel '", k.name(), "': bytes_read_per_position is negative (", *per_position, ")"));
  b.kv = static_cast<uint64_t>(*per_position) * static_cast<uint64_t>(position + tokens);
  return b;
}

absl::StatusOr<std::vector<ReadBytes>> PlanLaunchReadBytes(const Manifest& m, const Plan& plan, int64_t tokens,
                                                           int64_t position, int64_t context) {
  std::vector<ReadBytes> out;
  for (const Launch& l : plan.launches()) {
    if (l.kernel() >= static_cast<uint32_t>(m.kernels_size()))
      return absl::InvalidArgumentError(absl::StrCat("launch of kernel ", l.kernel(), ", which is out of range"));
    ASSIGN_OR_RETURN(ReadBytes b, LaunchReadBytes(m.kernels(l.kernel()), tokens, position, context));
    out.push_back(b);
  }
  return out;
}

absl::StatusOr<ReadBytes> PlanReadBytes(const Manifest& m, const Plan& plan, int64_t tokens, int64_t position,
                                        int64_t context) {
  ASSIGN_OR_RETURN(std::vector<ReadBytes> each, PlanLaunchReadBytes(m, plan, tokens, position, context));
  ReadBytes sum;
  for (const ReadBytes& b : each) {
    sum.weights += b.weights;
    sum.kv += b.kv;
  }
  return sum;
}

bool HasReadBytes(const Manifest& m) {
  for (const Kernel& k : m.kernels())
    if (k.bytes_read() > 0 || k.has_bytes_read_per_position()) return true;
  return false;
}

}  // namespace kiln::runtime
