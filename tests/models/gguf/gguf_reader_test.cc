// GgufFile against hand-assembled bytes: the spec example, valid variants,
// and one file per class of corruption, checking the code and that the
// message names the key/tensor and byte offset.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "models/gguf/gguf_file.h"
#include "tests/models/gguf/gguf_test_bytes.h"

namespace kiln::gguf {
namespace {

using testing::ByteBuilder;
using testing::SpecExampleBytes;

absl::StatusOr<std::unique_ptr<GgufFile>> ParseBytes(const std::vector<uint8_t>& b) {
  return GgufFile::Parse(absl::MakeConstSpan(b), "test.gguf");
}

// Expects `code` and every needle in the message.
void ExpectError(const std::vector<uint8_t>& bytes, absl::StatusCode code,
                 const std::vector<std::string>& needles) {
  auto r = ParseBytes(bytes);
  ASSERT_FALSE(r.ok()) << "parsed a bad file";
  EXPECT_EQ(r.status().code(), code) << r.status();
  for (const std::string& n : needles) {
    EXPECT_TRUE(absl::StrContains(r.status().message(), n))
        << "message lacks '" << n << "': " << r.status().message();
  }
}

struct TensorRecord {
  std::string name;
  std::vector<int64_t> dims;
  uint32_t type;
  uint64_t offset;
};

// One KV (general.architecture) then `tensors`, padded to 32, then
// `data_bytes` bytes of data (each byte = its index mod 251).
std::vector<uint8_t> FileWith(const std::vector<TensorRecord>& tensors, uint64_t data_bytes) {
  ByteBuilder b;
  b.Header(3, tensors.size(), 1).Str("general.architecture").U32(8).Str("qwen3");
  for (const TensorRecord& t : tensors) {
    b.Str(t.name).U32(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) b.I64(d);
    b.U32(t.type).U64(t.offset);
  }
  b.PadTo(32);
  for (uint64_t i = 0; i < data_bytes; ++i) b.U8(static_cast<uint8_t>(i % 251));
  return b.bytes();
}

// Header plus one KV with `key`, raw type id and raw payload bytes.
std::vector<uint8_t> FileWithKv(const std::string& key, uint32_t type,
                                const std::vector<uint8_t>& payload) {
  ByteBuilder b;
  b.Header(3, 0, 1).Str(key).U32(type);
  std::vector<uint8_t> out = b.bytes();
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

TEST(GgufReaderTest, SpecWorkedExampleParsesExactly) {
  std::vector<uint8_t> bytes = SpecExampleBytes();
  ASSERT_EQ(bytes.size(), 192u);
  auto r = ParseBytes(bytes);
  ASSERT_TRUE(r.ok()) << r.status();
  const GgufFile& f = **r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset(), 160u);
  EXPECT_EQ(f.file_size(), 192u);
  ASSERT_EQ(f.metadata().size(), 2u);
  EXPECT_EQ(f.metadata()[0].first, "general.architecture");
  EXPECT_EQ(f.metadata()[1].first, "general.alignment");
  ASSERT_NE(f.Find("general.architecture"), nullptr);
  EXPECT_EQ(*f.Find("general.architecture")->AsString(), "qwen3");
  EXPECT_EQ(f.Find("general.alignment")->type(), ValueType::kUint32);
  EXPECT_EQ(f.Find("general.alignment")->AsUint(), 32u);
  EXPECT_EQ(f.Find("general.name"), nullptr);

  ASSERT_EQ(f.tensors().size(), 1u);
  const TensorInfo* t = f.FindTensor("a.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t, &f.tensors()[0]);
  EXPECT_EQ(t->type, GgmlType::kF32);
  EXPECT_EQ(t->dims, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(t->dim(0), 4);
  EXPECT_EQ(t->dim(1), 2);
  EXPECT_EQ(t->dim(3), 1);
  EXPECT_EQ(t->num_elements(), 8);
  EXPECT_EQ(t->offset, 0u);
  EXPECT_EQ(t->file_offset, 160u);
  EXPECT_EQ(t->nbytes, 32u);
  absl::Span<const uint8_t> data = f.TensorData(*t);
  ASSERT_EQ(data.size(), 32u);
  EXPECT_EQ(data.data(), bytes.data() + 160);  // a view, not a copy
  for (int i = 0; i < 8; ++i) {
    float v;
    std::memcpy(&v, data.data() + 4 * i, 4);
    EXPECT_EQ(v, static_cast<float>(i));
  }
  EXPECT_EQ(f.FindTensor("b.weight"), nullptr);
}

TEST(GgufReaderTest, HandAssembledV2FileWithEveryValueTypeLoads) {
  ByteBuilder b;
  b.Header(2, 2, 14);
  b.Str("u8").U32(0).U8(250);
  b.Str("i8").U32(1).U8(0xFE);
  b.Str("u16").U32(2).U16(65000);
  b.Str("i16").U32(3).U16(0xFFFF);
  b.Str("u32").U32(4).U32(4000000000u);
  b.Str("i32").U32(5).U32(0xFFFFFFF9u);
  b.Str("f32").U32(6).F32(0.25f);
  b.Str("bool").U32(7).U8(1);
  b.Str("str").U32(8).Str("héllo");
  b.Str("u64").U32(10).U64(~uint64_t{0});
  b.Str("i64").U32(11).I64(-42);
  b.Str("f64").U32(12).U64(0x3FF8000000000000ull);  // 1.5
  b.Str("tokens").U32(9).U32(8).U64(3).Str("a").Str("").Str("ccc");
  // [[1, 2], []] as arrays of INT16 inside an array.
  b.Str("nested").U32(9).U32(9).U64(2).U32(3).U64(2).U16(1).U16(2).U32(3).U64(0);
  b.Str("blk.0.q").U32(1).I64(64).U32(8).U64(0);      // Q8_0, 2 blocks = 68 bytes
  b.Str("norm").U32(2).I64(3).I64(1).U32(1).U64(96);  // F16 [3,1], 6 bytes
  b.PadTo(32);
  size_t data_offset = b.size();
  for (int i = 0; i < 128; ++i) b.U8(static_cast<uint8_t>(i));
  auto r = ParseBytes(b.bytes());
  ASSERT_TRUE(r.ok()) << r.status();
  const GgufFile& f = **r;
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.data_offset(), data_offset);
  ASSERT_EQ(f.metadata().size(), 14u);
  EXPECT_EQ(f.metadata()[0].first, "u8");
  EXPECT_EQ(f.metadata()[13].first, "nested");
  EXPECT_EQ(f.Find("u8")->AsInt(), 250);
  EXPECT_EQ(f.Find("i8")->AsInt(), -2);
  EXPECT_EQ(f.Find("u16")->AsInt(), 65000);
  EXPECT_EQ(f.Find("i16")->AsInt(), -1);
  EXPECT_EQ(f.Find("u32")->AsUint(), 4000000000u);
  EXPECT_EQ(f.Find("i32")->AsInt(), -7);
  EXPECT_EQ(f.Find("f32")->AsFloat(), 0.25);
  EXPECT_EQ(f.Find("f32")->type(), ValueType::kFloat32);
  EXPECT_EQ(f.Find("bool")->AsBool(), true);
  EXPECT_EQ(*f.Find("str")->AsString(), "héllo");
  EXPECT_EQ(f.Find("u64")->AsUint(), ~uint64_t{0});
  EXPECT_EQ(f.Find("i64")->AsInt(), -42);
  EXPECT_EQ(f.Find("f64")->AsFloat(), 1.5);
  const Array* toks = f.Find("tokens")->AsArray();
  ASSERT_NE(toks, nullptr);
  ASSERT_EQ(toks->elements.size(), 3u);
  EXPECT_EQ(*toks->elements[1].AsString(), "");
  EXPECT_EQ(*toks->elements[2].AsString(), "ccc");
  const Array* nested = f.Find("nested")->AsArray();
  ASSERT_NE(nested, nullptr);
  EXPECT_EQ(nested->element_type, ValueType::kArray);
  ASSERT_EQ(nested->elements.size(), 2u);
  EXPECT_EQ(nested->elements[0].AsArray()->element_type, ValueType::kInt16);
  EXPECT_EQ(nested->elements[0].AsArray()->elements[1].AsInt(), 2);
  EXPECT_TRUE(nested->elements[1].AsArray()->elements.empty());

  const TensorInfo* q = f.FindTensor("blk.0.q");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type, GgmlType::kQ8_0);
  EXPECT_EQ(q->nbytes, 68u);
  EXPECT_EQ(f.TensorData(*q)[5], 5);
  const TensorInfo* n = f.FindTensor("norm");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->dims, (std::vector<int64_t>{3, 1}));  // trailing 1 kept as stored
  EXPECT_EQ(n->file_offset, data_offset + 96);
  EXPECT_EQ(n->nbytes, 6u);
  EXPECT_EQ(f.TensorData(*n)[0], 96);
}

TEST(GgufReaderTest, NoTensorsNeedsNoPadding) {
  std::vector<uint8_t> bytes = FileWithKv("k", 4, {1, 0, 0, 0});
  auto r = ParseBytes(bytes);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->data_offset(), bytes.size());
  EXPECT_TRUE((*r)->tensors().empty());
}

