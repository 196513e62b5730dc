// Experiment (not part of the build): what one dependent load costs while the
// rest of the GPU streams weights. megakernel.cu (session 17) found its
// critical-path loads of L2-resident vectors taking ~2.8 µs while every SM
// streamed; this measures the latency itself.
//
// One kernel: block 0's lane 0 chases pointers through a buffer (each load's
// address is the previous load's value; 128-byte lines in a random cycle;
// ld.global.cg, so the L1 never serves it) and times CHASE loads with
// %globaltimer; the other blocks stream a 4 GiB buffer meanwhile (grid
// stride, 16-byte loads, 4 in flight a thread, as the probe; marked L2
// evict-first so that the chase's lines stay in the L2), or copy it into
// shared memory with cp.async.bulk (4 slots of 16 KB a block, as the ring of
// handoff.cu / megakernel.cu, evict-first too). Modes (argv; none: all, twice):
//   l2-alone     the chase over 256 KB (L2-resident after a warm pass), no stream
//   l2-loads     the same while 2 blocks an SM stream with loads
//   l2-half      ... while every other SM streams (half the stream)
//   l2-bulk      ... while 1 block an SM streams with bulk copies
//   dram-alone   the chase over 1 GiB (misses the L2), no stream
//   dram-loads   the same while the other blocks stream with loads
// Fewer streaming SMs (l2-half) is the lighter load; its stream GB/s counts
// the whole 4 GiB though half the blocks read nothing (halve it).
//   nvcc -std=c++20 -O3 -arch=sm_90 -o l2_latency l2_latency.cu
//   ./l2_latency [mode ...]
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "bulk_copy.h"
#include "chain_timing.h"

namespace {

constexpr int kChase = 200;  // timed dependent loads (well inside the stream's ~1 ms)
constexpr int kThreads = 512;
constexpr int kBulkSlot = 16 * 1024, kBulkSlots = 4;

enum Mode { kL2Alone = 0, kL2Loads = 1, kL2Half = 2, kL2Bulk = 3, kDramAlone = 4, kDramLoads = 5 };
const char* kModeNames[] = {"l2-alone", "l2-loads", "l2-half", "l2-bulk", "dram-alone", "dram-loads"};

struct Args {
  const unsigned* chase;  // chase[i] = next index (in units of 32 words: a line)
  const int4* stream;     // the streamed bytes
  long long stream16;     // their 16-byte words
  unsigned long long* ns; // out: the chase's total ns, then its end index
  unsigned* sink;
  int half;               // stream on even SMs' blocks only
  int bulk;               // stream with bulk copies (else loads)
  volatile int* started;  // the streamers raise it once running
  unsigned start;         // the chase's first line (where the last run ended: DRAM modes read new lines)
};

__device__ unsigned SmId() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

__global__ void __launch_bounds__(kThreads) Measure(Args a) {
  extern __shared__ __align__(128) unsigned char smem[];
  if (blockIdx.x == 0) {
    if (threadIdx.x != 0) return;
    unsigned i = a.start;
    if (gridDim.x > 1)
      while (*a.started == 0) {
      }
    const unsigned long long t0 = GlobalTimerNs();
    for (int k = 0; k < kChase; ++k) i = __ldcg(a.chase + 32 * i);
    a.ns[0] = GlobalTimerNs() - t0;
    a.ns[1] = i;
    return;
  }
  if (threadIdx.x == 0 && blockIdx.x == 1) *a.started = 1;  // before any block leaves (l2-half)
  if (a.half && SmId() % 2 == 1) return;
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  if (!a.bulk) {
    const int threads = (gridDim.x - 1) * kThreads;
    unsigned acc = 0;
    for (long long j = (blockIdx.x - 1) * static_cast<long long>(kThreads) + threadIdx.x; j < a.stream16;
         j += 4LL * threads) {
      int4 v[4];
      for (int u = 0; u < 4; ++u) {
        const long long k = j + static_cast<long long>(u) * threads;
        v[u] = make_int4(0, 0, 0, 0);
        if (k < a.stream16)
          asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                       : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w)
                       : "l"(a.stream + k), "l"(policy));
      }
      for (int u = 0; u < 4; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    if (acc == 0x9e3779b9u) *a.sink = acc;
    return;
  }
  // Bulk copies: lane 0 of warp 0 keeps 4 slots of 16 KB in flight.
  auto* full = reinterpret_cast<unsigned long long*>(smem + kBulkSlots * kBulkSlot);
  if (threadIdx.x != 0) return;
  for (int s = 0; s < kBulkSlots; ++s) BarrierInit(full + s, 1);
  BarrierInitFence();
  const long long slot16 = kBulkSlot / 16, chunks = a.stream16 / slot16;
  long long k = 0;
  for (long long c = blockIdx.x - 1; c < chunks; c += gridDim.x - 1, ++k) {
    const int s = static_cast<int>(k % kBulkSlots);
    if (k >= kBulkSlots) BarrierWait(full + s, static_cast<unsigned>((k / kBulkSlots - 1) & 1));
    BarrierExpect(full + s, kBulkSlot);
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
            SharedAddress(smem + s * kBulkSlot)),
        "l"(a.stream + c * slot16), "r"(kBulkSlot), "r"(SharedAddress(full + s)), "l"(policy)
        : "memory");
  }
  for (long long j = k - kBulkSlots < 0 ? 0 : k - kBulkSlots; j < k; ++j)
    BarrierWait(full + j % kBulkSlots, static_cast<unsigned>((j / kBulkSlots) & 1));
}

