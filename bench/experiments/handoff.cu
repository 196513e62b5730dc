// Experiment (not part of the build): what a kernel boundary costs in a
// chain of bandwidth-bound kernels replayed from one CUDA graph, and whether
// a completion counter the next kernel spins on hands off faster than
// programmatic dependent launch's griddepcontrol.wait.
//
// The chain has the byte sizes of Qwen3-8B Q8_0's decode step as kiln runs
// it (per layer: QKV 26.7 MB, a 150 KB "attention" on 8 blocks, output 17.8
// MB, gate/up 107 MB, down 53.5 MB; then the LM head), each kernel reading
// its own weights with 16-byte loads and the previous kernel's small output
// after the dependency, all launched with programmatic stream serialization.
//   pdl-late   griddepcontrol.wait; launch_dependents after the loads (kiln's
//              matvecs)
//   pdl-early  launch_dependents before the wait
//   spin       launch_dependents before the dependency; the dependency is
//              a per-kernel counter (one release atomic per block when its
//              stores are done; the next kernel's thread 0 spins with
//              ld.acquire until it holds the previous grid's block count)
//   plain      no programmatic launch (stream order)
//   persist    (session 14) the whole chain as one persistent kernel: 2 blocks
//              an SM, all resident (cooperative launch); kernel i becomes
//              phase i, its blocks' share of the bytes as above, and each
//              boundary a grid barrier (one release atomic a block on the
//              phase's counter, thread 0 spins with ld.acquire until every
//              block has arrived). Each block issues its first loads of
//              phase i + 1 before it arrives at barrier i, so the DRAM
//              keeps working while the barrier completes.
//   persist-late  the same, the next phase's first loads after the barrier
//   persist-sleep persist, the spinning thread sleeping 32 ns between polls
//   mlp        (session 14) pdl-late with each layer's gate/up and down
//              kernels as one launch reading both kernels' bytes (a block
//              would compute a slice of the intermediate, then multiply it
//              by the down projection's matching columns): split over K,
//              every block adds its 4096 partial outputs to the layer's
//              output with 1024 vector reductions (red.global.add.v4.f32),
//              so four launches a layer instead of five
//   mlp-nored  mlp without the reductions (what the boundary alone saves)
//   mlp-cN     mlp in clusters of N blocks: each block puts its partials in
//              shared memory, and after a cluster barrier block r adds up
//              slice r of the N blocks' partials (distributed shared memory)
//              and reduces only that slice: N times fewer reductions, two
//              cluster barriers more
//   mlp-c4-nored  mlp-c4's clusters, barriers and shared-memory sums without
//              the reductions
//   mlp-spread mlp with every block reducing into its own 1024 float4 (no
//              two blocks on one address)
//   mlp-store  mlp-spread with plain stores instead of reductions
//   mlp-rot    mlp with block b's reductions starting at line 7b (mod 128):
//              the blocks still share every address, but not all at once
//   mlp-rot-132  mlp-rot with the fused launch on 132 blocks (one an SM):
//              half the partials to write and reduce
//   ring-S     (session 17) persist with the loads decoupled from the
//              barriers: one block an SM, a producer warp copying the
//              block's share of every phase, in order, into an S-stage ring
//              of 16 KB in shared memory (cp.async.bulk on mbarriers), and
//              eight consumer warps that wait at each grid barrier, then XOR
//              the phase's stages and release them. The producer waits only
//              for free stages, never for a barrier, so while the grid
//              synchronizes it keeps up to S * 16 KB an SM in flight
//              (ring-4, ring-8, ring-13: 64, 128, 208 KB)
//   ring-13-dp4a  ring-13 with kiln's Q8_0 arithmetic in the consumers (two
//              dp4a per 4 bytes against register activations, as
//              access_pattern's bulk kernel) instead of the XOR
//   ring-13-free  ring-13 without the grid barriers: how fast the ring
//              streams the chain's bytes at all
//   ring-6-32k ring with 6 stages of 32 KB (192 KB)
//   ring-13-dynB  ring-13 with each phase's stages claimed B at a time from
//              a counter (atomicAdd) instead of fixed shares
//   pdl-dyn    pdl-late with each kernel's bytes claimed 32 KB at a time from
//              its counter instead of fixed shares (one wave of blocks; the
//              first claim and its loads before the dependency, each next
//              claim in flight while the block uses the chunk it has)
// The probe is one kernel reading 4 GiB. The recorded runs (bench/RESULTS.md,
// session 10) predate moving the shared helpers into chain_timing.h; what
// runs on the GPU is unchanged. Build and run (the mode names to run as
// arguments, each once in that order; none: every mode, twice):
//   nvcc -std=c++20 -O3 -arch=sm_90 -o handoff handoff.cu
//   ./handoff pdl-late persist pdl-late persist
// Session 14's calls each ran the binary of the commit that added their
// script, whose fixed list of modes they record.
#include <algorithm>
#include <cstdio>
#include <vector>

