// Experiment (not part of the build): does the order in which a decode
// matvec's blocks walk their weights cost DRAM bandwidth?
//
// kiln's planar Q8_0 matvec gives each block rows_per_block consecutive rows
// (4096 int8 bytes each, row after row in memory); a warp owns a few of
// them and its lanes read 512 contiguous bytes of each row per step. So at
// any moment a block reads rows_per_block windows 4 KiB apart, and the GPU
// some 4000 of them, where the bandwidth probe sweeps one contiguous range.
// Here the same read kernel walks the same bytes in two layouts:
//   rows    row-major, as kiln's planar plane is today
//   tiled   each block's rows interleaved in 512-byte windows, so a step of
//           the block's warps reads rows_per_block * 512 contiguous bytes
// and the probe's grid-stride loop (one full wave, four 16-byte loads in
// flight a thread) reads the same byte count for comparison. A third kernel
// streams the weights the Hopper way:
//   bulk    per block, a producer warp copies stages of CW whole rows (the
//           int8 plane's rows and their f16 scales, two cp.async.bulk copies
//           on an mbarrier with expect_tx) into an S-stage shared ring, the
//           first S before griddepcontrol.wait; CW consumer warps take a
//           row each of a stage, do kiln's Q8_0 two-level int8 arithmetic
//           on it (two dp4a per 4 weights against activations quantized
//           into registers after the wait, a scale per 16 bytes), reduce
//           across the warp, store the row's output and release the slot.
//           The bytes in flight an SM are then S stages, not registers. Every kernel
// starts with griddepcontrol.launch_dependents and griddepcontrol.wait and
// is launched with programmatic stream serialization, back to back, each
// launch on the next bytes of a 4 GiB ring (no launch finds its bytes in
// the L2), like kiln's launch floor. Blocks an SM are pinned with dynamic
// shared memory. Usage (modes as arguments; none: all, twice):
//   nvcc -std=c++20 -O3 -arch=sm_90 -o access_pattern access_pattern.cu
//   ./access_pattern gateup down qkv out
#include <cuda_fp16.h>

#include <cstdio>
#include <vector>

#include "bulk_copy.h"
#include "chain_timing.h"

namespace {

constexpr long long kRing = 4LL << 30;
constexpr int kWindow = 512;  // bytes a warp reads of one row per step
constexpr int kLaunches = 40;

struct Args {
  const char* base;  // this launch's bytes
  int row_bytes;     // a multiple of 512
  int rows_per_block;
  bool tiled;
  unsigned* sink;
};

// Each warp owns RPW rows of its block and reads U windows of each per
// step, RPW * U 16-byte loads in flight a lane.
template <int RPW, int U>
__global__ void RowsKernel(Args a) {
  asm volatile("griddepcontrol.launch_dependents;");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long tile = static_cast<long long>(a.rows_per_block) * a.row_bytes;
  const char* block = a.base + blockIdx.x * tile;
  const int windows = a.row_bytes / kWindow;
  unsigned acc = 0;
  for (int i = 0; i < windows; i += U) {
    int4 v[RPW][U];
#pragma unroll
    for (int r = 0; r < RPW; ++r)
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int row = warp * RPW + r, w = i + u;
        const long long off = a.tiled ? (static_cast<long long>(w) * a.rows_per_block + row) * kWindow
                                      : static_cast<long long>(row) * a.row_bytes + w * kWindow;
        v[r][u] = __ldg(reinterpret_cast<const int4*>(block + off) + lane);
      }
#pragma unroll
    for (int r = 0; r < RPW; ++r)
#pragma unroll
      for (int u = 0; u < U; ++u) acc ^= v[r][u].x ^ v[r][u].y ^ v[r][u].z ^ v[r][u].w;
  }
  if (acc == 0x9e3779b9u) *a.sink = acc;
}

struct BulkArgs {
  const char* weights;  // this launch's int8 rows, row after row
  const char* scales;   // their f16 scales (one per 32 bytes), row after row
  const float* x;       // the activations (row_bytes floats)
  float* out;
  int rows_per_block;  // a multiple of CW
  int rows;            // the launch's rows (the last block may get fewer)
};