TEST(GgufReaderTest, NonZeroBoolByteReadsTrue) {
  auto r = ParseBytes(FileWithKv("flag", 7, {2}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->Find("flag")->AsBool(), true);
}

TEST(GgufReaderTest, ZeroSizedTensorIsAccepted) {
  auto r = ParseBytes(FileWith({{"empty", {0, 4}, 0, 0}, {"x", {8}, 0, 0}}, 32));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->FindTensor("empty")->nbytes, 0u);
  EXPECT_EQ((*r)->FindTensor("x")->nbytes, 32u);
}

TEST(GgufReaderTest, AlignmentKeyIsHonoured) {
  ByteBuilder b;
  b.Header(3, 2, 1).Str("general.alignment").U32(4).U32(64);
  b.Str("a").U32(1).I64(4).U32(0).U64(0);   // 16 bytes
  b.Str("b").U32(1).I64(4).U32(0).U64(64);  // next multiple of 64
  b.PadTo(64);
  size_t data_offset = b.size();
  for (int i = 0; i < 128; ++i) b.U8(static_cast<uint8_t>(i));
  auto r = ParseBytes(b.bytes());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->alignment(), 64u);
  EXPECT_EQ((*r)->data_offset(), data_offset);
  EXPECT_EQ((*r)->data_offset() % 64, 0u);
  EXPECT_EQ((*r)->FindTensor("b")->file_offset, data_offset + 64);
  EXPECT_EQ((*r)->TensorData(*(*r)->FindTensor("b"))[0], 64);

  // The same offset 32 is misaligned under alignment 64 (but fine under 32).
  ByteBuilder c;
  c.Header(3, 1, 1).Str("general.alignment").U32(4).U32(64);
  c.Str("b").U32(1).I64(4).U32(0).U64(32);
  c.PadTo(64);
  for (int i = 0; i < 128; ++i) c.U8(0);
  ExpectError(c.bytes(), absl::StatusCode::kInvalidArgument,
              {"tensor 'b'", "data offset 32", "alignment 64", "byte offset"});
}