#include <cooperative_groups.h>

#include "bulk_copy.h"
#include "chain_timing.h"

enum Mode { kPdlLate = 0, kPdlEarly = 1, kSpin = 2, kPlain = 3, kPersist = 4, kPersistLate = 5, kPersistSleep = 6, kMlp = 7, kMlpNoRed = 8, kMlpC4 = 9, kMlpC8 = 10, kMlpC4NoRed = 11, kMlpSpread = 12, kMlpStore = 13, kMlpRot = 14, kMlpRot132 = 15, kRing4 = 16, kRing8 = 17, kRing13 = 18, kRing13Dp4a = 19, kRing13Free = 20, kRing6Big = 21, kRing13Dyn4 = 22, kRing13Dyn2 = 23, kPdlDyn = 24 };
const char* kModeNames[] = {"pdl-late", "pdl-early", "spin", "plain", "persist", "persist-late", "persist-sleep", "mlp", "mlp-nored", "mlp-c4", "mlp-c8", "mlp-c4-nored", "mlp-spread", "mlp-store", "mlp-rot", "mlp-rot-132", "ring-4", "ring-8", "ring-13", "ring-13-dp4a", "ring-13-free", "ring-6-32k", "ring-13-dyn4", "ring-13-dyn2", "pdl-dyn"};

struct Step {
  const int4* w;
  long long n16;        // 16-byte words this kernel reads
  const float* x;       // the previous kernel's output (nullptr for the first)
  float* y;             // this kernel's output, a float per block
  unsigned* done;       // completion counters, one per kernel
  int idx, count;       // this kernel's index, kernels in the chain
  unsigned prev_blocks; // the previous kernel's grid size
  int mode;
  float4* sum;          // mlp: 1024 float4 every block adds its partials to
  int cluster;          // mlp-cN: N (its partials reduced across the cluster first)
};

constexpr int kThreads = 512;
constexpr int kEarly = 4;  // 16-byte loads a thread issues before the dependency

