// Runs a list of passes with the verifier after every pass that changed the
// module, and the debugging aids of style.md: numbered per-pass dumps
// (D/NNN-<pass>.kir plus D/index.tsv), print-after-all, disabling passes,
// stopping after a pass, and per-pass timing.
#ifndef KILN_PASSES_PIPELINE_H_
#define KILN_PASSES_PIPELINE_H_

#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "passes/pass.h"

namespace kiln::passes {

struct PipelineOptions {
  std::string dump_dir;                  // empty: no dumps
  bool print_after_all = false;          // print the module after each pass to `log`
  std::set<std::string> disabled;        // pass names to skip
  std::string stop_after;                // empty: run all
  bool time_passes = false;              // print a timing table to `log`
  std::ostream* log = nullptr;           // where printing goes (stderr if null)
};

// One row of D/index.tsv and of the timing table.
struct PassRecord {
  int index = 0;
  std::string pass;
  bool ran = false;       // false when disabled
  bool changed = false;
  double seconds = 0;
  int64_t op_count = 0;   // ops in the module after the pass
  // The pass's Summary() after it ran (extra columns of D/index.tsv).
  std::vector<std::pair<std::string, std::string>> summary;
};

// Ops in every function of `module`, nested ones included.
int64_t CountOps(const ir::Module& module);

class Pipeline {
 public:
  template <typename P, typename... Args>
  void AddPass(Args&&... args) {
    passes_.push_back(std::make_unique<P>(std::forward<Args>(args)...));
  }
  // Names of the passes in order (for --stop-after validation and --help).
  std::vector<std::string> PassNames() const;

  // Verifies the input, runs the passes. Errors carry the failing pass's
  // name; a verifier failure after a pass is Internal and names the pass.
  absl::Status Run(ir::Module& module, const PassContext& context, const PipelineOptions& options);
  // What Run checks of `options` first: stop_after and disabled name passes
  // of this pipeline (InvalidArgument listing them).
  absl::Status CheckOptions(const PipelineOptions& options) const;
  const std::vector<PassRecord>& records() const { return records_; }

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<PassRecord> records_;
};

}  // namespace kiln::passes

#endif  // KILN_PASSES_PIPELINE_H_
