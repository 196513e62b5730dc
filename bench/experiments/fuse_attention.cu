// Experiment (not part of the build): would folding the decode attention
// into the QKV matvec's launch pay? A chain with the 8B Q8_0 decode step's
// bytes, replayed from one CUDA graph, programmatic dependent launch as kiln
// uses it (launch_dependents after the loads, griddepcontrol.wait before
// reading the previous kernel's output):
//   sep    per layer QKV, attention, output, gate/up, down: five launches;
//          the attention a latency chain on 8 live blocks of a 8 x 32 grid
//          (the rest exit at once), as kiln's at short context
//   fused  QKV and attention in one launch: each block takes a ticket (an
//          atomic at its start); tickets below the QKV's block count do the
//          QKV's reads, the rest the attention, whose thread 0 spins
//          (ld.acquire) until every QKV block has counted its stores. A block
//          only gets a ticket once it runs, so every QKV ticket belongs to a
//          block already running: the spinners cannot starve it.
//   none   no attention at all: four launches a layer (what the attention
//          costs in the graph, whatever it does)
//   rel    sep, the attention releasing its dependents right after its wait
//   big    sep, the output projection issuing all of its loads (16 a
//          thread: its whole 17.8 MB over 264 blocks) before its wait
//   relbig both
//   last   QKV and attention in one launch without extra blocks or a spin:
//          the last QKV block of each KV head's group (an acq_rel counter)
//          runs that head's attention
//   thin   sep with an attention that, after its wait, only loads one
//          value and stores it (what the launch costs without the chain)
//   warp   sep with the attention done warp by warp (AttentionWarpBody):
//          the old K/V rows in registers before the wait, one barrier
//   attout (session 14) the attention and the output projection in one
//          launch of the output projection's blocks, split over K by KV
//          head: block b runs the attention of head b % 8 itself (each
//          head's 33 blocks the same one, which only a short context
//          affords), then reads its share of the output projection's
//          bytes (the first loads before its wait, as kiln's) and adds
//          its partial outputs (124 rows) with reductions: four launches
//          a layer, the output projection's weights read while the
//          attention's chain runs
//   attout-big  attout with all of a block's output projection loads (16 a
//          thread) issued before the attention
//   mlp    sep with each layer's gate/up and down as one launch adding its
//          4096 partial outputs with 1024 vector reductions a block, block
//          b starting at line 7b (handoff.cu's mlp-rot)
//   both   attout-big and mlp: three launches a layer
// The attention's chain: K/V rows asked of the L2 before the dependency;
// after it, the q/k rows (L2), a sum of squares, the K/V rows (L2), scores,
// block max and sum through shared memory, p*V, the output: 7 barriers.
// The recorded runs (bench/RESULTS.md, session 10) predate moving the shared
// helpers into chain_timing.h; what runs on the GPU is unchanged.
// Build and run (the mode names to run as arguments, each once in that
// order; none: every mode, twice):
//   nvcc -std=c++20 -O3 -arch=sm_90 -o fuse_attention fuse_attention.cu
//   ./fuse_attention sep attout-big sep attout-big
// Session 14's calls each ran the binary of the commit that added their
// script, whose fixed list of modes they record.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "chain_timing.h"

constexpr int kThreads = 256;
constexpr int kEarly = 4;      // 16-byte loads a thread issues before the dependency
constexpr int kEarlyAll = 16;  // "big": the output projection's every load before it
constexpr int kHeads = 8;      // KV heads: live attention blocks
constexpr int kSplits = 32;    // attention grid: kHeads x kSplits, split 0 live
constexpr int kPositions = 36; // context
constexpr int kRowFloats = 64; // a K or V row (128 f16) as floats

enum Mode { kSep = 0, kFused = 1, kNone = 2, kSepRel = 3, kSepBig = 4, kSepRelBig = 5, kLast = 6, kThin = 7, kWarp = 8, kAttOut = 9, kAttOutBig = 10, kMlp = 11, kBoth = 12 };
const char* kModeNames[] = {"sep", "fused", "none", "rel", "big", "relbig", "last", "thin", "warp", "attout", "attout-big", "mlp", "both"};

struct Read {  // one matvec's bytes
  const int4* w;
  long long n16;
  const float* x;  // the previous kernel's output
  float* y;        // a float per block
};

struct Attention {
  const float* qkv;     // the QKV's output: a float per QKV block (their count)
  int qkv_n;
  const float* kv;      // kHeads x 2 x kPositions x kRowFloats
  float* out;           // kHeads x kThreads
  int release_after_wait;  // launch_dependents right after the dependency
  int thin;                // after the dependency only one load and the store
  int keep_dependents;     // attout: no launch_dependents (the output projection's reads release them)
};

