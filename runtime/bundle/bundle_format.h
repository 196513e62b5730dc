// The byte layout of a .kiln bundle file (docs/bundle.md "Layout"): a fixed
// little-endian header, the serialized Manifest, then kernel-image sections.
#ifndef KILN_RUNTIME_BUNDLE_BUNDLE_FORMAT_H_
#define KILN_RUNTIME_BUNDLE_BUNDLE_FORMAT_H_

#include <cstddef>
#include <cstdint>

#include "absl/types/span.h"

namespace kiln::runtime {

//   offset  size  field
//        0     8  magic "KILNBNDL"
//        8     4  u32 format version (kBundleFormatVersion)
//       12     4  u32 header size (kBundleHeaderSize)
//       16     8  u64 manifest offset (== header size)
//       24     8  u64 manifest size
//       32     8  u64 file size (the whole file, exactly)
//       40     8  u64 FNV-1a 64 of the manifest bytes
//       48        serialized kiln.runtime.Manifest
//                 zero padding, then each section at a kSectionAlignment
//                 multiple, in Manifest.sections order, zero padding between
inline constexpr char kBundleMagic[] = "KILNBNDL";  // 8 bytes, no NUL in the file
inline constexpr size_t kBundleMagicSize = sizeof(kBundleMagic) - 1;
inline constexpr uint32_t kBundleFormatVersion = 1;
inline constexpr uint32_t kBundleHeaderSize = 48;
inline constexpr uint64_t kSectionAlignment = 256;

inline constexpr uint64_t kFnv1a64Offset = 0xcbf29ce484222325ull;
inline constexpr uint64_t kFnv1a64Prime = 0x100000001b3ull;

// 64-bit FNV-1a (http://www.isthe.com/chongo/tech/comp/fnv/). Any single
// changed byte changes the hash: each step is a bijection of the state.
uint64_t Fnv1a64(absl::Span<const uint8_t> bytes);

struct BundleHeader {
  uint32_t format_version = kBundleFormatVersion;
  uint32_t header_size = kBundleHeaderSize;
  uint64_t manifest_offset = kBundleHeaderSize;
  uint64_t manifest_size = 0;
  uint64_t file_size = 0;
  uint64_t manifest_fnv1a64 = 0;
};

// Writes the magic and `header` into out[0, kBundleHeaderSize).
void EncodeBundleHeader(const BundleHeader& header, uint8_t* out);
// Reads the fields after the magic from in[0, kBundleHeaderSize); does not
// check anything (the reader does).
BundleHeader DecodeBundleHeader(const uint8_t* in);

// Rounds `n` up to a multiple of `alignment` (a power of two); false on
// overflow.
bool AlignUp(uint64_t n, uint64_t alignment, uint64_t* out);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_BUNDLE_BUNDLE_FORMAT_H_
