#include "runtime/bundle/bundle_format.h"

#include <cstring>

namespace kiln::runtime {
namespace {

void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void PutU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t GetU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
uint64_t GetU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

uint64_t Fnv1a64(absl::Span<const uint8_t> bytes) {
  uint64_t h = kFnv1a64Offset;
  for (uint8_t b : bytes) {
    h ^= b;
    h *= kFnv1a64Prime;
  }
  return h;
}

void EncodeBundleHeader(const BundleHeader& header, uint8_t* out) {
  std::memcpy(out, kBundleMagic, kBundleMagicSize);
  PutU32(out + 8, header.format_version);
  PutU32(out + 12, header.header_size);
  PutU64(out + 16, header.manifest_offset);
  PutU64(out + 24, header.manifest_size);
  PutU64(out + 32, header.file_size);
  PutU64(out + 40, header.manifest_fnv1a64);
}

BundleHeader DecodeBundleHeader(const uint8_t* in) {
  BundleHeader h;
  h.format_version = GetU32(in + 8);
  h.header_size = GetU32(in + 12);
  h.manifest_offset = GetU64(in + 16);
  h.manifest_size = GetU64(in + 24);
  h.file_size = GetU64(in + 32);
  h.manifest_fnv1a64 = GetU64(in + 40);
  return h;
}

bool AlignUp(uint64_t n, uint64_t alignment, uint64_t* out) {
  uint64_t mask = alignment - 1;
  if (n > UINT64_MAX - mask) return false;
  *out = (n + mask) & ~mask;
  return true;
}

}  // namespace kiln::runtime
