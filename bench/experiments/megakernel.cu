// Experiment (not part of the build): the whole Qwen3-8B Q8_0 decode step as
// one persistent kernel with the step's real arithmetic, to measure what
// handoff.cu's ring-13-dyn2 (session 17: 180 grid barriers hidden behind a
// shared-memory weight ring with claimed stages) keeps once each phase has
// to stage its activations, run the attention and write its outputs.
//
// One block an SM (cooperative launch), 8 consumer warps and a producer
// warp. The producer's lane 0 walks the step's phases in order; for each
// weight phase it claims 2 stages at a time from the phase's counter
// (atomicAdd) and copies each stage's whole rows into the next slot of an
// 11-slot ring in shared memory (cp.async.bulk on mbarriers), tagged with
// the phase, the rows and the stage's index; after its last claim it
// publishes how many stages the block got so far (the phase's end). It
// never waits for a grid barrier, only for free slots. The consumers run
// the phases:
//   qkv     x = rmsnorm(h) * attn_norm, qkv = W x          (6144 rows)
//   attn    tasks (KV head, 32 positions) by block index: the new K/V row
//           into the f16 cache, softmax(q k / sqrt(128)) v partials for the
//           head's 4 query heads; the head's last split merges them
//   out     ao = W attn                                    (4096 rows)
//   gateup  x = rmsnorm(h + ao) * ffn_norm, inter = silu(W_g x) * (W_u x)
//           (gate and up rows interleaved: 24576 rows)
//   down    dn = W inter                                   (4096 x 12288)
//   head    x = rmsnorm(h + dn) * out_norm, logits = W x, argmax
// Between phases a grid barrier (the consumers' thread 0 releases the
// phase's counter, then spins with ld.acquire for every block). After it,
// each block stages the phase's input once: read from the L2 (the residual
// plus the last projection's rows, written back to the residual's other
// buffer by the block that owns each 32 columns), times the norm weight,
// quantized in two int8 levels per 32 columns (kiln's scheme,
// emit_matvec.cc); the rmsnorm factor scales the rows' sums. Consumer warp
// w takes the block's stages w, w + 8, ...: it dots its stage's rows,
// releases the slot, sums across its lanes and stores the rows.
//
// Weights: one row = its K int8 values, then K/32 f16 scales (4352 bytes
// for 4096 columns, 13056 for 12288); a stage holds whole rows (4, 2
// gate/up pairs, or one down row). A check configuration (2 layers, 4096
// vocabulary) is compared with a double-precision host reference on fresh
// random weights, outputs poisoned first; the timed configuration is the 8B
// (36 layers, 151936 vocabulary) against the probe (chain_timing.h) on the
// same weights. Usage:
//   nvcc -std=c++20 -O3 -arch=sm_90 -o megakernel megakernel.cu
//   [MK_TRACE=1] ./megakernel [position [setting ...]]
// position: the new token's (default 64); each setting times the step once
// (default 0), a mask of kNoMath (1), kNoStage (2), kNoAttn (4) (work left
// out: wrong results), kPrefetch (8: the L2 asked for stages 8 claims
// ahead), bits 4-7 the stages a claim, bits 8-11 the most stages in flight
// an SM, kEvictFirst (4096: the weight copies marked first out of the L2).
// MK_TRACE=1 then traces one step at each setting (phase times per kind,
// bench/RESULTS.md session 17). Each recorded call (4-17) ran the source as
// it stood then; its script's comment says what had changed.
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "bulk_copy.h"
#include "chain_timing.h"

