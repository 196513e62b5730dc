// A one-line progress indicator for long work (packing, loading, writing):
// redrawn in place on a terminal, silent when stderr is a pipe or file.
#ifndef KILN_SUPPORT_PROGRESS_H_
#define KILN_SUPPORT_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace kiln {

class ProgressLine {
 public:
  // `enabled` defaults to "stderr is a terminal".
  explicit ProgressLine(std::string label);
  ProgressLine(std::string label, bool enabled);
  // Thread-safe; redraws at most ~10 times a second.
  void Update(uint64_t done_bytes, uint64_t total_bytes);
  // Shows `message` after the label instead of byte counts (e.g. the
  // tuner's "412/580 candidates, 2 faults, best ..."); same redraw limit.
  void UpdateMessage(std::string message);
  // Ends the line (prints the final state when enabled).
  void Finish();

 private:
  void Draw(uint64_t done, uint64_t total);
  std::string label_;
  bool enabled_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_, last_;
  uint64_t done_ = 0, total_ = 0;
  std::string message_;  // non-empty: drawn instead of the byte counts
};

}  // namespace kiln

#endif  // KILN_SUPPORT_PROGRESS_H_
