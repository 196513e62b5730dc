#include "support/progress.h"

#include <unistd.h>

#include <cstdio>

namespace kiln {

ProgressLine::ProgressLine(std::string label) : ProgressLine(std::move(label), isatty(2) != 0) {}

ProgressLine::ProgressLine(std::string label, bool enabled)
    : label_(std::move(label)), enabled_(enabled), start_(std::chrono::steady_clock::now()), last_(start_) {}

void ProgressLine::Update(uint64_t done, uint64_t total) {
  std::lock_guard<std::mutex> lock(mu_);
  done_ = done;
  total_ = total;
  auto now = std::chrono::steady_clock::now();
  if (!enabled_ || now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  Draw(done, total);
}

void ProgressLine::UpdateMessage(std::string message) {
  std::lock_guard<std::mutex> lock(mu_);
  message_ = std::move(message);
  auto now = std::chrono::steady_clock::now();
  if (!enabled_ || now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  Draw(done_, total_);
}

void ProgressLine::Draw(uint64_t done, uint64_t total) {
  if (!message_.empty()) {
    // \x1b[K clears what a longer previous line left.
    std::fprintf(stderr, "\r%s %s\x1b[K", label_.c_str(), message_.c_str());
    std::fflush(stderr);
    return;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double gb = 1e-9 * static_cast<double>(done);
  std::fprintf(stderr, "\r%s %5.1f%% (%.2f / %.2f GB, %.2f GB/s)", label_.c_str(),
               total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0, gb,
               1e-9 * static_cast<double>(total), secs > 0 ? gb / secs : 0.0);
  std::fflush(stderr);
}

void ProgressLine::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!enabled_) return;
  Draw(done_, total_);
  std::fprintf(stderr, "\n");
}

}  // namespace kiln