namespace {

constexpr int kHidden = 4096, kFf = 12288, kHeads = 32, kKvHeads = 8, kHeadDim = 128;
constexpr int kQkvRows = (kHeads + 2 * kKvHeads) * kHeadDim;  // 6144
constexpr int kWarps = 8, kConsumers = 32 * kWarps;
constexpr int kSlots = 11, kSlotBytes = 4 * (kHidden + kHidden / 16);  // 4 rows of 4352 bytes
constexpr int kBatch = 2;                                              // stages a claim takes
constexpr int kMaxContext = 1024;
constexpr int kSplit = 32, kMaxSplits = kMaxContext / kSplit;  // attention positions a task
constexpr int kMaxPhases = 256;
constexpr float kEps = 1e-6f;

enum Ablate { kNoMath = 1, kNoStage = 2, kNoAttn = 4, kPrefetch = 8, kEvictFirst = 4096 };
constexpr int kAhead = 8;  // kPrefetch: claimed stages asked of the L2 before they have a slot
enum Kind { kQkv = 0, kAttn = 1, kOut = 2, kGateUp = 3, kDown = 4, kHead = 5 };

struct Phase {
  int kind, layer;
  const char* w;      // rows (nullptr for attn)
  int rows, cols;     // rows, K
  int rows_per_stage;
  const float* norm;  // rmsnorm weight of the input (nullptr: none)
};

struct Model {
  const Phase* phases;
  int n_phases, pos;
  float* res[2];     // the residual stream, two buffers: a staging reads one and writes the other
  float* ao;         // the output projection's rows [4096] (added by the next staging)
  float* dn;         // the down projection's rows [4096]
  float* qkv;        // [6144]
  float* attn;       // [4096]
  float* inter;      // [12288]
  float* logits;     // [vocab]
  __half* kcache;    // [layers][kMaxContext][8][128]
  __half* vcache;
  unsigned* bar;     // a counter a phase
  unsigned* claims;  // stages claimed, a counter a phase
  unsigned long long* best;  // argmax key: orderable value << 32 | ~index
  int ablate;        // kNoMath | kNoStage | kNoAttn | kPrefetch: timing runs that leave work out or add it;
                     // bits 4-7: stages a claim (0: kBatch); bits 8-11: stages in flight at most (0: no limit)
  float* partial;    // attention splits: [8][kMaxSplits][4][kHeadDim + 2] (acc, max, sum)
  unsigned* merged;  // splits done, a counter a layer and KV head
  unsigned long long* trace;  // null, or [phase][block][kTrace] %globaltimer ns: barrier passed, input staged,
                              // stages consumed (the consumers), the phase's claims done (the producer),
                              // the staging's loads back, the staging's last barrier reached (thread 0)
};

constexpr int kTrace = 6;

__device__ inline void Trace(const Model& m, int i, int what) {
  if (m.trace == nullptr) return;
  m.trace[(static_cast<size_t>(i) * gridDim.x + blockIdx.x) * kTrace + what] = GlobalTimerNs();
}

__host__ __device__ inline int RowBytes(int cols) { return cols + cols / 16; }

__device__ inline unsigned long long ArgKey(float v, unsigned index) {
  const unsigned b = __float_as_uint(v);
  const unsigned ord = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return (static_cast<unsigned long long>(ord) << 32) | (0xffffffffu - index);
}

__device__ inline void ConsumerSync() { asm volatile("bar.sync 1, %0;" ::"n"(kConsumers) : "memory"); }

struct Shared {
  unsigned char ring[kSlots][kSlotBytes];
  signed char q1[kFf], q2[kFf];  // the staged input, two int8 levels
  float d[kFf / 32];             // their scale a 32 columns
  unsigned long long full[kSlots], empty[kSlots];
  int4 tag[kSlots];              // phase, first row, rows, stage index
  int end[kMaxPhases];           // the producer's stage count past each phase (INT_MAX: not yet known)
  float ss[2];                   // the staged input's sum of squares (phase parity)
  unsigned long long best;
  int last;
};

// Stage phase i's input: x + delta (the residual and the last projection's
// rows; delta may be null), written to `out` by the block that owns each 32
// columns when out is not null, times the rmsnorm weight when `norm` (the
// rmsnorm factor itself is applied to the rows' sums: sum W (x w r) =
// r sum W (x w)), in two int8 levels a 32 columns. Consumers only; one
// sync. A thread takes 32-column blocks t and t + 256; delta and norm come
// only with 4096 columns (one block a thread). Every load is issued before
// any store (call 10: loads after a possibly aliasing store each waited
// their own L2 round trip).
__device__ void StageInput(Shared& sh, const Model& m, int i, const float* __restrict__ x, const float* __restrict__ delta,
                           float* __restrict__ out, int cols, const float* __restrict__ norm) {
  const int t = threadIdx.x, blocks = cols / 32;
  if (t == 0) sh.ss[(i + 1) & 1] = 0.f;  // the next phase's (its last use ended at barrier i - 1)
  float v[2][32], e[32], w[32];
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int b = t + u * kConsumers;
#pragma unroll
    for (int j = 0; j < 32; j += 4) {
      const float4 f = b < blocks ? __ldcg(reinterpret_cast<const float4*>(x + 32 * b + j)) : make_float4(0, 0, 0, 0);
      v[u][j] = f.x, v[u][j + 1] = f.y, v[u][j + 2] = f.z, v[u][j + 3] = f.w;
    }
  }
  const bool one = t < blocks && (delta != nullptr || norm != nullptr);
#pragma unroll
  for (int j = 0; j < 32; j += 4) {
    const float4 f = one && delta != nullptr ? __ldcg(reinterpret_cast<const float4*>(delta + 32 * t + j)) : make_float4(0, 0, 0, 0);
    const float4 g = one && norm != nullptr ? __ldg(reinterpret_cast<const float4*>(norm + 32 * t + j)) : make_float4(1, 1, 1, 1);
    e[j] = f.x, e[j + 1] = f.y, e[j + 2] = f.z, e[j + 3] = f.w;
    w[j] = g.x, w[j + 1] = g.y, w[j + 2] = g.z, w[j + 3] = g.w;
  }
  float ss = 0.f;
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int b = t + u * kConsumers;
    if (b >= blocks) break;
    float amax = 0.f;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      if (u == 0) v[0][j] += e[j];
      ss = fmaf(v[u][j], v[u][j], ss);
    }
    if (out != nullptr && u == 0 && b % gridDim.x == blockIdx.x)
#pragma unroll
      for (int j = 0; j < 32; j += 4)
        *reinterpret_cast<float4*>(out + 32 * b + j) = make_float4(v[0][j], v[0][j + 1], v[0][j + 2], v[0][j + 3]);
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      if (u == 0) v[0][j] *= w[j];
      amax = fmaxf(amax, fabsf(v[u][j]));
    }
    if (t == 0 && u == 0) Trace(m, i, 4);  // its loads are back
    const float d1 = amax / 127.f, inv = d1 > 0.f ? 1.f / d1 : 0.f;
#pragma unroll
    for (int j = 0; j < 32; j += 4) {
      int c1[4], c2[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float r = rintf(v[u][j + q] * inv);
        c1[q] = static_cast<int>(r) & 255;
        c2[q] = static_cast<int>(rintf(128.f * (v[u][j + q] * inv - r))) & 255;
      }
      *reinterpret_cast<int*>(sh.q1 + 32 * b + j) = c1[0] | c1[1] << 8 | c1[2] << 16 | c1[3] << 24;
      *reinterpret_cast<int*>(sh.q2 + 32 * b + j) = c2[0] | c2[1] << 8 | c2[2] << 16 | c2[3] << 24;
    }
    sh.d[b] = d1;
  }
  if (norm != nullptr) {
    for (int o = 16; o; o /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (t % 32 == 0) atomicAdd(&sh.ss[i & 1], ss);
  }
  if (t == 0) Trace(m, i, 5);
  ConsumerSync();
}

// One test of an mbarrier's phase parity (no retry).
__device__ inline bool TryWait(unsigned long long* bar, unsigned parity) {
  unsigned ready = 0;
  asm volatile("{\n\t.reg .pred P;\n\tmbarrier.try_wait.parity.shared::cta.b64 P, [%1], %2;\n\tselp.b32 %0, 1, 0, P;\n\t}"
               : "=r"(ready)
               : "r"(SharedAddress(bar)), "r"(parity)
               : "memory");
  return ready != 0;
}

