// Builds the IR Module of a dense Qwen3 model from its GGUF tensor table and
// config (spec/qwen3-model.md §3): weights bound by name, type and shape;
// one KV-cache state pair per layer; functions load (empty until
// pack-weights fills it), prefill and decode. Reads no weight data.
#ifndef KILN_MODELS_QWEN3_GRAPH_H_
#define KILN_MODELS_QWEN3_GRAPH_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "models/gguf/gguf_file.h"
#include "models/qwen3_config.h"

namespace kiln::models {

struct GraphOptions {
  ir::DType kv_dtype = ir::DType::kF16;  // the KV cache element type
  // prefill returns the logits of its last token only (f32[1, V]): the
  // final norm and LM head run on that row, which is all generation needs.
  bool prefill_last_logits = false;
};

// prefill(%tokens: i32[T], %pos: i32[1]) -> f32[T, V] (logits of every row;
//   f32[1, V], the last row's, with prefill_last_logits)
// decode(%token: i32[1], %pos: i32[1]) -> (f32[1, V], i32[1, 1] argmax)
absl::StatusOr<std::unique_ptr<ir::Module>> BuildQwen3Module(const gguf::GgufFile& file,
                                                             const Qwen3Config& config,
                                                             const GraphOptions& options = {});

// The IR dtype of a GGUF tensor type; Unimplemented for types the IR lacks.
absl::StatusOr<ir::DType> IrDTypeOf(gguf::GgmlType type);

}  // namespace kiln::models

#endif  // KILN_MODELS_QWEN3_GRAPH_H_