// Touches every line of the chase (lines > 0), so the L2 modes start from
// an L2 holding all of them.
__global__ void Warm(const unsigned* chase, int lines) {
  unsigned acc = 0;
  for (int i = threadIdx.x; i < lines; i += blockDim.x) acc ^= __ldcg(chase + 32 * i);
  if (acc == 0x9e3779b9u) asm volatile("trap;");
}

// A random cycle through `lines` 128-byte lines: chase[32 i] = next line.
unsigned* MakeChase(long long lines, unsigned seed) {
  std::vector<unsigned> order(lines);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin() + 1, order.end(), std::mt19937(seed));
  std::vector<unsigned> host(lines * 32, 0);
  for (long long i = 0; i < lines; ++i) host[32 * order[i]] = order[(i + 1) % lines];
  unsigned* d = nullptr;
  CHECK(cudaMalloc(&d, host.size() * sizeof(unsigned)));
  CHECK(cudaMemcpy(d, host.data(), host.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<int> modes =
      ModesFromArgs(argc, argv, kModeNames, static_cast<int>(sizeof(kModeNames) / sizeof(kModeNames[0])));
  setvbuf(stdout, nullptr, _IOLBF, 0);  // each mode's line out as soon as it is measured
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const long long stream_bytes = 4LL << 30;
  int4* stream = nullptr;
  CHECK(cudaMalloc(&stream, stream_bytes));
  CHECK(cudaMemset(stream, 1, stream_bytes));
  unsigned* l2_chase = MakeChase((256 << 10) / 128, 1);
  unsigned* dram_chase = MakeChase((1LL << 30) / 128, 2);
  unsigned long long* ns = nullptr;
  unsigned* sink = nullptr;
  int* started = nullptr;
  CHECK(cudaMalloc(&ns, 2 * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  CHECK(cudaMalloc(&started, sizeof(int)));
  const size_t bulk_shared = kBulkSlots * (kBulkSlot + sizeof(unsigned long long));
  CHECK(cudaFuncSetAttribute(Measure, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bulk_shared)));
  std::printf("%s, %d SMs; %d dependent ld.global.cg loads timed by block 0 while the other blocks stream 4 GiB\n",
              prop.name, sms, kChase);
  std::printf("%-11s %8s %12s %14s\n", "mode", "blocks", "ns a load", "stream GB/s");
  for (int mode : modes) {
    const bool alone = mode == kL2Alone || mode == kDramAlone;
    const bool bulk = mode == kL2Bulk;
    Args a{mode >= kDramAlone ? dram_chase : l2_chase, stream, stream_bytes / 16, ns, sink,
           mode == kL2Half ? 1 : 0, bulk ? 1 : 0, started, 0};
    const int blocks = alone ? 1 : 1 + (bulk ? 1 : 2) * sms;
    std::vector<double> per_load;
    float ms = 0;
    for (int rep = 0; rep < 5; ++rep) {
      CHECK(cudaMemset(started, 0, sizeof(int)));
      Warm<<<1, 32>>>(a.chase, mode >= kDramAlone ? 0 : (256 << 10) / 128);  // the L2 chase's lines in the L2
      cudaEvent_t e0, e1;
      CHECK(cudaEventCreate(&e0));
      CHECK(cudaEventCreate(&e1));
      CHECK(cudaEventRecord(e0));
      Measure<<<blocks, kThreads, bulk ? bulk_shared : 0>>>(a);
      CHECK(cudaEventRecord(e1));
      CHECK(cudaEventSynchronize(e1));
      CHECK(cudaGetLastError());
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      unsigned long long h[2];
      CHECK(cudaMemcpy(h, ns, sizeof(h), cudaMemcpyDeviceToHost));
      per_load.push_back(static_cast<double>(h[0]) / kChase);
      if (mode >= kDramAlone) a.start = static_cast<unsigned>(h[1]);  // call 19 restarted at line 0: L2 hits
      CHECK(cudaEventDestroy(e0));
      CHECK(cudaEventDestroy(e1));
    }
    std::sort(per_load.begin(), per_load.end());
    std::printf("%-11s %8d %12.0f %14.0f\n", kModeNames[mode], blocks, per_load[per_load.size() / 2],
                alone ? 0.0 : stream_bytes / (ms * 1e6));
  }
  return 0;
}
