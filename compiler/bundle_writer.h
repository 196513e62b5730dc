// Writes .kiln bundles (docs/bundle.md): lays out the header, the manifest and
// the kernel-image sections, fills in every offset, size and checksum, and
// refuses to write a manifest the runtime's validator would reject.
#ifndef KILN_COMPILER_BUNDLE_WRITER_H_
#define KILN_COMPILER_BUNDLE_WRITER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/manifest.pb.h"

namespace kiln::compiler {

// One kernel image: PTX text (no NUL bytes) or a cubin, for one target.
struct SectionInput {
  runtime::Section::Kind kind = runtime::Section::PTX;
  std::string target;  // "sm_90"
  std::string bytes;
};

// The bundle's bytes. Sets manifest.format_version and replaces
// manifest.sections with one entry per input, in order. Does not validate:
// tests use it to build bundles the reader must reject.
absl::StatusOr<std::string> SerializeBundle(runtime::Manifest manifest,
                                            const std::vector<SectionInput>& sections);

// SerializeBundle, then runtime::ValidateManifest, then writes `path` + ".tmp"
// and renames it over `path`, so a reader never sees half a bundle.
absl::Status WriteBundle(const std::string& path, runtime::Manifest manifest,
                         const std::vector<SectionInput>& sections);

// The manifest as protobuf text for `kilnc inspect`: every Expr also printed
// as a formula in a comment, the tokenizer's token, type and merge lists
// replaced by a count (they hold ~150k entries).
std::string ManifestToText(const runtime::Manifest& manifest);

}  // namespace kiln::compiler

#endif  // KILN_COMPILER_BUNDLE_WRITER_H_
