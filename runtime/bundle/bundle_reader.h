// Opens a .kiln bundle (docs/bundle.md): checks the header, the manifest's
// checksum, every section's bounds and checksum, the zero padding between
// them, and then validates the whole manifest (validator.h). A Bundle exists
// only if all of that passed, so nothing later needs to re-check it.
#ifndef KILN_RUNTIME_BUNDLE_BUNDLE_READER_H_
#define KILN_RUNTIME_BUNDLE_BUNDLE_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/manifest.pb.h"
#include "support/mapped_file.h"

namespace kiln::runtime {

class Bundle {
 public:
  // Maps `path` and parses it. Errors start with the path.
  static absl::StatusOr<std::unique_ptr<Bundle>> Open(const std::string& path);
  // Parses a copy of `bytes`; `name` (a path or "<memory>") starts errors.
  static absl::StatusOr<std::unique_ptr<Bundle>> Parse(absl::Span<const uint8_t> bytes,
                                                       std::string name);

  Bundle(const Bundle&) = delete;
  Bundle& operator=(const Bundle&) = delete;

  const std::string& name() const { return name_; }
  const Manifest& manifest() const { return manifest_; }
  uint64_t file_size() const { return bytes_.size(); }
  // The bytes of manifest().sections(index); OutOfRange for a bad index.
  absl::StatusOr<absl::Span<const uint8_t>> SectionBytes(int index) const;

 private:
  Bundle(std::string name, std::unique_ptr<MappedFile> file, std::vector<uint8_t> copy);
  // Checks everything and fills manifest_.
  absl::Status Load();

  std::string name_;
  std::unique_ptr<MappedFile> file_;  // Open: the mapping bytes_ points into
  std::vector<uint8_t> copy_;         // Parse: the copy bytes_ points into
  absl::Span<const uint8_t> bytes_;
  Manifest manifest_;
};

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_BUNDLE_BUNDLE_READER_H_
