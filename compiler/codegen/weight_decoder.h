// Per-format decoding of one thread's "piece" of a weight row (geometry in
// kernel_abi.h), shared by the matvec, GEMM and embedding emitters. Layouts:
// spec/quant-formats.md. Internal to compiler/codegen (includes LLVM).
//
// Weights come out as codes f that convert to exact quantized integers
// without a cvt instruction (cvt runs at 1/4 rate on sm_80..sm_90):
//  * 4/5/6-bit codes: prmt places the code in byte 2 of 0x3F000000, giving
//    f = 0.5 + q/256 exactly;
//  * 8-bit codes: prmt builds 2^23 + (q + 128), and one fsub makes it q.
// A segment's weights are w = scale * q + offset with
// q = (f - c0) * inv_c1 + q_offset, all exact in fp32. A matvec folds that
// into sum(w x) = a * sum(f x) + b * sum(x); the embedding and GEMM
// emitters rebuild w itself in ggml's order of operations.
#ifndef KILN_COMPILER_CODEGEN_WEIGHT_DECODER_H_
#define KILN_COMPILER_CODEGEN_WEIGHT_DECODER_H_

#include <array>
#include <functional>
#include <vector>

#include "compiler/codegen/kernel_abi.h"
#include "compiler/codegen/kernel_builder.h"

namespace kiln::codegen {

// Four consecutive weights of one row: columns col .. col+3.
struct Quad {
  llvm::Value* col = nullptr;  // i32, a multiple of 4
  std::array<llvm::Value*, 4> f{};
  // Quantized formats: the four integer codes q as the bytes of one i32
  // (Segment::signed_codes says how to read them); f holds the same codes as
  // floats. Unused values are dead code, which LLVM removes.
  llvm::Value* word = nullptr;
};

struct Segment {
  std::vector<Quad> quads;
  llvm::Value* scale = nullptr;   // nullptr: 1
  llvm::Value* offset = nullptr;  // nullptr: 0
  float c0 = 0.0f;
  float inv_c1 = 1.0f;
  int q_offset = 0;
  // Quad words: signed bytes (int8 codes, f = q) or unsigned (4..6-bit
  // codes, f = c0 + q / inv_c1). Either way w = scale * (q + q_offset) + offset.
  // A segment's quads cover consecutive columns.
  bool signed_codes = false;
  // The weight per unit of a `word` byte where the bytes hold a multiple of
  // q (Q4_K's high nibbles are masked in place, 16 q, saving a shift per
  // word); nullptr: `scale` (the bytes hold q).
  llvm::Value* word_scale = nullptr;
  // True when sum(f x) alone is not the dot product (needs sum(x)).
  bool NeedsSum() const { return c0 != 0.0f || q_offset != 0 || offset != nullptr; }
};

// Where a piece lives.
struct PieceRef {
  llvm::Value* row = nullptr;        // global i8* of the row (the first plane of the planar formats)
  llvm::Value* scale_row = nullptr;  // planar formats: global f16* of the row's scale plane
  llvm::Value* piece = nullptr;      // i32 piece index within the row
};

// Staged formats read 2-byte units through this: (block index within the
// row, byte offset within the block) -> i16.
using U16Reader = std::function<llvm::Value*(llvm::Value* block, llvm::Value* byte_offset)>;

// Which array of a row a direct load reads: the weights' data (every
// direct format) or the planar formats' scale plane (PieceRef::scale_row).
enum class RowPlane { kData, kScales };
// Direct formats read through this: (global address, bytes, plane) -> the
// loaded value as i32 words (16 bytes: 4; 8 bytes: 2, planar Q6_K's
// scales), or 2 bytes as one i16 (the planar formats' scale-plane entries).
// Without one, Load reads global memory (ld.global.nc); a streaming matvec
// copies into shared memory first and reads its copies back.
using DirectFetch = std::function<std::vector<llvm::Value*>(llvm::Value* address, int bytes, RowPlane plane)>;

class WeightDecoder {
 public:
  explicit WeightDecoder(WeightFormat format);
  const FormatGeometry& geometry() const { return geo_; }
  WeightFormat format() const { return format_; }

  // Issues the piece's loads. Direct formats: ld.global.nc from ref.row
  // (16 bytes; planar Q6_K also 8 of scales) and ref.scale_row (the planar
  // formats' 2-byte entries), or through `fetch` when given (reader
  // unused). Staged formats: 2-byte reads through `reader`.
  std::vector<llvm::Value*> Load(KernelBuilder& kb, const PieceRef& ref, const U16Reader* reader,
                                 const DirectFetch* fetch = nullptr) const;
  // Decodes what Load returned into segments.
  std::vector<Segment> Decode(KernelBuilder& kb, const PieceRef& ref,
                              const std::vector<llvm::Value*>& raw) const;
  // The exact weight for code f of `seg` (as ggml computes it).
  llvm::Value* ExactWeight(KernelBuilder& kb, const Segment& seg, llvm::Value* f) const;

 private:
  WeightFormat format_;
  FormatGeometry geo_;
};

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_WEIGHT_DECODER_H_
