#include "models/tokenizer/hf_vocab.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "support/mapped_file.h"
#include "support/status_macros.h"

namespace kiln::tokenizer {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

// The Split regex of Qwen2/Qwen3 tokenizer.json files, which the converter
// maps to tokenizer.ggml.pre = "qwen2" (spec §3.2).
constexpr std::string_view kQwen2Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// Qwen's config.json bos_token_id names this token (spec §1, §5).
constexpr std::string_view kDefaultBosText = "<|endoftext|>";

absl::StatusOr<Struct> ReadJson(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> file, MappedFile::Open(path));
  const auto bytes = file->bytes();
  Struct root;
  const auto status = google::protobuf::util::JsonStringToMessage(
      {reinterpret_cast<const char*>(bytes.data()), bytes.size()}, &root);
  if (!status.ok()) {
    // The parser's message quotes the input and marks the place on lines of
    // their own; the first line says what is wrong, and errors are one line.
    const std::string message(status.message());
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a JSON object: ", message.substr(0, message.find('\n'))));
  }
  return root;
}

const Value* Field(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? nullptr : &it->second;
}

absl::StatusOr<const Struct*> ObjectField(const Struct& s, const std::string& key,
                                          const std::string& where) {
  const Value* v = Field(s, key);
  if (v == nullptr || v->kind_case() != Value::kStructValue) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": '", key, "' is not an object"));
  }
  return &v->struct_value();
}

absl::StatusOr<const ListValue*> ListField(const Struct& s, const std::string& key,
                                           const std::string& where) {
  const Value* v = Field(s, key);
  if (v == nullptr || v->kind_case() != Value::kListValue) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": '", key, "' is not a list"));
  }
  return &v->list_value();
}

// A JSON number that is a non-negative integer id.
absl::StatusOr<int32_t> IdOf(const Value& v, const std::string& where) {
  const double d = v.kind_case() == Value::kNumberValue ? v.number_value() : -1.0;
  if (!(d >= 0 && d < 2147483647.0) || d != static_cast<double>(static_cast<int32_t>(d))) {
    return absl::InvalidArgumentError(absl::StrCat(where, " is not a valid token id"));
  }
  return static_cast<int32_t>(d);
}

// The converter's does_token_look_special (spec §2).
bool LooksSpecial(std::string_view t) {
  return t == "<pad>" || t == "<mask>" || (t.starts_with("<|") && t.ends_with("|>")) ||
         (t.starts_with("<\xEF\xBD\x9C") && t.ends_with("\xEF\xBD\x9C>")) ||  // <｜…｜>
         (t.starts_with("<unused") && t.ends_with(">"));
}

// Accepts only the qwen2 Split regex, alone or inside a Sequence.
absl::Status CheckPreTokenizer(const Struct& root, const std::string& path) {
  const Value* pre = Field(root, "pre_tokenizer");
  std::vector<const Struct*> steps;
  if (pre != nullptr && pre->kind_case() == Value::kStructValue) {
    const Struct& p = pre->struct_value();
    const Value* list = Field(p, "pretokenizers");
    if (list != nullptr && list->kind_case() == Value::kListValue) {
      for (const Value& s : list->list_value().values()) {
        if (s.kind_case() == Value::kStructValue) steps.push_back(&s.struct_value());
      }
    } else {
      steps.push_back(&p);
    }
  }
  for (const Struct* s : steps) {
    const Value* type = Field(*s, "type");
    const Value* pattern = Field(*s, "pattern");
    if (type == nullptr || type->string_value() != "Split" || pattern == nullptr) continue;
    const Value* regex = pattern->kind_case() == Value::kStructValue
                             ? Field(pattern->struct_value(), "Regex")
                             : nullptr;
    const std::string text = regex != nullptr ? regex->string_value() : "";
    if (text == kQwen2Regex) return absl::OkStatus();
    return absl::UnimplementedError(
        absl::StrCat(path, ": pre-tokenizer regex '", text, "' is not the qwen2 pattern"));
  }
  return absl::UnimplementedError(
      absl::StrCat(path, ": no Split pre-tokenizer with the qwen2 regex"));
}

