// .npy files: what WriteNpyF32 writes, ReadNpyF32 reads back exactly, and
// NumPy's layout is kept (64-byte aligned data); every malformed file is an
// error naming it.
#include "support/npy.h"

#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "support/read_file.h"

namespace kiln {
namespace {

std::string Path(const std::string& name) { return ::testing::TempDir() + "/npy_test_" + name; }

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(Npy, RoundTripsShapesAndValues) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{7}, {3, 5}, {2, 3, 4}, {0, 4}}) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> data(n);
    for (float& x : data) x = dist(rng);
    const std::string path = Path("round.npy");
    ASSERT_TRUE(WriteNpyF32(path, shape, data).ok());
    absl::StatusOr<std::string> bytes = ReadTextFile(path);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_EQ(bytes->substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    EXPECT_EQ((bytes->size() - n * 4) % 64, 0u) << "data starts 64-byte aligned";
    absl::StatusOr<NpyArray> back = ReadNpyF32(path);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->shape, shape);
    EXPECT_EQ(back->data, data);
  }
}

TEST(Npy, WriterRefusesAShapeThatDoesNotHoldTheData) {
  absl::Status s = WriteNpyF32(Path("bad.npy"), {2, 3}, std::vector<float>(5));
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(), "npy shape holds 6 values, data has 5");
}

TEST(Npy, MalformedFilesAreNamed) {
  const std::string good = Path("good.npy");
  ASSERT_TRUE(WriteNpyF32(good, {2, 2}, {1, 2, 3, 4}).ok());
  const std::string bytes = *ReadTextFile(good);
  const size_t data_at = bytes.size() - 16;
  struct Case {
    const char* name;
    std::string bytes;
    absl::StatusCode code;
    const char* message;
  };
  std::string f8 = bytes;
  f8.replace(f8.find("<f4"), 3, "<f8");
  std::string fortran = bytes;
  fortran.replace(fortran.find("False"), 5, "True ");
  std::string no_shape = bytes;
  no_shape.replace(no_shape.find("'shape'"), 7, "'shapf'");
  std::string bad_dim = bytes;
  bad_dim.replace(bad_dim.find("(2, 2)"), 6, "(2, x)");
  std::string huge = bytes;
  huge.replace(huge.find("(2, 2)"), 6, "(99999999999, 99999999999)");
  std::string header_len = bytes;
  header_len[8] = '\xff';
  header_len[9] = '\x7f';
  const Case cases[] = {
      {"not_npy", "hello world, not numpy", absl::StatusCode::kInvalidArgument, "is not a version 1 .npy file"},
      {"short", "\x93NU", absl::StatusCode::kInvalidArgument, "is not a version 1 .npy file"},
      {"header_past_end", header_len, absl::StatusCode::kDataLoss, "is truncated"},
      {"float64", f8, absl::StatusCode::kInvalidArgument, "is not little-endian float32 C-order"},
      {"fortran", fortran, absl::StatusCode::kInvalidArgument, "is not little-endian float32 C-order"},
      {"no_shape", no_shape, absl::StatusCode::kInvalidArgument, "has no shape"},
      {"bad_dim", bad_dim, absl::StatusCode::kInvalidArgument, "has a bad shape"},
      {"huge_shape", huge, absl::StatusCode::kDataLoss, "has a shape larger than its data"},
      {"data_short", bytes.substr(0, data_at + 12), absl::StatusCode::kDataLoss,
       "holds 12 data bytes, expected 16"},
      {"data_long", bytes + "xxxx", absl::StatusCode::kDataLoss, "holds 20 data bytes, expected 16"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = Path(std::string(c.name) + ".npy");
    WriteBytes(path, c.bytes);
    absl::StatusOr<NpyArray> r = ReadNpyF32(path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code) << r.status();
    EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status();
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status();
  }
  absl::StatusOr<NpyArray> missing = ReadNpyF32(Path("missing.npy"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace kiln
