// Lets the IR interpreter read a module's weights straight from a GGUF file.
#ifndef KILN_MODELS_GGUF_WEIGHT_SOURCE_H_
#define KILN_MODELS_GGUF_WEIGHT_SOURCE_H_

#include "ir/weight_source.h"
#include "models/gguf/gguf_file.h"

namespace kiln::models {

class GgufWeightSource : public ir::WeightSource {
 public:
  explicit GgufWeightSource(const gguf::GgufFile& file) : file_(file) {}
  absl::StatusOr<ir::WeightView> Find(std::string_view name) const override;

 private:
  const gguf::GgufFile& file_;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_GGUF_WEIGHT_SOURCE_H_