__global__ void __launch_bounds__(kThreads) Read(Step s) {
  const long long per = (s.n16 + gridDim.x - 1) / gridDim.x;
  const long long begin = per * blockIdx.x, end = min(s.n16, begin + per);
  int4 v[kEarly];
  for (int u = 0; u < kEarly; ++u) {
    const long long j = begin + threadIdx.x + (long long)u * kThreads;
    v[u] = j < end ? __ldg(s.w + j) : make_int4(0, 0, 0, 0);
  }
  if (s.mode == kPdlEarly || s.mode == kSpin) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  float x = 0.0f;
  if (s.mode == kSpin) {
    if (threadIdx.x == 0) {
      if (s.idx > 0)
        while (LoadAcquire(s.done + s.idx - 1) < s.prev_blocks) __nanosleep(32);
      // Every block of kernel idx-1 passed its own spin before counting, so
      // counter idx-2 is free again; kernel 0 frees the last two (the
      // previous replay has ended).
      if (blockIdx.x == 0) {
        if (s.idx >= 2) s.done[s.idx - 2] = 0;
        if (s.idx == 0 && s.count >= 2) s.done[s.count - 1] = s.done[s.count - 2] = 0;
      }
    }
    __syncthreads();
    if (s.x != nullptr) x = __ldcg(s.x + threadIdx.x % 8);
  } else {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (s.x != nullptr) x = s.x[threadIdx.x % 8];
  }
  unsigned acc = 0;
  for (int u = 0; u < kEarly; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  acc ^= XorWords(s.w, begin + threadIdx.x + (long long)kEarly * kThreads, end, kThreads);
  for (int o = 16; o > 0; o /= 2) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x == 0) s.y[blockIdx.x] = x + (float)(acc & 1u);
  if (s.sum != nullptr && s.cluster > 1) {
    extern __shared__ float4 part[];  // this block's 1024 partials
    const float a = (float)(acc & 1u);
    for (int q = threadIdx.x; q < 1024; q += kThreads) part[q] = make_float4(a, a, a, a);
    namespace cg = cooperative_groups;
    cg::cluster_group cl = cg::this_cluster();
    cl.sync();
    const int n = s.cluster, per = 1024 / n, r = static_cast<int>(cl.block_rank());
    for (int q = threadIdx.x; q < per; q += kThreads) {
      float4 t = make_float4(0, 0, 0, 0);
      for (int b = 0; b < n; ++b) {
        const float4 v = cl.map_shared_rank(part, b)[r * per + q];
        t.x += v.x, t.y += v.y, t.z += v.z, t.w += v.w;
      }
      if (s.mode != kMlpC4NoRed || t.x == -1.0f) Reduce4(s.sum + r * per + q, t);  // -1 never happens
    }
    cl.sync();  // no block leaves while another reads its partials
  } else if (s.sum != nullptr && (s.mode == kMlpRot || s.mode == kMlpRot132)) {
    ReduceRotated(s.sum, (float)(acc & 1u), kThreads);
  } else if (s.sum != nullptr) {
    const float a = (float)(acc & 1u);
    // mlp-spread and mlp-store: each block its own 1024 float4.
    float4* own = s.sum + (s.mode == kMlpSpread || s.mode == kMlpStore ? 1024LL * blockIdx.x : 0);
    for (int q = threadIdx.x; q < 1024; q += kThreads) {
      if (s.mode == kMlpStore)
        own[q] = make_float4(a, a, a, a);
      else
        Reduce4(own + q, make_float4(a, a, a, a));
    }
  }
  if (s.mode == kPdlLate || s.mode >= kMlp) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (s.mode == kSpin) {
    __syncthreads();
    if (threadIdx.x == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(s.done + s.idx) : "memory");
  }
}

// pdl-dyn: kernel s's bytes in chunks of kChunk16 words, claimed from its
// counter s.done[s.idx] by thread 0 (the next claim in flight while the block XORs the
// chunk it has).
constexpr int kChunk16 = kThreads * kEarly;

__global__ void __launch_bounds__(kThreads) ReadDyn(Step s) {
  unsigned* claim = s.done + s.idx;
  __shared__ long long next[2];
  const long long chunks = (s.n16 + kChunk16 - 1) / kChunk16;
  if (threadIdx.x == 0) next[0] = atomicAdd(claim, 1u);
  __syncthreads();
  long long c = next[0];
  int4 v[kEarly];
  auto load = [&](long long chunk) {
    for (int u = 0; u < kEarly; ++u) {
      const long long j = chunk * kChunk16 + threadIdx.x + (long long)u * kThreads;
      v[u] = chunk < chunks && j < s.n16 ? __ldg(s.w + j) : make_int4(0, 0, 0, 0);
    }
  };
  load(c);
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const float x = s.x != nullptr ? s.x[threadIdx.x % 8] : 0.0f;
  unsigned acc = 0;
  for (int buf = 1; c < chunks; buf ^= 1) {
    if (threadIdx.x == 0) next[buf] = atomicAdd(claim, 1u);
    for (int u = 0; u < kEarly; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    __syncthreads();
    c = next[buf];
    load(c);
  }
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  for (int o = 16; o > 0; o /= 2) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x == 0) s.y[blockIdx.x] = x + (float)(acc & 1u);
}

// persist: phase i reads n16 words from word off16 on its first `blocks`
// blocks (the chain's kernel i and its grid).
struct Phase {
  long long off16, n16;
  int blocks;
};

// Block b's words [begin, end) of phase p (empty past its blocks).
__device__ void PhaseRange(const Phase& p, long long* begin, long long* end) {
  const long long per = (p.n16 + p.blocks - 1) / p.blocks;
  *begin = blockIdx.x < p.blocks ? per * blockIdx.x : 0;
  *end = blockIdx.x < p.blocks ? min(p.n16, *begin + per) : 0;
}

