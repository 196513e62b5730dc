// GgufWriter: exact bytes against the spec example, round trips through the
// reader, layout (alignment, padding, order), validation and the file path.
#include "models/gguf/gguf_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
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

std::vector<uint8_t> F32Bytes(const std::vector<float>& xs) {
  std::vector<uint8_t> b(xs.size() * 4);
  std::memcpy(b.data(), xs.data(), b.size());
  return b;
}

std::unique_ptr<GgufFile> MustParse(const std::vector<uint8_t>& bytes) {
  auto r = GgufFile::Parse(absl::MakeConstSpan(bytes), "written.gguf");
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::move(*r) : nullptr;
}

void ExpectWriteError(const GgufWriter& w, const std::vector<std::string>& needles) {
  auto r = w.WriteToMemory();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  for (const std::string& n : needles) {
    EXPECT_TRUE(absl::StrContains(r.status().message(), n))
        << "message lacks '" << n << "': " << r.status().message();
  }
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

TEST(GgufWriterTest, ReproducesTheSpecExampleByteForByte) {
  GgufWriter w;
  w.AddKey("general.architecture", Value::Str("qwen3"));
  w.AddKey("general.alignment", Value::U32(32));  // explicit and consistent: kept once
  w.AddTensorBytes("a.weight", {4, 2}, GgmlType::kF32, F32Bytes({0, 1, 2, 3, 4, 5, 6, 7}));
  auto r = w.WriteToMemory();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, testing::SpecExampleBytes());
}

TEST(GgufWriterTest, DefaultAlignmentWritesNoAlignmentKey) {
  GgufWriter w;
  w.AddKey("general.architecture", Value::Str("qwen3"));
  w.AddTensorBytes("a.weight", {4, 2}, GgmlType::kF32, F32Bytes({0, 1, 2, 3, 4, 5, 6, 7}));
  auto r = w.WriteToMemory();
  ASSERT_TRUE(r.ok()) << r.status();
  auto f = MustParse(*r);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->metadata().size(), 1u);
  EXPECT_EQ(f->Find("general.alignment"), nullptr);
  EXPECT_EQ(f->alignment(), 32u);
}

TEST(GgufWriterTest, RoundTripsEveryValueType) {
  Array nested{
      ValueType::kArray,
      {Value::I32Array({1, -2}), Value::Arr(Array{ValueType::kInt32, {}}), Value::I32Array({3})}};
  Array deeper{ValueType::kArray,
               {Value::Arr(Array{ValueType::kArray, {Value::StrArray({"x", ""})}})}};
  std::vector<std::pair<std::string, Value>> kvs = {
      {"u8", Value::U8(255)},
      {"i8", Value::I8(-128)},
      {"u16", Value::U16(65535)},
      {"i16", Value::I16(-32768)},
      {"u32", Value::U32(4294967295u)},
      {"i32", Value::I32(std::numeric_limits<int32_t>::min())},
      {"f32", Value::F32(-1.5e-7f)},
      {"bool_t", Value::Bool(true)},
      {"bool_f", Value::Bool(false)},
      {"str", Value::Str("qwen3 \xE2\x9C\x93")},
      {"empty_str", Value::Str("")},
      {"u64", Value::U64(~uint64_t{0})},
      {"i64", Value::I64(std::numeric_limits<int64_t>::min())},
      {"f64", Value::F64(3.141592653589793)},
      {"strs", Value::StrArray({"!", "\"", "", "Ġthe"})},
      {"i32s", Value::I32Array({1, 2, 3})},
      {"f32s", Value::Arr(Array{ValueType::kFloat32, {Value::F32(0.5f), Value::F32(-0.0f)}})},
      {"bools", Value::Arr(Array{ValueType::kBool, {Value::Bool(true), Value::Bool(false)}})},
      {"u64s",
       Value::Arr(Array{ValueType::kUint64, {Value::U64(1), Value::U64(uint64_t{1} << 63)}})},
      {"empty_u8s", Value::Arr(Array{ValueType::kUint8, {}})},
      {"empty_strs", Value::Arr(Array{ValueType::kString, {}})},
      {"empty_arrs", Value::Arr(Array{ValueType::kArray, {}})},
      {"nested", Value::Arr(nested)},
      {"deeper", Value::Arr(deeper)},
  };
  GgufWriter w;
  for (const auto& [k, v] : kvs) w.AddKey(k, v);
  auto r = w.WriteToMemory();
  ASSERT_TRUE(r.ok()) << r.status();
  auto f = MustParse(*r);
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->metadata().size(), kvs.size());
  for (size_t i = 0; i < kvs.size(); ++i) {
    const auto& [key, want] = kvs[i];
    const auto& [got_key, got] = f->metadata()[i];
    EXPECT_EQ(got_key, key);  // insertion order
    EXPECT_EQ(got.type(), want.type()) << key;
    // Storage equality is exact, bit for bit in the floats' case except
    // -0.0 == 0.0, so the debug text (which keeps the sign) is compared too.
    EXPECT_TRUE(got.storage().index() == want.storage().index()) << key;
    EXPECT_EQ(got.DebugString(100), want.DebugString(100)) << key;
  }
  EXPECT_EQ(f->Find("i64")->AsInt(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f->Find("f32")->AsFloat(), static_cast<double>(-1.5e-7f));
  EXPECT_EQ(f->Find("f64")->AsFloat(), 3.141592653589793);
  EXPECT_EQ(f->Find("empty_arrs")->AsArray()->element_type, ValueType::kArray);
  EXPECT_EQ(f->Find("empty_strs")->AsArray()->element_type, ValueType::kString);
  const Array* n = f->Find("nested")->AsArray();
  ASSERT_EQ(n->elements.size(), 3u);
  EXPECT_EQ(n->elements[0].AsArray()->elements[1].AsInt(), -2);
  EXPECT_TRUE(n->elements[1].AsArray()->elements.empty());
  EXPECT_EQ(n->elements[1].AsArray()->element_type, ValueType::kInt32);
  EXPECT_EQ(f->Find("deeper")->DebugString(), "[ARRAY x1: [ARRAY x1: [STRING x2: \"x\", \"\"]]]");
  EXPECT_TRUE(std::signbit(std::get<float>(f->Find("f32s")->AsArray()->elements[1].storage())));
}

