// Tests for runtime/bundle/bundle_reader.h on damaged files: every one is
// rejected with an error that says what is wrong, and none crashes.
#include "runtime/bundle/bundle_reader.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "compiler/bundle_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/bundle/bundle_format.h"
#include "runtime/bundle/validator.h"
#include "tests/runtime/test_manifest.h"

namespace kiln::runtime {
namespace {

using ::kiln::compiler::SerializeBundle;
using ::kiln::testing::MakeSectionInputs;
using ::kiln::testing::MakeValidManifest;
using ::testing::HasSubstr;

absl::Span<const uint8_t> AsBytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

absl::StatusOr<std::unique_ptr<Bundle>> ParseString(const std::string& s) {
  return Bundle::Parse(AsBytes(s), "t.kiln");
}

std::string ValidBytes() {
  absl::StatusOr<std::string> bytes = SerializeBundle(MakeValidManifest(), MakeSectionInputs());
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : std::string();
}

BundleHeader HeaderOf(const std::string& s) {
  return DecodeBundleHeader(reinterpret_cast<const uint8_t*>(s.data()));
}

void SetHeader(std::string& s, const BundleHeader& h) {
  EncodeBundleHeader(h, reinterpret_cast<uint8_t*>(s.data()));
}

// A file holding `manifest` as is (its section table is not recomputed) and
// `file_size` bytes in all, with `pieces` copied in at their offsets.
std::string Assemble(const Manifest& manifest, uint64_t file_size,
                     const std::vector<std::pair<uint64_t, std::string>>& pieces = {}) {
  const std::string m = manifest.SerializeAsString();
  std::string out(std::max<uint64_t>(file_size, kBundleHeaderSize + m.size()), '\0');
  BundleHeader h;
  h.manifest_size = m.size();
  h.file_size = out.size();
  h.manifest_fnv1a64 = Fnv1a64(AsBytes(m));
  SetHeader(out, h);
  std::memcpy(out.data() + kBundleHeaderSize, m.data(), m.size());
  for (const auto& [offset, bytes] : pieces) out.replace(offset, bytes.size(), bytes);
  return out;
}

// The valid manifest with its sections where SerializeBundle put them.
Manifest LaidOutManifest(const std::string& bytes) {
  Manifest m;
  EXPECT_TRUE(m.ParseFromArray(bytes.data() + kBundleHeaderSize,
                               static_cast<int>(HeaderOf(bytes).manifest_size)));
  return m;
}

TEST(BundleReaderTest, ParsesAValidBundle) {
  const std::string bytes = ValidBytes();
  absl::StatusOr<std::unique_ptr<Bundle>> b = ParseString(bytes);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)->file_size(), bytes.size());
  EXPECT_EQ((*b)->manifest().kernels(1).name(), "tiny_step");
}

TEST(BundleReaderTest, SectionIndexOutOfRange) {
  absl::StatusOr<std::unique_ptr<Bundle>> b = ParseString(ValidBytes());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE((*b)->SectionBytes(1).ok());
  EXPECT_EQ((*b)->SectionBytes(2).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ((*b)->SectionBytes(-1).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(BundleReaderTest, MissingFileNamesThePath) {
  absl::StatusOr<std::unique_ptr<Bundle>> b = Bundle::Open("/nonexistent/x.kiln");
  EXPECT_EQ(b.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(b.status().message(), HasSubstr("/nonexistent/x.kiln"));
}

TEST(BundleReaderTest, WrongMagicIsNotABundle) {
  std::string bytes = ValidBytes();
  ASSERT_TRUE(ParseString(bytes).ok());
  std::memcpy(bytes.data(), "GGUF\x03\0\0\0", 8);
  absl::Status s = ParseString(bytes).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("t.kiln: not a kiln bundle"));
  EXPECT_THAT(ParseString("").status().message(), HasSubstr("not a kiln bundle"));
  EXPECT_THAT(ParseString("KILX").status().message(), HasSubstr("not a kiln bundle"));
}

TEST(BundleReaderTest, OtherFormatVersionSaysBoth) {
  std::string bytes = ValidBytes();
  BundleHeader h = HeaderOf(bytes);
  h.format_version = 2;
  SetHeader(bytes, h);
  absl::Status s = ParseString(bytes).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("bundle format version 2; this runtime reads version 1"));
}

TEST(BundleReaderTest, HeaderFieldsAreChecked) {
  const std::string valid = ValidBytes();
  struct {
    void (*mutate)(BundleHeader&);
    const char* expect;
  } cases[] = {
      {[](BundleHeader& h) { h.header_size = 64; }, "header size 64"},
      {[](BundleHeader& h) { h.manifest_offset = 56; }, "manifest offset 56"},
      {[](BundleHeader& h) { h.manifest_size = UINT64_MAX; }, "extends past the end of the file"},
      {[](BundleHeader& h) { h.manifest_fnv1a64 ^= 1; }, "manifest checksum mismatch"},
  };
  for (const auto& c : cases) {
    std::string bytes = valid;
    BundleHeader h = HeaderOf(bytes);
    c.mutate(h);
    SetHeader(bytes, h);
    absl::Status s = ParseString(bytes).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_THAT(s.message(), HasSubstr(c.expect));
  }
}

TEST(BundleReaderTest, TruncationAtEveryLengthIsDataLoss) {
  const std::string bytes = ValidBytes();
  for (size_t len = 1; len < bytes.size(); ++len) {
    absl::Status s = ParseString(bytes.substr(0, len)).status();
    ASSERT_EQ(s.code(), absl::StatusCode::kDataLoss) << "length " << len << ": " << s;
    ASSERT_THAT(s.message(), HasSubstr("truncated")) << "length " << len;
  }
  absl::Status s = ParseString(bytes.substr(0, 1000)).status();
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("the header says ", bytes.size(),
                                                  " bytes, the file has 1000")));
}