struct AttOut {
  Read read;      // the output projection's bytes
  Attention att;
  float* sum;     // 4096 outputs the blocks' partials are added to
};

struct Fused {
  Read read;
  Attention att;
  unsigned* ticket;  // per launch, zeroed at the graph's start
  unsigned* done;    // QKV blocks that have stored their output
  unsigned read_blocks;
};

// A matvec's reads as block b of nb; `wait` runs between the early loads
// and the rest (the dependency), `done` after the block's store.
template <int E = kEarly, typename Wait, typename Done>
__device__ void ReadBody(const Read& r, unsigned b, unsigned nb, Wait wait, Done done) {
  const long long per = (r.n16 + nb - 1) / nb;
  const long long begin = per * b, end = min(r.n16, begin + per);
  int4 v[E];
#pragma unroll
  for (int u = 0; u < E; ++u) {
    const long long j = begin + threadIdx.x + (long long)u * kThreads;
    v[u] = j < end ? __ldg(r.w + j) : make_int4(0, 0, 0, 0);
  }
  wait();
  const float x = r.x != nullptr ? __ldcg(r.x + threadIdx.x % 8) : 0.0f;
  unsigned acc = 0;
#pragma unroll
  for (int u = 0; u < E; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  acc ^= XorWords(r.w, begin + threadIdx.x + (long long)E * kThreads, end, kThreads);
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  for (int o = 16; o > 0; o /= 2) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x == 0) r.y[b] = x + (float)(acc & 1u);
  done();
}

__device__ float BlockMax(float v, float* red) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float m = red[0];
  for (int w = 1; w < kThreads / 32; ++w) m = fmaxf(m, red[w]);
  __syncthreads();
  return m;
}

__device__ float BlockSum(float v, float* red) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float s = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) s += red[w];
  __syncthreads();
  return s;
}

// The attention of KV head h (split 0; the other splits exit before this).
template <typename Wait>
__device__ void AttentionBody(const Attention& a, int h, Wait wait) {
  __shared__ float q[kThreads], scores[kPositions], red[kThreads / 32];
  const float* kv = a.kv + (size_t)h * 2 * kPositions * kRowFloats;
  const int t = threadIdx.x;
  if (t < 2 * kPositions) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(kv + t * kRowFloats), "n"(kRowFloats * 4)
                 : "memory");
  }
  wait();
  if (a.release_after_wait) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (a.thin) {
    const float v = __ldcg(a.qkv + (h * kThreads + t) % a.qkv_n);
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    a.out[h * kThreads + t] = v;
    return;
  }
  // q/k rows from the QKV's output (L2), RMS-normalized.
  float x = __ldcg(a.qkv + (h * kThreads + t) % a.qkv_n);
  const float ss = BlockSum(x * x, red);
  q[t] = x * rsqrtf(ss / kThreads + 1e-6f);
  __syncthreads();
  // Scores: warp w takes positions w, w + 8, ...; lanes split the row.
  const int lane = t % 32, warp = t / 32;
  float mloc = -INFINITY;
  for (int j = warp; j < kPositions; j += kThreads / 32) {
    const float2 k = __ldcg(reinterpret_cast<const float2*>(kv + j * kRowFloats) + lane);
    float s = k.x * q[2 * lane] + k.y * q[2 * lane + 1];
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) scores[j] = s;
    mloc = fmaxf(mloc, s);
  }
  const float m = BlockMax(mloc, red);
  float p = 0.0f;
  if (t < kPositions) {
    p = exp2f(scores[t] - m);
    scores[t] = p;
  }
  const float l = BlockSum(p, red);
  // p * V: thread t owns float t % 64 of the row, positions t/64, +4, ...
  float acc = 0.0f;
  for (int j = t / kRowFloats; j < kPositions; j += kThreads / kRowFloats)
    acc += scores[j] * __ldcg(kv + (kPositions + j) * kRowFloats + t % kRowFloats);
  if (!a.keep_dependents) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  a.out[h * kThreads + t] = acc / l;
}

template <int E>
__global__ void __launch_bounds__(kThreads) ReadKernel(Read r) {
  ReadBody<E>(r, blockIdx.x, gridDim.x, [] { asm volatile("griddepcontrol.wait;" ::: "memory"); }, [] {});
}

