// The tuner's worker protocol (docs/tuning.md): messages of named fields,
// each "<name> <byte count>\n<bytes>\n", ended by "end\n", over pipes.
// Binary-safe, so a cubin travels as one field.
#ifndef KILN_COMPILER_TUNE_WIRE_H_
#define KILN_COMPILER_TUNE_WIRE_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "compiler/codegen/kernel_spec.h"

namespace kiln::tune {

// Field names of the tuner's messages (docs/tuning.md "The worker").
inline constexpr char kFieldKind[] = "kind";  // hello | run | result
inline constexpr char kKindHello[] = "hello";
inline constexpr char kKindRun[] = "run";
inline constexpr char kKindResult[] = "result";
// hello: the device, or why there is none.
inline constexpr char kFieldGpu[] = "gpu";
inline constexpr char kFieldSmCount[] = "sm_count";
inline constexpr char kFieldDriver[] = "driver";
inline constexpr char kFieldSm[] = "sm";
inline constexpr char kFieldError[] = "error";
// run: spec.* (EncodeSpec), the image, and how to measure.
inline constexpr char kFieldTarget[] = "target";
inline constexpr char kFieldImage[] = "image";
inline constexpr char kFieldImageKind[] = "image_kind";  // cubin | ptx
inline constexpr char kFieldVariant[] = "variant";
inline constexpr char kFieldSeed[] = "seed";
inline constexpr char kFieldSamples[] = "samples";
inline constexpr char kFieldRotateBytes[] = "rotate_bytes";
inline constexpr char kFieldPosition[] = "position";
// result.
inline constexpr char kFieldStatus[] = "status";
inline constexpr char kFieldUs[] = "us";
inline constexpr char kFieldGbps[] = "gbps";
inline constexpr char kFieldRelErr[] = "rel_err";
inline constexpr char kFieldDetail[] = "detail";

struct Message {
  std::map<std::string, std::string> fields;

  void Set(const std::string& name, std::string value) { fields[name] = std::move(value); }
  void SetInt(const std::string& name, int64_t value);
  void SetDouble(const std::string& name, double value);
  bool Has(const std::string& name) const { return fields.count(name) != 0; }
  std::string Get(const std::string& name) const;  // "" if absent
  int64_t GetInt(const std::string& name, int64_t fallback = 0) const;
  double GetDouble(const std::string& name, double fallback = 0) const;
};

std::string EncodeMessage(const Message& message);
// Writes the whole message (retrying short writes); Unavailable when the
// reader is gone (EPIPE: the caller ignores SIGPIPE).
absl::Status WriteMessage(int fd, const Message& message);

// Reads messages from a file descriptor, keeping what arrives early.
class MessageReader {
 public:
  explicit MessageReader(int fd) : fd_(fd) {}
  // The next message. DeadlineExceeded when none is complete within
  // `timeout` (absl::InfiniteDuration() waits forever); Unavailable at end
  // of file (the writer closed or died); DataLoss for a malformed stream.
  absl::StatusOr<Message> Read(absl::Duration timeout);

 private:
  // A whole message at the front of buf_ (consumed), or nullopt-like false.
  absl::StatusOr<bool> TakeMessage(Message* out);
  int fd_;
  std::string buf_;
};

// A kernel spec as fields "spec.<name>" (every field of kernel_spec.h but
// a matvec join's parts: the tuner sends a join's parts as the matvecs they
// are, and a join without them fails the worker's validation), and back.
void EncodeSpec(const codegen::KernelSpec& spec, Message* message);
absl::StatusOr<codegen::KernelSpec> DecodeSpec(const Message& message);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_WIRE_H_