TEST(GgufWriterTest, Version2HeaderOfWriterOutputIsAccepted) {
  GgufWriter w;
  w.AddKey("general.architecture", Value::Str("qwen3"));
  w.AddTensorBytes("t", {8}, GgmlType::kF32, std::vector<uint8_t>(32, 7));
  auto r = w.WriteToMemory();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[4], 3);  // we write v3
  (*r)[4] = 2;
  auto f = MustParse(*r);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(f->TensorData(*f->FindTensor("t"))[31], 7);
}

TEST(GgufWriterTest, PacksTensorsInOrderWithZeroPadding) {
  GgufWriter w;
  w.AddKey("general.architecture", Value::Str("qwen3"));
  w.AddTensorBytes("z.first", {3}, GgmlType::kF32, std::vector<uint8_t>(12, 0xAA));
  w.AddTensorBytes("a.second", {32, 2}, GgmlType::kQ8_0, std::vector<uint8_t>(68, 0xBB));
  w.AddTensorBytes("m.empty", {0}, GgmlType::kF16, {});
  w.AddTensorBytes("b.last", {5}, GgmlType::kF16, std::vector<uint8_t>(10, 0xCC));
  auto r = w.WriteToMemory();
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<uint8_t>& b = *r;
  auto f = MustParse(b);
  ASSERT_NE(f, nullptr);
  const auto& ts = f->tensors();
  ASSERT_EQ(ts.size(), 4u);
  EXPECT_EQ(ts[0].name, "z.first");
  EXPECT_EQ(ts[1].name, "a.second");
  EXPECT_EQ(ts[3].name, "b.last");
  std::vector<uint64_t> want_offsets = {0, 32, 128, 128};
  for (size_t i = 0; i < ts.size(); ++i) EXPECT_EQ(ts[i].offset, want_offsets[i]) << ts[i].name;
  EXPECT_EQ(f->data_offset() % 32, 0u);
  // File ends with the last tensor's padding: data_offset + 128 + 32.
  EXPECT_EQ(b.size(), f->data_offset() + 160);
  // Every byte of the data section outside the tensors is zero padding,
  // and so are the bytes between the tensor infos and data_offset.
  std::vector<bool> covered(b.size(), false);
  for (const TensorInfo& t : ts) {
    for (uint64_t k = 0; k < t.nbytes; ++k) covered[t.file_offset + k] = true;
  }
  for (size_t k = f->data_offset(); k < b.size(); ++k) {
    if (!covered[k]) {
      EXPECT_EQ(b[k], 0) << "padding byte " << k;
    }
  }
  EXPECT_EQ(f->TensorData(ts[1])[67], 0xBB);
  EXPECT_EQ(f->TensorData(ts[3])[9], 0xCC);
}

