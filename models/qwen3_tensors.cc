#include "models/qwen3_tensors.h"

#include "absl/strings/str_cat.h"

namespace kiln::models {

std::string LayerTensor(int64_t layer, const char* what) {
  return absl::StrCat("blk.", layer, ".", what, ".weight");
}

std::vector<ExpectedTensor> ExpectedQwen3Tensors(const Qwen3Config& c) {
  std::vector<ExpectedTensor> out;
  if (!c.tied_embeddings) out.push_back({"output.weight", {c.n_embd, c.n_vocab}, TensorRole::kOutput});
  out.push_back({"output_norm.weight", {c.n_embd}, TensorRole::kNorm});
  out.push_back({"token_embd.weight", {c.n_embd, c.n_vocab}, TensorRole::kEmbedding});
  for (int64_t i = 0; i < c.n_layer; ++i) {
    // Byte order of names within a layer, as llama-quantize sorts them.
    out.push_back({LayerTensor(i, "attn_k"), {c.n_embd, c.kv_dim()}, TensorRole::kMatrix});
    out.push_back({LayerTensor(i, "attn_k_norm"), {c.head_dim}, TensorRole::kNorm});
    out.push_back({LayerTensor(i, "attn_norm"), {c.n_embd}, TensorRole::kNorm});
    out.push_back({LayerTensor(i, "attn_output"), {c.q_dim(), c.n_embd}, TensorRole::kMatrix});
    out.push_back({LayerTensor(i, "attn_q"), {c.n_embd, c.q_dim()}, TensorRole::kMatrix});
    out.push_back({LayerTensor(i, "attn_q_norm"), {c.head_dim}, TensorRole::kNorm});
    out.push_back({LayerTensor(i, "attn_v"), {c.n_embd, c.kv_dim()}, TensorRole::kMatrix});
    out.push_back({LayerTensor(i, "ffn_down"), {c.n_ff, c.n_embd}, TensorRole::kMatrix});
    out.push_back({LayerTensor(i, "ffn_gate"), {c.n_embd, c.n_ff}, TensorRole::kMatrix});
    out.push_back({LayerTensor(i, "ffn_norm"), {c.n_embd}, TensorRole::kNorm});
    out.push_back({LayerTensor(i, "ffn_up"), {c.n_embd, c.n_ff}, TensorRole::kMatrix});
  }
  return out;
}

}  // namespace kiln::models