// "warp": the same attention without block-wide steps. Warp w takes query
// head w / 2 over half the positions (lane j: position half * 18 + j),
// with its K row and its two dims of each V row loaded before the
// dependency (rows of earlier steps); after it: the q row (L2), a
// butterfly norm, q broadcast by shuffles, scores, warp max and sum, p*V
// by shuffles; the two halves meet through shared memory at one barrier.
constexpr int kHalf = kPositions / 2;
__device__ void AttentionWarpBody(const Attention& a, int h) {
  __shared__ float part[4][kRowFloats + 2];
  const float* kv = a.kv + (size_t)h * 2 * kPositions * kRowFloats;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = warp / 2, half = warp % 2;
  const int j = half * kHalf + lane;
  float4 k[kRowFloats / 4];
  float2 v[kHalf];
  const float4* krow = reinterpret_cast<const float4*>(kv + min(j, kPositions - 1) * kRowFloats);
#pragma unroll
  for (int i = 0; i < kRowFloats / 4; ++i) k[i] = __ldcg(krow + i);
#pragma unroll
  for (int i = 0; i < kHalf; ++i)
    v[i] = __ldcg(reinterpret_cast<const float2*>(kv + (kPositions + half * kHalf + i) * kRowFloats) + lane);
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const float2 q2 = __ldcg(reinterpret_cast<const float2*>(a.qkv) + (h * 4 * 32 + g * 32 + lane) % (a.qkv_n / 2));
  float ss = q2.x * q2.x + q2.y * q2.y;
  for (int o = 16; o > 0; o /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  const float r = rsqrtf(ss / kRowFloats + 1e-6f);
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < kRowFloats / 4; ++i) {
    const float a0 = __shfl_sync(0xffffffffu, q2.x, 2 * i), a1 = __shfl_sync(0xffffffffu, q2.y, 2 * i);
    const float b0 = __shfl_sync(0xffffffffu, q2.x, 2 * i + 1), b1 = __shfl_sync(0xffffffffu, q2.y, 2 * i + 1);
    s += k[i].x * a0 + k[i].y * a1 + k[i].z * b0 + k[i].w * b1;
  }
  s = lane < kHalf ? s * r : -INFINITY;
  float m = s;
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  const float p = lane < kHalf ? exp2f(s - m) : 0.0f;
  float l = p;
  for (int o = 16; o > 0; o /= 2) l += __shfl_xor_sync(0xffffffffu, l, o);
  float2 acc = make_float2(0.0f, 0.0f);
#pragma unroll
  for (int i = 0; i < kHalf; ++i) {
    const float pi = __shfl_sync(0xffffffffu, p, i);
    acc.x += pi * v[i].x;
    acc.y += pi * v[i].y;
  }
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (half == 1) {
    part[g][2 * lane] = acc.x;
    part[g][2 * lane + 1] = acc.y;
    if (lane == 0) {
      part[g][kRowFloats] = m;
      part[g][kRowFloats + 1] = l;
    }
  }
  __syncthreads();
  if (half == 0) {
    const float m1 = part[g][kRowFloats], l1 = part[g][kRowFloats + 1], M = fmaxf(m, m1);
    const float w0 = exp2f(m - M), w1 = exp2f(m1 - M), inv = 1.0f / (w0 * l + w1 * l1);
    float* out = a.out + h * kThreads + g * kRowFloats;
    out[2 * lane] = (w0 * acc.x + w1 * part[g][2 * lane]) * inv;
    out[2 * lane + 1] = (w0 * acc.y + w1 * part[g][2 * lane + 1]) * inv;
  }
}

__global__ void __launch_bounds__(kThreads) AttentionWarpKernel(Attention a) {
  if (blockIdx.y != 0) return;
  AttentionWarpBody(a, blockIdx.x);
}

__global__ void __launch_bounds__(kThreads) AttentionKernel(Attention a) {
  if (blockIdx.y != 0) return;  // dead splits at short context
  AttentionBody(a, blockIdx.x, [] { asm volatile("griddepcontrol.wait;" ::: "memory"); });
}

__global__ void __launch_bounds__(kThreads) FusedKernel(Fused f) {
  __shared__ unsigned ticket;
  if (threadIdx.x == 0) ticket = atomicAdd(f.ticket, 1u);
  __syncthreads();
  const unsigned b = ticket;
  if (b < f.read_blocks) {
    ReadBody(f.read, b, f.read_blocks, [] { asm volatile("griddepcontrol.wait;" ::: "memory"); }, [&] {
      __syncthreads();
      if (threadIdx.x == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(f.done) : "memory");
    });
    return;
  }
  const unsigned a = b - f.read_blocks;
  if (a / kHeads != 0) return;  // dead splits
  AttentionBody(f.att, a % kHeads, [&] {
    if (threadIdx.x == 0)
      while (LoadAcquire(f.done) < f.read_blocks) __nanosleep(20);
    __syncthreads();
  });
}