TEST(GgufReaderTest, OpenMapsAFileAndReportsMissingFiles) {
  std::string path = ::testing::TempDir() + "/reader_open_test.gguf";
  std::vector<uint8_t> bytes = SpecExampleBytes();
  FILE* fp = std::fopen(path.c_str(), "wb");
  ASSERT_NE(fp, nullptr);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), fp), bytes.size());
  std::fclose(fp);
  auto r = GgufFile::Open(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->name(), path);
  const TensorInfo* t = (*r)->FindTensor("a.weight");
  ASSERT_NE(t, nullptr);
  float v;
  std::memcpy(&v, (*r)->TensorData(*t).data() + 28, 4);
  EXPECT_EQ(v, 7.0f);
  ::unlink(path.c_str());

  auto missing = GgufFile::Open(path + ".missing");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  // An error in a mapped file names the path.
  std::vector<uint8_t> bad = {'G', 'G', 'U', 'X'};
  fp = std::fopen(path.c_str(), "wb");
  std::fwrite(bad.data(), 1, bad.size(), fp);
  std::fclose(fp);
  auto r2 = GgufFile::Open(path);
  EXPECT_EQ(r2.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(r2.status().message(), path));
  ::unlink(path.c_str());
}

// Every proper prefix of a valid file is truncated, and must be DataLoss.
void ExpectEveryTruncationFails(const std::vector<uint8_t>& bytes) {
  ASSERT_TRUE(ParseBytes(bytes).ok());
  for (size_t len = 0; len < bytes.size(); ++len) {
    // A fresh copy of exactly `len` bytes, so ASan would see any overread.
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + len);
    auto r = GgufFile::Parse(absl::MakeConstSpan(prefix), "cut.gguf");
    ASSERT_FALSE(r.ok()) << "prefix of " << len << " bytes parsed";
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << len << ": " << r.status();
  }
}