// A slot's tag, stored and loaded whole and never from a register copy.
__device__ inline void StoreTag(int4* p, int4 v) {
  asm volatile("st.volatile.shared.v4.s32 [%0], {%1, %2, %3, %4};" ::"r"(SharedAddress(p)), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}
__device__ inline int4 LoadTag(const int4* p) {
  int4 v;
  asm volatile("ld.volatile.shared.v4.s32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(SharedAddress(p))
               : "memory");
  return v;
}

__device__ inline int Dot16(int4 w, int4 q, int acc) {
  acc = __dp4a(w.x, q.x, acc);
  acc = __dp4a(w.y, q.y, acc);
  acc = __dp4a(w.z, q.z, acc);
  return __dp4a(w.w, q.w, acc);
}

// One stage (slot s) of phase i, by one warp: each lane dots its columns of
// the stage's rows, the warp sums them, releases the slot, and lane r
// writes row r (stores only: the projections' rows reach the residual
// through the next staging).
__device__ void ConsumeStage(Shared& sh, const Model& m, const Phase& p, int i, int s) {
  const int4 tag = sh.tag[s];
  const int row0 = tag.y, rows = tag.z, cols = p.cols, rb = RowBytes(cols), lane = threadIdx.x % 32;
  const unsigned char* st = sh.ring[s];
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  if (m.ablate & kNoMath) {  // the weights read, nothing computed
    unsigned x = 0;
    for (int c = lane; c < rows * rb / 16; c += 32) {
      const int4 w = reinterpret_cast<const int4*>(st)[c];
      x ^= w.x ^ w.y ^ w.z ^ w.w;
    }
    acc[0] = static_cast<float>(x & 1u);
  }
  for (int c = lane; !(m.ablate & kNoMath) && c < cols / 16; c += 32) {
    const int4 a1 = *reinterpret_cast<const int4*>(sh.q1 + 16 * c);
    const int4 a2 = *reinterpret_cast<const int4*>(sh.q2 + 16 * c);
    const float da = sh.d[c / 2];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      if (r >= rows) break;
      const int4 w = *reinterpret_cast<const int4*>(st + r * rb + 16 * c);
      const float ws = __half2float(reinterpret_cast<const __half*>(st + r * rb + cols)[c / 2]);
      const int d1 = Dot16(w, a1, 0), d2 = Dot16(w, a2, 0);
      acc[r] = fmaf(ws * da, static_cast<float>(d1) + static_cast<float>(d2) * (1.f / 128.f), acc[r]);
    }
  }
  __syncwarp();
  if (lane == 0) BarrierArrive(&sh.empty[s]);  // the slot is read
#pragma unroll
  for (int r = 0; r < 4; ++r)
    for (int o = 16; o; o /= 2) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
  const float r_norm = p.norm != nullptr ? rsqrtf(sh.ss[i & 1] / cols + kEps) : 1.f;
  float y = acc[0];
#pragma unroll
  for (int r = 1; r < 4; ++r) y = lane == r ? acc[r] : y;
  y *= r_norm;
  if (p.kind == kQkv) {
    if (lane < rows) m.qkv[row0 + lane] = y;
  } else if (p.kind == kOut) {
    if (lane < rows) m.ao[row0 + lane] = y;
  } else if (p.kind == kDown) {
    if (lane < rows) m.dn[row0 + lane] = y;
  } else if (p.kind == kGateUp) {
    const float u = __shfl_down_sync(0xffffffffu, y, 1);
    if (lane % 2 == 0 && lane + 1 < rows) m.inter[(row0 + lane) / 2] = y / (1.f + __expf(-y)) * u;
  } else {
    if (lane < rows) m.logits[row0 + lane] = y;
    unsigned long long key = lane < rows ? ArgKey(y, row0 + lane) : 0;
    for (int o = 16; o; o /= 2) key = max(key, __shfl_xor_sync(0xffffffffu, key, o));
    if (lane == 0) atomicMax(&sh.best, key);
  }
}

// Attention task `task` = (KV head g, split j): positions [32 j, 32 j + 32)
// of the context pos + 1 for g's 4 query heads, 256 threads. Each split
// writes its (acc, max, sum) partials; the last split of g to finish
// (an acq_rel counter) merges them into the attention's output. The split
// holding pos stores the new K/V row and takes it from qkv.
__device__ void Attention(Shared& sh, const Model& m, int layer, int task, float* scratch) {
  const int t = threadIdx.x, warp = t / 32, lane = t % 32, pos = m.pos, n = pos + 1;
  const int splits = (n + kSplit - 1) / kSplit, g = task / splits, j0 = (task % splits) * kSplit;
  const int cnt = min(kSplit, n - j0);
  const size_t head = static_cast<size_t>(layer) * kMaxContext * kKvHeads;
  __half* kc = m.kcache + head * kHeadDim;
  __half* vc = m.vcache + head * kHeadDim;
  const float* knew = m.qkv + kHidden + g * kHeadDim;
  const float* vnew = m.qkv + kHidden + kKvHeads * kHeadDim + g * kHeadDim;
  auto row = [&](__half* c, int j) { return c + (static_cast<size_t>(j) * kKvHeads + g) * kHeadDim; };
  // Loads first: this warp's 4 key rows (4 halves a lane), 4 query slices,
  // and for the value pass (thread t: dim t % 128 of heads t / 128 and
  // t / 128 + 2) the split's value rows.
  float k4[4][4];
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const int jj = j0 + 4 * warp + u;
    if (jj == pos) {
      for (int i = 0; i < 4; ++i) k4[u][i] = __half2float(__float2half(__ldcg(knew + 4 * lane + i)));
    } else if (jj < n) {
      const uint2 raw = __ldcg(reinterpret_cast<const uint2*>(row(kc, jj) + 4 * lane));
      const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
      const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
      k4[u][0] = a.x, k4[u][1] = a.y, k4[u][2] = b.x, k4[u][3] = b.y;
    } else {
      k4[u][0] = k4[u][1] = k4[u][2] = k4[u][3] = 0.f;
    }
  }
  float q[4][4];
#pragma unroll
  for (int h = 0; h < 4; ++h)
#pragma unroll
    for (int i = 0; i < 4; ++i) q[h][i] = __ldcg(m.qkv + (4 * g + h) * kHeadDim + 4 * lane + i);
  const int d = t % kHeadDim, h0 = t / kHeadDim;
  float v[kSplit];
#pragma unroll
  for (int u = 0; u < kSplit; ++u) {
    const int jj = j0 + u;
    v[u] = jj == pos ? __half2float(__float2half(__ldcg(vnew + d))) : jj < n ? __half2float(__ldcg(row(vc, jj) + d)) : 0.f;
  }
  if (pos >= j0 && pos < j0 + kSplit && t < kHeadDim) {  // the new row, for later steps
    row(kc, pos)[t] = __float2half(__ldcg(knew + t));
    row(vc, pos)[t] = __float2half(__ldcg(vnew + t));
  }
  const float scale = rsqrtf(static_cast<float>(kHeadDim));