// "last": no extra blocks. The QKV's blocks fall into kHeads groups of
// consecutive tickets (block indices here); after its store each counts
// itself in its group's counter (acq_rel), and the group's last runs that
// head's attention: no spin, no second grid.
__global__ void __launch_bounds__(kThreads) LastKernel(Fused f) {
  __shared__ unsigned last;
  const unsigned b = blockIdx.x, per_group = (gridDim.x + kHeads - 1) / kHeads, g = b / per_group;
  const unsigned in_group = min(gridDim.x, (g + 1) * per_group) - g * per_group;
  ReadBody(f.read, b, gridDim.x, [] { asm volatile("griddepcontrol.wait;" ::: "memory"); }, [&] {
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned old;
      asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(f.done + g) : "memory");
      last = old == in_group - 1;
    }
    __syncthreads();
  });
  if (last) AttentionBody(f.att, g, [] {});
}

template <int E>
__global__ void __launch_bounds__(kThreads) AttOutKernel(AttOut f) {
  const unsigned b = blockIdx.x, h = b % kHeads, slice = b / kHeads;
  ReadBody<E>(
      f.read, b, gridDim.x,
      [&] { AttentionBody(f.att, h, [] { asm volatile("griddepcontrol.wait;" ::: "memory"); }); },
      [&] {
        const int rows = (4096 + gridDim.x / kHeads - 1) / (gridDim.x / kHeads);
        const int row = slice * rows + threadIdx.x;
        if (threadIdx.x < rows && row < 4096)
          asm volatile("red.global.add.f32 [%0], %1;" ::"l"(f.sum + row), "f"(f.att.out[h * kThreads]) : "memory");
      });
}

// mlp: the fused gate/up and down; `sum` takes the 4096 partials.
struct Mlp {
  Read r;
  float4* sum;
};
__global__ void __launch_bounds__(kThreads) MlpKernel(Mlp m) {
  ReadBody(m.r, blockIdx.x, gridDim.x, [] { asm volatile("griddepcontrol.wait;" ::: "memory"); },
           [&] { ReduceRotated(m.sum, m.r.y[blockIdx.x], kThreads); });
}