TEST(GgufWriterTest, Alignment64IsWrittenAndHonoured) {
  GgufWriter w(64);
  w.AddKey("general.architecture", Value::Str("qwen3"));
  w.AddTensorBytes("a", {4}, GgmlType::kF32, std::vector<uint8_t>(16, 1));
  w.AddTensorBytes("b", {4}, GgmlType::kF32, std::vector<uint8_t>(16, 2));
  auto r = w.WriteToMemory();
  ASSERT_TRUE(r.ok()) << r.status();
  auto f = MustParse(*r);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->alignment(), 64u);
  ASSERT_NE(f->Find("general.alignment"), nullptr);
  EXPECT_EQ(f->Find("general.alignment")->type(), ValueType::kUint32);
  EXPECT_EQ(f->Find("general.alignment")->AsUint(), 64u);
  EXPECT_EQ(f->data_offset() % 64, 0u);
  EXPECT_EQ(f->FindTensor("b")->offset, 64u);
  EXPECT_EQ(r->size(), f->data_offset() + 128);

  // An explicit consistent key is written once, where it was added.
  GgufWriter w2(64);
  w2.AddKey("general.alignment", Value::U32(64));
  w2.AddKey("general.architecture", Value::Str("qwen3"));
  auto r2 = w2.WriteToMemory();
  ASSERT_TRUE(r2.ok()) << r2.status();
  auto f2 = MustParse(*r2);
  ASSERT_EQ(f2->metadata().size(), 2u);
  EXPECT_EQ(f2->metadata()[0].first, "general.alignment");
}

TEST(GgufWriterTest, RejectsInconsistentOrInvalidAlignment) {
  GgufWriter w(32);
  w.AddKey("general.alignment", Value::U32(64));
  ExpectWriteError(w, {"general.alignment", "64", "32"});
  GgufWriter w2(64);
  w2.AddKey("general.alignment", Value::U64(64));
  ExpectWriteError(w2, {"general.alignment"});
  ExpectWriteError(GgufWriter(48), {"alignment 48"});
  ExpectWriteError(GgufWriter(0), {"alignment 0"});
}

TEST(GgufWriterTest, ValidatesKeysAndTensors) {
  {
    GgufWriter w;
    w.AddKey("general.name", Value::Str("a"));
    w.AddKey("general.name", Value::Str("b"));
    ExpectWriteError(w, {"duplicate metadata key 'general.name'"});
  }
  {
    GgufWriter w;
    w.AddKey("", Value::U8(1));
    ExpectWriteError(w, {"empty metadata key"});
  }
  {
    GgufWriter w;
    w.AddTensorBytes("t", {8}, GgmlType::kF32, std::vector<uint8_t>(32));
    w.AddTensorBytes("t", {8}, GgmlType::kF32, std::vector<uint8_t>(32));
    ExpectWriteError(w, {"duplicate tensor name 't'"});
  }
  {
    GgufWriter w;
    w.AddTensorBytes("", {8}, GgmlType::kF32, std::vector<uint8_t>(32));
    ExpectWriteError(w, {"empty tensor name"});
  }
  {
    GgufWriter ok;  // 63 bytes is the most llama.cpp reads; 64 is refused
    ok.AddTensorBytes(std::string(63, 'n'), {8}, GgmlType::kF32, std::vector<uint8_t>(32));
    EXPECT_TRUE(ok.WriteToMemory().ok());
    GgufWriter w;
    w.AddTensorBytes(std::string(64, 'n'), {8}, GgmlType::kF32, std::vector<uint8_t>(32));
    ExpectWriteError(w, {"64 bytes", "at most 63"});
  }
  {
    GgufWriter w;
    w.AddTensor("blk.0.attn_q.weight", {48, 2}, GgmlType::kQ8_0,
                [](absl::Span<uint8_t>) { return absl::OkStatus(); });
    ExpectWriteError(w, {"tensor 'blk.0.attn_q.weight'", "ne[0] = 48", "Q8_0 block size 32"});
  }
  {
    GgufWriter w;
    w.AddTensorBytes("none", {}, GgmlType::kF32, {});
    ExpectWriteError(w, {"tensor 'none'", "0 dims"});
    GgufWriter w5;
    w5.AddTensorBytes("five", {1, 1, 1, 1, 1}, GgmlType::kF32, std::vector<uint8_t>(4));
    ExpectWriteError(w5, {"tensor 'five'", "5 dims"});
  }
  {
    GgufWriter w;
    w.AddTensorBytes("neg", {4, -1}, GgmlType::kF32, {});
    ExpectWriteError(w, {"tensor 'neg'", "negative"});
  }
  {
    GgufWriter w;
    w.AddTensor("huge", {int64_t{1} << 40, int64_t{1} << 40}, GgmlType::kF32,
                [](absl::Span<uint8_t>) { return absl::OkStatus(); });
    ExpectWriteError(w, {"tensor 'huge'", "overflows"});
  }
  {
    GgufWriter w;
    w.AddKey("mixed", Value::Arr(Array{ValueType::kInt32, {Value::I32(1), Value::U8(2)}}));
    ExpectWriteError(w, {"key 'mixed'", "element 1", "UINT8", "INT32"});
  }
  {
    Value v = Value::U8(1);
    for (int i = 0; i < 9; ++i) v = Value::Arr(Array{v.type(), {v}});
    GgufWriter w;
    w.AddKey("deep", v);
    ExpectWriteError(w, {"key 'deep'", "nested"});
  }
  {
    GgufWriter w;
    w.AddTensorBytes("sized", {8}, GgmlType::kF32, std::vector<uint8_t>(31));
    ExpectWriteError(w, {"tensor 'sized'", "31 bytes", "need 32"});
  }
}

