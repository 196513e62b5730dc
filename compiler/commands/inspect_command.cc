// kilnc inspect: describes a GGUF file (metadata, tensors, derived config).
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compiler/bundle_writer.h"
#include "compiler/commands/command_line.h"
#include "compiler/commands/commands.h"
#include "models/qwen3_config.h"
#include "runtime/bundle/bundle_format.h"
#include "runtime/bundle/bundle_reader.h"

namespace kiln::compiler {
namespace {

constexpr char kInspectUsage[] = R"(usage: kilnc inspect X.gguf | X.kiln

For a GGUF: the file's header, metadata, tensor table, the derived Qwen3
config, and the weight bytes a decoded token reads. For a bundle: the
validated manifest as text (buffers, kernels, launch plans with their
expressions; the tokenizer's lists as counts).
)";

// Names as the file holds them, but for control bytes (a newline or an
// escape sequence in a key would otherwise reach the terminal), written
// \xNN. Values need nothing: Value::DebugString quotes and escapes strings.
std::string Printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f)
      absl::StrAppendFormat(&out, "\\x%02x", c);
    else
      out.push_back(static_cast<char>(c));
  }
  return out;
}

// Whether `path` starts with the bundle magic (a bundle whatever its name).
bool LooksLikeBundle(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char head[runtime::kBundleMagicSize] = {};
  const bool bundle = std::fread(head, 1, sizeof(head), f) == sizeof(head) &&
                      std::memcmp(head, runtime::kBundleMagic, sizeof(head)) == 0;
  std::fclose(f);
  return bundle;
}

void PrintGguf(const gguf::GgufFile& f) {
  std::printf("file        %s\n", f.name().c_str());
  std::printf("format      GGUF v%u, alignment %u, data offset %llu, %llu bytes\n", f.version(),
              f.alignment(), static_cast<unsigned long long>(f.data_offset()),
              static_cast<unsigned long long>(f.file_size()));
  std::printf("\nmetadata (%zu keys)\n", f.metadata().size());
  for (const auto& [key, value] : f.metadata())
    std::printf("  %-44s %-8s %s\n", Printable(key).c_str(), std::string(gguf::ValueTypeName(value.type())).c_str(),
                value.DebugString().c_str());
  std::printf("\ntensors (%zu)\n", f.tensors().size());
  std::printf("  %-32s %-6s %-16s %14s %14s\n", "name", "type", "ne", "offset", "bytes");
  for (const gguf::TensorInfo& t : f.tensors())
    std::printf("  %-32s %-6s %-16s %14llu %14llu\n", Printable(t.name).c_str(),
                std::string(gguf::TypeName(t.type)).c_str(),
                absl::StrCat("[", absl::StrJoin(t.dims, ", "), "]").c_str(),
                static_cast<unsigned long long>(t.file_offset),
                static_cast<unsigned long long>(t.nbytes));
}

}  // namespace

int RunInspect(const std::vector<std::string>& args) {
  ParsedArgs parsed = ParseArgs("inspect", args, kInspectUsage, {"model"});
  if (parsed.exit_code) return *parsed.exit_code;
  if (absl::Status s = CheckPositionals(parsed.positional, ModelPositionals()); !s.ok()) return Fail("inspect", s);
  // A bundle by its magic or its name (-m or the positional argument).
  const std::string path = !absl::GetFlag(FLAGS_model).empty() ? absl::GetFlag(FLAGS_model)
                           : parsed.positional.empty()          ? ""
                                                                : parsed.positional.front();
  if (!path.empty() && (LooksLikeBundle(path) || absl::EndsWith(path, ".kiln"))) {
    auto bundle = runtime::Bundle::Open(path);
    if (!bundle.ok()) return Fail("inspect", bundle.status());
    std::fputs(ManifestToText((*bundle)->manifest()).c_str(), stdout);
    return 0;
  }
  auto file = OpenModel(parsed.positional);
  if (!file.ok()) return Fail("inspect", file.status());
  PrintGguf(**file);
  auto config = models::ReadQwen3Config(**file);
  if (!config.ok()) {
    std::printf("\nnot a runnable Qwen3 model: %s\n", std::string(config.status().message()).c_str());
    return 0;
  }
  const models::Qwen3Config& c = *config;
  std::printf("\nQwen3 config\n");
  std::printf("  layers %lld, embd %lld, ffn %lld, heads %lld (kv %lld), head dim %lld\n",
              (long long)c.n_layer, (long long)c.n_embd, (long long)c.n_ff, (long long)c.n_head,
              (long long)c.n_head_kv, (long long)c.head_dim);
  std::printf("  vocab %lld, context %lld, rms eps %g, rope base %g%s, %s embeddings\n",
              (long long)c.n_vocab, (long long)c.context_length, c.rms_eps, c.rope_base,
              c.rope_scaling == models::RopeScaling::kNone ? ""
              : c.rope_scaling == models::RopeScaling::kLinear ? " (linear scaling)" : " (YaRN)",
              c.tied_embeddings ? "tied" : "untied");
  absl::Status check = models::CheckQwen3Tensors(**file, c);
  if (!check.ok()) {
    std::printf("  tensors: %s\n", std::string(check.message()).c_str());
    return 0;
  }
  // What compile, reference and tokenize build before they run.
  if (absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> tok = LoadTokenizer(**file); !tok.ok()) {
    std::printf("  tokenizer: %s\n", std::string(tok.status().message()).c_str());
    return 0;
  }
  uint64_t per_token = models::WeightBytesPerToken(**file, c);
  std::printf("  weight bytes read per decoded token: %llu (%.3f GB)\n",
              static_cast<unsigned long long>(per_token), 1e-9 * static_cast<double>(per_token));
  std::printf("  KV cache bytes per token of context (f16): %lld\n",
              (long long)(2 * c.n_layer * c.kv_dim() * 2));
  return 0;
}

}  // namespace kiln::compiler
