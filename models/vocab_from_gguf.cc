#include "models/vocab_from_gguf.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace kiln::models {
namespace {

using gguf::Value;
using gguf::ValueType;

absl::StatusOr<const gguf::Array*> ArrayKey(const gguf::GgufFile& f, const std::string& key,
                                            bool required) {
  const Value* v = f.Find(key);
  if (v == nullptr) {
    if (required) return absl::InvalidArgumentError(absl::StrCat("missing tokenizer key '", key, "'"));
    return nullptr;
  }
  const gguf::Array* a = v->AsArray();
  if (a == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("tokenizer key '", key, "' has type ",
                                                   std::string(gguf::ValueTypeName(v->type())), ", expected an array"));
  return a;
}

absl::StatusOr<std::string> StringKey(const gguf::GgufFile& f, const std::string& key,
                                      std::optional<std::string> dflt) {
  const Value* v = f.Find(key);
  if (v == nullptr) {
    if (dflt) return *dflt;
    return absl::InvalidArgumentError(absl::StrCat("missing tokenizer key '", key, "'"));
  }
  if (v->AsString() == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("tokenizer key '", key, "' is not a string"));
  return *v->AsString();
}

absl::StatusOr<int32_t> IdKey(const gguf::GgufFile& f, const std::string& key, int64_t n) {
  const Value* v = f.Find(key);
  if (v == nullptr) return -1;
  std::optional<int64_t> x = v->AsInt();
  if (!x) return absl::InvalidArgumentError(absl::StrCat("tokenizer key '", key, "' is not an integer"));
  if (*x < 0 || *x >= n)
    return absl::InvalidArgumentError(absl::StrCat("tokenizer key '", key, "' = ", *x,
                                                   " is outside the vocabulary of ", n, " tokens"));
  return static_cast<int32_t>(*x);
}

absl::StatusOr<std::vector<std::string>> Strings(const gguf::Array& a, const std::string& key) {
  if (a.element_type != ValueType::kString)
    return absl::InvalidArgumentError(absl::StrCat("tokenizer key '", key, "' is an array of ",
                                                   std::string(gguf::ValueTypeName(a.element_type)), ", expected strings"));
  std::vector<std::string> out;
  out.reserve(a.elements.size());
  for (const Value& e : a.elements) out.push_back(*e.AsString());
  return out;
}

}  // namespace

absl::StatusOr<tokenizer::Vocab> ReadVocab(const gguf::GgufFile& f) {
  tokenizer::Vocab v;
  ASSIGN_OR_RETURN(v.model, StringKey(f, "tokenizer.ggml.model", std::nullopt));
  ASSIGN_OR_RETURN(v.pre, StringKey(f, "tokenizer.ggml.pre", std::string("default")));
  ASSIGN_OR_RETURN(const gguf::Array* toks, ArrayKey(f, "tokenizer.ggml.tokens", true));
  ASSIGN_OR_RETURN(v.tokens, Strings(*toks, "tokenizer.ggml.tokens"));
  const int64_t n = static_cast<int64_t>(v.tokens.size());
  ASSIGN_OR_RETURN(const gguf::Array* types, ArrayKey(f, "tokenizer.ggml.token_type", false));
  if (types == nullptr) {
    v.token_types.assign(n, tokenizer::TokenType::kNormal);
  } else {
    if (static_cast<int64_t>(types->elements.size()) != n)
      return absl::InvalidArgumentError(absl::StrCat("tokenizer.ggml.token_type has ", types->elements.size(),
                                                     " entries but tokenizer.ggml.tokens has ", n));
    for (const Value& e : types->elements) {
      std::optional<int64_t> t = e.AsInt();
      if (!t || *t < 1 || *t > 6)
        return absl::InvalidArgumentError("tokenizer.ggml.token_type holds a value outside 1..6");
      v.token_types.push_back(static_cast<tokenizer::TokenType>(*t));
    }
  }
  ASSIGN_OR_RETURN(const gguf::Array* merges, ArrayKey(f, "tokenizer.ggml.merges", v.model == "gpt2"));
  if (merges != nullptr) {
    ASSIGN_OR_RETURN(v.merges, Strings(*merges, "tokenizer.ggml.merges"));
  }
  ASSIGN_OR_RETURN(v.bos_id, IdKey(f, "tokenizer.ggml.bos_token_id", n));
  ASSIGN_OR_RETURN(v.eos_id, IdKey(f, "tokenizer.ggml.eos_token_id", n));
  ASSIGN_OR_RETURN(v.pad_id, IdKey(f, "tokenizer.ggml.padding_token_id", n));
  if (const Value* b = f.Find("tokenizer.ggml.add_bos_token")) {
    std::optional<bool> x = b->AsBool();
    if (!x) return absl::InvalidArgumentError("tokenizer key 'tokenizer.ggml.add_bos_token' is not a bool");
    v.add_bos = *x;
  }
  ASSIGN_OR_RETURN(v.chat_template, StringKey(f, "tokenizer.chat_template", std::string()));
  return v;
}

void AddVocabKeys(const tokenizer::Vocab& v, gguf::GgufWriter& w) {
  w.AddKey("tokenizer.ggml.model", Value::Str(v.model));
  w.AddKey("tokenizer.ggml.pre", Value::Str(v.pre));
  w.AddKey("tokenizer.ggml.tokens", Value::StrArray(v.tokens));
  std::vector<int32_t> types;
  types.reserve(v.token_types.size());
  for (tokenizer::TokenType t : v.token_types) types.push_back(static_cast<int32_t>(t));
  w.AddKey("tokenizer.ggml.token_type", Value::I32Array(types));
  w.AddKey("tokenizer.ggml.merges", Value::StrArray(v.merges));
  if (v.bos_id >= 0) w.AddKey("tokenizer.ggml.bos_token_id", Value::U32(v.bos_id));
  if (v.eos_id >= 0) w.AddKey("tokenizer.ggml.eos_token_id", Value::U32(v.eos_id));
  if (v.pad_id >= 0) w.AddKey("tokenizer.ggml.padding_token_id", Value::U32(v.pad_id));
  w.AddKey("tokenizer.ggml.add_bos_token", Value::Bool(v.add_bos));
  if (!v.chat_template.empty()) w.AddKey("tokenizer.chat_template", Value::Str(v.chat_template));
}

}  // namespace kiln::models
