// Write -> read round trips through compiler/bundle_writer.h and
// runtime/bundle/bundle_reader.h, and ManifestToText.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "compiler/bundle_writer.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "runtime/bundle/bundle_format.h"
#include "runtime/bundle/bundle_reader.h"
#include "runtime/bundle/expr.h"
#include "tests/runtime/test_manifest.h"

namespace kiln::runtime {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::kiln::compiler::ManifestToText;
using ::kiln::compiler::SectionInput;
using ::kiln::compiler::SerializeBundle;
using ::kiln::compiler::WriteBundle;
using ::kiln::testing::MakeSectionInputs;
using ::kiln::testing::MakeValidManifest;
using ::testing::HasSubstr;
using ::testing::Not;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + std::to_string(::getpid()) + "_" + name;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Checks the bundle holds `manifest` (sections aside) and `inputs`, laid out
// as docs/bundle.md says.
void ExpectHolds(const Bundle& bundle, const Manifest& manifest,
                 const std::vector<SectionInput>& inputs) {
  Manifest want = manifest;
  want.clear_sections();
  Manifest got = bundle.manifest();
  got.clear_sections();
  std::string diff;
  MessageDifferencer differ;
  differ.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differ.Compare(want, got)) << diff;

  ASSERT_EQ(bundle.manifest().sections_size(), static_cast<int>(inputs.size()));
  uint64_t end = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Section& s = bundle.manifest().sections(i);
    EXPECT_EQ(s.kind(), inputs[i].kind);
    EXPECT_EQ(s.target(), inputs[i].target);
    EXPECT_EQ(s.size(), inputs[i].bytes.size());
    EXPECT_EQ(s.offset() % kSectionAlignment, 0u) << "section " << i;
    EXPECT_GE(s.offset(), end);
    end = s.offset() + s.size();
    absl::StatusOr<absl::Span<const uint8_t>> bytes = bundle.SectionBytes(i);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_EQ(std::string(bytes->begin(), bytes->end()), inputs[i].bytes) << "section " << i;
  }
  EXPECT_EQ(bundle.file_size(), end);
}

TEST(BundleRoundTripTest, WriteThenOpen) {
  const std::string path = TempPath("round_trip.kiln");
  const Manifest manifest = MakeValidManifest();
  const std::vector<SectionInput> inputs = MakeSectionInputs();
  absl::Status w = WriteBundle(path, manifest, inputs);
  ASSERT_TRUE(w.ok()) << w;
  EXPECT_FALSE(Exists(path + ".tmp"));

  absl::StatusOr<std::unique_ptr<Bundle>> bundle = Bundle::Open(path);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  EXPECT_EQ((*bundle)->name(), path);
  ExpectHolds(**bundle, manifest, inputs);
  EXPECT_EQ((*bundle)->manifest().format_version(), kBundleFormatVersion);
  ::unlink(path.c_str());
}

TEST(BundleRoundTripTest, HeaderDescribesTheFile) {
  absl::StatusOr<std::string> bytes = SerializeBundle(MakeValidManifest(), MakeSectionInputs());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ASSERT_GE(bytes->size(), kBundleHeaderSize);
  EXPECT_EQ(bytes->substr(0, 8), "KILNBNDL");
  const BundleHeader h = DecodeBundleHeader(reinterpret_cast<const uint8_t*>(bytes->data()));
  EXPECT_EQ(h.format_version, 1u);
  EXPECT_EQ(h.header_size, 48u);
  EXPECT_EQ(h.manifest_offset, 48u);
  EXPECT_EQ(h.file_size, bytes->size());
  Manifest m;
  ASSERT_TRUE(m.ParseFromArray(bytes->data() + 48, static_cast<int>(h.manifest_size)));
  EXPECT_EQ(h.manifest_fnv1a64,
            Fnv1a64(absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes->data()) + 48,
                                              h.manifest_size)));
  EXPECT_GE(m.sections(0).offset(), 48 + h.manifest_size);
  EXPECT_LT(m.sections(0).offset(), 48 + h.manifest_size + kSectionAlignment);
}

