// What bench/experiments' standalone CUDA programs share: error checks, the
// median time of a launch over repeats and of a chain of launches over a
// ring, the read kernels' main loop and the probe's kernel, the global
// timer, an acquire load and the vector reductions, a launch with
// programmatic stream serialization (as kiln's runtime launches its decode
// kernels, and the probe's launch through it), a cooperative launch, and
// the modes named on the command line.
#ifndef KILN_BENCH_EXPERIMENTS_CHAIN_TIMING_H_
#define KILN_BENCH_EXPERIMENTS_CHAIN_TIMING_H_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#define CHECK(x)                                                                                  \
  do {                                                                                            \
    cudaError_t e_ = (x);                                                                         \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

// Times work issued on one stream with a pair of events.
class StreamTimer {
 public:
  explicit StreamTimer(cudaStream_t stream) : stream_(stream) {
    CHECK(cudaEventCreate(&start_));
    CHECK(cudaEventCreate(&stop_));
  }
  // Median milliseconds of `launch` over `reps` runs, after one untimed run.
  template <typename F>
  float MedianMs(F launch, int reps) {
    launch();
    CHECK(cudaStreamSynchronize(stream_));
    std::vector<float> t;
    for (int r = 0; r < reps; ++r) {
      CHECK(cudaEventRecord(start_, stream_));
      launch();
      CHECK(cudaEventRecord(stop_, stream_));
      CHECK(cudaEventSynchronize(stop_));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, start_, stop_));
      t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_, stop_;
};

// The XOR of the 16-byte words j0, j0 + threads, ... below `end`, four
// loads in flight: the read kernels' main loop (the XOR keeps the loads).
__device__ inline unsigned XorWords(const int4* w, long long j0, long long end, int threads) {
  unsigned acc = 0;
  for (long long j = j0; j < end; j += 4LL * threads) {
    int4 a[4];
    for (int u = 0; u < 4; ++u) {
      const long long k = j + (long long)u * threads;
      a[u] = k < end ? __ldg(w + k) : make_int4(0, 0, 0, 0);
    }
    for (int u = 0; u < 4; ++u) acc ^= a[u].x ^ a[u].y ^ a[u].z ^ a[u].w;
  }
  return acc;
}

// The probe's kernel: every thread XORs its grid-stride share of `words`
// 16-byte words, launched as a programmatic dependent.
struct ProbeArgs {
  const int4* base;
  long long words;
  unsigned* sink;
};

__global__ void ProbeKernel(ProbeArgs a) {
  asm volatile("griddepcontrol.launch_dependents;");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const int threads = gridDim.x * blockDim.x;
  const unsigned acc = XorWords(a.base, blockIdx.x * blockDim.x + threadIdx.x, a.words, threads);
  if (acc == 0x9e3779b9u) *a.sink = acc;
}

// Microseconds a launch of `launches` launches back to back, launch i on the
// ring's `span` bytes from (i * span) mod (ring_bytes - span), so that none
// finds its bytes in the L2 (median of 5 chains).
template <typename T, typename F>
float RingChainUs(StreamTimer& timer, T* ring, long long ring_bytes, long long span, int launches, F launch_one) {
  return timer.MedianMs(
             [&] {
               for (int i = 0; i < launches; ++i) launch_one(ring + (i * span) % (ring_bytes - span));
             },
             5) *
         1000.0f / launches;
}

// The GPU's global timer in ns (%globaltimer: comparable across SMs).
__device__ inline unsigned long long GlobalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// An acquire load at GPU scope (a counter another block releases).
__device__ inline unsigned LoadAcquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// *p += v, four floats at once (red.global.add.v4.f32, sm_90).
__device__ inline void Reduce4(float4* p, float4 v) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
               : "memory");
}

// The block adds a to every float of sum[0..1024) (4096 partial outputs),
// `threads` threads a float4 each in turn, block b starting at float4 56b
// (line 7b of 128, mod 1024) so that the grid's blocks meet on an address
// less often.
__device__ inline void ReduceRotated(float4* sum, float a, int threads) {
  for (int q0 = threadIdx.x; q0 < 1024; q0 += threads)
    Reduce4(sum + (q0 + 56 * static_cast<int>(blockIdx.x)) % 1024, make_float4(a, a, a, a));
}

// kernel<<<grid, threads, shared, stream>>>(arg), with programmatic stream
// serialization when `pdl` (its griddepcontrol instructions then take
// effect), in clusters of `cluster` blocks along x when cluster > 1.
template <typename Kernel, typename Arg>
void LaunchPdl(cudaStream_t stream, dim3 grid, int threads, bool pdl, Kernel kernel, Arg arg, int cluster = 1,
               size_t shared = 0) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = shared;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = pdl ? 1 : 0;
  attr[1].id = cudaLaunchAttributeClusterDimension;
  attr[1].val.clusterDim.x = cluster;
  attr[1].val.clusterDim.y = 1;
  attr[1].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = cluster > 1 ? 2 : 1;
  CHECK(cudaLaunchKernelEx(&cfg, kernel, arg));
}

// kernel<<<blocks, threads, shared, stream>>>(args...) as a cooperative
// launch (every block resident at once, or the launch fails).
template <typename... KernelArgs, typename... Args>
void LaunchCooperative(cudaStream_t stream, int blocks, int threads, size_t shared, void (*kernel)(KernelArgs...),
                       Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = shared;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeCooperative;
  attr[0].val.cooperative = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

// The probe's kernel over `span` bytes from `base`, one full wave of
// 256-thread blocks, as a programmatic dependent.
inline void LaunchProbe(cudaStream_t stream, const void* base, long long span, unsigned* sink) {
  static int blocks = 0;  // a wave: resident blocks an SM times SMs (asked once, outside the timed chains)
  if (blocks == 0) {
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, ProbeKernel, 256, 0));
    blocks *= sms;
  }
  LaunchPdl(stream, dim3(blocks), 256, true, ProbeKernel, ProbeArgs{static_cast<const int4*>(base), span / 16, sink});
}

// The modes named in argv[1..] (indices into names[0..n)), each once in
// that order; with none, every mode twice. An unknown name exits with 2.
inline std::vector<int> ModesFromArgs(int argc, char** argv, const char* const* names, int n) {
  std::vector<int> modes;
  for (int a = 1; a < argc; ++a) {
    const int m = static_cast<int>(
        std::find_if(names, names + n, [&](const char* k) { return std::strcmp(k, argv[a]) == 0; }) - names);
    if (m == n) {
      std::fprintf(stderr, "%s: unknown mode '%s'\n", argv[0], argv[a]);
      std::exit(2);
    }
    modes.push_back(m);
  }
  const bool all = modes.empty();
  for (int rep = 0; all && rep < 2; ++rep)
    for (int m = 0; m < n; ++m) modes.push_back(m);
  return modes;
}

#endif  // KILN_BENCH_EXPERIMENTS_CHAIN_TIMING_H_
