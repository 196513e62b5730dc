#include "models/synth.h"

#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"
#include "models/quant/dequantize.h"
#include "models/synth_weights.h"
#include "models/tiny_vocab.h"
#include "models/tokenizer/hf_vocab.h"
#include "models/vocab_from_gguf.h"
#include "support/parallel_for.h"
#include "support/status_macros.h"

#ifndef KILN_DEFAULT_TOKENIZER
#define KILN_DEFAULT_TOKENIZER ""
#endif

namespace kiln::models {
namespace {

constexpr int64_t kQwen3Vocab = 151936;

struct Preset {
  const char* name;
  int64_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, context;
  bool tied;
};

// spec/qwen3-model.md §4; "tiny" keeps every row a multiple of 256 so the
// K-quants apply, with two layers so tests run in milliseconds.
constexpr std::array<Preset, 7> kPresets = {{
    {"tiny", 2, 256, 768, 4, 2, 64, 4096, true},
    {"0.6b", 28, 1024, 3072, 16, 8, 128, 40960, true},
    {"1.7b", 28, 2048, 6144, 16, 8, 128, 40960, true},
    {"4b", 36, 2560, 9728, 32, 8, 128, 40960, true},
    {"8b", 36, 4096, 12288, 32, 8, 128, 40960, false},
    {"14b", 40, 5120, 17408, 40, 8, 128, 40960, false},
    {"32b", 64, 5120, 25600, 64, 8, 128, 40960, false},
}};

absl::StatusOr<tokenizer::Vocab> LoadVocab(const SynthOptions& o) {
  const std::vector<std::string> files = TokenizerFiles(o);
  if (files.empty()) {
    if (o.preset == "tiny") return TinyVocab();
    return absl::FailedPreconditionError(absl::StrCat(
        "preset '", o.preset, "' needs the real Qwen3 vocabulary: pass --tokenizer "
        "(tokenizer.json or a Qwen3 .gguf) or run tools/fetch_tokenizer.sh"));
  }
  if (files.size() == 1) {
    ASSIGN_OR_RETURN(auto f, gguf::GgufFile::Open(files[0]));
    return ReadVocab(*f);
  }
  return tokenizer::VocabFromHfJson(files[0], files[1], kQwen3Vocab);
}


int64_t LayerOf(const std::string& name) {
  if (!absl::StartsWith(name, "blk.")) return -1;
  return std::atoll(name.c_str() + 4);
}

}  // namespace

std::vector<std::string> PresetNames() {
  std::vector<std::string> out;
  for (const Preset& p : kPresets) out.push_back(p.name);
  return out;
}

absl::StatusOr<Qwen3Config> PresetConfig(const std::string& preset) {
  for (const Preset& p : kPresets) {
    if (absl::AsciiStrToLower(preset) != p.name) continue;
    Qwen3Config c;
    c.n_layer = p.n_layer;
    c.n_embd = p.n_embd;
    c.n_ff = p.n_ff;
    c.n_head = p.n_head;
    c.n_head_kv = p.n_head_kv;
    c.head_dim = p.head_dim;
    c.context_length = p.context;
    c.rms_eps = 1e-6f;
    c.rope_base = 1000000.0f;
    c.tied_embeddings = p.tied;
    return c;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown preset '", preset, "'; known: ",
                                                 absl::StrJoin(PresetNames(), ", ")));
}

std::string DefaultTokenizerPath() {
  if (const char* env = std::getenv("KILN_TOKENIZER"); env != nullptr && *env) return env;
  return KILN_DEFAULT_TOKENIZER;
}

std::vector<std::string> TokenizerFiles(const SynthOptions& o) {
  std::string path = o.tokenizer;
  if (path.empty()) {
    if (o.preset == "tiny") return {};
    path = DefaultTokenizerPath();
    if (path.empty()) return {};
  }
  if (absl::EndsWith(path, ".gguf")) return {path};
  return {path, path.substr(0, path.find_last_of('/') + 1) + "tokenizer_config.json"};
}