__device__ void LoadFirst(const int4* w, const Phase& p, int4* v) {
  long long begin, end;
  PhaseRange(p, &begin, &end);
  for (int u = 0; u < kEarly; ++u) {
    const long long j = begin + threadIdx.x + (long long)u * kThreads;
    v[u] = j < end ? __ldg(w + p.off16 + j) : make_int4(0, 0, 0, 0);
  }
}

// The chain as one kernel of gridDim.x resident blocks; ys[i * gridDim.x +
// b] is block b's output of phase i, bar[i] counts the blocks past phase i.
__global__ void __launch_bounds__(kThreads, 2)
    Persist(const int4* w, const Phase* phases, int n, float* ys, unsigned* bar, bool early, bool sleep) {
  int4 v[kEarly];
  LoadFirst(w, phases[0], v);
  for (int i = 0; i < n; ++i) {
    const Phase p = phases[i];
    float x = i > 0 ? __ldcg(ys + (long long)(i - 1) * gridDim.x + threadIdx.x % 8) : 0.0f;
    long long begin, end;
    PhaseRange(p, &begin, &end);
    unsigned acc = 0;
    for (int u = 0; u < kEarly; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    acc ^= XorWords(w + p.off16, begin + threadIdx.x + (long long)kEarly * kThreads, end, kThreads);
    for (int o = 16; o > 0; o /= 2) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
    if (threadIdx.x == 0) ys[(long long)i * gridDim.x + blockIdx.x] = x + (float)(acc & 1u);
    if (i + 1 == n) break;
    if (early) LoadFirst(w, phases[i + 1], v);
    __syncthreads();
    if (threadIdx.x == 0) {
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(bar + i) : "memory");
      while (LoadAcquire(bar + i) < gridDim.x)
        if (sleep) __nanosleep(32);
    }
    __syncthreads();
    if (!early) LoadFirst(w, phases[i + 1], v);
  }
}

// ring-S: the chain as one kernel of one block an SM. Warp kRingWarps's
// lane 0 copies the block's share of every phase (its blocks spread over the
// grid's) into an S-stage ring of kStage bytes (without BARRIERS, no grid
// barrier); the kRingWarps consumer warps
// pass grid barrier i - 1, then take phase i's stages in the same order.
constexpr int kRingWarps = 8;
constexpr int kRingThreads = 32 * kRingWarps;

// Block b's byte range [begin, end) of phase p, the phase's blocks spread
// over the grid's.
__device__ void RingRange(const Phase& p, long long* begin, long long* end) {
  const int blocks = min(p.blocks, static_cast<int>(gridDim.x));
  const long long per = (p.n16 + blocks - 1) / blocks;
  *begin = blockIdx.x < blocks ? 16 * per * blockIdx.x : 0;
  *end = blockIdx.x < blocks ? 16 * min(p.n16, per * (blockIdx.x + 1)) : 0;
  *begin = min(*begin, *end);
}

// The consumers' work on one 16-byte word: XOR (as the read kernels) or
// kiln's Q8_0 two-level arithmetic (two dp4a per 4 bytes).
template <bool DP4A>
__device__ inline void Consume(const int4& w, unsigned& acc, int q1, int q2) {
  if (DP4A) {
    int d1 = __dp4a(w.x, q1, 0), d2 = __dp4a(w.x, q2, 0);
    d1 = __dp4a(w.y, q1, d1), d2 = __dp4a(w.y, q2, d2);
    d1 = __dp4a(w.z, q1, d1), d2 = __dp4a(w.z, q2, d2);
    d1 = __dp4a(w.w, q1, d1), d2 = __dp4a(w.w, q2, d2);
    acc += static_cast<unsigned>(128 * d1 + d2);
  } else {
    acc ^= w.x ^ w.y ^ w.z ^ w.w;
  }
}