// WORDS 16-byte words a lane per row (row_bytes = 512 WORDS); CW consumer
// warps and CW rows a stage; S stages.
template <int WORDS, int CW, int S>
__global__ void __launch_bounds__(32 * (CW + 1)) BulkKernel(BulkArgs a) {
  constexpr int kRowBytes = 512 * WORDS, kStageW = CW * kRowBytes, kStageS = CW * kRowBytes / 16;
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* ring_w = smem;
  unsigned char* ring_s = smem + S * kStageW;
  auto* full = reinterpret_cast<unsigned long long*>(ring_s + S * kStageS);
  unsigned long long* empty = full + S;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int stages = min(a.rows_per_block, a.rows - static_cast<int>(blockIdx.x) * a.rows_per_block) / CW;
  if (threadIdx.x == 0) InitRingBarriers(full, empty, S, CW);
  __syncthreads();
  asm volatile("griddepcontrol.launch_dependents;");
  if (warp == CW) {  // the producer: weights never depend on the previous kernel
    if (lane == 0) {
      const char* w = a.weights + static_cast<long long>(blockIdx.x) * a.rows_per_block * kRowBytes;
      const char* sc = a.scales + static_cast<long long>(blockIdx.x) * a.rows_per_block * (kRowBytes / 16);
      for (int k = 0; k < stages; ++k) {
        const int s = k % S;
        if (k >= S) BarrierWait(empty + s, (k / S - 1) & 1);
        BarrierExpect(full + s, kStageW + kStageS);
        BulkCopy(ring_w + s * kStageW, w + static_cast<long long>(k) * kStageW, kStageW, full + s);
        BulkCopy(ring_s + s * kStageS, sc + static_cast<long long>(k) * kStageS, kStageS, full + s);
      }
    }
    return;
  }
  asm volatile("griddepcontrol.wait;" ::: "memory");
  // This lane's columns of x in two int8 levels (a fixed scale: timing only).
  int q1[4 * WORDS], q2[4 * WORDS];
#pragma unroll
  for (int j = 0; j < WORDS; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float4 v = reinterpret_cast<const float4*>(a.x)[(j * 32 + lane) * 4 + i];
      const int c[4] = {__float2int_rn(v.x * 127.f), __float2int_rn(v.y * 127.f), __float2int_rn(v.z * 127.f),
                        __float2int_rn(v.w * 127.f)};
      q1[4 * j + i] = (c[0] & 255) | (c[1] & 255) << 8 | (c[2] & 255) << 16 | (c[3] & 255) << 24;
      q2[4 * j + i] = q1[4 * j + i] ^ 0x01010101;
    }
  for (int k = 0; k < stages; ++k) {
    const int s = k % S;
    BarrierWait(full + s, (k / S) & 1);
    const int4* row = reinterpret_cast<const int4*>(ring_w + s * kStageW + warp * kRowBytes);
    const __half* sc = reinterpret_cast<const __half*>(ring_s + s * kStageS + warp * (kRowBytes / 16));
    float acc = 0.f;
#pragma unroll
    for (int j = 0; j < WORDS; ++j) {
      const int4 w = row[j * 32 + lane];
      int d1 = __dp4a(w.x, q1[4 * j], 0), d2 = __dp4a(w.x, q2[4 * j], 0);
      d1 = __dp4a(w.y, q1[4 * j + 1], d1), d2 = __dp4a(w.y, q2[4 * j + 1], d2);
      d1 = __dp4a(w.z, q1[4 * j + 2], d1), d2 = __dp4a(w.z, q2[4 * j + 2], d2);
      d1 = __dp4a(w.w, q1[4 * j + 3], d1), d2 = __dp4a(w.w, q2[4 * j + 3], d2);
      acc = fmaf(__half2float(sc[(j * 32 + lane) / 2]), static_cast<float>(128 * d1 + d2), acc);
    }
    __syncwarp();
    if (lane == 0) BarrierArrive(empty + s);
    for (int o = 16; o; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) a.out[blockIdx.x * a.rows_per_block + k * CW + warp] = acc;
  }
}

using Kernel = void (*)(Args);

Kernel Pick(int rpw, int u) {
  if (rpw == 2 && u == 1) return RowsKernel<2, 1>;
  if (rpw == 2 && u == 2) return RowsKernel<2, 2>;
  if (rpw == 2 && u == 4) return RowsKernel<2, 4>;
  if (rpw == 4 && u == 1) return RowsKernel<4, 1>;
  if (rpw == 4 && u == 2) return RowsKernel<4, 2>;
  std::fprintf(stderr, "no kernel for %d rows a warp, %d windows\n", rpw, u);
  std::exit(2);
}

using Bulk = void (*)(BulkArgs);

// rows_per_block 0: one wave, the rows spread evenly over every resident
// block (a multiple of CW each).
struct BulkConfig {
  int cw, stages, rows_per_block;
};
constexpr BulkConfig kBulkConfigs[] = {{8, 4, 64}, {4, 4, 32}, {8, 4, 0}, {4, 4, 0}, {4, 6, 0}, {8, 2, 0}, {4, 2, 0}};

template <int WORDS>
Bulk PickBulk(int cw, int stages) {
  if (cw == 8 && stages == 4) return BulkKernel<WORDS, 8, 4>;
  if (cw == 4 && stages == 4) return BulkKernel<WORDS, 4, 4>;
  if (cw == 8 && stages == 2) return BulkKernel<WORDS, 8, 2>;
  if (cw == 4 && stages == 2) return BulkKernel<WORDS, 4, 2>;
  if (cw == 4 && stages == 6) return BulkKernel<WORDS, 4, 6>;
  std::fprintf(stderr, "no bulk kernel for %d warps, %d stages\n", cw, stages);
  std::exit(2);
}

struct Shape {
  const char* name;
  int rows, row_bytes;  // a k_split block's share of a row counts as a row
};