#pragma unroll
  for (int u = 0; u < 4; ++u)
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      float sc = q[h][0] * k4[u][0] + q[h][1] * k4[u][1] + q[h][2] * k4[u][2] + q[h][3] * k4[u][3];
      for (int o = 16; o; o /= 2) sc += __shfl_xor_sync(0xffffffffu, sc, o);
      if (lane == 0) scratch[h * kSplit + 4 * warp + u] = 4 * warp + u < cnt ? sc * scale : -INFINITY;
    }
  ConsumerSync();
  // Thread t: the split's max and sum of its two heads, then p * v.
  float* part = m.partial + (static_cast<size_t>(g) * kMaxSplits + task % splits) * 4 * (kHeadDim + 2);
  for (int hh = 0; hh < 2; ++hh) {
    const int h = h0 + 2 * hh;
    float mx = -INFINITY;
    for (int u = 0; u < kSplit; ++u) mx = fmaxf(mx, scratch[h * kSplit + u]);
    float sum = 0.f, o = 0.f;
#pragma unroll
    for (int u = 0; u < kSplit; ++u) {
      const float e = __expf(scratch[h * kSplit + u] - mx);
      sum += e;
      o = fmaf(e, v[u], o);
    }
    part[h * (kHeadDim + 2) + d] = o;
    if (d == 0) part[h * (kHeadDim + 2) + kHeadDim] = mx, part[h * (kHeadDim + 2) + kHeadDim + 1] = sum;
  }
  __threadfence();
  ConsumerSync();
  if (t == 0) {
    unsigned old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(m.merged + layer * kKvHeads + g) : "memory");
    sh.last = old == static_cast<unsigned>(splits - 1);
  }
  ConsumerSync();
  if (sh.last) {  // merge g's splits in one pass (online max), 4 splits' loads at a time
    for (int hh = 0; hh < 2; ++hh) {
      const int h = h0 + 2 * hh;
      const float* p0 = m.partial + static_cast<size_t>(g) * kMaxSplits * 4 * (kHeadDim + 2) + h * (kHeadDim + 2);
      float mx = -INFINITY, sum = 0.f, o = 0.f;
      for (int sp0 = 0; sp0 < splits; sp0 += 4) {
        float ms[4], ls[4], os[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const float* ps = p0 + min(sp0 + u, splits - 1) * 4 * (kHeadDim + 2);
          ms[u] = sp0 + u < splits ? __ldcg(ps + kHeadDim) : -INFINITY;
          ls[u] = __ldcg(ps + kHeadDim + 1);
          os[u] = __ldcg(ps + d);
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          if (ms[u] == -INFINITY) continue;
          const float nm = fmaxf(mx, ms[u]), a = __expf(mx - nm), c = __expf(ms[u] - nm);
          sum = sum * a + ls[u] * c;
          o = o * a + os[u] * c;
          mx = nm;
        }
      }
      m.attn[(4 * g + h) * kHeadDim + d] = o / sum;
    }
  }
  ConsumerSync();  // the scratch and sh.last are free again
}

__global__ void __launch_bounds__(kConsumers + 32, 1) Step(Model m) {
  extern __shared__ __align__(128) unsigned char raw[];
  Shared& sh = *reinterpret_cast<Shared*>(raw);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int i = 0; i < kMaxPhases; ++i) sh.end[i] = 0x7fffffff;
    sh.ss[0] = sh.ss[1] = 0.f;
    sh.best = 0;
    InitRingBarriers(sh.full, sh.empty, kSlots, 1);  // a stage's one consumer warp releases it
  }
  __syncthreads();
  if (warp == kWarps) {  // the producer
    if (lane != 0) return;
    const int batch = ((m.ablate >> 4) & 15) != 0 ? ((m.ablate >> 4) & 15) : kBatch;
    const int flight = (m.ablate >> 8) & 15;  // stages in flight at most (0: any free slot)
    int k = 0;
    // The copy of claimed stage c of phase i into the next slot.
    auto push = [&](int i, int c) {
      const Phase& p = m.phases[i];
      const int rb = RowBytes(p.cols), row0 = c * p.rows_per_stage, rows = min(p.rows_per_stage, p.rows - row0);
      const int s = k % kSlots;
      const unsigned bytes = static_cast<unsigned>(rows * rb);
      if (k >= kSlots) BarrierWait(&sh.empty[s], (k / kSlots - 1) & 1);
      // Stage k - flight landed first: the copies in flight are what the
      // DRAM needs, not more (a deeper queue only delays every L2 access).
      if (flight > 0 && k >= flight) BarrierWait(&sh.full[(k - flight) % kSlots], ((k - flight) / kSlots) & 1);
      StoreTag(&sh.tag[s], make_int4(i, row0, rows, k));
      BarrierExpect(&sh.full[s], bytes);
      if (m.ablate & kEvictFirst) {  // the weights marked first out of the L2
        unsigned long long policy;
        asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
                SharedAddress(sh.ring[s])),
            "l"(p.w + static_cast<size_t>(row0) * rb), "r"(bytes), "r"(SharedAddress(&sh.full[s])), "l"(policy)
            : "memory");
      } else {
        BulkCopy(sh.ring[s], p.w + static_cast<size_t>(row0) * rb, bytes, &sh.full[s]);
      }
      ++k;
    };
    auto stages_of = [&](int i) {
      const Phase& p = m.phases[i];
      return p.w == nullptr ? 0 : (p.rows + p.rows_per_stage - 1) / p.rows_per_stage;
    };
    if (!(m.ablate & kPrefetch)) {
      for (int i = 0; i < m.n_phases; ++i) {
        const int stages = stages_of(i);
        for (;;) {
          const int c0 = stages == 0 ? 0 : static_cast<int>(atomicAdd(m.claims + i, batch));
          if (c0 >= stages) break;
          for (int c = c0; c < min(c0 + batch, stages); ++c) push(i, c);
        }
        *static_cast<volatile int*>(&sh.end[i]) = k;  // before any stage of phase i + 1
        Trace(m, i, 3);
      }
      return;
    }
    // kPrefetch: claims run kAhead stages ahead of the copies, each claimed
    // stage asked of the L2 at once; a queue entry is (phase, stage), stage
    // -1 the phase's end.
    constexpr int kQueue = kAhead + 8;
    int qp[kQueue], qc[kQueue], head = 0, size = 0, pi = 0;
    while (pi < m.n_phases || size > 0) {
      while (pi < m.n_phases && size < kAhead) {
        const int stages = stages_of(pi);
        const int c0 = stages == 0 ? 0 : static_cast<int>(atomicAdd(m.claims + pi, batch));
        if (c0 >= stages) {
          qp[(head + size) % kQueue] = pi, qc[(head + size) % kQueue] = -1, ++size, ++pi;
          continue;
        }
        const Phase& p = m.phases[pi];
        const int rb = RowBytes(p.cols);
        for (int c = c0; c < min(c0 + batch, stages); ++c) {
          const int row0 = c * p.rows_per_stage, rows = min(p.rows_per_stage, p.rows - row0);
          asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p.w + static_cast<size_t>(row0) * rb),
                       "r"(rows * rb)
                       : "memory");
          qp[(head + size) % kQueue] = pi, qc[(head + size) % kQueue] = c, ++size;
        }
      }
      const int i = qp[head], c = qc[head];
      head = (head + 1) % kQueue, --size;
      if (c < 0)
        *static_cast<volatile int*>(&sh.end[i]) = k;
      else
        push(i, c);
    }
    return;
  }
  unsigned long long c_start = 0, g_start = 0;  // block 0's SM clock against the global timer (traced runs)
  if (m.trace != nullptr && threadIdx.x == 0) {
    c_start = clock64();
    g_start = GlobalTimerNs();
  }
  // Consumer warp w takes the block's stages w, w + 8, w + 16, ... in turn.
  int kw = warp, cur = 0;  // cur: the residual buffer the next norm staging reads
  float* scratch = reinterpret_cast<float*>(sh.q1);  // the attention's scores
  for (int i = 0; i < m.n_phases; ++i) {
    const Phase p = m.phases[i];
    if (i > 0) {  // grid barrier i - 1
      if (threadIdx.x == 0)
        while (LoadAcquire(m.bar + i - 1) < gridDim.x) {
        }
      ConsumerSync();
    }
    if (threadIdx.x == 0) Trace(m, i, 0);
    if (p.kind == kAttn) {
      const int tasks = kKvHeads * ((m.pos + kSplit) / kSplit);
      for (int task = blockIdx.x; !(m.ablate & kNoAttn) && task < tasks; task += gridDim.x)
        Attention(sh, m, p.layer, task, scratch);
    } else if (!(m.ablate & kNoStage)) {
      if (p.kind == kOut) {
        StageInput(sh, m, i, m.attn, nullptr, nullptr, p.cols, nullptr);
      } else if (p.kind == kDown) {
        StageInput(sh, m, i, m.inter, nullptr, nullptr, p.cols, nullptr);
      } else {  // qkv, gate/up, head: the residual plus the last projection's rows, normalized
        const float* delta = p.kind == kGateUp ? m.ao : p.layer > 0 ? m.dn : nullptr;
        StageInput(sh, m, i, m.res[cur], delta, m.res[cur ^ 1], p.cols, p.norm);
        cur ^= 1;
      }
    }
    if (threadIdx.x == 0) Trace(m, i, 1);
    for (;;) {  // this warp's stages of phase i
      if (kw >= *static_cast<volatile int*>(&sh.end[i])) break;
      const int s = kw % kSlots;
      const unsigned parity = (kw / kSlots) & 1;
      // Slot s's previous fill (stage kw - 11) is another warp's, so a first
      // wait may still see the fill before it (same parity); the tag tells
      // whether the producer armed the slot for stage kw, which it does only
      // once stage kw - 11 is consumed, and from then on the wait is exact.
      if (!TryWait(&sh.full[s], parity)) continue;
      const int4 tag = LoadTag(&sh.tag[s]);
      if (tag.w != kw || !TryWait(&sh.full[s], parity)) continue;
      if (tag.x != i) break;  // phase i + 1's: taken after the barrier
      ConsumeStage(sh, m, p, i, s);
      kw += kWarps;
    }
    ConsumerSync();
    if (threadIdx.x == 0) {
      Trace(m, i, 2);
      if (p.kind == kHead && sh.best != 0) atomicMax(m.best, sh.best);
      __threadfence();
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(m.bar + i) : "memory");
    }
  }
  if (m.trace != nullptr && threadIdx.x == 0) {  // after the phases' entries: cycles, then ns
    const unsigned long long g_end = GlobalTimerNs();
    m.trace[(static_cast<size_t>(m.n_phases) * gridDim.x + blockIdx.x) * kTrace] = clock64() - c_start;
    m.trace[(static_cast<size_t>(m.n_phases) * gridDim.x + blockIdx.x) * kTrace + 1] = g_end - g_start;
  }
}

