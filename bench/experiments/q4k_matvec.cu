// Experiment (not part of the build): how close can a Q4_K decode matvec get
// to a plain read of its bytes, and what does Q4_K's 6-bit scale header cost?
//
// Q4_K_M's decode step sits at ~60 % of the probe where its launch floor (the
// same launches as perfect reads) is at ~80 %: its Q4_K and Q6_K matvecs
// lose ~0.3 ms a token to their arithmetic (kiln profile --attribution),
// where the planar Q8_0 kernels are within 4-8 % of a plain read
// (access_pattern.cu). Here one kernel, written by hand with kiln's
// arithmetic (two-level int8 activations staged per block, two dp4a per 4
// weights), in the launch floor's setup: 40 launches back to back with
// programmatic stream serialization, each on the next bytes of a 4 GiB ring,
// median of 5 chains, µs a launch. A warp owns R rows at a time; lane l
// takes the 64-weight pieces l, l + 32, ... of each row (a super-block's
// sub-block pair c = l mod 4, fixed per lane), D items (R rows' pieces) in
// flight; one wave of blocks, each staging the activations once and walking
// row groups. Weight layouts:
//   gguf   the GGUF blocks as stored (kiln's kQ4_K): a piece loads its
//          super-block's 16-byte header and its 32 bytes of nibbles, and
//          decodes the two 6-bit scales and mins it needs
//   dec    the nibbles in a plane of their own [rows][cols/2] and a second
//          plane of decoded headers [rows][cols/256][4 pairs + d/dmin]: per
//          pair c the bytes (sc 2c, sc 2c+1, m 2c, m 2c+1), then d and dmin
//          as f16 (20 bytes a super-block where GGUF has 16: +2.8 % bytes)
// and `read`: the same kernel, loads and staging without the arithmetic;
// `probe`: the bandwidth probe's loop on as many bytes, one launch each.
// Before timing, each layout's result is checked against a double-precision
// reference on random blocks and activations (`check` lines; the bound,
// 2e-4 of the largest output, is the activations' two-level quantization
// with a few 30x outliers, the same for every kernel).
// Usage (shapes as arguments; none: all, twice):
//   nvcc -std=c++20 -O3 -arch=sm_90 -o q4k_matvec q4k_matvec.cu
//   ./q4k_matvec gateup down qkv out
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "chain_timing.h"