// "A B" from a merge given as [A, B] or as the string "A B".
absl::StatusOr<std::string> MergeText(const Value& m, size_t index, const std::string& path) {
  const std::string where = absl::StrCat(path, ": model.merges[", index, "]");
  if (m.kind_case() == Value::kStringValue) return m.string_value();
  if (m.kind_case() == Value::kListValue && m.list_value().values_size() == 2 &&
      m.list_value().values(0).kind_case() == Value::kStringValue &&
      m.list_value().values(1).kind_case() == Value::kStringValue) {
    const std::string& a = m.list_value().values(0).string_value();
    const std::string& b = m.list_value().values(1).string_value();
    // GGUF splits "A B" at the first space after byte 0 (§3.4).
    if (a.empty() || a.find(' ', 1) != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": left part \"", a, "\" cannot be written as \"A B\""));
    }
    return absl::StrCat(a, " ", b);
  }
  return absl::InvalidArgumentError(absl::StrCat(where, " is neither \"A B\" nor [A, B]"));
}

// A token named by tokenizer_config.json: a string or {"content": ...}.
std::string TokenText(const Struct& config, const std::string& key) {
  const Value* v = Field(config, key);
  if (v == nullptr) return "";
  if (v->kind_case() == Value::kStringValue) return v->string_value();
  if (v->kind_case() == Value::kStructValue) {
    if (const Value* c = Field(v->struct_value(), "content")) return c->string_value();
  }
  return "";
}

// chat_template: a string, or a list of {name, template} (take "default").
std::string ChatTemplate(const Struct& config) {
  const Value* v = Field(config, "chat_template");
  if (v == nullptr) return "";
  if (v->kind_case() == Value::kStringValue) return v->string_value();
  if (v->kind_case() == Value::kListValue) {
    for (const Value& e : v->list_value().values()) {
      if (e.kind_case() != Value::kStructValue) continue;
      const Value* name = Field(e.struct_value(), "name");
      const Value* tmpl = Field(e.struct_value(), "template");
      if (name != nullptr && tmpl != nullptr && name->string_value() == "default") {
        return tmpl->string_value();
      }
    }
  }
  return "";
}