TEST(GgufReaderTest, EveryTruncationOfTheSpecExampleFails) {
  ExpectEveryTruncationFails(SpecExampleBytes());
}

TEST(GgufReaderTest, EveryTruncationOfARicherFileFails) {
  // Unaligned tensor size, so the last tensor is followed by padding.
  ByteBuilder b;
  b.Header(3, 2, 3)
      .Str("s")
      .U32(8)
      .Str("abc")
      .Str("arr")
      .U32(9)
      .U32(9)
      .U64(1)
      .U32(8)
      .U64(2)
      .Str("x")
      .Str("yz")
      .Str("f")
      .U32(12)
      .U64(0);
  b.Str("t0").U32(1).I64(3).U32(0).U64(0).Str("t1").U32(2).I64(1).I64(3).U32(26).U64(32);
  b.PadTo(32);
  for (int i = 0; i < 64; ++i) b.U8(i < 12 || (i >= 32 && i < 44) ? 1 : 0);
  ExpectEveryTruncationFails(b.bytes());
}

TEST(GgufReaderTest, TruncationMessageNamesOffsetAndKey) {
  // The spec example's first KV, cut inside "qwen3" (no tensors, so the
  // up-front count checks pass and the string itself is found short).
  ByteBuilder b;
  b.Header(3, 0, 1).Str("general.architecture").U32(8).U64(5).Raw("qw");
  ExpectError(b.bytes(), absl::StatusCode::kDataLoss,
              {"test.gguf", "byte offset 56", "key 'general.architecture'", "length 5"});
  // Cut so early that the declared counts cannot fit: the header says so.
  std::vector<uint8_t> bytes = SpecExampleBytes();
  bytes.resize(0x43);
  ExpectError(bytes, absl::StatusCode::kDataLoss, {"n_tensors = 1", "byte offset 8"});
  bytes = SpecExampleBytes();
  bytes.resize(170);  // inside a.weight's data
  ExpectError(bytes, absl::StatusCode::kDataLoss, {"tensor 'a.weight'", "past the end"});
}

TEST(GgufReaderTest, BadMagic) {
  std::vector<uint8_t> bytes = SpecExampleBytes();
  bytes[3] = 'X';
  ExpectError(bytes, absl::StatusCode::kInvalidArgument, {"bad magic", "byte offset 0"});
  bytes[0] = 'F';
  bytes[1] = 'U';
  bytes[2] = 'G';
  bytes[3] = 'G';
  ExpectError(bytes, absl::StatusCode::kInvalidArgument, {"big-endian"});
}

TEST(GgufReaderTest, UnsupportedVersions) {
  for (uint32_t v : {0u, 1u, 4u, 1000u}) {
    ByteBuilder b;
    b.Header(v, 0, 0);
    ExpectError(b.bytes(), absl::StatusCode::kInvalidArgument,
                {absl::StrCat("unsupported GGUF version ", v), "byte offset 4"});
  }
}

TEST(GgufReaderTest, BigEndianFileIsDetected) {
  // A big-endian writer stores version 3 as 00 00 00 03 (spec §2).
  ByteBuilder b;
  b.Raw("GGUF").Raw(std::string("\0\0\0\3", 4)).Raw(std::string(16, '\0'));
  ExpectError(b.bytes(), absl::StatusCode::kInvalidArgument,
              {"big-endian", "version 3", "0x03000000"});
}

