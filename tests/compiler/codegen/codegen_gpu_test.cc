// GPU numerics of the emitted embedding, argmax and load-time packing
// kernels against the reference kernels, on fresh random inputs with
// poisoned outputs (CTest label `gpu`; skipped where no GPU is visible).
// The matvecs and GEMMs: codegen_gpu_matvec_test.cc; RoPE and attention:
// codegen_gpu_attention_test.cc.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/kernel_validation.h"
#include "compiler/codegen/reference_kernels.h"
#include "gtest/gtest.h"
#include "models/quant/float16.h"
#include "tests/compiler/codegen/gpu_harness.h"
#include "tests/compiler/codegen/test_specs.h"

namespace kiln::codegen {
namespace {

TEST(CodegenGpu, EmbedIsExact) {
  REQUIRE_GPU();
  std::vector<KernelSpec> specs;
  for (WeightFormat f : testing::AllFormats()) {
    if (ScaleRowBytes(f, 256) > 0) continue;  // planar formats: matrices only
    KernelSpec s;
    s.name = absl::StrCat("embed_", WeightFormatName(f));
    s.family = Family::kEmbed;
    s.weight = f;
    s.rows = 300;
    s.cols = 768;
    specs.push_back(s);
  }
  Loaded l = Load(gpu, specs);
  std::mt19937 rng(7);
  for (const KernelSpec& s : specs) {
    std::vector<uint8_t> w, ws;
    RandomWeights(rng, s.weight, s.rows, s.cols, &w, &ws);
    std::vector<int32_t> tokens = {0, 299, 17, 150, 3};
    Buffers bufs(gpu);
    CUdeviceptr dt = bufs.Upload(w), dtok = bufs.Upload(tokens), dout = bufs.Poisoned(tokens.size() * s.cols * 4);
    Launch(gpu, l, s.name, {P(dt), P(dtok), P(dout), I(5)}, 5);
    std::vector<float> got = bufs.Download<float>(dout, tokens.size() * s.cols), want(got.size());
    ASSERT_TRUE(reference::Embed(s, w.data(), tokens.data(), want.data(), 5).ok());
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 4)) << s.name;
  }
}

// Runs an argmax spec (rows >= 2) on planted rows, twice (the counters must
// come back to zero), against the reference: ties across blocks, NaNs, rows
// without a finite maximum.
void CheckArgmax(Gpu* gpu, const Loaded& l, const KernelSpec& s, std::mt19937& rng) {
  const int32_t cols = static_cast<int32_t>(s.cols);
  const int64_t rows = s.rows;
  std::vector<float> logits = RandomFloats(rng, size_t(rows * cols));
  auto at = [&](int64_t r, int32_t i) -> float& { return logits[size_t(r * cols + i)]; };
  // Row 0: the largest value at the middle, next to it and last (in other
  // blocks where there are several): the middle wins.
  at(0, cols / 2) = at(0, cols - 1) = 7.0f;
  if (cols / 2 + 1 < cols) at(0, cols / 2 + 1) = 7.0f;
  // Row 1: only NaNs and -inf, so no finite maximum: 0.
  for (int32_t i = 0; i < cols; ++i) at(1, i) = i % 3 == 1 ? NAN : -INFINITY;
  // Row 2: a NaN first, the maximum last.
  if (rows > 2) {
    at(2, 0) = NAN;
    at(2, cols - 1) = 9.0f;
  }
  // Row 3: all -inf: 0.
  if (rows > 3)
    for (int32_t i = 0; i < cols; ++i) at(3, i) = -INFINITY;
  std::vector<int32_t> want(static_cast<size_t>(rows));
  ASSERT_TRUE(reference::Argmax(s, logits.data(), want.data(), cols).ok());
  EXPECT_EQ(want[0], cols / 2);
  EXPECT_EQ(want[1], 0);
  if (rows > 2) {
    EXPECT_EQ(want[2], cols - 1);
  }
  Buffers bufs(gpu);
  CUdeviceptr dl = bufs.Upload(logits), dpart = bufs.Poisoned(size_t(rows * s.elementwise.max_blocks * 8)),
              dcnt = bufs.Upload(std::vector<uint32_t>(size_t(rows), 0));
  for (int rep = 0; rep < 2; ++rep) {
    CUdeviceptr dout = bufs.Poisoned(size_t(rows * 4));
    Launch(gpu, l, s.name, {P(dl), P(dout), P(dpart), P(dcnt), I(cols)}, 1);
    EXPECT_EQ(bufs.Download<int32_t>(dout, size_t(rows)), want) << s.name << " rep " << rep;
    for (uint32_t c : bufs.Download<uint32_t>(dcnt, size_t(rows))) EXPECT_EQ(c, 0u) << s.name;
  }
}

