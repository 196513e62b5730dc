#include "runtime/bundle/bundle_reader.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/bundle/bundle_format.h"
#include "runtime/bundle/validator.h"
#include "support/status_macros.h"

namespace kiln::runtime {
namespace {

// The first nonzero byte in bytes[begin, end), or end.
uint64_t FirstNonZero(absl::Span<const uint8_t> bytes, uint64_t begin, uint64_t end) {
  for (uint64_t i = begin; i < end; ++i)
    if (bytes[i] != 0) return i;
  return end;
}

}  // namespace

Bundle::Bundle(std::string name, std::unique_ptr<MappedFile> file, std::vector<uint8_t> copy)
    : name_(std::move(name)), file_(std::move(file)), copy_(std::move(copy)) {
  bytes_ = file_ != nullptr ? file_->bytes() : absl::Span<const uint8_t>(copy_);
}

absl::StatusOr<std::unique_ptr<Bundle>> Bundle::Open(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> file, MappedFile::Open(path));
  std::unique_ptr<Bundle> bundle(new Bundle(path, std::move(file), {}));
  RETURN_IF_ERROR(bundle->Load());
  return bundle;
}

absl::StatusOr<std::unique_ptr<Bundle>> Bundle::Parse(absl::Span<const uint8_t> bytes,
                                                      std::string name) {
  std::unique_ptr<Bundle> bundle(
      new Bundle(std::move(name), nullptr, std::vector<uint8_t>(bytes.begin(), bytes.end())));
  RETURN_IF_ERROR(bundle->Load());
  return bundle;
}

absl::StatusOr<absl::Span<const uint8_t>> Bundle::SectionBytes(int index) const {
  if (index < 0 || index >= manifest_.sections_size())
    return absl::OutOfRangeError(absl::StrCat(name_, ": section ", index, " is out of range (",
                                              manifest_.sections_size(), " sections)"));
  const Section& s = manifest_.sections(index);
  return bytes_.subspan(s.offset(), s.size());
}

absl::Status Bundle::Load() {
  const uint64_t size = bytes_.size();
  auto data_loss = [&](const auto&... args) {
    return absl::DataLossError(absl::StrCat(name_, ": ", args...));
  };

  // Header (bundle_format.h). A short file that starts like the magic is a
  // truncated bundle; anything else is not a bundle at all.
  const size_t magic_len = std::min<uint64_t>(size, kBundleMagicSize);
  if (magic_len == 0 || std::memcmp(bytes_.data(), kBundleMagic, magic_len) != 0)
    return absl::InvalidArgumentError(
        absl::StrCat(name_, ": not a kiln bundle (does not start with \"", kBundleMagic, "\")"));
  if (size < kBundleHeaderSize)
    return data_loss("truncated: ", size, " bytes, less than the ", kBundleHeaderSize,
                     "-byte header");
  const BundleHeader h = DecodeBundleHeader(bytes_.data());
  if (h.format_version != kBundleFormatVersion)
    return absl::InvalidArgumentError(absl::StrCat(
        name_, ": bundle format version ", h.format_version, "; this runtime reads version ",
        kBundleFormatVersion, " (rebuild the bundle with a matching kilnc)"));
  if (h.header_size != kBundleHeaderSize)
    return data_loss("header size ", h.header_size, "; format version ", kBundleFormatVersion,
                     " has a ", kBundleHeaderSize, "-byte header");
  if (size < h.file_size)
    return data_loss("truncated: the header says ", h.file_size, " bytes, the file has ", size);
  if (size > h.file_size)
    return data_loss(size - h.file_size, " bytes past the end the header gives (", h.file_size,
                     " bytes)");
  if (h.manifest_offset != kBundleHeaderSize)
    return data_loss("manifest offset ", h.manifest_offset, "; the manifest follows the ",
                     kBundleHeaderSize, "-byte header");
  if (h.manifest_size > size - kBundleHeaderSize)
    return data_loss("manifest [", kBundleHeaderSize, ", ", kBundleHeaderSize, " + ",
                     h.manifest_size, ") extends past the end of the file (", size, " bytes)");
  if (h.manifest_size > static_cast<uint64_t>(INT_MAX))
    return data_loss("manifest of ", h.manifest_size, " bytes exceeds 2 GiB");

  // Manifest.
  const absl::Span<const uint8_t> manifest_bytes =
      bytes_.subspan(kBundleHeaderSize, h.manifest_size);
  const uint64_t checksum = Fnv1a64(manifest_bytes);
  if (checksum != h.manifest_fnv1a64)
    return data_loss(
        absl::StrFormat("manifest checksum mismatch: header has %016x, bytes hash "
                        "to %016x",
                        h.manifest_fnv1a64, checksum));
  if (!manifest_.ParseFromArray(manifest_bytes.data(), static_cast<int>(manifest_bytes.size())))
    return data_loss("manifest (", h.manifest_size,
                     " bytes) does not parse as a kiln.runtime.Manifest");

  // Sections: in order, inside the file, zero padding before each, checksums.
  uint64_t pos = kBundleHeaderSize + h.manifest_size;
  for (int i = 0; i < manifest_.sections_size(); ++i) {
    const Section& s = manifest_.sections(i);
    const std::string what = DescribeSection(s, i);
    if (s.offset() < pos)
      return data_loss(what, ": offset ", s.offset(), " is before the end of the ",
                       i == 0 ? std::string("manifest") : absl::StrCat("section ", i - 1), " (",
                       pos, ")");
    if (s.size() > size || s.offset() > size - s.size())
      return data_loss(what, ": bytes [", s.offset(), ", ", s.offset(), " + ", s.size(),
                       ") are outside the file (", size, " bytes)");
    if (uint64_t at = FirstNonZero(bytes_, pos, s.offset()); at != s.offset())
      return data_loss("nonzero padding byte at offset ", at, " before ", what);
    const absl::Span<const uint8_t> section = bytes_.subspan(s.offset(), s.size());
    if (uint64_t sum = Fnv1a64(section); sum != s.fnv1a64())
      return data_loss(what, absl::StrFormat(": checksum mismatch: manifest has %016x, bytes "
                                             "hash to %016x",
                                             s.fnv1a64(), sum));
    if (s.kind() == Section::PTX) {
      const void* nul = std::memchr(section.data(), 0, section.size());
      if (nul != nullptr)
        return data_loss(what, ": PTX holds a NUL byte at offset ",
                         s.offset() + (static_cast<const uint8_t*>(nul) - section.data()));
    }
    pos = s.offset() + s.size();
  }
  if (uint64_t at = FirstNonZero(bytes_, pos, size); at != size)
    return data_loss("nonzero padding byte at offset ", at, " after the last section");

  return WithContext(ValidateManifest(manifest_, size), name_);
}

}  // namespace kiln::runtime