// The 8B Q8_0 decode matvecs' int8 planes (down: k_split 2, so 8192 half
// rows of 6144 bytes).
constexpr Shape kShapes[] = {
    {"gateup", 24576, 4096}, {"down", 8192, 6144}, {"qkv", 6144, 4096}, {"out", 4096, 4096}};
constexpr const char* kNames[] = {"gateup", "down", "qkv", "out"};

struct Config {
  int threads, rpw, u, blocks_per_sm;
};
constexpr Config kConfigs[] = {{512, 2, 1, 1}, {512, 2, 2, 1}, {256, 2, 2, 2}, {256, 2, 4, 2},
                               {256, 4, 2, 2}, {256, 2, 2, 3}, {128, 4, 2, 4}};

}  // namespace

int main(int argc, char** argv) {
  const std::vector<int> modes = ModesFromArgs(argc, argv, kNames, 4);
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  char* ring = nullptr;
  unsigned* sink = nullptr;
  float *x = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&ring, kRing));
  CHECK(cudaMemset(ring, 1, kRing));
  CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  CHECK(cudaMalloc(&x, 12288 * sizeof(float)));
  CHECK(cudaMemset(x, 0, 12288 * sizeof(float)));
  CHECK(cudaMalloc(&out, 32768 * sizeof(float)));
  int sms = 0, smem_per_sm = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaDeviceGetAttribute(&smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
  StreamTimer timer(stream);
  std::printf("shape\tbytes\tkernel\tthreads\trows/warp\twindows\tblocks/SM\tus\tGB/s\n");
  for (int m : modes) {
    const Shape& s = kShapes[m];
    const long long bytes = static_cast<long long>(s.rows) * s.row_bytes;
    // One launch after another, each on the ring's next `span` bytes.
    auto chain = [&](long long span, auto launch_one) {
      return RingChainUs(timer, ring, kRing, span, kLaunches, launch_one);
    };
    int probe_blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&probe_blocks, ProbeKernel, 256, 0));
    auto probe = [&](long long span) {
      const float us = chain(span, [&](const char* base) { LaunchProbe(stream, base, span, sink); });
      std::printf("%s\t%lld\tprobe\t256\t-\t-\t%d\t%.2f\t%.0f\n", s.name, span, probe_blocks, us, span / us / 1e3);
    };
    probe(bytes);
    for (const Config& c : kConfigs) {
      const Kernel k = Pick(c.rpw, c.u);
      const int rows_per_block = c.threads / 32 * c.rpw;
      // Dynamic shared memory so that at most blocks_per_sm fit an SM.
      const size_t shared = smem_per_sm / c.blocks_per_sm - 2048;
      CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
      int resident = 0;
      CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, k, c.threads, shared));
      for (bool tiled : {false, true}) {
        const float us = chain(bytes, [&](const char* base) {
          LaunchPdl(stream, dim3(s.rows / rows_per_block), c.threads, true, k,
                    Args{base, s.row_bytes, rows_per_block, tiled, sink}, 1, shared);
        });
        std::printf("%s\t%lld\t%s\t%d\t%d\t%d\t%d\t%.2f\t%.0f\n", s.name, bytes, tiled ? "tiled" : "rows",
                    c.threads, c.rpw, c.u, resident, us, bytes / us / 1e3);
      }
    }
    // The int8 rows and then their scales (1/16 of their bytes), against
    // the probe reading as many bytes.
    const long long with_scales = bytes + bytes / 16;
    probe(with_scales);
    for (const BulkConfig& c : kBulkConfigs) {
      const Bulk k = s.row_bytes == 4096 ? PickBulk<8>(c.cw, c.stages) : PickBulk<12>(c.cw, c.stages);
      const size_t shared = static_cast<size_t>(c.stages) * c.cw * s.row_bytes * 17 / 16 + 16 * c.stages;
      CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
      int resident = 0;
      CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, k, 32 * (c.cw + 1), shared));
      const int slots = sms * resident;
      const int rows_per_block =
          c.rows_per_block ? c.rows_per_block : (s.rows + slots * c.cw - 1) / (slots * c.cw) * c.cw;
      const int grid = (s.rows + rows_per_block - 1) / rows_per_block;
      const float us = chain(with_scales, [&](const char* base) {
        LaunchPdl(stream, dim3(grid), 32 * (c.cw + 1), true, k,
                  BulkArgs{base, base + bytes, x, out, rows_per_block, s.rows}, 1, shared);
      });
      std::printf("%s\t%lld\tbulk-%d\t%d\t%d\t%d\t%d\t%.2f\t%.0f\n", s.name, with_scales, rows_per_block,
                  32 * (c.cw + 1), c.cw, c.stages, resident, us, with_scales / us / 1e3);
    }
    CHECK(cudaStreamSynchronize(stream));
  }
  CHECK(cudaFree(x));
  CHECK(cudaFree(out));
  CHECK(cudaFree(ring));
  CHECK(cudaFree(sink));
  return 0;
}