TEST(BundleRoundTripTest, SerializationIsDeterministic) {
  absl::StatusOr<std::string> a = SerializeBundle(MakeValidManifest(), MakeSectionInputs());
  absl::StatusOr<std::string> b = SerializeBundle(MakeValidManifest(), MakeSectionInputs());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST(BundleRoundTripTest, RealSizedTokenizerAndManySections) {
  // 151,936 tokens push the manifest past 1 MiB, so section offsets need
  // longer varints than the first layout guessed.
  Manifest manifest = MakeValidManifest();
  manifest.mutable_config()->set_n_vocab(151936);
  *manifest.mutable_buffers(kiln::testing::kLogits)->mutable_bytes() = MakeExpr(0, 151936 * 4);
  Tokenizer* t = manifest.mutable_tokenizer();
  for (int i = t->tokens_size(); i < 151936; ++i) {
    t->add_tokens("tok" + std::to_string(i));
    t->add_token_types(1);
  }
  std::vector<SectionInput> inputs = MakeSectionInputs();
  for (const char* target : {"sm_80", "sm_86", "sm_89"})
    inputs.push_back({Section::PTX, target, std::string(1000 + inputs.size(), 'x')});
  const std::string path = TempPath("big.kiln");
  absl::Status w = WriteBundle(path, manifest, inputs);
  ASSERT_TRUE(w.ok()) << w;
  absl::StatusOr<std::unique_ptr<Bundle>> bundle = Bundle::Open(path);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  ExpectHolds(**bundle, manifest, inputs);
  ::unlink(path.c_str());
}

TEST(BundleRoundTripTest, NoSectionsWithoutKernels) {
  Manifest manifest = MakeValidManifest();
  manifest.clear_kernels();
  manifest.mutable_load()->clear_launches();
  manifest.mutable_prefill()->clear_launches();
  manifest.mutable_decode()->clear_launches();
  // Plans must not be empty: validation fails, but layout and parsing of a
  // section-less file work.
  absl::StatusOr<std::string> bytes = SerializeBundle(manifest, {});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(DecodeBundleHeader(reinterpret_cast<const uint8_t*>(bytes->data())).file_size,
            bytes->size());
  absl::StatusOr<std::unique_ptr<Bundle>> bundle = Bundle::Parse(
      absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()),
      "<no sections>");
  ASSERT_FALSE(bundle.ok());
  EXPECT_THAT(bundle.status().message(), HasSubstr("<no sections>: prefill plan has no launches"));
}

TEST(BundleRoundTripTest, OverwritesAnExistingFile) {
  const std::string path = TempPath("overwrite.kiln");
  ASSERT_TRUE(WriteBundle(path, MakeValidManifest(), MakeSectionInputs()).ok());
  Manifest second = MakeValidManifest();
  second.set_producer("second");
  ASSERT_TRUE(WriteBundle(path, second, MakeSectionInputs()).ok());
  absl::StatusOr<std::unique_ptr<Bundle>> bundle = Bundle::Open(path);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  EXPECT_EQ((*bundle)->manifest().producer(), "second");
  ::unlink(path.c_str());
}

TEST(BundleRoundTripTest, RefusesToWriteAnInvalidManifest) {
  const std::string path = TempPath("invalid.kiln");
  Manifest manifest = MakeValidManifest();
  ASSERT_TRUE(WriteBundle(path, manifest, MakeSectionInputs()).ok());
  ::unlink(path.c_str());
  manifest.mutable_decode()->set_max_tokens(4);
  absl::Status s = WriteBundle(path, manifest, MakeSectionInputs());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("refusing to write invalid bundle"));
  EXPECT_THAT(s.message(), HasSubstr("decode plan: max_tokens is 4"));
  EXPECT_FALSE(Exists(path));
  EXPECT_FALSE(Exists(path + ".tmp"));
}

TEST(BundleRoundTripTest, RefusesPtxWithNul) {
  const std::string path = TempPath("nul.kiln");
  std::vector<SectionInput> inputs = MakeSectionInputs();
  inputs[0].bytes[5] = '\0';
  absl::Status s = WriteBundle(path, MakeValidManifest(), inputs);
  EXPECT_THAT(s.message(), HasSubstr("section 0 (PTX sm_90): PTX holds a NUL byte"));
  EXPECT_FALSE(Exists(path));
}

TEST(BundleRoundTripTest, UnwritablePathIsAnError) {
  const std::string path = TempPath("no/such/dir/x.kiln");
  absl::Status s = WriteBundle(path, MakeValidManifest(), MakeSectionInputs());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(path + ".tmp"));
}

TEST(ManifestToTextTest, PrintsExprsAsFormulasAndElidesTokenLists) {
  const Manifest manifest = MakeValidManifest();
  const std::string text = ManifestToText(manifest);
  EXPECT_THAT(text, HasSubstr("grid_x { t: 1 div: 64 }  # ceil(T/64)"));
  EXPECT_THAT(text, HasSubstr("bytes { c: 128 }  # 128*C"));
  EXPECT_THAT(text, HasSubstr("# 32 tokens, 32 token types, 2 merges (elided)"));
  EXPECT_THAT(text, HasSubstr("name: \"tiny_step\""));
  EXPECT_THAT(text, HasSubstr("chat_template:"));
  EXPECT_THAT(text, Not(HasSubstr("<|im_end|>")));
  EXPECT_THAT(text, Not(HasSubstr("merges:")));

  // The text still parses back to the manifest, less the elided lists.
  Manifest parsed;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &parsed)) << text;
  Manifest want = manifest;
  want.mutable_tokenizer()->clear_tokens();
  want.mutable_tokenizer()->clear_token_types();
  want.mutable_tokenizer()->clear_merges();
  EXPECT_TRUE(MessageDifferencer::Equals(want, parsed));
}

}  // namespace
}  // namespace kiln::runtime
