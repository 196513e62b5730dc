// The ggml tensor type ids stored in GGUF tensor records, with their block
// geometry (spec/gguf-format.md §5, spec/quant-formats.md §0).
#ifndef KILN_MODELS_GGUF_GGML_TYPE_H_
#define KILN_MODELS_GGUF_GGML_TYPE_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln::gguf {

enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kBF16 = 30,
};

// Geometry of one type: elements per block and bytes per block.
struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;  // "F32", "Q4_K", ...
  uint32_t block_elems;
  uint32_t block_bytes;
};

// Info for a raw type id from a file; nullopt for ids kiln does not know the
// block size of (the reader reports them as unsupported, naming the tensor).
std::optional<GgmlTypeInfo> LookupGgmlType(uint32_t id);
const GgmlTypeInfo& TypeInfo(GgmlType type);
std::string_view TypeName(GgmlType type);
// Parses "Q8_0", "q4_k", "F16", ... ; nullopt if unknown.
std::optional<GgmlType> ParseGgmlType(std::string_view name);

}  // namespace kiln::gguf

#endif  // KILN_MODELS_GGUF_GGML_TYPE_H_
