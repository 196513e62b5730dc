#include "compiler/bundle_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "models/gguf/ggml_type.h"
#include "runtime/bundle/bundle_format.h"
#include "runtime/bundle/expr.h"
#include "runtime/bundle/validator.h"
#include "support/status_macros.h"
#include "support/write_file.h"

namespace kiln::compiler {
namespace {

using runtime::Manifest;

std::string SerializeDeterministic(const Manifest& m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    m.SerializeWithCachedSizes(&coded);
  }
  return out;
}

struct Laid {
  Manifest manifest;
  std::string bytes;
};

// Section offsets depend on the manifest's size, which depends on the offsets'
// varint lengths: lay out, serialize, and repeat until the offsets stand.
absl::StatusOr<Laid> LayOut(Manifest manifest, const std::vector<SectionInput>& sections) {
  manifest.set_format_version(runtime::kBundleFormatVersion);
  manifest.clear_sections();
  for (const SectionInput& in : sections) {
    runtime::Section* s = manifest.add_sections();
    s->set_kind(in.kind);
    s->set_target(in.target);
    s->set_size(in.bytes.size());
    s->set_fnv1a64(runtime::Fnv1a64(absl::Span<const uint8_t>(
        reinterpret_cast<const uint8_t*>(in.bytes.data()), in.bytes.size())));
  }
  auto place = [&](uint64_t manifest_size) {
    bool changed = false;
    uint64_t pos = runtime::kBundleHeaderSize + manifest_size;
    for (runtime::Section& s : *manifest.mutable_sections()) {
      uint64_t offset = 0;
      runtime::AlignUp(pos, runtime::kSectionAlignment, &offset);
      changed |= s.offset() != offset;
      s.set_offset(offset);
      pos = offset + s.size();
    }
    return std::make_pair(changed, pos);
  };
  uint64_t file_size = 0;
  std::string manifest_bytes;
  for (int round = 0;; ++round) {
    if (manifest.ByteSizeLong() > static_cast<size_t>(INT32_MAX))
      return absl::InvalidArgumentError("bundle manifest exceeds 2 GiB");
    manifest_bytes = SerializeDeterministic(manifest);
    auto [changed, end] = place(manifest_bytes.size());
    file_size = end;
    if (!changed) break;
    RET_CHECK(round < 16);
  }

  std::string out(file_size, '\0');
  runtime::BundleHeader header;
  header.manifest_size = manifest_bytes.size();
  header.file_size = file_size;
  header.manifest_fnv1a64 = runtime::Fnv1a64(absl::Span<const uint8_t>(
      reinterpret_cast<const uint8_t*>(manifest_bytes.data()), manifest_bytes.size()));
  runtime::EncodeBundleHeader(header, reinterpret_cast<uint8_t*>(out.data()));
  std::memcpy(out.data() + runtime::kBundleHeaderSize, manifest_bytes.data(),
              manifest_bytes.size());
  for (size_t i = 0; i < sections.size(); ++i)
    std::memcpy(out.data() + manifest.sections(i).offset(), sections[i].bytes.data(),
                sections[i].bytes.size());
  return Laid{std::move(manifest), std::move(out)};
}

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::TextFormat;
using BaseTextGenerator = TextFormat::BaseTextGenerator;

// Prints a message field on one line, optionally followed by a comment.
class OneLinePrinter : public TextFormat::FastFieldValuePrinter {
 public:
  using Comment = std::function<std::string(const Message&)>;
  explicit OneLinePrinter(Comment comment = nullptr) : comment_(std::move(comment)) {}

  void PrintMessageStart(const Message&, int, int, bool, BaseTextGenerator* g) const override {
    g->PrintLiteral(" { ");
  }
  bool PrintMessageContent(const Message& message, int, int, bool,
                           BaseTextGenerator* g) const override {
    TextFormat::Printer printer;
    printer.SetSingleLineMode(true);
    std::string text;
    printer.PrintToString(message, &text);
    g->PrintString(text);
    return true;
  }
  void PrintMessageEnd(const Message& message, int, int, bool,
                       BaseTextGenerator* g) const override {
    std::string comment = comment_ ? comment_(message) : "";
    g->PrintString(comment.empty() ? "}\n" : absl::StrCat("}  # ", comment, "\n"));
  }

 private:
  Comment comment_;
};

// Prints an index or id followed by a comment saying what it stands for.
class IndexPrinter : public TextFormat::FastFieldValuePrinter {
 public:
  explicit IndexPrinter(std::function<std::string(uint32_t)> describe)
      : describe_(std::move(describe)) {}
  void PrintUInt32(uint32_t v, BaseTextGenerator* g) const override {
    g->PrintString(absl::StrCat(v, "  # ", describe_(v)));
  }