// Places `text` at `id`; an id given twice is an error.
absl::Status PlaceToken(int32_t id, std::string text, TokenType type, bool override_ok,
                        std::vector<std::string>& tokens, std::vector<TokenType>& types,
                        std::vector<bool>& placed, const std::string& where) {
  if (static_cast<size_t>(id) >= tokens.size()) {
    tokens.resize(id + 1);
    types.resize(id + 1, TokenType::kUnused);
    placed.resize(id + 1, false);
  }
  if (placed[id] && !override_ok) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": token id ", id, " is used by \"",
                                                   tokens[id], "\" and \"", text, "\""));
  }
  tokens[id] = std::move(text);
  types[id] = type;
  placed[id] = true;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Vocab> VocabFromHfJson(const std::string& tokenizer_json_path,
                                      const std::string& tokenizer_config_path,
                                      int32_t vocab_size) {
  const std::string& path = tokenizer_json_path;
  ASSIGN_OR_RETURN(const Struct root, ReadJson(path));
  ASSIGN_OR_RETURN(const Struct config, ReadJson(tokenizer_config_path));

  ASSIGN_OR_RETURN(const Struct* model, ObjectField(root, "model", path));
  const Value* type = Field(*model, "type");
  if (type == nullptr || type->string_value() != "BPE") {
    return absl::UnimplementedError(absl::StrCat(
        path, ": model.type '", type ? type->string_value() : "", "' is not BPE"));
  }
  RETURN_IF_ERROR(CheckPreTokenizer(root, path));

  Vocab vocab;
  vocab.model = "gpt2";
  vocab.pre = "qwen2";
  std::vector<bool> placed;

  // Ordinary tokens: model.vocab maps byte-level text to id (NORMAL).
  ASSIGN_OR_RETURN(const Struct* hf_vocab, ObjectField(*model, "vocab", path + ": model"));
  for (const auto& [text, id_value] : hf_vocab->fields()) {
    const std::string where = absl::StrCat(path, ": model.vocab[\"", text, "\"]");
    ASSIGN_OR_RETURN(const int32_t id, IdOf(id_value, where));
    RETURN_IF_ERROR(PlaceToken(id, text, TokenType::kNormal, /*override_ok=*/false,
                               vocab.tokens, vocab.token_types, placed, path));
  }

  // Added tokens override the ids they name (§2 type rule).
  if (Field(root, "added_tokens") != nullptr) {
    ASSIGN_OR_RETURN(const ListValue* added, ListField(root, "added_tokens", path));
    for (int i = 0; i < added->values_size(); ++i) {
      const std::string where = absl::StrCat(path, ": added_tokens[", i, "]");
      if (added->values(i).kind_case() != Value::kStructValue) {
        return absl::InvalidArgumentError(absl::StrCat(where, " is not an object"));
      }
      const Struct& t = added->values(i).struct_value();
      const Value* id_value = Field(t, "id");
      const Value* content = Field(t, "content");
      if (id_value == nullptr || content == nullptr ||
          content->kind_case() != Value::kStringValue) {
        return absl::InvalidArgumentError(absl::StrCat(where, " lacks an id or content"));
      }
      ASSIGN_OR_RETURN(const int32_t id, IdOf(*id_value, where + ".id"));
      const Value* special = Field(t, "special");
      const bool is_special = special != nullptr && special->bool_value();
      const TokenType tt = is_special || LooksSpecial(content->string_value())
                               ? TokenType::kControl
                               : TokenType::kUserDefined;
      RETURN_IF_ERROR(PlaceToken(id, content->string_value(), tt, /*override_ok=*/true,
                                 vocab.tokens, vocab.token_types, placed, where));
    }
  }

  // Pad to the model's embedding size with UNUSED "[PAD<id>]" entries.
  if (vocab_size > 0) {
    if (static_cast<size_t>(vocab_size) < vocab.tokens.size()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": vocab_size ", vocab_size,
                                                     " is smaller than the ", vocab.tokens.size(),
                                                     " token ids the tokenizer uses"));
    }
    vocab.tokens.resize(vocab_size);
    vocab.token_types.resize(vocab_size, TokenType::kUnused);
    placed.resize(vocab_size, false);
  }
  for (size_t id = 0; id < vocab.tokens.size(); ++id) {
    if (!placed[id]) {
      vocab.tokens[id] = absl::StrCat("[PAD", id, "]");
      vocab.token_types[id] = TokenType::kUnused;
    }
  }

  ASSIGN_OR_RETURN(const ListValue* merges, ListField(*model, "merges", path + ": model"));
  vocab.merges.reserve(merges->values_size());
  for (int i = 0; i < merges->values_size(); ++i) {
    ASSIGN_OR_RETURN(std::string m, MergeText(merges->values(i), i, path));
    vocab.merges.push_back(std::move(m));
  }

  // Special ids are looked up by text among the added tokens and the vocab.
  auto find_id = [&](std::string_view text) -> int32_t {
    if (text.empty()) return -1;
    for (size_t id = vocab.tokens.size(); id-- > 0;) {
      if (placed[id] && vocab.tokens[id] == text) return static_cast<int32_t>(id);
    }
    return -1;
  };
  auto id_of_config_token = [&](const std::string& key) -> absl::StatusOr<int32_t> {
    const std::string text = TokenText(config, key);
    const int32_t id = find_id(text);
    if (!text.empty() && id < 0) {
      return absl::InvalidArgumentError(absl::StrCat(tokenizer_config_path, ": ", key, " \"",
                                                     text, "\" is not a token"));
    }
    return id;
  };
  ASSIGN_OR_RETURN(vocab.eos_id, id_of_config_token("eos_token"));
  ASSIGN_OR_RETURN(vocab.pad_id, id_of_config_token("pad_token"));
  ASSIGN_OR_RETURN(vocab.bos_id, id_of_config_token("bos_token"));
  if (vocab.bos_id < 0) vocab.bos_id = find_id(kDefaultBosText);

  const Value* add_bos = Field(config, "add_bos_token");
  vocab.add_bos = add_bos != nullptr && add_bos->bool_value();
  vocab.chat_template = ChatTemplate(config);
  return vocab;
}

}  // namespace kiln::tokenizer