TEST(BundleReaderTest, TrailingBytesAreDataLoss) {
  const std::string bytes = ValidBytes() + "x";
  absl::Status s = ParseString(bytes).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("1 bytes past the end the header gives"));
}

TEST(BundleReaderTest, EveryFlippedByteIsRejected) {
  const std::string valid = ValidBytes();
  const BundleHeader h = HeaderOf(valid);
  const Manifest m = LaidOutManifest(valid);
  const uint64_t manifest_end = kBundleHeaderSize + h.manifest_size;
  for (size_t i = 0; i < valid.size(); ++i) {
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::string bytes = valid;
      bytes[i] = static_cast<char>(bytes[i] ^ mask);
      absl::Status s = ParseString(bytes).status();
      ASSERT_FALSE(s.ok()) << "flipping byte " << i << " with " << int{mask} << " went unnoticed";
      if (i < 8) {
        EXPECT_THAT(s.message(), HasSubstr("not a kiln bundle"));
      } else if (i >= kBundleHeaderSize && i < manifest_end) {
        EXPECT_THAT(s.message(), HasSubstr("manifest checksum mismatch")) << "byte " << i;
      } else if (i >= manifest_end) {
        bool in_section = false;
        for (int k = 0; k < m.sections_size(); ++k) {
          if (i < m.sections(k).offset() || i >= m.sections(k).offset() + m.sections(k).size())
            continue;
          in_section = true;
          EXPECT_THAT(s.message(), HasSubstr(absl::StrCat(DescribeSection(m.sections(k), k),
                                                          ": checksum mismatch")))
              << "byte " << i;
        }
        if (!in_section) {
          EXPECT_THAT(s.message(), HasSubstr("nonzero padding byte")) << "byte " << i;
        }
      }
    }
  }
}

TEST(BundleReaderTest, SectionChecksumMismatchNamesIndexAndTarget) {
  std::string bytes = ValidBytes();
  const Manifest m = LaidOutManifest(bytes);
  bytes[m.sections(1).offset() + 17] ^= 0x10;
  absl::Status s = ParseString(bytes).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("t.kiln: section 1 (CUBIN sm_90): checksum mismatch"));
}

TEST(BundleReaderTest, UnparsableManifestIsDataLoss) {
  std::string garbage(40, '\xff');
  std::string bytes(kBundleHeaderSize, '\0');
  BundleHeader h;
  h.manifest_size = garbage.size();
  h.file_size = kBundleHeaderSize + garbage.size();
  h.manifest_fnv1a64 = Fnv1a64(AsBytes(garbage));
  SetHeader(bytes, h);
  bytes += garbage;
  absl::Status s = ParseString(bytes).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("manifest (40 bytes) does not parse"));
}

TEST(BundleReaderTest, SectionOverlappingTheManifest) {
  const std::string valid = ValidBytes();
  Manifest m = LaidOutManifest(valid);
  const std::vector<compiler::SectionInput> inputs = MakeSectionInputs();
  absl::Status ok = ParseString(Assemble(m, valid.size(),
                                         {{m.sections(0).offset(), inputs[0].bytes},
                                          {m.sections(1).offset(), inputs[1].bytes}}))
                        .status();
  ASSERT_TRUE(ok.ok()) << ok;
  m.mutable_sections(0)->set_offset(0);
  absl::Status s = ParseString(Assemble(m, valid.size())).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(),
              HasSubstr("section 0 (PTX sm_90): offset 0 is before the end of the manifest"));
}

TEST(BundleReaderTest, SectionOutsideTheFile) {
  const std::string valid = ValidBytes();
  Manifest m = LaidOutManifest(valid);
  m.mutable_sections(1)->set_size(1 << 20);
  const std::vector<compiler::SectionInput> inputs = MakeSectionInputs();
  absl::Status s =
      ParseString(Assemble(m, valid.size(), {{m.sections(0).offset(), inputs[0].bytes}})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("section 1 (CUBIN sm_90): bytes ["));
  EXPECT_THAT(s.message(), HasSubstr("are outside the file"));
}

TEST(BundleReaderTest, PtxWithNulIsRejected) {
  std::vector<compiler::SectionInput> inputs = MakeSectionInputs();
  absl::StatusOr<std::string> good = SerializeBundle(MakeValidManifest(), inputs);
  ASSERT_TRUE(ParseString(*good).ok());
  inputs[0].bytes[3] = '\0';
  absl::StatusOr<std::string> bytes = SerializeBundle(MakeValidManifest(), inputs);
  ASSERT_TRUE(bytes.ok());
  absl::Status s = ParseString(*bytes).status();
  EXPECT_THAT(s.message(), HasSubstr("section 0 (PTX sm_90): PTX holds a NUL byte at offset"));
}

TEST(BundleReaderTest, RunsTheValidator) {
  Manifest manifest = MakeValidManifest();
  manifest.mutable_kernels(0)->set_shared_bytes(1 << 20);
  absl::StatusOr<std::string> bytes = SerializeBundle(manifest, MakeSectionInputs());
  ASSERT_TRUE(bytes.ok());
  absl::Status s = ParseString(*bytes).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("t.kiln: kernel 0 ('repack_q8_0'): shared_bytes 1048576"));
}

}  // namespace
}  // namespace kiln::runtime