 private:
  std::function<std::string(uint32_t)> describe_;
};

// Prints the tokenizer without its lists, which it counts instead.
class TokenizerPrinter : public TextFormat::FastFieldValuePrinter {
 public:
  bool PrintMessageContent(const Message& message, int, int, bool,
                           BaseTextGenerator* g) const override {
    runtime::Tokenizer t = static_cast<const runtime::Tokenizer&>(message);
    const std::string counts =
        absl::StrCat("# ", t.tokens_size(), " tokens, ", t.token_types_size(), " token types, ",
                     t.merges_size(), " merges (elided)\n");
    t.clear_tokens();
    t.clear_token_types();
    t.clear_merges();
    std::string text;
    TextFormat::PrintToString(t, &text);
    g->PrintString(counts + text);
    return true;
  }
};

// Registers a formula-commented one-line printer for every Expr field
// reachable from `d`.
void RegisterExprFields(TextFormat::Printer& printer, const Descriptor* d,
                        std::vector<const Descriptor*>& seen) {
  if (std::find(seen.begin(), seen.end(), d) != seen.end()) return;
  seen.push_back(d);
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->message_type() == nullptr) continue;
    if (f->message_type() == runtime::Expr::descriptor()) {
      printer.RegisterFieldValuePrinter(
          f, new OneLinePrinter([](const Message& m) {
            return runtime::ExprToString(static_cast<const runtime::Expr&>(m));
          }));
    } else {
      RegisterExprFields(printer, f->message_type(), seen);
    }
  }
}

const FieldDescriptor* Field(const Descriptor* d, const char* name) {
  return d->FindFieldByName(name);
}

}  // namespace

absl::StatusOr<std::string> SerializeBundle(Manifest manifest,
                                            const std::vector<SectionInput>& sections) {
  ASSIGN_OR_RETURN(Laid laid, LayOut(std::move(manifest), sections));
  return std::move(laid.bytes);
}

absl::Status WriteBundle(const std::string& path, Manifest manifest,
                         const std::vector<SectionInput>& sections) {
  ASSIGN_OR_RETURN(Laid laid, LayOut(std::move(manifest), sections));
  if (absl::Status s = runtime::ValidateManifest(laid.manifest, laid.bytes.size()); !s.ok())
    return absl::Status(
        s.code(), absl::StrCat("refusing to write invalid bundle '", path, "': ", s.message()));
  for (size_t i = 0; i < sections.size(); ++i)
    if (sections[i].kind == runtime::Section::PTX &&
        sections[i].bytes.find('\0') != std::string::npos)
      return absl::InvalidArgumentError(absl::StrCat(
          "refusing to write '", path,
          "': ", runtime::DescribeSection(laid.manifest.sections(i), i), ": PTX holds a NUL byte"));
  return WriteFileAtomically(path, laid.bytes);
}

std::string ManifestToText(const Manifest& manifest) {
  // Comments name what indices point at; names are escaped so a hostile
  // name cannot end the comment line.
  auto buffer_name = [&manifest](uint32_t i) {
    return i < static_cast<uint32_t>(manifest.buffers_size())
               ? absl::StrCat("'", absl::CEscape(manifest.buffers(i).name()), "'")
               : std::string("out of range");
  };
  auto kernel_name = [&manifest](uint32_t i) {
    return i < static_cast<uint32_t>(manifest.kernels_size())
               ? absl::StrCat("'", absl::CEscape(manifest.kernels(i).name()), "'")
               : std::string("out of range");
  };
  auto describe_arg = [buffer_name](const Message& message) -> std::string {
    const auto& arg = static_cast<const runtime::Arg&>(message);
    switch (arg.value_case()) {
      case runtime::Arg::kBuffer: {
        std::string offset = runtime::ExprToString(arg.buffer().offset());
        return absl::StrCat(buffer_name(arg.buffer().buffer()),
                            offset == "0" ? "" : absl::StrCat(" + ", offset));
      }
      case runtime::Arg::kI32:
        return runtime::ExprToString(arg.i32());
      default:
        return "";
    }
  };

  TextFormat::Printer printer;
  std::vector<const Descriptor*> seen;
  RegisterExprFields(printer, Manifest::descriptor(), seen);
  printer.RegisterFieldValuePrinter(Field(Manifest::descriptor(), "tokenizer"),
                                    new TokenizerPrinter);
  printer.RegisterFieldValuePrinter(Field(Manifest::descriptor(), "sections"), new OneLinePrinter);
  printer.RegisterFieldValuePrinter(Field(runtime::Kernel::descriptor(), "params"),
                                    new OneLinePrinter);
  printer.RegisterFieldValuePrinter(Field(runtime::Launch::descriptor(), "args"),
                                    new OneLinePrinter(describe_arg));
  printer.RegisterFieldValuePrinter(Field(runtime::Launch::descriptor(), "kernel"),
                                    new IndexPrinter(kernel_name));
  printer.RegisterFieldValuePrinter(Field(runtime::TensorBinding::descriptor(), "buffer"),
                                    new IndexPrinter(buffer_name));
  printer.RegisterFieldValuePrinter(
      Field(runtime::TensorBinding::descriptor(), "ggml_type"), new IndexPrinter([](uint32_t id) {
        std::optional<gguf::GgmlTypeInfo> info = gguf::LookupGgmlType(id);
        return info ? std::string(info->name) : std::string("unknown type");
      }));
  for (const char* io : {"tokens_buffer", "position_buffer", "logits_buffer", "sampled_buffer"})
    printer.RegisterFieldValuePrinter(Field(Manifest::descriptor(), io),
                                      new IndexPrinter(buffer_name));
  std::string text;
  printer.PrintToString(manifest, &text);
  return text;
}

}  // namespace kiln::compiler