TEST(GgufWriterTest, ProducerErrorPropagatesAndLeavesNoFile) {
  std::string path = ::testing::TempDir() + "/writer_fail.gguf";
  // An old good file under the final name survives a failed write.
  std::FILE* fp = std::fopen(path.c_str(), "wb");
  std::fputs("old", fp);
  std::fclose(fp);
  GgufWriter w;
  for (int i = 0; i < 6; ++i) {
    w.AddTensor(absl::StrCat("t", i), {8}, GgmlType::kF32, [i](absl::Span<uint8_t> out) {
      if (i == 3) return absl::ResourceExhaustedError("quantizer ran out of patience");
      std::memset(out.data(), i, out.size());
      return absl::OkStatus();
    });
  }
  for (int threads : {1, 2, 4}) {
    absl::Status s = w.Write(path, threads);
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "tensor 't3'")) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "out of patience")) << s;
    EXPECT_FALSE(Exists(path + ".tmp"));
    EXPECT_EQ(ReadFile(path), (std::vector<uint8_t>{'o', 'l', 'd'}));
  }
  auto mem = w.WriteToMemory();
  EXPECT_EQ(mem.status().code(), absl::StatusCode::kResourceExhausted);
  ::unlink(path.c_str());
}

TEST(GgufWriterTest, WriteToAMissingDirectoryFails) {
  GgufWriter w;
  w.AddKey("k", Value::U8(1));
  absl::Status s = w.Write(::testing::TempDir() + "/no/such/dir/x.gguf");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "x.gguf.tmp")) << s;
}

// Many tensors on several threads: the file equals WriteToMemory's bytes and
// every producer ran exactly once.
TEST(GgufWriterTest, ParallelWriteMatchesMemoryAndReadsBack) {
  GgufWriter w(64);
  w.AddKey("general.architecture", Value::Str("qwen3"));
  std::atomic<int> calls{0};
  for (int i = 0; i < 40; ++i) {
    int64_t n = 32 * (1 + (i * 37) % 200);  // varied sizes, some not multiples of 64 bytes
    GgmlType type = i % 3 == 0 ? GgmlType::kQ8_0 : GgmlType::kF16;
    w.AddTensor(absl::StrCat("blk.", i, ".w"), {n, 3}, type, [i, &calls](absl::Span<uint8_t> out) {
      calls.fetch_add(1);
      for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<uint8_t>(k * 31 + i);
      return absl::OkStatus();
    });
  }
  auto mem = w.WriteToMemory();
  ASSERT_TRUE(mem.ok()) << mem.status();
  std::string path = ::testing::TempDir() + "/writer_parallel.gguf";
  for (int threads : {1, 2, 8}) {
    calls = 0;
    ASSERT_TRUE(w.Write(path, threads).ok());
    EXPECT_EQ(calls.load(), 40);
    EXPECT_FALSE(Exists(path + ".tmp"));
    std::vector<uint8_t> disk = ReadFile(path);
    EXPECT_TRUE(disk == *mem) << "threads=" << threads;
  }
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ((*f)->tensors().size(), 40u);
  for (int i = 0; i < 40; ++i) {
    const TensorInfo& t = (*f)->tensors()[i];
    EXPECT_EQ(t.name, absl::StrCat("blk.", i, ".w"));
    EXPECT_EQ(t.file_offset % 64, 0u);
    absl::Span<const uint8_t> d = (*f)->TensorData(t);
    EXPECT_EQ(d[d.size() - 1], static_cast<uint8_t>((d.size() - 1) * 31 + i));
  }
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace kiln::gguf