TEST(GgufReaderTest, AbsurdHeaderCounts) {
  ByteBuilder b;
  b.Header(3, 0, uint64_t{1} << 40);
  ExpectError(b.bytes(), absl::StatusCode::kDataLoss, {"n_kv = 1099511627776"});
  ByteBuilder c;
  c.Header(3, uint64_t{1} << 40, 0);
  ExpectError(c.bytes(), absl::StatusCode::kDataLoss, {"n_tensors = 1099511627776"});
  ByteBuilder d;
  d.Header(3, 0, ~uint64_t{0});
  ExpectError(d.bytes(), absl::StatusCode::kInvalidArgument, {"n_kv = -1", "negative"});
  ByteBuilder e;
  e.Header(3, uint64_t{1} << 63, 0);
  ExpectError(e.bytes(), absl::StatusCode::kInvalidArgument, {"n_tensors", "negative"});
}

TEST(GgufReaderTest, AbsurdStringLengthIsRejectedBeforeAllocating) {
  ByteBuilder b;
  b.Header(3, 0, 1).U64(uint64_t{1} << 62).Raw("general.x");
  ExpectError(b.bytes(), absl::StatusCode::kDataLoss,
              {"key #0", "byte offset 24", "4611686018427387904"});
  std::vector<uint8_t> v = FileWithKv("general.name", 8, {});
  ByteBuilder len;
  len.U64(~uint64_t{0}).Raw("abc");
  v.insert(v.end(), len.bytes().begin(), len.bytes().end());
  ExpectError(v, absl::StatusCode::kDataLoss, {"key 'general.name'", "STRING value length"});
}

TEST(GgufReaderTest, AbsurdArrayCountIsRejectedBeforeAllocating) {
  ByteBuilder p;
  p.U32(0).U64(uint64_t{1} << 60).U8(1);  // UINT8 x 2^60
  ExpectError(
      FileWithKv("tokenizer.ggml.scores", 9, p.bytes()), absl::StatusCode::kDataLoss,
      {"key 'tokenizer.ggml.scores'", "array of 1152921504606846976 UINT8", "byte offset 61"});
  ByteBuilder q;
  q.U32(8).U64(1000).Str("a");  // strings need 8 bytes each at least
  ExpectError(FileWithKv("tokenizer.ggml.tokens", 9, q.bytes()), absl::StatusCode::kDataLoss,
              {"key 'tokenizer.ggml.tokens'", "array of 1000 STRING"});
}

TEST(GgufReaderTest, UnknownValueTypeIds) {
  ExpectError(FileWithKv("general.foo", 13, {0, 0, 0, 0}), absl::StatusCode::kInvalidArgument,
              {"key 'general.foo'", "unknown value type id 13", "byte offset 43"});
  ExpectError(FileWithKv("general.bar", 9, {77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}),
              absl::StatusCode::kInvalidArgument,
              {"key 'general.bar'", "unknown array element type id 77"});
}

TEST(GgufReaderTest, NestedArraysDepthIsBounded) {
  auto nest = [](int depth) {
    ByteBuilder p;
    for (int i = 1; i < depth; ++i) p.U32(9).U64(1);
    p.U32(0).U64(1).U8(42);
    return p.bytes();
  };
  auto ok = ParseBytes(FileWithKv("deep", 9, nest(8)));
  ASSERT_TRUE(ok.ok()) << ok.status();
  const Value* v = (*ok)->Find("deep");
  for (int i = 1; i < 8; ++i) v = &v->AsArray()->elements[0];
  EXPECT_EQ(v->AsArray()->elements[0].AsInt(), 42);
  ExpectError(FileWithKv("deep", 9, nest(9)), absl::StatusCode::kInvalidArgument,
              {"key 'deep'", "nested more than 8"});
  // A hostile file nesting a million levels fails without exhausting the stack.
  ExpectError(FileWithKv("deep", 9, nest(1000000)), absl::StatusCode::kInvalidArgument, {"nested"});
}