// ---- host ----

__host__ __device__ inline uint32_t Hash(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}
__host__ __device__ inline float Uniform(uint64_t seed, uint64_t i) {
  return (Hash(seed * 0x9e3779b97f4a7c15ULL + i) >> 8) * (1.f / 16777216.f);
}

// Random Q8_0 rows: int8 in [-127, 127], f16 scales around 1 / (127 sqrt(cols)).
__global__ void FillRows(unsigned char* w, long long rows, int cols, uint64_t seed) {
  const int rb = RowBytes(cols);
  const long long n = rows * cols, step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += step)
    w[(i / cols) * rb + i % cols] = static_cast<unsigned char>(static_cast<int>(Uniform(seed, i) * 255.f) - 127);
  const int per = cols / 32;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < rows * per; i += step)
    reinterpret_cast<__half*>(w + (i / per) * rb + cols)[i % per] =
        __float2half((0.5f + Uniform(seed + 1, i)) / (127.f * sqrtf(static_cast<float>(cols))));
}

// Random f16 values in [-1, 1).
__global__ void FillHalf(__half* v, long long n, uint64_t seed) {
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += step)
    v[i] = __float2half(2.f * Uniform(seed, i) - 1.f);
}

double RowDot(const unsigned char* row, int cols, const std::vector<double>& x) {
  const __half* sc = reinterpret_cast<const __half*>(row + cols);
  double s = 0;
  for (int b = 0; b < cols / 32; ++b) {
    double t = 0;
    for (int i = 0; i < 32; ++i) t += static_cast<signed char>(row[32 * b + i]) * x[32 * b + i];
    s += t * __half2float(sc[b]);
  }
  return s;
}

std::vector<double> RmsNorm(const std::vector<double>& h, const std::vector<float>& w) {
  double ss = 0;
  for (double v : h) ss += v * v;
  const double r = 1.0 / std::sqrt(ss / h.size() + kEps);
  std::vector<double> x(h.size());
  for (size_t i = 0; i < h.size(); ++i) x[i] = h[i] * r * w[i];
  return x;
}

struct Weights {  // host copies (check configuration only) and device buffers
  std::vector<std::vector<unsigned char>> qkv, out, gateup, down;
  std::vector<unsigned char> head;
  std::vector<std::vector<float>> attn_norm, ffn_norm;
  std::vector<float> out_norm;
};

std::vector<float> RandomNorm(uint64_t seed) {
  std::vector<float> w(kHidden);
  for (int i = 0; i < kHidden; ++i) w[i] = 0.8f + 0.4f * Uniform(seed, i);
  return w;
}

struct Run {
  int layers, vocab, pos;
  bool keep_host;  // host copies for the reference
};