absl::Status WriteSyntheticModel(const SynthOptions& o, const std::string& path) {
  ASSIGN_OR_RETURN(Qwen3Config c, PresetConfig(o.preset));
  ASSIGN_OR_RETURN(tokenizer::Vocab vocab, LoadVocab(o));
  c.n_vocab = static_cast<int64_t>(vocab.tokens.size());
  if (o.force_untied) c.tied_embeddings = false;
  const int threads = o.threads > 0 ? o.threads : DefaultThreads();

  gguf::GgufWriter w;
  const std::string p = "qwen3.";
  w.AddKey("general.architecture", gguf::Value::Str("qwen3"));
  w.AddKey("general.type", gguf::Value::Str("model"));
  w.AddKey("general.name", gguf::Value::Str(absl::StrCat("kiln synthetic Qwen3 ", o.preset)));
  w.AddKey(p + "block_count", gguf::Value::U32(c.n_layer));
  w.AddKey(p + "context_length", gguf::Value::U32(c.context_length));
  w.AddKey(p + "embedding_length", gguf::Value::U32(c.n_embd));
  w.AddKey(p + "feed_forward_length", gguf::Value::U32(c.n_ff));
  w.AddKey(p + "attention.head_count", gguf::Value::U32(c.n_head));
  w.AddKey(p + "attention.head_count_kv", gguf::Value::U32(c.n_head_kv));
  w.AddKey(p + "rope.freq_base", gguf::Value::F32(c.rope_base));
  w.AddKey(p + "attention.layer_norm_rms_epsilon", gguf::Value::F32(c.rms_eps));
  w.AddKey(p + "attention.key_length", gguf::Value::U32(c.head_dim));
  w.AddKey(p + "attention.value_length", gguf::Value::U32(c.head_dim));
  AddVocabKeys(vocab, w);
  w.AddKey("kiln.synth.preset", gguf::Value::Str(o.preset));
  w.AddKey("kiln.synth.seed", gguf::Value::U64(o.seed));
  w.AddKey("general.quantization_version", gguf::Value::U32(2));
  w.AddKey("general.file_type", gguf::Value::U32(RecipeFileType(o.recipe)));

  const std::vector<ExpectedTensor> tensors = ExpectedQwen3Tensors(c);
  uint64_t total = 0;
  std::vector<gguf::GgmlType> types;
  for (const ExpectedTensor& t : tensors) {
    types.push_back(RecipeType(o.recipe, t, LayerOf(t.name), c.n_layer, c.tied_embeddings));
    int64_t rows = t.dims.size() > 1 ? t.dims[1] : 1;
    total += quant::RowBytes(types.back(), t.dims[0]) * rows;
  }
  auto done = std::make_shared<std::atomic<uint64_t>>(0);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const ExpectedTensor& t = tensors[i];
    // Matrices map a length-K input with weights of standard deviation
    // 1/sqrt(K), so outputs stay O(1); embeddings are O(1) themselves.
    float sigma = t.role == TensorRole::kNorm        ? 0.2f
                  : t.role == TensorRole::kEmbedding ? 1.0f
                                                     : 1.0f / std::sqrt(static_cast<float>(t.dims[0]));
    const bool norm = t.role == TensorRole::kNorm;
    const uint64_t seed = StableHash(t.name.c_str(), o.seed);
    const gguf::GgmlType type = types[i];
    const int64_t row_len = t.dims[0];
    w.AddTensor(t.name, t.dims, type,
                [=, &o](absl::Span<uint8_t> out) -> absl::Status {
                  RETURN_IF_ERROR(FillRandomTensor(type, row_len, sigma, norm, seed, threads, out));
                  uint64_t now = done->fetch_add(out.size()) + out.size();
                  if (o.progress) o.progress(now, total);
                  return absl::OkStatus();
                });
  }
  return w.Write(path, 1);
}

}  // namespace kiln::models