TEST(CodegenGpu, Argmax) {
  REQUIRE_GPU();
  auto spec = [](const char* name, int64_t rows, int64_t cols, int threads, int block_cols, int max_blocks) {
    KernelSpec s;
    s.name = name;
    s.family = Family::kArgmax;
    s.rows = rows;
    s.cols = cols;
    s.elementwise.threads = threads;
    s.elementwise.block_cols = block_cols;
    s.elementwise.max_blocks = max_blocks;
    s.programmatic_launch = true;
    return s;
  };
  const std::vector<KernelSpec> specs = {
      spec("argmax_vocab", 4, 151936, 1024, 2048, 128),    // the tables' schedule: 75 blocks
      spec("argmax_vocab_256", 4, 151936, 256, 2048, 128), // 75 blocks of 256 threads
      spec("argmax_one_block", 4, 151936, 1024, 2048, 1),  // one block per row, no merge
      spec("argmax_capped", 3, 151936, 64, 64, 128),       // 128 blocks (the cap), 2 records per merging thread
      spec("argmax_odd", 3, 100003, 128, 1000, 128),       // 101 blocks of 991 columns, the last 903
      spec("argmax_tiny", 3, 5, 32, 1, 4),                 // 4 blocks of 2 columns: the last one empty
  };
  Loaded l = Load(gpu, specs);
  std::mt19937 rng(5);
  for (const KernelSpec& s : specs) CheckArgmax(gpu, l, s, rng);
}

TEST(CodegenGpu, PackCopy) {
  REQUIRE_GPU();
  KernelSpec pack;
  pack.name = "pack";
  pack.family = Family::kPackQ8_0;
  pack.cols = 768;
  KernelSpec copy;
  copy.name = "copy";
  copy.family = Family::kCopyRows;
  copy.row_bytes = 210;
  KernelSpec copy16 = copy;
  copy16.name = "copy16";
  copy16.row_bytes = 2304;
  KernelSpec pack6;
  pack6.name = "pack6";
  pack6.family = Family::kPackQ6_K;
  pack6.cols = 768;
  Loaded l = Load(gpu, {pack, copy, copy16, pack6});
  std::mt19937 rng(3);
  Buffers bufs(gpu);
  for (const KernelSpec* p : {&pack, &pack6}) {
    // GGUF rows into poisoned planes, byte for byte as the reference packs
    // them (that the planes decode to the rows' weights: codegen_test's
    // ReferenceKernels.PackQ6_KPlanesDecodeToTheGgufRows).
    const bool q6 = p->family == Family::kPackQ6_K;
    const WeightFormat planar = q6 ? WeightFormat::kQ6_KPlanar : WeightFormat::kQ8_0Planar;
    const int32_t rows = 5;
    std::vector<uint8_t> w, ws;
    RandomWeights(rng, q6 ? WeightFormat::kQ6_K : WeightFormat::kQ8_0, rows, p->cols, &w, &ws);
    const size_t qs_bytes = size_t(rows * WeightRowBytes(planar, p->cols));
    const size_t d_bytes = size_t(rows * ScaleRowBytes(planar, p->cols));
    CUdeviceptr dsrc = bufs.Upload(w), dqs = bufs.Poisoned(qs_bytes), dd = bufs.Poisoned(d_bytes);
    Launch(gpu, l, p->name, {P(dsrc), P(dqs), P(dd), I(rows)}, 1, rows);
    std::vector<uint8_t> qs(qs_bytes), d(d_bytes);
    ASSERT_TRUE((q6 ? reference::PackQ6_K : reference::PackQ8_0)(*p, w.data(), qs.data(), d.data(), rows).ok());
    EXPECT_EQ(bufs.Download<uint8_t>(dqs, qs.size()), qs) << p->name;
    EXPECT_EQ(bufs.Download<uint8_t>(dd, d.size()), d) << p->name;
  }
  for (const KernelSpec* c : {&copy, &copy16}) {
    // Gate/up interleave: 6 gate rows into groups of 2 at offset 0, stride 4.
    const int32_t rows = 6;
    std::vector<uint8_t> src(size_t(rows * c->row_bytes));
    for (uint8_t& b : src) b = static_cast<uint8_t>(rng());
    std::vector<uint8_t> dst(size_t(2 * rows * c->row_bytes), 0xAB);
    CUdeviceptr dsrc = bufs.Upload(src), ddst = bufs.Upload(dst);
    Launch(gpu, l, c->name, {P(dsrc), P(ddst), I(rows), I(0), I(2), I(4)}, 1, rows);
    ASSERT_TRUE(reference::CopyRows(*c, src.data(), dst.data(), rows, 0, 2, 4).ok());
    EXPECT_EQ(bufs.Download<uint8_t>(ddst, dst.size()), dst) << c->name;
  }
}

}  // namespace
}  // namespace kiln::codegen