TEST(GgufReaderTest, DuplicateAndEmptyKeys) {
  ByteBuilder b;
  b.Header(3, 0, 2).Str("general.name").U32(4).U32(1).Str("general.name").U32(4).U32(2);
  ExpectError(
      b.bytes(), absl::StatusCode::kInvalidArgument,
      {"duplicate key", "key 'general.name'", "byte offset 52", "first defined at byte offset 24"});
  ByteBuilder c;
  c.Header(3, 0, 1).Str("").U32(4).U32(1);
  ExpectError(c.bytes(), absl::StatusCode::kInvalidArgument, {"empty key", "byte offset 24"});
}

TEST(GgufReaderTest, BadAlignmentKey) {
  ExpectError(FileWithKv("general.alignment", 10, {32, 0, 0, 0, 0, 0, 0, 0}),
              absl::StatusCode::kInvalidArgument,
              {"general.alignment", "UINT64", "expected UINT32"});
  ExpectError(FileWithKv("general.alignment", 4, {0, 0, 0, 0}), absl::StatusCode::kInvalidArgument,
              {"general.alignment = 0", "power of two"});
  ExpectError(FileWithKv("general.alignment", 4, {48, 0, 0, 0}), absl::StatusCode::kInvalidArgument,
              {"general.alignment = 48", "byte offset 24"});
}

TEST(GgufReaderTest, UnknownAndUnsupportedTensorTypes) {
  ExpectError(FileWith({{"blk.0.ffn_up.weight", {32}, 99, 0}}, 32),
              absl::StatusCode::kInvalidArgument,
              {"tensor 'blk.0.ffn_up.weight'", "unknown ggml type id 99", "byte offset"});
  ExpectError(FileWith({{"blk.1.ffn_up.weight", {256}, 16, 0}}, 256),
              absl::StatusCode::kInvalidArgument,
              {"tensor 'blk.1.ffn_up.weight'", "IQ2_XXS", "id 16"});
  ExpectError(FileWith({{"old", {32}, 4, 0}}, 32), absl::StatusCode::kInvalidArgument,
              {"tensor 'old'", "id 4"});
}

TEST(GgufReaderTest, BadDimensionCounts) {
  ExpectError(FileWith({{"t", {}, 0, 0}}, 32), absl::StatusCode::kInvalidArgument,
              {"tensor 't'", "n_dims = 0"});
  ExpectError(FileWith({{"t", {1, 1, 1, 1, 1}, 0, 0}}, 32), absl::StatusCode::kInvalidArgument,
              {"tensor 't'", "n_dims = 5"});
}

TEST(GgufReaderTest, NegativeAndOverflowingDims) {
  ExpectError(FileWith({{"neg", {4, -2}, 0, 0}}, 32), absl::StatusCode::kInvalidArgument,
              {"tensor 'neg'", "ne[1] = -2", "negative"});
  int64_t big = int64_t{1} << 32;
  ExpectError(FileWith({{"huge", {big, big}, 0, 0}}, 32), absl::StatusCode::kInvalidArgument,
              {"tensor 'huge'", "element count", "overflows int64"});
  // 2^62 elements fit in int64; their 2^64 bytes as F32 do not.
  ExpectError(FileWith({{"wide", {int64_t{1} << 31, int64_t{1} << 31}, 0, 0}}, 32),
              absl::StatusCode::kInvalidArgument, {"tensor 'wide'", "byte size", "overflows"});
}

TEST(GgufReaderTest, RowNotAMultipleOfBlockSize) {
  ExpectError(FileWith({{"blk.0.attn_q.weight", {48, 2}, 8, 0}}, 128),
              absl::StatusCode::kInvalidArgument,
              {"tensor 'blk.0.attn_q.weight'", "ne[0] = 48", "Q8_0 block size 32"});
  ExpectError(FileWith({{"k", {128}, 12, 0}}, 256), absl::StatusCode::kInvalidArgument,
              {"tensor 'k'", "Q4_K block size 256"});
}