// BATCH > 0: the phases' stages are not split in fixed shares but claimed:
// a producer takes BATCH stages of phase i at a time from claims[i] until
// none is left, so an SM that streams faster takes more of each phase.
// Either way a stage's tag is its byte count, and a tag of 0 (no copy) ends
// the block's share of a phase.
template <int S, int kStage, bool DP4A, bool BARRIERS, int BATCH>
__global__ void __launch_bounds__(kRingThreads + 32, 1)
    PersistRing(const char* w, const Phase* phases, int n, float* ys, unsigned* bar, unsigned* claims) {
  extern __shared__ __align__(128) unsigned char smem[];
  auto* full = reinterpret_cast<unsigned long long*>(smem + S * kStage);
  unsigned long long* empty = full + S;
  auto* tags = reinterpret_cast<unsigned*>(empty + S);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) InitRingBarriers(full, empty, S, kRingWarps);
  __syncthreads();
  if (warp == kRingWarps) {  // the producer: weights never wait for a barrier
    if (lane == 0) {
      unsigned k = 0;
      auto push = [&](const char* src, unsigned bytes) {
        const int s = k % S;
        if (k >= S) BarrierWait(empty + s, (k / S - 1) & 1);
        tags[s] = bytes;
        if (bytes > 0) {
          BarrierExpect(full + s, bytes);
          BulkCopy(smem + s * kStage, src, bytes, full + s);
        } else {
          BarrierArrive(full + s);
        }
        ++k;
      };
      for (int i = 0; i < n; ++i) {
        const Phase p = phases[i];
        const char* base = w + 16 * p.off16;
        if (BATCH == 0) {
          long long begin, end;
          RingRange(p, &begin, &end);
          for (long long off = begin; off < end; off += kStage)
            push(base + off, static_cast<unsigned>(min(static_cast<long long>(kStage), end - off)));
        } else {
          const long long bytes = 16 * p.n16, stages = (bytes + kStage - 1) / kStage;
          for (;;) {
            const long long c0 = atomicAdd(claims + i, BATCH);
            if (c0 >= stages) break;
            for (long long c = c0; c < min(c0 + BATCH, stages); ++c)
              push(base + c * kStage, static_cast<unsigned>(min(static_cast<long long>(kStage), bytes - c * kStage)));
          }
        }
        push(nullptr, 0);
      }
    }
    return;
  }
  const int q1 = 0x01020304 * (1 + threadIdx.x % 3), q2 = q1 ^ 0x01010101;
  unsigned k = 0, acc = 0;
  for (int i = 0; i < n; ++i) {
    if (BARRIERS && i > 0) {  // grid barrier i - 1: consumers only (named barrier 1)
      if (threadIdx.x == 0)
        while (LoadAcquire(bar + i - 1) < gridDim.x) {
        }
      asm volatile("bar.sync 1, %0;" ::"r"(kRingThreads) : "memory");
    }
    const float x = i > 0 ? __ldcg(ys + (long long)(i - 1) * gridDim.x + threadIdx.x % 8) : 0.0f;
    for (;; ++k) {
      const int s = k % S;
      BarrierWait(full + s, (k / S) & 1);
      const int words = static_cast<int>(tags[s] / 16);
      const int4* st = reinterpret_cast<const int4*>(smem + s * kStage);
      for (int j = threadIdx.x; j < words; j += kRingThreads) Consume<DP4A>(st[j], acc, q1, q2);
      __syncwarp();
      if (lane == 0) BarrierArrive(empty + s);
      if (words == 0) {
        ++k;
        break;
      }
    }
    if (acc == 0x9e3779b9u) ys[(long long)i * gridDim.x + blockIdx.x] = x;  // keeps the work
    asm volatile("bar.sync 1, %0;" ::"r"(kRingThreads) : "memory");
    if (threadIdx.x == 0) {
      ys[(long long)i * gridDim.x + blockIdx.x] = x + (float)(acc & 1u);
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(bar + i) : "memory");
    }
  }
}

using RingKernel = void (*)(const char*, const Phase*, int, float*, unsigned*, unsigned*);