int main(int argc, char** argv) {
  const std::vector<int> modes =
      ModesFromArgs(argc, argv, kModeNames, static_cast<int>(sizeof(kModeNames) / sizeof(kModeNames[0])));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int layers = 36, wide = 2 * sms;
  // Bytes a layer (Q8_0 planar: 4352 a row of 4096, 13056 a row of 12288).
  const long long qkv = 6144LL * 4352, o = 4096LL * 4352, gu = 24576LL * 4352, down = 4096LL * 13056,
                  head = 151936LL * 4352;
  const long long total = layers * (qkv + o + gu + down) + head;
  char* w = nullptr;
  CHECK(cudaMalloc(&w, total));
  CHECK(cudaMemset(w, 1, total));
  float *ys = nullptr, *kv = nullptr, *att_out = nullptr;
  const int outs = layers * 4 + 1;
  CHECK(cudaMalloc(&ys, (size_t)outs * wide * sizeof(float)));
  CHECK(cudaMemset(ys, 0, (size_t)outs * wide * sizeof(float)));
  const size_t kv_floats = (size_t)kHeads * 2 * kPositions * kRowFloats;
  CHECK(cudaMalloc(&kv, layers * kv_floats * sizeof(float)));
  CHECK(cudaMemset(kv, 0, layers * kv_floats * sizeof(float)));
  CHECK(cudaMalloc(&att_out, (size_t)layers * kHeads * kThreads * sizeof(float)));
  unsigned* counters = nullptr;  // per layer: ticket, done (fused); kHeads group counts (last)
  const int per_layer = 2 + kHeads;
  CHECK(cudaMalloc(&counters, layers * per_layer * sizeof(unsigned)));
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  StreamTimer timer(st);
  auto time_ms = [&](auto launch, int reps) { return timer.MedianMs(launch, reps); };
  const long long probe_bytes = std::min<long long>(total, 4LL << 30);
  Read probe{reinterpret_cast<const int4*>(w), probe_bytes / 16, nullptr, ys};
  const float probe_ms = time_ms([&] { ReadKernel<kEarly><<<8 * sms, kThreads, 0, st>>>(probe); }, 9);
  const double probe_gbs = probe_bytes / (probe_ms * 1e6);
  const double floor_ms = total / (probe_gbs * 1e6);
  std::printf("%s, %d SMs; probe %.1f GB/s; chain %.3f GB, %.3f ms at the probe's rate\n", prop.name, sms, probe_gbs,
              total / 1e9, floor_ms);
  std::printf("%-6s %8s %8s %9s %12s\n", "mode", "ms", "GB/s", "% probe", "launches");

  auto launch = [&](auto kernel, dim3 grid, auto arg) { LaunchPdl(st, grid, kThreads, true, kernel, arg); };
  float* sums = nullptr;  // attout's 4096 outputs
  CHECK(cudaMalloc(&sums, 4096 * sizeof(float)));
  CHECK(cudaMemset(sums, 0, 4096 * sizeof(float)));
  float4* mlp_sums = nullptr;  // mlp's 4096 outputs
  CHECK(cudaMalloc(&mlp_sums, 1024 * sizeof(float4)));
  CHECK(cudaMemset(mlp_sums, 0, 1024 * sizeof(float4)));
  for (int mode : modes) {
    const bool sep = mode == kSep || mode == kSepRel || mode == kSepBig || mode == kSepRelBig || mode == kThin ||
                     mode == kMlp;
    const bool attout = mode == kAttOut || mode == kAttOutBig || mode == kBoth;
    const bool big = mode == kSepBig || mode == kSepRelBig;
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    CHECK(cudaMemsetAsync(counters, 0, layers * per_layer * sizeof(unsigned), st));
    long long off = 0;
    int out = 0, launches = 0;
    const float* prev = nullptr;
    auto read = [&](long long bytes) {
      Read r{reinterpret_cast<const int4*>(w + off), bytes / 16, prev, ys + (size_t)out * wide};
      off += bytes;
      prev = r.y;
      ++out;
      return r;
    };
    for (int l = 0; l < layers; ++l) {
      Read rq = read(qkv);
      Attention a{rq.y, wide, kv + l * kv_floats, att_out + (size_t)l * kHeads * kThreads,
                  mode == kSepRel || mode == kSepRelBig, mode == kThin, attout};
      unsigned* c = counters + per_layer * l;
      if (mode == kFused) {
        Fused f{rq, a, c, c + 1, static_cast<unsigned>(wide)};
        launch(FusedKernel, dim3(wide + kHeads * kSplits), f);
        launches += 1;
        prev = a.out;
      } else if (mode == kLast) {
        Fused f{rq, a, nullptr, c + 2, static_cast<unsigned>(wide)};
        launch(LastKernel, dim3(wide), f);
        launches += 1;
        prev = a.out;
      } else {
        launch(ReadKernel<kEarly>, dim3(wide), rq);
        launches += 1;
        if (mode == kWarp) {
          launch(AttentionWarpKernel, dim3(kHeads, kSplits), a);
          launches += 1;
          prev = a.out;
        }
        if (sep) {
          launch(AttentionKernel, dim3(kHeads, kSplits), a);
          launches += 1;
          prev = a.out;
        }
      }
      if (attout) {
        if (mode == kAttOut)
          launch(AttOutKernel<kEarly>, dim3(wide), AttOut{read(o), a, sums});
        else
          launch(AttOutKernel<kEarlyAll>, dim3(wide), AttOut{read(o), a, sums});
      } else if (big)
        launch(ReadKernel<kEarlyAll>, dim3(wide), read(o));
      else
        launch(ReadKernel<kEarly>, dim3(wide), read(o));
      if (mode == kMlp || mode == kBoth) {
        launch(MlpKernel, dim3(wide), Mlp{read(gu + down), mlp_sums});
        launches += 1;
      } else {
        for (long long bytes : {gu, down}) {
          launch(ReadKernel<kEarly>, dim3(wide), read(bytes));
          launches += 1;
        }
      }
      launches += 1;
    }
    launch(ReadKernel<kEarly>, dim3(wide), read(head));
    launches += 1;
    CHECK(cudaStreamEndCapture(st, &g));
    cudaGraphExec_t ge;
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    const float ms = time_ms([&] { CHECK(cudaGraphLaunch(ge, st)); }, 21);
    std::printf("%-6s %8.3f %8.1f %8.1f%% %12d\n", kModeNames[mode], ms, total / (ms * 1e6), 100.0 * floor_ms / ms,
                launches);
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));
  }
  return 0;
}