template <typename T>
T* Upload(const std::vector<T>& v) {
  T* d = nullptr;
  CHECK(cudaMalloc(&d, v.size() * sizeof(T)));
  CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

// The instantiated graph's kernel node (the step) takes m as its argument.
void SetStepArgs(cudaGraphExec_t ge, cudaGraph_t g, Model m) {
  cudaGraphNode_t nodes[8];
  size_t count = 8;
  CHECK(cudaGraphGetNodes(g, nodes, &count));
  for (size_t j = 0; j < count; ++j) {
    cudaGraphNodeType type;
    CHECK(cudaGraphNodeGetType(nodes[j], &type));
    if (type != cudaGraphNodeTypeKernel) continue;
    cudaKernelNodeParams kp;
    CHECK(cudaGraphKernelNodeGetParams(nodes[j], &kp));
    void* args[1] = {&m};
    kp.kernelParams = args;
    CHECK(cudaGraphExecKernelNodeSetParams(ge, nodes[j], &kp));
  }
}

// One more run of the step with every block's phase times recorded, and
// where they go, per phase kind (medians over blocks, summed over phases).
void TraceRun(cudaGraphExec_t ge, cudaGraph_t g, Model m, const std::vector<Phase>& phases, int sms, cudaStream_t st,
              int ablate) {
  const size_t n = (phases.size() + 1) * sms * kTrace;
  CHECK(cudaMalloc(&m.trace, n * sizeof(unsigned long long)));
  m.ablate = ablate;
  SetStepArgs(ge, g, m);
  for (int r = 0; r < 3; ++r) CHECK(cudaGraphLaunch(ge, st));
  CHECK(cudaStreamSynchronize(st));
  std::vector<unsigned long long> t(n);
  CHECK(cudaMemcpy(t.data(), m.trace, n * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(m.trace));
  auto at = [&](size_t i, int b, int what) { return static_cast<double>(t[(i * sms + b) * kTrace + what]); };
  std::printf("SM clock over the step (block 0): %.0f MHz\n", at(phases.size(), 0, 0) / at(phases.size(), 0, 1) * 1e3);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const char* names[] = {"qkv", "attn", "out", "gateup", "down", "head"};
  double sum[6][7] = {}, count_kind[6] = {};
  const double t0 = at(0, 0, 0);
  double end = 0;
  for (size_t i = 0; i < phases.size(); ++i) {
    std::vector<double> stage, consume, lead, loads, work;
    double last_done = 0, first_pass = 1e300;
    for (int b = 0; b < sms; ++b) {
      stage.push_back(at(i, b, 1) - at(i, b, 0));
      consume.push_back(at(i, b, 2) - at(i, b, 1));
      lead.push_back(at(i, b, 0) - at(i, b, 3));  // > 0: the producer had claimed all of it before the barrier
      loads.push_back(at(i, b, 4) - at(i, b, 0));
      work.push_back(at(i, b, 5) - at(i, b, 4));
      last_done = std::max(last_done, at(i, b, 2));
      first_pass = std::min(first_pass, at(i, b, 0));
    }
    double next_pass = last_done;
    if (i + 1 < phases.size()) {
      std::vector<double> pass;
      for (int b = 0; b < sms; ++b) pass.push_back(at(i + 1, b, 0));
      next_pass = median(pass);
    }
    end = std::max(end, last_done);
    const int kind = phases[i].kind;
    sum[kind][0] += median(stage);
    sum[kind][1] += median(consume);
    sum[kind][2] += last_done - first_pass - median(stage) - median(consume);  // the slowest block's extra
    sum[kind][3] += next_pass - last_done;                                       // the barrier
    sum[kind][4] += median(lead);
    if (kind != kAttn) sum[kind][5] += median(loads), sum[kind][6] += median(work);
    count_kind[kind] += 1;
  }
  std::printf("trace, ablate %d (one step, %.3f ms from the first barrier pass to the last phase's end): µs summed over the "
              "phases of a kind (median block)\n%-7s %6s %10s %10s %10s %10s %16s %14s %14s\n",
              ablate, (end - t0) * 1e-6, "kind", "phases", "staging", "stages", "skew", "barrier", "producer lead/ph", "staging loads", "then to sync");
  for (int k = 0; k < 6; ++k)
    std::printf("%-7s %6.0f %10.1f %10.1f %10.1f %10.1f %16.2f %14.1f %14.1f\n", names[k], count_kind[k],
                sum[k][0] * 1e-3, sum[k][1] * 1e-3, sum[k][2] * 1e-3, sum[k][3] * 1e-3,
                sum[k][4] * 1e-3 / std::max(1.0, count_kind[k]), sum[k][5] * 1e-3, sum[k][6] * 1e-3);
}

}  // namespace

int main(int argc, char** argv) {
  const int pos = argc > 1 ? std::atoi(argv[1]) : 64;
  std::vector<int> ablations;  // the timed runs: argv[2..], each a kNoMath | kNoStage | kNoAttn mask (default 0)
  for (int a = 2; a < argc; ++a) ablations.push_back(std::atoi(argv[a]));
  if (ablations.empty()) ablations.push_back(0);
  if (pos < 1 || pos >= kMaxContext) {
    std::fprintf(stderr, "position must be in [1, %d)\n", kMaxContext);
    return 2;
  }
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const size_t shared = sizeof(Shared);
  CHECK(cudaFuncSetAttribute(Step, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Step, kConsumers + 32, shared));
  std::printf("%s, %d SMs; %zu bytes of shared memory a block, %d block(s) an SM\n", prop.name, sms, shared, per_sm);
  if (per_sm < 1) return 1;
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  StreamTimer timer(st);

  for (const Run run : {Run{2, 4096, pos, true}, Run{36, 151936, pos, false}}) {
    const uint64_t seed = 1000 + run.layers;
    // Weights, rows, per layer and the head; norms.
    std::vector<Phase> phases;
    std::vector<void*> owned;
    Weights host;
    size_t bytes = 0;
    // Rows filled on the device (and copied back for the reference).
    auto rows_dev = [&](uint64_t s, int rows, int cols, std::vector<unsigned char>* keep) {
      const size_t size = static_cast<size_t>(rows) * RowBytes(cols);
      unsigned char* d = nullptr;
      CHECK(cudaMalloc(&d, size));
      FillRows<<<4 * sms, 256>>>(d, rows, cols, s);
      CHECK(cudaGetLastError());
      owned.push_back(d);
      bytes += size;
      if (keep != nullptr) {
        keep->resize(size);
        CHECK(cudaMemcpy(keep->data(), d, size, cudaMemcpyDeviceToHost));
      }
      return reinterpret_cast<const char*>(d);
    };
    auto keep_rows = [&](std::vector<std::vector<unsigned char>>& v) {
      if (!run.keep_host) return static_cast<std::vector<unsigned char>*>(nullptr);
      v.emplace_back();
      return &v.back();
    };
    auto norm_dev = [&](uint64_t s, std::vector<std::vector<float>>* keep) {
      std::vector<float> w = RandomNorm(s);
      float* d = Upload(w);
      owned.push_back(d);
      if (keep != nullptr) keep->push_back(std::move(w));
      return d;
    };
    for (int l = 0; l < run.layers; ++l) {
      const uint64_t s = seed * 100 + l * 10;
      const float* an = norm_dev(s, run.keep_host ? &host.attn_norm : nullptr);
      const float* fn = norm_dev(s + 1, run.keep_host ? &host.ffn_norm : nullptr);
      const char* wq = rows_dev(s + 2, kQkvRows, kHidden, keep_rows(host.qkv));
      const char* wo = rows_dev(s + 4, kHidden, kHidden, keep_rows(host.out));
      const char* wg = rows_dev(s + 6, 2 * kFf, kHidden, keep_rows(host.gateup));
      const char* wd = rows_dev(s + 8, kHidden, kFf, keep_rows(host.down));
      phases.push_back({kQkv, l, wq, kQkvRows, kHidden, 4, an});
      phases.push_back({kAttn, l, nullptr, 0, 0, 0, nullptr});
      phases.push_back({kOut, l, wo, kHidden, kHidden, 4, nullptr});
      phases.push_back({kGateUp, l, wg, 2 * kFf, kHidden, 4, fn});
      phases.push_back({kDown, l, wd, kHidden, kFf, 1, nullptr});
    }
    {
      std::vector<float> on = RandomNorm(seed * 100 + 99);
      float* d = Upload(on);
      owned.push_back(d);
      const char* wd = rows_dev(seed * 100 + 98, run.vocab, kHidden, run.keep_host ? &host.head : nullptr);
      phases.push_back({kHead, run.layers, wd, run.vocab, kHidden, 4, d});
      if (run.keep_host) host.out_norm = std::move(on);
    }
    // State: h0, the caches' rows before pos.
    std::vector<float> h0(kHidden);
    for (int i = 0; i < kHidden; ++i) h0[i] = 2.f * Uniform(seed + 7, i) - 1.f;
    const size_t cache_n = static_cast<size_t>(run.layers) * kMaxContext * kKvHeads * kHeadDim;
    std::vector<__half> kc(run.keep_host ? cache_n : 0), vc(run.keep_host ? cache_n : 0);
    const int n = static_cast<int>(phases.size());
    if (n > kMaxPhases) {
      std::fprintf(stderr, "%d phases, at most %d\n", n, kMaxPhases);
      return 2;
    }
    Model m{};
    m.phases = Upload(phases);
    m.n_phases = n;
    m.pos = run.pos;
    const float* h0_d = Upload(h0);
    for (float*& r : m.res) CHECK(cudaMalloc(&r, kHidden * sizeof(float)));
    CHECK(cudaMalloc(&m.ao, kHidden * sizeof(float)));
    CHECK(cudaMalloc(&m.dn, kHidden * sizeof(float)));
    CHECK(cudaMalloc(&m.qkv, kQkvRows * sizeof(float)));
    CHECK(cudaMalloc(&m.attn, kHidden * sizeof(float)));
    CHECK(cudaMalloc(&m.inter, kFf * sizeof(float)));
    CHECK(cudaMalloc(&m.logits, run.vocab * sizeof(float)));
    CHECK(cudaMalloc(&m.kcache, cache_n * sizeof(__half)));
    CHECK(cudaMalloc(&m.vcache, cache_n * sizeof(__half)));
    FillHalf<<<4 * sms, 256>>>(m.kcache, static_cast<long long>(cache_n), seed + 8);
    FillHalf<<<4 * sms, 256>>>(m.vcache, static_cast<long long>(cache_n), seed + 9);
    CHECK(cudaDeviceSynchronize());
    if (run.keep_host) {
      CHECK(cudaMemcpy(kc.data(), m.kcache, cache_n * sizeof(__half), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(vc.data(), m.vcache, cache_n * sizeof(__half), cudaMemcpyDeviceToHost));
    }
    CHECK(cudaMalloc(&m.bar, n * sizeof(unsigned)));
    CHECK(cudaMalloc(&m.claims, n * sizeof(unsigned)));
    CHECK(cudaMalloc(&m.best, sizeof(unsigned long long)));
    CHECK(cudaMalloc(&m.partial, static_cast<size_t>(kKvHeads) * kMaxSplits * 4 * (kHeadDim + 2) * sizeof(float)));
    CHECK(cudaMalloc(&m.merged, static_cast<size_t>(run.layers) * kKvHeads * sizeof(unsigned)));
    // Outputs poisoned (NaN) before the run.
    CHECK(cudaMemset(m.logits, 0xff, run.vocab * sizeof(float)));
    CHECK(cudaMemset(m.attn, 0xff, kHidden * sizeof(float)));
    CHECK(cudaMemset(m.inter, 0xff, kFf * sizeof(float)));
    CHECK(cudaMemset(m.qkv, 0xff, kQkvRows * sizeof(float)));
    CHECK(cudaMemset(m.res[1], 0xff, kHidden * sizeof(float)));
    CHECK(cudaMemset(m.ao, 0xff, kHidden * sizeof(float)));
    CHECK(cudaMemset(m.dn, 0xff, kHidden * sizeof(float)));

    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    CHECK(cudaMemcpyAsync(m.res[0], h0_d, kHidden * sizeof(float), cudaMemcpyDeviceToDevice, st));
    CHECK(cudaMemsetAsync(m.bar, 0, n * sizeof(unsigned), st));
    CHECK(cudaMemsetAsync(m.claims, 0, n * sizeof(unsigned), st));
    CHECK(cudaMemsetAsync(m.best, 0, sizeof(unsigned long long), st));
    CHECK(cudaMemsetAsync(m.merged, 0, static_cast<size_t>(run.layers) * kKvHeads * sizeof(unsigned), st));
    LaunchCooperative(st, sms, kConsumers + 32, shared, Step, m);
    CHECK(cudaStreamEndCapture(st, &g));
    cudaGraphExec_t ge;
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    CHECK(cudaGraphLaunch(ge, st));
    CHECK(cudaStreamSynchronize(st));

    std::vector<float> logits(run.vocab), h(kHidden);
    unsigned long long best = 0;
    CHECK(cudaMemcpy(logits.data(), m.logits, run.vocab * sizeof(float), cudaMemcpyDeviceToHost));
    // The head's staging (the 2 L + 1-th) wrote the final residual to res[1].
    CHECK(cudaMemcpy(h.data(), m.res[1], kHidden * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&best, m.best, sizeof(best), cudaMemcpyDeviceToHost));
    const unsigned argmax = 0xffffffffu - static_cast<unsigned>(best & 0xffffffffu);
    std::printf("\n%d layers, vocabulary %d, position %d: %zu phases, %.3f GB of weights\n", run.layers, run.vocab,
                run.pos, phases.size(), bytes / 1e9);

    if (run.keep_host) {  // the double-precision reference
      std::vector<double> hr(h0.begin(), h0.end());
      for (int l = 0; l < run.layers; ++l) {
        std::vector<double> x = RmsNorm(hr, host.attn_norm[l]), qkv(kQkvRows);
        for (int r = 0; r < kQkvRows; ++r) qkv[r] = RowDot(host.qkv[l].data() + static_cast<size_t>(r) * RowBytes(kHidden), kHidden, x);
        std::vector<double> att(kHidden);
        const size_t base = static_cast<size_t>(l) * kMaxContext * kKvHeads * kHeadDim;
        for (int g = 0; g < kKvHeads; ++g) {
          auto kv = [&](const std::vector<__half>& c, int off, int j, int d) {
            if (j == run.pos) return static_cast<double>(__half2float(__float2half(static_cast<float>(qkv[off + g * kHeadDim + d]))));
            return static_cast<double>(__half2float(c[base + (static_cast<size_t>(j) * kKvHeads + g) * kHeadDim + d]));
          };
          for (int hq = 0; hq < 4; ++hq) {
            std::vector<double> sc(run.pos + 1);
            double mx = -1e300, sum = 0;
            for (int j = 0; j <= run.pos; ++j) {
              double s = 0;
              for (int d = 0; d < kHeadDim; ++d) s += qkv[(4 * g + hq) * kHeadDim + d] * kv(kc, kHidden, j, d);
              sc[j] = s / std::sqrt(static_cast<double>(kHeadDim));
              mx = std::max(mx, sc[j]);
            }
            for (double& s : sc) sum += (s = std::exp(s - mx));
            for (int d = 0; d < kHeadDim; ++d) {
              double o = 0;
              for (int j = 0; j <= run.pos; ++j) o += sc[j] / sum * kv(vc, kHidden + kKvHeads * kHeadDim, j, d);
              att[(4 * g + hq) * kHeadDim + d] = o;
            }
          }
        }
        for (int r = 0; r < kHidden; ++r) hr[r] += RowDot(host.out[l].data() + static_cast<size_t>(r) * RowBytes(kHidden), kHidden, att);
        x = RmsNorm(hr, host.ffn_norm[l]);
        std::vector<double> inter(kFf);
        for (int j = 0; j < kFf; ++j) {
          const double gv = RowDot(host.gateup[l].data() + static_cast<size_t>(2 * j) * RowBytes(kHidden), kHidden, x);
          const double uv = RowDot(host.gateup[l].data() + static_cast<size_t>(2 * j + 1) * RowBytes(kHidden), kHidden, x);
          inter[j] = gv / (1.0 + std::exp(-gv)) * uv;
        }
        for (int r = 0; r < kHidden; ++r) hr[r] += RowDot(host.down[l].data() + static_cast<size_t>(r) * RowBytes(kFf), kFf, inter);
      }
      const std::vector<double> x = RmsNorm(hr, host.out_norm);
      double err = 0, mag = 0, herr = 0, hmag = 0;
      unsigned ref_arg = 0;
      std::vector<double> ref(run.vocab);
      for (int r = 0; r < run.vocab; ++r) {
        ref[r] = RowDot(host.head.data() + static_cast<size_t>(r) * RowBytes(kHidden), kHidden, x);
        if (ref[r] > ref[ref_arg]) ref_arg = r;
        err = std::max(err, std::fabs(logits[r] - ref[r]));  // NaN (a poisoned value left) fails below
        if (!(std::fabs(logits[r] - ref[r]) <= 1e30)) err = INFINITY;
        mag = std::max(mag, std::fabs(ref[r]));
      }
      for (int i = 0; i < kHidden; ++i) {
        herr = std::max(herr, std::fabs(h[i] - hr[i]));
        if (!(std::fabs(h[i] - hr[i]) <= 1e30)) herr = INFINITY;
        hmag = std::max(hmag, std::fabs(hr[i]));
      }
      const bool ok = err <= 2e-3 * mag && herr <= 2e-3 * hmag && argmax == ref_arg;
      std::printf("check: logits max error %.2e of max |logit| %.3f (%.1e), h %.1e relative, argmax %u (reference %u): %s\n",
                  err, mag, err / mag, herr / hmag, argmax, ref_arg, ok ? "ok" : "FAILED");
      if (!ok) return 1;
    } else {
      // The probe on the same weights (its first 4 GiB), then the step.
      unsigned* sink = nullptr;
      CHECK(cudaMalloc(&sink, sizeof(unsigned)));
      // The probe reads the head's rows (the largest allocation).
      const char* probe_base = phases.back().w;
      const long long probe_bytes = static_cast<long long>(run.vocab) * RowBytes(kHidden) / 16 * 16;
      const float probe_ms = timer.MedianMs([&] { LaunchProbe(st, probe_base, probe_bytes, sink); }, 21);
      const double probe_gbs = probe_bytes / (probe_ms * 1e6);
      for (int ab : ablations) {
        if (ab != m.ablate) {
          m.ablate = ab;
          SetStepArgs(ge, g, m);
        }
        const float step_ms = timer.MedianMs([&] { CHECK(cudaGraphLaunch(ge, st)); }, 51);
        CHECK(cudaStreamSynchronize(st));
        unsigned long long best2 = 0;
        CHECK(cudaMemcpy(&best2, m.best, sizeof(best2), cudaMemcpyDeviceToHost));
        std::printf("probe %.1f GB/s (%lld MB in %.3f ms); ablate %d: step %.3f ms, %.1f GB/s, %.1f %% of the probe (the bytes at its rate: %.3f ms); argmax %u, %s\n",
                    probe_gbs, probe_bytes >> 20, probe_ms, ab, step_ms, bytes / (step_ms * 1e6),
                    100.0 * bytes / (step_ms * 1e6) / probe_gbs, bytes / (probe_gbs * 1e6), argmax,
                    (ab & 7) != 0 ? "(ablated)" : best2 == best ? "the same across runs" : "DIFFERENT across runs");
      }
      CHECK(cudaFree(sink));
      if (std::getenv("MK_TRACE") != nullptr)  // every timed setting again, traced
        for (int ab : ablations) TraceRun(ge, g, m, phases, sms, st, ab);
    }
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));
    for (void* p : owned) CHECK(cudaFree(p));
    for (void* p : {static_cast<void*>(const_cast<Phase*>(m.phases)), static_cast<void*>(const_cast<float*>(h0_d)),
                    static_cast<void*>(m.res[0]), static_cast<void*>(m.res[1]), static_cast<void*>(m.ao),
                    static_cast<void*>(m.dn), static_cast<void*>(m.qkv), static_cast<void*>(m.attn),
                    static_cast<void*>(m.inter), static_cast<void*>(m.logits), static_cast<void*>(m.kcache),
                    static_cast<void*>(m.vcache), static_cast<void*>(m.bar), static_cast<void*>(m.claims),
                    static_cast<void*>(m.best), static_cast<void*>(m.partial), static_cast<void*>(m.merged)})
      CHECK(cudaFree(p));
  }
  return 0;
}