// The ring kernel of a mode and the shared memory it takes.
RingKernel PickRing(int mode, size_t* shared) {
  const int stages = mode == kRing4 ? 4 : mode == kRing8 ? 8 : mode == kRing6Big ? 6 : 13;
  *shared = stages * ((mode == kRing6Big ? 32 : 16) * 1024 + 2 * sizeof(unsigned long long) + sizeof(unsigned));
  constexpr int k16 = 16 * 1024;
  if (mode == kRing4) return PersistRing<4, k16, false, true, 0>;
  if (mode == kRing8) return PersistRing<8, k16, false, true, 0>;
  if (mode == kRing13) return PersistRing<13, k16, false, true, 0>;
  if (mode == kRing13Free) return PersistRing<13, k16, false, false, 0>;
  if (mode == kRing6Big) return PersistRing<6, 2 * k16, false, true, 0>;
  if (mode == kRing13Dyn4) return PersistRing<13, k16, false, true, 4>;
  if (mode == kRing13Dyn2) return PersistRing<13, k16, false, true, 2>;
  return PersistRing<13, k16, true, true, 0>;
}

int main(int argc, char** argv) {
  const std::vector<int> modes =
      ModesFromArgs(argc, argv, kModeNames, static_cast<int>(sizeof(kModeNames) / sizeof(kModeNames[0])));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  // Kernel sizes (bytes) and grids, Qwen3-8B Q8_0 planar (4352 bytes a row
  // of 4096, 13056 a row of 12288).
  struct K {
    long long bytes;
    int blocks;
  };
  std::vector<K> ks;
  const int wide = 2 * sms;
  for (int l = 0; l < 36; ++l) {
    ks.push_back({6144LL * 4352, wide});
    ks.push_back({150LL * 1024, 8});
    ks.push_back({4096LL * 4352, wide});
    ks.push_back({24576LL * 4352, wide});
    ks.push_back({4096LL * 13056, wide});
  }
  ks.push_back({151936LL * 4352, wide});
  long long total = 0;
  for (const K& k : ks) total += (k.bytes + 15) / 16 * 16;
  char* w = nullptr;
  CHECK(cudaMalloc(&w, total));
  CHECK(cudaMemset(w, 1, total));
  std::vector<float*> ys(ks.size());
  float* ys_all = nullptr;  // persist: a row of wide floats per phase
  CHECK(cudaMalloc(&ys_all, ks.size() * wide * sizeof(float)));
  for (size_t i = 0; i < ks.size(); ++i) ys[i] = ys_all + i * wide;
  std::vector<Phase> phases;
  for (long long off = 0; const K& k : ks) {
    phases.push_back({off / 16, k.bytes / 16, k.blocks});
    off += (k.bytes + 15) / 16 * 16;
  }
  Phase* phases_d = nullptr;
  CHECK(cudaMalloc(&phases_d, phases.size() * sizeof(Phase)));
  CHECK(cudaMemcpy(phases_d, phases.data(), phases.size() * sizeof(Phase), cudaMemcpyHostToDevice));
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Persist, kThreads, 0));
  std::printf("persist: %d blocks an SM resident (needs 2)\n", per_sm);
  unsigned* done = nullptr;
  CHECK(cudaMalloc(&done, ks.size() * sizeof(unsigned)));
  CHECK(cudaMemset(done, 0, ks.size() * sizeof(unsigned)));
  unsigned* claims = nullptr;  // ring-13-dynB: stages of each phase claimed so far
  CHECK(cudaMalloc(&claims, ks.size() * sizeof(unsigned)));
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  StreamTimer timer(st);
  auto time_ms = [&](auto launch, int reps) { return timer.MedianMs(launch, reps); };
  // The probe: one kernel over 4 GiB (or the whole buffer if smaller).
  const long long probe_bytes = std::min<long long>(total, 4LL << 30);
  Step probe{reinterpret_cast<const int4*>(w), probe_bytes / 16, nullptr, ys[0], done, 0, 1, 0, kPlain, nullptr, 1};
  const float probe_ms = time_ms([&] { Read<<<4 * sms, kThreads, 0, st>>>(probe); }, 9);
  const double probe_gbs = probe_bytes / (probe_ms * 1e6);
  std::printf("%s, %d SMs; probe: %.1f GB/s (%lld MB in %.3f ms)\n", prop.name, sms, probe_gbs, probe_bytes >> 20,
              probe_ms);
  std::printf("chain: %zu kernels, %.3f GB; at the probe's rate %.3f ms\n", ks.size(), total / 1e9,
              total / (probe_gbs * 1e6));
  std::printf("%-13s %9s %9s %9s %10s %14s\n", "mode", "launches", "ms", "GB/s", "% probe", "us/boundary");
  float4* sums = nullptr;
  CHECK(cudaMalloc(&sums, 1024LL * wide * sizeof(float4)));
  CHECK(cudaMemset(sums, 0, 1024LL * wide * sizeof(float4)));
  for (int mode : modes) {
    CHECK(cudaMemset(done, 0, ks.size() * sizeof(unsigned)));  // spin's counters start at zero
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    const bool persist = mode == kPersist || mode == kPersistLate || mode == kPersistSleep;
    if (persist) {
      CHECK(cudaMemsetAsync(done, 0, ks.size() * sizeof(unsigned), st));
      LaunchCooperative(st, wide, kThreads, 0, Persist, reinterpret_cast<const int4*>(w),
                        static_cast<const Phase*>(phases_d), static_cast<int>(ks.size()), ys_all, done,
                        mode != kPersistLate, mode == kPersistSleep);
    }
    const bool ring = mode >= kRing4 && mode <= kRing13Dyn2;
    if (ring) {
      CHECK(cudaMemsetAsync(done, 0, ks.size() * sizeof(unsigned), st));
      size_t shared = 0;
      const RingKernel kernel = PickRing(mode, &shared);
      CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
      CHECK(cudaMemsetAsync(claims, 0, ks.size() * sizeof(unsigned), st));
      LaunchCooperative(st, sms, kRingThreads + 32, shared, kernel, static_cast<const char*>(w),
                        static_cast<const Phase*>(phases_d), static_cast<int>(ks.size()), ys_all, done, claims);
    }
    // mlp modes: a layer's gate/up (index 5l + 3) takes its down's bytes too.
    const bool mlp = mode >= kMlp && mode < kRing4;
    const bool dyn = mode == kPdlDyn;
    if (dyn) CHECK(cudaMemsetAsync(done, 0, ks.size() * sizeof(unsigned), st));
    float4* sum = mlp && mode != kMlpNoRed ? sums : nullptr;
    const int cluster = mode == kMlpC4 || mode == kMlpC4NoRed ? 4 : mode == kMlpC8 ? 8 : 1;
    int launches = persist || ring ? static_cast<int>(ks.size()) : 0;
    long long off = 0;
    for (size_t i = 0, prev = 0; !persist && !ring && i < ks.size(); ++i) {
      const bool fused = mlp && i + 1 < ks.size() && i % 5 == 3;
      const long long bytes = ks[i].bytes + (fused ? ks[i + 1].bytes : 0);
      Step s{reinterpret_cast<const int4*>(w + off), bytes / 16, i ? ys[prev] : nullptr, ys[i], done,
             static_cast<int>(i), static_cast<int>(ks.size()), i ? static_cast<unsigned>(ks[prev].blocks) : 0u, mode,
             fused ? sum : nullptr, cluster};
      off += (ks[i].bytes + 15) / 16 * 16 + (fused ? (ks[i + 1].bytes + 15) / 16 * 16 : 0);
      const int blocks = fused && mode == kMlpRot132 ? sms : ks[i].blocks;
      if (dyn)
        LaunchPdl(st, dim3(ks[i].blocks), kThreads, true, ReadDyn, s);
      else
        LaunchPdl(st, dim3(blocks), kThreads, mode != kPlain, Read, s, fused ? cluster : 1,
                  fused && cluster > 1 ? 1024 * sizeof(float4) : 0);
      prev = i;
      i += fused ? 1 : 0;
      ++launches;
    }
    CHECK(cudaStreamEndCapture(st, &g));
    cudaGraphExec_t ge;
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    const float ms = time_ms([&] { CHECK(cudaGraphLaunch(ge, st)); }, 21);
    const double floor_ms = total / (probe_gbs * 1e6);
    std::printf("%-13s %9d %9.3f %9.1f %9.1f%% %14.3f\n", kModeNames[mode], launches, ms, total / (ms * 1e6),
                100.0 * floor_ms / ms, 1e3 * (ms - floor_ms) / (launches - 1));
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));
  }
  return 0;
}
