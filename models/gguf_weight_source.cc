#include "models/gguf_weight_source.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace kiln::models {

absl::StatusOr<ir::WeightView> GgufWeightSource::Find(std::string_view name) const {
  const gguf::TensorInfo* t = file_.FindTensor(name);
  if (t == nullptr)
    return absl::NotFoundError(absl::StrCat("'", file_.name(), "' has no tensor '", std::string(name), "'"));
  return ir::WeightView{t->type, t->dims, file_.TensorData(*t)};
}

}  // namespace kiln::models