namespace {

constexpr long long kRing = 4LL << 30;
constexpr int kLaunches = 40;
constexpr int kThreads = 256;
constexpr int kMaxCols = 12288;

enum Layout { kGguf = 0, kDec = 1 };

struct Args {
  const unsigned char* w;    // gguf: the blocks; dec: the nibble plane, then the header plane
  const float* x;            // activations [cols]
  float* out;                // [rows]
  int rows, cols;
};

__device__ inline unsigned Dp4a(unsigned a, unsigned b, unsigned c) {  // unsigned a, signed b
  unsigned d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ inline float ByteF(unsigned v, int k) {  // byte k of v as a float, exact
  return __uint_as_float(__byte_perm(v, 0x4B000000u, 0x7540u | k)) - 8388608.0f;
}

// What a lane loads for one row's piece.
struct Piece {
  int4 hdr;      // gguf: the super-block's header; dec: .x = the pair's 4 bytes, .y = d | dmin << 16
  int4 q0, q1;   // 32 bytes of nibbles
};

template <Layout L>
__device__ inline Piece LoadPiece(const Args& a, int row, int piece) {
  Piece p;
  const int sb = piece >> 2, c = piece & 3;
  if (L == kGguf) {
    const unsigned char* b = a.w + (static_cast<long long>(row) * (a.cols / 256) + sb) * 144;
    p.hdr = __ldg(reinterpret_cast<const int4*>(b));
    p.q0 = __ldg(reinterpret_cast<const int4*>(b + 16 + 32 * c));
    p.q1 = __ldg(reinterpret_cast<const int4*>(b + 32 + 32 * c));
  } else {
    const unsigned char* q = a.w + static_cast<long long>(row) * (a.cols / 2) + 32 * piece;
    p.q0 = __ldg(reinterpret_cast<const int4*>(q));
    p.q1 = __ldg(reinterpret_cast<const int4*>(q + 16));
    const unsigned char* h = a.w + static_cast<long long>(a.rows) * (a.cols / 2) +
                             (static_cast<long long>(row) * (a.cols / 256) + sb) * 20;
    p.hdr.x = __ldg(reinterpret_cast<const int*>(h + 4 * c));
    p.hdr.y = __ldg(reinterpret_cast<const int*>(h + 16));
    p.hdr.z = p.hdr.w = 0;
  }
  return p;
}

// Shared-memory activations: two int8 levels per column, per 32-column block
// the level-2 unit d2 (x ~ d2 (128 q1 + q2)) and the sum of x. The codes
// take 16 bytes of padding after every 64 columns: a warp's lanes read
// pieces 64 columns apart, which would otherwise hit the same banks 4 ways.
constexpr int kPadded = kMaxCols / 64 * 80;
__device__ inline int CodeByte(int col) { return col + col / 64 * 16; }
struct Staged {
  unsigned char q1[kPadded], q2[kPadded];
  float d2[kMaxCols / 32], sum[kMaxCols / 32];
};

__device__ void Stage(const Args& a, Staged& s) {
  const int lane = threadIdx.x & 31;
  for (int q = threadIdx.x; q < a.cols / 4; q += blockDim.x) {  // a quad of columns; 8 lanes a block
    const float4 v = reinterpret_cast<const float4*>(a.x)[q];
    float amax = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
    for (int m = 1; m < 8; m *= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, m));
    const float d1 = amax * (1.0f / 127.0f), inv = amax > 0 ? 127.0f / amax : 0.0f, d2 = d1 * (1.0f / 128.0f);
    const float xs[4] = {v.x, v.y, v.z, v.w};
    unsigned w1 = 0, w2 = 0;
    float sum = 0;
    for (int i = 0; i < 4; ++i) {
      const float q1 = rintf(xs[i] * inv), r = fmaf(-d1, q1, xs[i]);
      const float q2 = rintf(r * inv * 128.0f);
      w1 |= (static_cast<unsigned>(static_cast<int>(q1)) & 255u) << (8 * i);
      w2 |= (static_cast<unsigned>(static_cast<int>(q2)) & 255u) << (8 * i);
      sum += d2 * (128.0f * q1 + q2);
    }
    for (int m = 1; m < 8; m *= 2) sum += __shfl_xor_sync(0xffffffffu, sum, m);
    *reinterpret_cast<unsigned*>(s.q1 + CodeByte(4 * q)) = w1;
    *reinterpret_cast<unsigned*>(s.q2 + CodeByte(4 * q)) = w2;
    if ((lane & 7) == 0) {
      s.d2[q / 8] = d2;
      s.sum[q / 8] = sum;
    }
  }
}

// The four scale factors of a piece: d sc(2c), d sc(2c+1) / 16 (its high
// nibbles stay in place, 16 q a byte), dmin m(2c), dmin m(2c+1).
template <Layout L>
__device__ inline float4 Scales(const int4& hdr, int c) {
  unsigned sc, m, dd;
  if (L == kGguf) {
    const unsigned sh = (c & 1) * 16;
    const unsigned t1 = static_cast<unsigned>(hdr.y) >> sh, t2 = static_cast<unsigned>(hdr.z) >> sh,
                   t3 = static_cast<unsigned>(hdr.w) >> sh;
    const unsigned sc_lo = t1 & 0x3F3Fu, m_lo = t2 & 0x3F3Fu;
    const unsigned sc_hi = (t3 & 0x0F0Fu) | ((t1 >> 2) & 0x3030u);
    const unsigned m_hi = ((t3 >> 4) & 0x0F0Fu) | ((t2 >> 2) & 0x3030u);
    sc = c >= 2 ? sc_hi : sc_lo;
    m = c >= 2 ? m_hi : m_lo;
    dd = hdr.x;
  } else {
    sc = hdr.x;
    m = static_cast<unsigned>(hdr.x) >> 16;
    dd = hdr.y;
  }
  const float d = __half2float(__ushort_as_half(static_cast<unsigned short>(dd)));
  const float dmin = __half2float(__ushort_as_half(static_cast<unsigned short>(dd >> 16)));
  return make_float4(d * ByteF(sc, 0), d * ByteF(sc, 1) * (1.0f / 16.0f), dmin * ByteF(m, 0), dmin * ByteF(m, 1));
}

template <Layout L>
__device__ inline float Dot(const Piece& p, const Staged& s, int piece) {
  const int col = 64 * piece;
  const int c = piece & 3;
  const unsigned w[8] = {static_cast<unsigned>(p.q0.x), static_cast<unsigned>(p.q0.y), static_cast<unsigned>(p.q0.z),
                         static_cast<unsigned>(p.q0.w), static_cast<unsigned>(p.q1.x), static_cast<unsigned>(p.q1.y),
                         static_cast<unsigned>(p.q1.z), static_cast<unsigned>(p.q1.w)};
  const uint4* x1 = reinterpret_cast<const uint4*>(s.q1 + CodeByte(col));
  const uint4* x2 = reinterpret_cast<const uint4*>(s.q2 + CodeByte(col));
  unsigned lo1 = 0, lo2 = 0, hi1 = 0, hi2 = 0;
#pragma unroll
  for (int h = 0; h < 2; ++h) {  // 16-column halves of each sub-block
    const uint4 a1 = x1[h], a2 = x2[h], b1 = x1[2 + h], b2 = x2[2 + h];
    const unsigned la1[4] = {a1.x, a1.y, a1.z, a1.w}, la2[4] = {a2.x, a2.y, a2.z, a2.w};
    const unsigned lb1[4] = {b1.x, b1.y, b1.z, b1.w}, lb2[4] = {b2.x, b2.y, b2.z, b2.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const unsigned lo = w[4 * h + k] & 0x0F0F0F0Fu, hi = w[4 * h + k] & 0xF0F0F0F0u;
      lo1 = Dp4a(lo, la1[k], lo1);
      lo2 = Dp4a(lo, la2[k], lo2);
      hi1 = Dp4a(hi, lb1[k], hi1);
      hi2 = Dp4a(hi, lb2[k], hi2);
    }
  }
  const float4 f = Scales<L>(p.hdr, c);
  const int blk = col / 32;
  const float dl = static_cast<float>(static_cast<int>((lo1 << 7) + lo2));
  const float dh = static_cast<float>(static_cast<int>((hi1 << 7) + hi2));
  float r = (f.x * s.d2[blk]) * dl;
  r = fmaf(f.y * s.d2[blk + 1], dh, r);
  r = fmaf(-f.z, s.sum[blk], r);
  return fmaf(-f.w, s.sum[blk + 1], r);
}

__device__ inline float XorPiece(const Piece& p) {
  return __int_as_float((p.hdr.x ^ p.hdr.y ^ p.hdr.z ^ p.hdr.w ^ p.q0.x ^ p.q0.y ^ p.q0.z ^ p.q0.w ^ p.q1.x ^ p.q1.y ^
                         p.q1.z ^ p.q1.w) &
                        0x3FFFFFFF);
}

// Warps walk row groups of R rows (warp w of W: groups w, w + W, ...); an
// item is one piece index k of the R rows; D items in flight.
template <Layout L, int R, int D, bool kMath>
__global__ void __launch_bounds__(kThreads) Q4KKernel(Args a) {
  extern __shared__ __align__(16) unsigned char smem[];
  Staged& s = *reinterpret_cast<Staged*>(smem);
  asm volatile("griddepcontrol.launch_dependents;");
  const int lane = threadIdx.x & 31;
  const int warps = gridDim.x * (blockDim.x / 32);
  const int warp = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int per_row = a.cols / 64 / 32;  // items a row group
  const int groups = a.rows / R;
  const int my_groups = warp < groups ? (groups - warp + warps - 1) / warps : 0;
  const int n_items = my_groups * per_row;
  auto load = [&](int n, Piece (&p)[R]) {
    const int g = warp + (n / per_row) * warps, k = n % per_row;
#pragma unroll
    for (int r = 0; r < R; ++r) p[r] = LoadPiece<L>(a, g * R + r, lane + 32 * k);
  };
  Piece buf[D][R];
#pragma unroll
  for (int d = 0; d < D; ++d)
    if (d < n_items) load(d, buf[d]);
  asm volatile("griddepcontrol.wait;" ::: "memory");
  Stage(a, s);
  __syncthreads();
  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0;
  for (int n0 = 0; n0 < n_items; n0 += D) {
#pragma unroll
    for (int d = 0; d < D; ++d) {
      const int n = n0 + d;
      if (n >= n_items) break;
      Piece cur[R];
#pragma unroll
      for (int r = 0; r < R; ++r) cur[r] = buf[d][r];
      if (n + D < n_items) load(n + D, buf[d]);
      const int k = n % per_row, piece = lane + 32 * k;
#pragma unroll
      for (int r = 0; r < R; ++r) acc[r] += kMath ? Dot<L>(cur[r], s, piece) : XorPiece(cur[r]);
      if (k == per_row - 1) {
        const int g = warp + (n / per_row) * warps;
#pragma unroll
        for (int r = 0; r < R; ++r) {
          float v = acc[r];
          for (int m = 16; m; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
          if (lane == 0) a.out[g * R + r] = v;
          acc[r] = 0;
        }
      }
    }
  }
}

using Kernel = void (*)(Args);

struct Config {
  int r, d;
};
constexpr Config kConfigs[] = {{1, 2}, {1, 4}, {2, 2}, {2, 3}, {4, 1}, {4, 2}};

template <Layout L, bool kMath>
Kernel Pick(int r, int d) {
  if (r == 1 && d == 2) return Q4KKernel<L, 1, 2, kMath>;
  if (r == 1 && d == 4) return Q4KKernel<L, 1, 4, kMath>;
  if (r == 2 && d == 2) return Q4KKernel<L, 2, 2, kMath>;
  if (r == 2 && d == 3) return Q4KKernel<L, 2, 3, kMath>;
  if (r == 4 && d == 1) return Q4KKernel<L, 4, 1, kMath>;
  if (r == 4 && d == 2) return Q4KKernel<L, 4, 2, kMath>;
  std::fprintf(stderr, "no kernel for %d rows, %d items\n", r, d);
  std::exit(2);
}

struct Shape {
  const char* name;
  int rows, cols;
};
// Q4_K_M's 8B Q4_K decode matvecs (the down projection of the layers whose
// ffn_down is Q4_K).
constexpr Shape kShapes[] = {{"gateup", 24576, 4096}, {"down", 4096, 12288}, {"qkv", 6144, 4096},
                             {"qk", 5120, 4096},      {"out", 4096, 4096}};
constexpr const char* kNames[] = {"gateup", "down", "qkv", "qk", "out"};

long long Bytes(Layout l, const Shape& s) {
  const long long sbs = static_cast<long long>(s.rows) * (s.cols / 256);
  return l == kGguf ? sbs * 144 : sbs * 148;
}

// Random GGUF blocks and their `dec` planes; the reference in doubles.
struct HostCase {
  std::vector<unsigned char> gguf, dec;
  std::vector<float> x;
  std::vector<double> ref;
};

HostCase MakeCase(const Shape& s, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  HostCase h;
  const long long sbs = static_cast<long long>(s.rows) * (s.cols / 256);
  h.gguf.resize(sbs * 144);
  h.dec.resize(static_cast<size_t>(s.rows) * (s.cols / 2) + sbs * 20);
  h.x.resize(s.cols);
  for (float& v : h.x) v = uni(rng) * (byte(rng) == 0 ? 30.0f : 1.0f);  // a few outliers
  h.ref.assign(s.rows, 0.0);
  for (long long b = 0; b < sbs; ++b) {
    unsigned char* blk = &h.gguf[b * 144];
    for (int i = 0; i < 144; ++i) blk[i] = static_cast<unsigned char>(byte(rng));
    const __half d = __float2half(0.01f * (1.0f + uni(rng))), dmin = __float2half(0.005f * (1.0f + uni(rng)));
    std::memcpy(blk, &d, 2);
    std::memcpy(blk + 2, &dmin, 2);
    const unsigned char* sc = blk + 4;
    int scale[8], mins[8];
    for (int j = 0; j < 8; ++j) {
      if (j < 4) {
        scale[j] = sc[j] & 63;
        mins[j] = sc[j + 4] & 63;
      } else {
        scale[j] = (sc[j + 4] & 0xF) | ((sc[j - 4] >> 6) << 4);
        mins[j] = (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4);
      }
    }
    const long long row = b / (s.cols / 256), sb = b % (s.cols / 256);
    const double dd = __half2float(d), dm = __half2float(dmin);
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 32; ++l) {
        const int q = blk[16 + 32 * j + l];
        const long long col = sb * 256 + 64 * j + l;
        h.ref[row] += (dd * scale[2 * j] * (q & 15) - dm * mins[2 * j]) * h.x[col];
        h.ref[row] += (dd * scale[2 * j + 1] * (q >> 4) - dm * mins[2 * j + 1]) * h.x[col + 32];
      }
    std::memcpy(&h.dec[row * (s.cols / 2) + sb * 128], blk + 16, 128);
    unsigned char* hd = &h.dec[static_cast<size_t>(s.rows) * (s.cols / 2) + b * 20];
    for (int c = 0; c < 4; ++c) {
      hd[4 * c] = scale[2 * c];
      hd[4 * c + 1] = scale[2 * c + 1];
      hd[4 * c + 2] = mins[2 * c];
      hd[4 * c + 3] = mins[2 * c + 1];
    }
    std::memcpy(hd + 16, blk, 4);
  }
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<int> modes = ModesFromArgs(argc, argv, kNames, 5);
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  unsigned char* ring = nullptr;
  float *x = nullptr, *out = nullptr;
  unsigned char* check = nullptr;
  unsigned* sink = nullptr;
  CHECK(cudaMalloc(&ring, kRing));
  CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  CHECK(cudaMemset(ring, 0x11, kRing));
  CHECK(cudaMalloc(&x, kMaxCols * sizeof(float)));
  CHECK(cudaMalloc(&out, 32768 * sizeof(float)));
  CHECK(cudaMalloc(&check, 128 << 20));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t shared = sizeof(Staged);
  StreamTimer timer(stream);
  std::printf("shape\tbytes\tkernel\trows/warp\titems\tblocks/SM\tus\tGB/s\n");
  bool checked[5] = {};
  for (int m : modes) {
    const Shape& s = kShapes[m];
    if (!checked[m]) {  // every layout and config against the reference, once a shape
      checked[m] = true;
      const HostCase h = MakeCase(s, 1234 + m);
      CHECK(cudaMemcpy(x, h.x.data(), s.cols * sizeof(float), cudaMemcpyHostToDevice));
      double ref_max = 0;
      for (double v : h.ref) ref_max = std::max(ref_max, std::fabs(v));
      for (Layout l : {kGguf, kDec}) {
        const std::vector<unsigned char>& w = l == kGguf ? h.gguf : h.dec;
        CHECK(cudaMemcpy(check, w.data(), w.size(), cudaMemcpyHostToDevice));
        for (const Config& c : kConfigs) {
          const Kernel k = l == kGguf ? Pick<kGguf, true>(c.r, c.d) : Pick<kDec, true>(c.r, c.d);
          CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
          int resident = 0;
          CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, k, kThreads, shared));
          CHECK(cudaMemset(out, 0xFF, s.rows * sizeof(float)));  // poisoned: NaN
          LaunchPdl(stream, dim3(resident * sms), kThreads, true, k, Args{check, x, out, s.rows, s.cols}, 1, shared);
          CHECK(cudaStreamSynchronize(stream));
          std::vector<float> got(s.rows);
          CHECK(cudaMemcpy(got.data(), out, s.rows * sizeof(float), cudaMemcpyDeviceToHost));
          double err = 0;
          for (int r = 0; r < s.rows; ++r) {
            const double e = std::fabs(got[r] - h.ref[r]);
            err = std::isnan(e) ? INFINITY : std::max(err, e);
          }
          std::printf("check\t%s\t%s\tR=%d D=%d\tmax err / max |ref| = %.2e%s\n", s.name, l == kGguf ? "gguf" : "dec",
                      c.r, c.d, err / ref_max, err / ref_max < 2e-4 ? "" : "\tFAILED");
        }
      }
    }
    for (Layout l : {kGguf, kDec}) {
      const long long bytes = Bytes(l, s);
      auto chain = [&](auto launch_one) { return RingChainUs(timer, ring, kRing, bytes, kLaunches, launch_one); };
      const float probe_us = chain([&](const unsigned char* base) { LaunchProbe(stream, base, bytes, sink); });
      std::printf("%s\t%lld\tprobe\t-\t-\t-\t%.2f\t%.0f\n", s.name, bytes, probe_us, bytes / probe_us / 1e3);
      for (const Config& c : kConfigs)
        for (bool math : {false, true}) {
          const Kernel k = l == kGguf ? (math ? Pick<kGguf, true>(c.r, c.d) : Pick<kGguf, false>(c.r, c.d))
                                      : (math ? Pick<kDec, true>(c.r, c.d) : Pick<kDec, false>(c.r, c.d));
          CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
          int resident = 0;
          CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, k, kThreads, shared));
          const float us = chain([&](const unsigned char* base) {
            LaunchPdl(stream, dim3(resident * sms), kThreads, true, k, Args{base, x, out, s.rows, s.cols}, 1,
                      shared);
          });
          std::printf("%s\t%lld\t%s-%s\t%d\t%d\t%d\t%.2f\t%.0f\n", s.name, bytes, l == kGguf ? "gguf" : "dec",
                      math ? "math" : "read", c.r, c.d, resident, us, bytes / us / 1e3);
        }
    }
    CHECK(cudaStreamSynchronize(stream));
  }
  CHECK(cudaFree(x));
  CHECK(cudaFree(out));
  CHECK(cudaFree(check));
  CHECK(cudaFree(ring));
  CHECK(cudaFree(sink));
  return 0;
}