TEST(GgufReaderTest, TensorsOutsideTheFile) {
  ExpectError(FileWith({{"far", {8}, 0, uint64_t{1} << 40}}, 32), absl::StatusCode::kDataLoss,
              {"tensor 'far'", "1099511627776", "past the end", "byte offset"});
  ExpectError(FileWith({{"long", {16}, 0, 0}}, 32), absl::StatusCode::kDataLoss,
              {"tensor 'long'", "64 bytes", "past the end"});
  // Offsets near 2^64 must not wrap around.
  ExpectError(FileWith({{"wrap", {8}, 0, ~uint64_t{0} - 31}}, 32), absl::StatusCode::kDataLoss,
              {"tensor 'wrap'"});
  // Missing padding after the last tensor (12 bytes of data, file cut at 12).
  std::vector<uint8_t> bytes = FileWith({{"short", {3}, 0, 0}}, 12);
  ExpectError(bytes, absl::StatusCode::kDataLoss, {"tensor 'short'", "padding"});
}

TEST(GgufReaderTest, OverlappingTensors) {
  ExpectError(FileWith({{"a", {16}, 0, 0}, {"b", {8}, 0, 32}}, 64),
              absl::StatusCode::kInvalidArgument, {"'a'", "'b'", "overlap"});
  // Sharing an offset is an overlap too, whatever the record order.
  ExpectError(FileWith({{"c", {8}, 0, 32}, {"d", {8}, 0, 0}, {"e", {8}, 0, 32}}, 64),
              absl::StatusCode::kInvalidArgument, {"'c'", "'e'", "overlap"});
  // Adjacent is not an overlap.
  EXPECT_TRUE(ParseBytes(FileWith({{"a", {8}, 0, 0}, {"b", {8}, 0, 32}}, 64)).ok());
}

TEST(GgufReaderTest, MisalignedTensorOffset) {
  ExpectError(FileWith({{"a", {4}, 0, 0}, {"mis", {4}, 0, 16}}, 64),
              absl::StatusCode::kInvalidArgument,
              {"tensor 'mis'", "data offset 16", "alignment 32", "byte offset"});
}

TEST(GgufReaderTest, DuplicateAndEmptyTensorNames) {
  ExpectError(FileWith({{"dup", {8}, 0, 0}, {"dup", {8}, 0, 32}}, 64),
              absl::StatusCode::kInvalidArgument,
              {"duplicate tensor name", "tensor 'dup'", "first defined at byte offset"});
  ExpectError(FileWith({{"", {8}, 0, 0}}, 32), absl::StatusCode::kInvalidArgument,
              {"empty tensor name", "tensor #0"});
}

// Random corruption of valid files must never crash or read out of bounds
// (the libFuzzer target goes much further; this runs in every ctest).
TEST(GgufReaderTest, RandomMutationsNeverCrash) {
  std::vector<std::vector<uint8_t>> seeds = {
      SpecExampleBytes(), FileWith({{"a", {8}, 0, 0}, {"b", {32, 2}, 8, 32}}, 128)};
  std::mt19937 rng(1234);
  int parsed = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<uint8_t> b = seeds[iter % seeds.size()];
    int flips = 1 + rng() % 4;
    for (int k = 0; k < flips; ++k) {
      size_t at = rng() % b.size();
      b[at] = (rng() % 3 == 0) ? 0xFF : static_cast<uint8_t>(rng());
    }
    if (rng() % 4 == 0) b.resize(rng() % b.size());
    std::vector<uint8_t> exact(b);  // exactly sized for ASan
    auto r = GgufFile::Parse(absl::MakeConstSpan(exact), "mut");
    if (!r.ok()) {
      EXPECT_TRUE(r.status().code() == absl::StatusCode::kInvalidArgument ||
                  r.status().code() == absl::StatusCode::kDataLoss)
          << r.status();
      continue;
    }
    ++parsed;
    for (const TensorInfo& t : (*r)->tensors()) {
      absl::Span<const uint8_t> d = (*r)->TensorData(t);
      ASSERT_EQ(d.size(), t.nbytes);
      ASSERT_LE(t.file_offset + t.nbytes, exact.size());
    }
  }
  EXPECT_GT(parsed, 0);  // some mutations land in data and still parse
}

}  // namespace
}  // namespace kiln::gguf
