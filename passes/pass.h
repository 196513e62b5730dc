// The pass interface (XLA style): a pass is a small class with a kebab-case
// name() equal to its file name and Run(), which rewrites the module in
// place and returns whether it changed anything. Passes are deterministic,
// keep no global state and never print: the pipeline verifies, dumps and
// times them.
#ifndef KILN_PASSES_PASS_H_
#define KILN_PASSES_PASS_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/ir.h"

namespace kiln::passes {

// What passes may know about the compilation beyond the module.
struct PassContext {
  std::string_view target = "sm_90";  // GPU target, for schedule selection
  // A schedule table (schedule.proto ScheduleTable, text format) to use
  // instead of the built-in one of its target (kilnc compile --schedules);
  // empty: the built-in tables. `schedule_table_origin` names it in errors.
  std::string_view schedule_table;
  std::string_view schedule_table_origin;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  // Returns true if the module changed. Errors: InvalidArgument/Unimplemented
  // for input the pass cannot handle (naming the op's line), Internal for bugs.
  virtual absl::StatusOr<bool> Run(ir::Module& module, const PassContext& context) = 0;
  // Module-level facts the last Run() computed, as (key, value) pairs in a
  // fixed order (plan-buffers: arena_bytes, kv_bytes, ...); the pipeline puts
  // them in D/index.tsv. Most passes have none.
  virtual std::vector<std::pair<std::string, std::string>> Summary() const { return {}; }
};

}  // namespace kiln::passes

#endif  // KILN_PASSES_PASS_H_
