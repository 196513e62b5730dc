// kAttentionDecode: one query token against cache positions 0..pos[0]
// (flash-decoding, spec/qwen3-model.md §3.5-3.6). Block (kv, s) handles KV
// head kv for all n_head/n_head_kv query heads that share it, so each K/V
// row is read once, over positions [s*len, (s+1)*len). The split length
// follows L = pos[0]+1 at run time (kernel_spec.h AttentionSchedule):
// len = min(split_positions, max(min_split_positions,
// roundup(ceil(L/max_splits), 32))), so long contexts use every split and
// short ones few; the first nact = ceil(L/len) splits are live. pos is
// read before griddepcontrol.wait (nothing the kernel may overlap writes
// it), so dead splits exit and live ones know their range while the
// previous kernel finishes; up to kPrefetchPositions of context, a live
// split then asks the L2 for its K and V rows of earlier positions
// (cp.async.bulk.prefetch.L2) before it waits, so their DRAM reads overlap
// that kernel's tail.
//
//  0. rope_fused: the kernel starts with kQkNormRopeStore's work for the
//     new token (NormRopeHeads below), reading the raw qkv row; q lands in
//     shared memory and the new K/V row in the cache, written by the block
//     whose split holds position pos[0] (the last live one) before its
//     barrier, so its own loads of the row see it. The cache is then read
//     with plain (coherent) loads, never ld.global.nc.
//  1. q (pre-scaled by attn_scale*log2 e) into shared memory; lanes take
//     16-byte slices of key rows (a row per D*elem/16 lanes, keys_in_flight
//     rows per lane in flight) and form the group's scores in the log2
//     domain.
//  2. Block max: each warp's maximum per query head into wmax, one barrier
//     (which also publishes the scores), every thread takes the maximum M;
//     p = ex2(score - M) in place, one barrier.
//  3. Threads take (key row lane, 4 dims) and accumulate p * V and the sum
//     of p per row lane, value_bytes_in_flight per thread in flight (by
//     default 8 f16 rows, 4 f32); the first round's loads are issued before
//     step 1's key loads, so their round trip overlaps the scores and the
//     softmax. One barrier, then the row lanes' acc and p sums add up.
//     (Block reductions of the max and of the sum, each reusing red behind
//     a second barrier, made six barriers of these three; bench/RESULTS.md
//     session 12.)
//  4. nact == 1: the block writes acc / sum straight to `out` (no record,
//     fence, counter or merge). Otherwise it writes its record to
//     `partial` (acc[G][D] with 16-byte stores, then (max, sum) per query
//     head; layout in kernel_plans.h DecodePlan), and after a barrier its
//     thread 0 counts it in counter[kv] with an acq_rel atomic (the "last
//     block done" pattern, spec/nvptx-llvm19.md §8, its fences folded into
//     the atomic's ordering). Splits past nact exit at once and are not counted. The last live
//     block to arrive resets the counter and merges, reading the records
//     with ld.global.cg (L2, never .nc): a warp per query head turns the
//     (max, sum) pairs into per-split weights in shared memory, then each
//     thread owns 4 consecutive dims of one query head and streams the
//     splits' acc with 16-byte loads, kRecordLoadsInFlight in flight (with
//     threads >= 2*G*D/4, groups of threads take interleaved splits and add
//     up through shared memory).
// Positions past max_splits*split_positions are not attended: the cache
// capacity C must not exceed that product.
#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "compiler/codegen/emitters.h"
#include "compiler/codegen/kernel_plans.h"
#include "compiler/codegen/rope.h"

namespace kiln::codegen {

using llvm::Value;

namespace {
constexpr float kLog2e = 1.4426950408889634f;
// The schedule's keys_in_flight (K rows a lane has in flight in the score
// loop; 4 by default: eight took the Qwen3-8B f16 kernel from 123 to 130
// registers on sm_90, ptxas 13, past the 128 that four 128-thread or two
// 256-thread blocks per SM allow) and value_bytes_in_flight (V bytes a
// thread has in flight in the p*V loop, 4 dims of a row a load; 64 by
// default: 8 f16 rows cost no registers over 4, 8 f32 rows ~20-26).
// 16-byte record loads each thread has in flight in the merge.
constexpr int kRecordLoadsInFlight = 8;
// The longest context (L = pos + 1) whose K/V rows a split prefetches into
// L2 before its wait.
constexpr int kPrefetchPositions = 512;

// Element idx of an f32 array.
Value* F32At(KernelBuilder& kb, Value* base, Value* idx) {
  auto& b = kb.b();
  return kb.Gep(base, b.CreateShl(b.CreateZExt(idx, kb.I64()), kb.I64c(2)));
}

// Rotation pair k of a lane, i = lane + 32k, of a head's D/2 = H2 pairs.
// In a partial last round (32(k+1) > H2) `in` says i < H2 and `clamped` is
// i, or H2 - 1 for the lanes past the end (an address they may read);
// otherwise `in` is nullptr and `clamped` is i.
struct LanePair {
  Value* i;
  Value* in;
  Value* clamped;
};
LanePair PairOfLane(KernelBuilder& kb, Value* lane, int k, int H2) {
  auto& b = kb.b();
  Value* i = b.CreateAdd(lane, kb.I32c(int64_t{kWarp} * k));
  if ((k + 1) * kWarp <= H2) return {i, nullptr, i};
  Value* in = b.CreateICmpSLT(i, kb.I32c(H2));
  return {i, in, b.CreateSelect(in, i, kb.I32c(H2 - 1))};
}

// rope_fused, step 0's rotation angles at position p for the lane's pairs
// (PairOfLane's clamped i; NormRopeHeads leaves the lanes past the end
// unused), pinned where they are formed: before griddepcontrol.wait the
// table's constant-cache reads and the f64 reduction run during the
// previous kernel's tail, not on the chain after it.
std::vector<RopeAngle> LanePairAngles(KernelBuilder& kb, Rope& rope, Value* p, Value* lane, int H2) {
  std::vector<RopeAngle> out;
  for (int k = 0; k * kWarp < H2; ++k) {
    const RopeAngle a = rope.Angle(p, PairOfLane(kb, lane, k, H2).clamped);
    out.push_back({kb.Opaque(a.cos), kb.Opaque(a.sin)});
  }
  return out;
}

// rope_fused, step 0: warp w takes head w of this block's G + 1: w < G
// query head kvh*G + w, RMS-normalized (q_norm), rotated and scaled into
// q_s; w == G, only where with_key holds, key head kvh (k_norm, rotated)
// into k_cache row p and its value head as is into v_cache row p. Lanes
// take the rotation pairs (i, i + D/2), i = lane + 32k, rotated by
// angles[k] (LanePairAngles); the head's sum of squares is a butterfly.
// Ends with a barrier.
void NormRopeHeads(KernelBuilder& kb, const DecodePlan& plan, Rope& rope, const std::vector<RopeAngle>& angles,
                   llvm::Value* q_s, llvm::Value* kvh, llvm::Value* with_key, llvm::Value* k_row,
                   llvm::Value* v_row, llvm::Value* warp, llvm::Value* lane) {
  const KernelSpec& spec = kb.spec();
  auto& b = kb.b();
  const int G = plan.group, D = plan.head_dim, H2 = D / 2;
  const int64_t nq = spec.n_head, nkv = spec.n_head_kv;
  Value* qkv = kb.Param("qkv");
  Value* heads = b.CreateSelect(with_key, kb.I32c(G + 1), kb.I32c(G));
  kb.For(warp, heads, kb.I32c(plan.warps), [&](Value* hh) {
    Value* is_k = b.CreateICmpEQ(hh, kb.I32c(G));
    // Heads of a qkv row: nq query heads, nkv key heads, nkv value heads.
    Value* head = b.CreateSelect(is_k, b.CreateAdd(kvh, kb.I32c(nq)), b.CreateAdd(b.CreateMul(kvh, kb.I32c(G)), hh));
    Value* src = F32At(kb, qkv, b.CreateMul(head, kb.I32c(D)));
    Value* w = b.CreateSelect(is_k, kb.Param("k_norm"), kb.Param("q_norm"));
    // The lanes' pairs (i, i + D/2) for i = lane + 32k, in registers from
    // the sum of squares to the rotation: each element is read once (the
    // row comes through L2 under programmatic launch). The value head's
    // pair and the norm weights are loaded with them, so the K/V warp, the
    // last to reach the barrier, waits one round trip, not three.
    const int K = (H2 + kWarp - 1) / kWarp;
    Value* v_src = F32At(kb, qkv, b.CreateMul(b.CreateAdd(kvh, kb.I32c(nq + nkv)), kb.I32c(D)));
    std::vector<Value*> idx(K), in(K, nullptr), x0(K), x1(K), v0(K), v1(K), w0(K), w1(K);
    Value* ss = kb.F32c(0.0f);
    for (int k = 0; k < K; ++k) {
      const LanePair pair = PairOfLane(kb, lane, k, H2);
      idx[k] = pair.i;
      in[k] = pair.in;
      Value* ic = pair.clamped;
      Value* ic1 = b.CreateAdd(ic, kb.I32c(H2));
      x0[k] = kb.LoadInput(kb.F32(), F32At(kb, src, ic), 4);
      x1[k] = kb.LoadInput(kb.F32(), F32At(kb, src, ic1), 4);
      v0[k] = kb.LoadInput(kb.F32(), F32At(kb, v_src, ic), 4);
      v1[k] = kb.LoadInput(kb.F32(), F32At(kb, v_src, ic1), 4);
      w0[k] = kb.Load(kb.F32(), F32At(kb, w, ic), 4);
      w1[k] = kb.Load(kb.F32(), F32At(kb, w, ic1), 4);
      Value* s2 = kb.Fma(x1[k], x1[k], kb.Fma(x0[k], x0[k], ss));
      ss = in[k] ? b.CreateSelect(in[k], s2, ss) : s2;
    }
    Value* mean = b.CreateFDiv(kb.WarpSum(ss), kb.F32c(static_cast<float>(D)));
    Value* r = b.CreateFDiv(kb.F32c(1.0f), kb.Sqrt(b.CreateFAdd(mean, kb.F32c(spec.eps))));
    Value* q_dst = F32At(kb, q_s, b.CreateMul(hh, kb.I32c(D)));
    for (int k = 0; k < K; ++k) {
      auto pair = [&, k] {
        Value* i = idx[k];
        Value* i1 = b.CreateAdd(i, kb.I32c(H2));
        Value* y0 = b.CreateFMul(b.CreateFMul(x0[k], r), w0[k]);
        Value* y1 = b.CreateFMul(b.CreateFMul(x1[k], r), w1[k]);
        const std::pair<Value*, Value*> o = rope.Apply(angles[k], y0, y1);
        kb.IfElse(
            is_k,
            [&] {
              StoreCacheElement(kb, k_row, i, o.first);
              StoreCacheElement(kb, k_row, i1, o.second);
              StoreCacheElement(kb, v_row, i, v0[k]);
              StoreCacheElement(kb, v_row, i1, v1[k]);
            },
            [&] {
              Value* scale = kb.F32c(spec.attn_scale * kLog2e);
              kb.Store(b.CreateFMul(o.first, scale), F32At(kb, q_dst, i), 4);
              kb.Store(b.CreateFMul(o.second, scale), F32At(kb, q_dst, i1), 4);
            });
      };
      if (in[k] != nullptr)
        kb.If(in[k], pair);
      else
        pair();
    }
  });
  kb.EscapeBeforeBarrier({k_row, v_row});
  kb.Barrier();
}

// Where split s's records sit in `partial` (kernel_plans.h DecodePlan):
// its acc rows from 16-byte chunk (kv*MS + s)*NC on, its (max, sum) pair of
// query head g at pair (kv*MS + s)*G + g after plan.stats.
struct SplitRecords {
  KernelBuilder& kb;
  const DecodePlan& plan;
  Value* partial;
  Value* kvh;

  Value* AccChunk(Value* s, Value* c) const {
    auto& b = kb.b();
    const int MS = plan.max_splits, NC = plan.group * plan.head_dim / 4;
    Value* i = b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(kvh, kb.I32c(MS)), s), kb.I32c(NC)), c);
    return kb.Gep(partial, b.CreateShl(b.CreateZExt(i, kb.I64()), kb.I64c(4)));
  }
  Value* StatsPair(Value* s, Value* g) const {
    auto& b = kb.b();
    Value* i = b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(kvh, kb.I32c(plan.max_splits)), s), kb.I32c(plan.group)), g);
    return kb.Gep(partial, b.CreateShl(b.CreateAdd(kb.I64c(plan.stats), b.CreateShl(b.CreateZExt(i, kb.I64()), kb.I64c(1))),
                                       kb.I64c(2)));
  }
};

// The last live block's merge: out = sum_s w_s acc_s over the nact live
// splits' records (header comment, step 4).
void MergeSplits(KernelBuilder& kb, const DecodePlan& plan, const SplitRecords& rec, Value* sc_s, Value* red,
                 Value* nact, Value* tid, Value* lane, Value* warp, Value* out_base) {
  auto& b = kb.b();
  const int G = plan.group, D = plan.head_dim, MS = plan.max_splits, NT = plan.threads, NW = plan.warps;
  const int NC = G * D / 4;
  const float kNegInf = -std::numeric_limits<float>::infinity();
  auto i32c = [&](int64_t v) { return kb.I32c(v); };
  Value* out = kb.Param("out");
  // out = sum_s w[g][s] * acc_s. A thread owns 16-byte chunks (4
  // consecutive dims of one query head) and reads them from every
  // split of its group with ld.global.cg.v4.f32, kRecordLoadsInFlight
  // loads in flight. With at least twice as many threads as chunks,
  // H groups of NC threads take every H-th split and add up through
  // shared memory at the end. The first and the last round may reach
  // past the group's count: those slots load split 0 and are left out.
  const int H = NT >= 2 * NC ? NT / NC : 1;
  const int TG = H > 1 ? NC : NT;  // threads per group
  const int per = (NC + TG - 1) / TG;
  const int U = std::max(1, kRecordLoadsInFlight / per);
  Value* h = H > 1 ? b.CreateUDiv(tid, i32c(NC)) : i32c(0);
  Value* c0 = H > 1 ? b.CreateURem(tid, i32c(NC)) : tid;
  std::vector<Value*> cs(per), wrow(per);
  for (int k = 0; k < per; ++k) {
    cs[k] = b.CreateAdd(c0, i32c(int64_t{k} * TG));
    if (int64_t{k + 1} * TG > NC) cs[k] = b.CreateSelect(b.CreateICmpSLT(cs[k], i32c(NC)), cs[k], i32c(0));
    wrow[k] = b.CreateMul(b.CreateUDiv(cs[k], i32c(D / 4)), i32c(MS));
  }
  std::vector<std::vector<Value*>> o(per);
  for (int k = 0; k < per; ++k)
    for (int e = 0; e < 4; ++e) o[k].push_back(kb.Var(kb.F32(), kb.F32c(0.0f), "o"));
  // This thread's splits: h, h + H, ..., cnt of them (none past H groups).
  Value* cnt = nact;
  if (H > 1) {
    cnt = b.CreateUDiv(b.CreateAdd(b.CreateSub(nact, h), i32c(H - 1)), i32c(H));
    cnt = b.CreateSelect(b.CreateICmpULT(h, i32c(H)), cnt, i32c(0));
  }
  // A round: up to U of this thread's splits from t0 on; with `masked`,
  // those past cnt load split 0 instead (live whenever there is a merge,
  // and in range: a group h of a thread with cnt = 0 may be past
  // max_splits) and are left out of the sums by a select, not a weight 0,
  // so no stale value reaches them. Loads first (issue), the weighted sums
  // later (add), so a round's loads can be in flight before the weights
  // exist.
  struct Round {
    std::vector<Value*> ss, ok;
    std::vector<std::vector<std::vector<Value*>>> a;
  };
  auto issue = [&](Value* t0, int n, bool masked, bool pinned) {
    Round r;
    r.a.assign(n, std::vector<std::vector<Value*>>(per));
    for (int u = 0; u < n; ++u) {
      Value* t = b.CreateAdd(t0, i32c(u));
      Value* sp = b.CreateAdd(h, b.CreateMul(t, i32c(H)));
      Value* ok = masked ? b.CreateICmpSLT(t, cnt) : nullptr;
      if (masked) sp = b.CreateSelect(ok, sp, i32c(0));
      r.ss.push_back(sp);
      r.ok.push_back(ok);
      for (int k = 0; k < per; ++k) r.a[u][k] = kb.LoadCgF32(rec.AccChunk(sp, cs[k]), 4, pinned);
    }
    return r;
  };
  auto add = [&](const Round& r) {
    for (size_t u = 0; u < r.ss.size(); ++u)
      for (int k = 0; k < per; ++k) {
        Value* w = kb.Load(kb.F32(), F32At(kb, sc_s, b.CreateAdd(wrow[k], r.ss[u])), 4);
        for (int e = 0; e < 4; ++e) {
          Value* sum = kb.Fma(w, r.a[u][k][e], kb.Get(o[k][e]));
          kb.Set(o[k][e], r.ok[u] != nullptr ? b.CreateSelect(r.ok[u], sum, kb.Get(o[k][e])) : sum);
        }
      }
  };
  // The first round's records are loaded (pinned) before the (max, sum)
  // pairs, so both round trips overlap (at short context, 2-4 live splits, that is
  // every record this thread reads); the later rounds follow the weights.
  const Round first = issue(i32c(0), U, /*masked=*/true, /*pinned=*/true);
  // Weights w[g][s] = 2^(m_s - M) / sum_s' 2^(m_s' - M) l_s' into
  // sc_s[g*MS + s]: a warp per query head, its lanes over the splits
  // (ld.global.cg of the (m, l) pairs; a running max and rescaled sum
  // per lane, then butterflies), m_s parked where its weight goes.
  kb.For(warp, i32c(G), i32c(NW), [&](Value* g) {
    Value* mx = kb.Var(kb.F32(), kb.F32c(kNegInf), "mx");
    Value* den = kb.Var(kb.F32(), kb.F32c(0.0f), "den");
    Value* wbase = b.CreateMul(g, i32c(MS));
    kb.For(lane, nact, i32c(kWarp), [&](Value* s) {
      std::vector<Value*> ml = kb.LoadCgF32(rec.StatsPair(s, g), 2);
      kb.Store(ml[0], F32At(kb, sc_s, b.CreateAdd(wbase, s)), 4);
      Value* m = kb.Max(kb.Get(mx), ml[0]);
      Value* e = kb.Ex2(b.CreateFSub(ml[0], m));
      kb.Set(den, kb.Fma(e, ml[1], b.CreateFMul(kb.Get(den), kb.Ex2(b.CreateFSub(kb.Get(mx), m)))));
      kb.Set(mx, m);
    }, /*unroll=*/1);
    // Lanes without a split hold (-inf, 0): 2^-inf * 0 = 0.
    Value* Mx = kb.WarpMax(kb.Get(mx));
    Value* inv = b.CreateFDiv(kb.F32c(1.0f), kb.WarpSum(b.CreateFMul(kb.Get(den), kb.Ex2(b.CreateFSub(kb.Get(mx), Mx)))));
    kb.For(lane, nact, i32c(kWarp), [&](Value* s) {
      Value* slot = F32At(kb, sc_s, b.CreateAdd(wbase, s));
      kb.Store(b.CreateFMul(kb.Ex2(b.CreateFSub(kb.Load(kb.F32(), slot, 4), Mx)), inv), slot, 4);
    }, /*unroll=*/1);
  });
  kb.Barrier();
  add(first);
  Value* full = b.CreateMul(b.CreateUDiv(cnt, i32c(U)), i32c(U));
  kb.For(i32c(U), full, i32c(U), [&](Value* t0) { add(issue(t0, U, false, false)); }, /*unroll=*/1);
  // The rest, fewer than U splits, past the first round.
  Value* tail = b.CreateSelect(b.CreateICmpSGT(full, i32c(U)), full, i32c(U));
  kb.If(b.CreateICmpSLT(tail, cnt), [&] { add(issue(tail, U - 1, true, false)); });
  auto store_out = [&](Value* c, const std::vector<Value*>& v) {
    Value* i = b.CreateAdd(out_base, b.CreateShl(c, i32c(2)));
    for (int e = 0; e < 4; ++e) kb.Store(v[e], F32At(kb, out, b.CreateAdd(i, i32c(e))), 4);
  };
  if (H == 1) {
    for (int k = 0; k < per; ++k) {
      std::vector<Value*> v;
      for (int e = 0; e < 4; ++e) v.push_back(kb.Get(o[k][e]));
      Value* c = b.CreateAdd(c0, i32c(int64_t{k} * TG));
      kb.If(b.CreateICmpSLT(c, i32c(NC)), [&] { store_out(c, v); });
    }
  } else {
    // The groups' sums through red (free since the records were written).
    std::vector<Value*> v;
    for (int e = 0; e < 4; ++e) v.push_back(kb.Get(o[0][e]));
    kb.If(b.CreateICmpULT(h, i32c(H)), [&] { kb.Store4xF32(F32At(kb, red, b.CreateShl(tid, i32c(2))), v); });
    kb.Barrier();
    kb.For(tid, i32c(NC), i32c(NT), [&](Value* c) {
      std::vector<Value*> sum;
      for (int r = 0; r < H; ++r) {
        std::vector<Value*> x = kb.Load4xF32(F32At(kb, red, b.CreateShl(b.CreateAdd(c, i32c(int64_t{r} * NC)), i32c(2))));
        for (int e = 0; e < 4; ++e) {
          if (r == 0) sum.push_back(x[e]);
          else sum[e] = b.CreateFAdd(sum[e], x[e]);
        }
      }
      store_out(c, sum);
    });
  }
}
}  // namespace

absl::Status EmitAttentionDecode(KernelBuilder& kb) {
  const KernelSpec& spec = kb.spec();
  auto& b = kb.b();
  const DecodePlan plan = PlanAttentionDecode(spec);
  const int G = plan.group, Gp = plan.group_pad, D = plan.head_dim, SP = plan.split, MS = plan.max_splits;
  const int MIN = plan.min_split;
  const int NT = plan.threads, NW = plan.warps, eb = plan.elem_bytes;
  const int TR = plan.threads_per_row, RL = plan.row_lanes;
  const int64_t row_elems = spec.n_head_kv * spec.head_dim;
  const int NC = G * D / 4;  // 16-byte chunks of a split's acc rows
  const float kNegInf = -std::numeric_limits<float>::infinity();

  Value* smem = kb.StaticShared(plan.shared_bytes);
  Value* q_s = kb.Gep(smem, plan.q_offset);
  Value* sc_s = kb.Gep(smem, plan.score_offset);
  Value* red = kb.Gep(smem, plan.red_offset);
  Value* wmax = kb.Gep(smem, plan.wmax_offset);
  Value* lsum_s = kb.Gep(smem, plan.lsum_offset);
  Value* flag = kb.Gep(smem, plan.flag_offset);
  auto i32c = [&](int64_t v) { return kb.I32c(v); };

  Value* tid = kb.Tid();
  Value* lane = b.CreateAnd(tid, i32c(31));
  Value* warp = b.CreateLShr(tid, i32c(5));
  Value* kvh = kb.Ctaid(0);
  Value* split = kb.Ctaid(1);
  // pos is read before griddepcontrol.wait: only the step's last launch
  // (the runtime's advance, or the host between eager steps) writes it,
  // never a kernel this one may overlap, so the splits are sized and the
  // dead ones gone while the previous kernel finishes.
  Value* L = b.CreateAdd(kb.LoadInput(kb.I32(), kb.Param("pos"), 4), i32c(1));
  // Positions per split: ceil(L/MS) rounded up to 32, at least MIN, at
  // most SP (the score buffer).
  Value* len = b.CreateAnd(b.CreateAdd(b.CreateUDiv(b.CreateAdd(L, i32c(MS - 1)), i32c(MS)), i32c(31)), i32c(~31));
  len = kb.SMin(kb.SMax(len, i32c(MIN)), i32c(SP));
  // Live splits: those that start before L (at least one, at most MS; MS
  // only binds past the capacity MS*SP).
  Value* nact = kb.SMin(b.CreateUDiv(b.CreateAdd(L, b.CreateSub(len, i32c(1))), len), i32c(MS));
  Value* start = b.CreateMul(split, len);
  const SplitRecords rec{kb, plan, kb.Param("partial"), kvh};
  // Element offset of (position, kv head, dim) in a cache.
  auto cache_ptr = [&](Value* cache, Value* position, Value* dim) {
    Value* e = b.CreateAdd(b.CreateMul(b.CreateZExt(position, kb.I64()), kb.I64c(row_elems)),
                           b.CreateAdd(b.CreateMul(b.CreateZExt(kvh, kb.I64()), kb.I64c(D)), b.CreateZExt(dim, kb.I64())));
    return kb.Gep(cache, b.CreateMul(e, kb.I64c(eb)));
  };
  // 4 cache elements as floats (dims 4k..4k+3, 8- or 16-byte aligned).
  // Cache loads: what an earlier kernel wrote (KernelBuilder::LoadInput,
  // pinned: the rounds' loads are meant to be in flight together, and the
  // first value round's during the scores) unless this kernel writes the
  // cache itself (step 0): then plain loads.
  auto cache_load = [&](llvm::Type* type, Value* ptr, unsigned align) {
    return spec.rope_fused ? kb.Load(type, ptr, align) : kb.LoadInput(type, ptr, align, /*pinned=*/true);
  };
  // load4 = decode4(raw4(ptr)): the load's raw value (f32: 4 floats; f16:
  // one i64) converts only where it is used, so a load issued early is not
  // waited for at its conversion.
  auto raw4 = [&](Value* ptr) -> std::vector<Value*> {
    if (eb == 4) return spec.rope_fused ? kb.Load4xF32(ptr) : kb.LoadInput4xF32(ptr, /*pinned=*/true);
    return {cache_load(kb.I64(), ptr, 8)};
  };
  auto decode4 = [&](const std::vector<Value*>& raw) -> std::vector<Value*> {
    if (eb == 4) return raw;
    std::vector<Value*> v;
    for (int i = 0; i < 4; ++i)
      v.push_back(kb.HalfToFloat(b.CreateTrunc(b.CreateLShr(raw[0], kb.I64c(16 * i)), kb.I16())));
    return v;
  };
  auto load4 = [&](Value* ptr) { return decode4(raw4(ptr)); };

  kb.If(b.CreateICmpSLT(split, nact), [&] {
    // Under programmatic launch, at short context, the split's K and V
    // rows from before this step (positions < L - 1, written by earlier
    // steps, never by a kernel this one may overlap) are asked of the L2
    // before the wait: their DRAM reads overlap the previous kernel's tail,
    // and the loads below find them in L2. Past kPrefetchPositions the
    // requests queue in front of the previous kernel's loads and the
    // attention's own (H200: 1.7 % slower at 4096 positions, 3 % at 16384;
    // bench/RESULTS.md session 5). Without the wait there is no tail to
    // overlap.
    if (kb.UsesGridDependency()) {
      Value* old_rows = kb.SMax(kb.SMin(b.CreateSub(b.CreateSub(L, i32c(1)), start), len), i32c(0));
      old_rows = b.CreateSelect(b.CreateICmpSLE(L, i32c(kPrefetchPositions)), old_rows, i32c(0));
      kb.For(tid, b.CreateShl(old_rows, i32c(1)), i32c(NT), [&](Value* i) {
        Value* cache = b.CreateSelect(b.CreateICmpEQ(b.CreateAnd(i, i32c(1)), i32c(0)), kb.Param("k_cache"),
                                      kb.Param("v_cache"));
        kb.PrefetchL2(cache_ptr(cache, b.CreateAdd(start, b.CreateLShr(i, i32c(1))), i32c(0)), D * eb);
      }, /*unroll=*/1);
    }
    // The new token's position p = L - 1 and its rotation angles.
    Value* p = b.CreateSub(L, i32c(1));
    std::optional<Rope> rope;
    std::vector<RopeAngle> angles;
    if (spec.rope_fused) {
      rope.emplace(kb);
      angles = LanePairAngles(kb, *rope, p, lane, D / 2);
    }
    kb.GridDependencyWait();
    // release_after_wait: the previous kernel has ended, so the next one's
    // blocks may arrive now and put their first weight loads in flight
    // while this kernel's latency-bound chain runs on a few SMs.
    if (spec.attention.release_after_wait) kb.GridDependencyLaunchDependents();
    Value* n = kb.SMin(b.CreateSub(L, start), len);
    // 1. Scaled q (step 0 when fused), then scores.
    if (spec.rope_fused) {
      NormRopeHeads(kb, plan, *rope, angles, q_s, kvh, b.CreateICmpEQ(split, b.CreateSub(nact, i32c(1))),
                    cache_ptr(kb.Param("k_cache"), p, i32c(0)), cache_ptr(kb.Param("v_cache"), p, i32c(0)), warp, lane);
    } else {
      Value* q = kb.Param("q");
      Value* qbase = b.CreateMul(kvh, i32c(int64_t{G} * D));
      kb.For(tid, i32c(int64_t{G} * D), i32c(NT), [&](Value* i) {
        Value* v = kb.LoadInput(kb.F32(), F32At(kb, q, b.CreateAdd(qbase, i)), 4);
        kb.Store(b.CreateFMul(v, kb.F32c(spec.attn_scale * kLog2e)), F32At(kb, q_s, i), 4);
      });
      kb.Barrier();
    }
    // 3 (first round, issued now). p * V: thread = (row lane rl, dims
    // 4dc..4dc+3), value_bytes_in_flight / (4 * eb) rows per thread per
    // round, their loads issued together; rows past n are clamped and
    // weighted 0. V does not depend on the scores, so the first round's
    // loads go out before the key loads: its round trip overlaps theirs and
    // the softmax's barriers (at short context, up to RL * VU positions a
    // split, 64 by default, the whole split's V). Its raw words wait in
    // registers.
    Value* rl = b.CreateUDiv(tid, i32c(TR));
    Value* dc = b.CreateURem(tid, i32c(TR));
    Value* vc = kb.Param("v_cache");
    const int VU = spec.attention.value_bytes_in_flight / (4 * eb);  // >= 1 (ABI)
    struct ValueRound {
      std::vector<std::vector<Value*>> raw;
      std::vector<Value*> ok, jc;
    };
    auto value_loads = [&](Value* j0) {
      ValueRound r;
      for (int u = 0; u < VU; ++u) {
        Value* j = b.CreateAdd(j0, i32c(int64_t{u} * RL));
        r.ok.push_back(b.CreateICmpSLT(j, n));
        r.jc.push_back(b.CreateSelect(r.ok[u], j, b.CreateSub(n, i32c(1))));
        r.raw.push_back(raw4(cache_ptr(vc, b.CreateAdd(start, r.jc[u]), b.CreateShl(dc, i32c(2)))));
      }
      return r;
    };
    const ValueRound first_values = value_loads(rl);
    std::vector<Value*> mloc;
    for (int g = 0; g < G; ++g) mloc.push_back(kb.Var(kb.F32(), kb.F32c(kNegInf), "mloc"));
    Value* kc = kb.Param("k_cache");
    auto note_score = [&](Value* j, int g, Value* sg) {
      kb.Store(sg, F32At(kb, sc_s, b.CreateAdd(b.CreateMul(j, i32c(Gp)), i32c(g))), 4);
    };
    const int KL = D * eb / 16;  // lanes that read one key row, 16 bytes each
    if (KL <= kWarp && (KL & (KL - 1)) == 0) {
      // KL lanes per key, 32/KL keys per warp and keys_in_flight of them per
      // lane in flight: every load is 16 bytes and a row is read by
      // consecutive lanes (coalesced). Each lane keeps its slice of the
      // group's q in registers; the dot is finished by xor shuffles within
      // the KL lanes (all of them end with the sum).
      const int KPW = kWarp / KL, E = 16 / eb, U = spec.attention.keys_in_flight;
      Value* key_lane = b.CreateUDiv(lane, i32c(KL));
      Value* part = b.CreateURem(lane, i32c(KL));
      Value* dim0 = b.CreateMul(part, i32c(E));
      std::vector<std::vector<Value*>> qr(G);
      for (int g = 0; g < G; ++g)
        for (int e = 0; e < E; e += 4) {
          std::vector<Value*> v = kb.Load4xF32(F32At(kb, q_s, b.CreateAdd(dim0, i32c(int64_t{g} * D + e))));
          qr[g].insert(qr[g].end(), v.begin(), v.end());
        }
      kb.For(b.CreateMul(warp, i32c(KPW * U)), n, i32c(int64_t{NW} * KPW * U), [&](Value* j0) {
        std::vector<Value*> raw(U), js(U), ok(U);
        for (int u = 0; u < U; ++u) {
          js[u] = b.CreateAdd(j0, b.CreateAdd(i32c(u * KPW), key_lane));
          ok[u] = b.CreateICmpSLT(js[u], n);
          Value* jc = b.CreateSelect(ok[u], js[u], b.CreateSub(n, i32c(1)));
          raw[u] = cache_load(llvm::FixedVectorType::get(kb.I32(), 4), cache_ptr(kc, b.CreateAdd(start, jc), dim0), 16);
        }
        for (int u = 0; u < U; ++u) {
          std::vector<Value*> k;
          for (int w = 0; w < 4; ++w) {
            Value* word = b.CreateExtractElement(raw[u], uint64_t(w));
            if (eb == 4) {
              k.push_back(kb.AsFloat(word));
            } else {
              k.push_back(kb.HalfToFloat(b.CreateTrunc(word, kb.I16())));
              k.push_back(kb.HalfToFloat(b.CreateTrunc(b.CreateLShr(word, i32c(16)), kb.I16())));
            }
          }
          for (int g = 0; g < G; ++g) {
            Value* sg = nullptr;
            for (int e = 0; e < E; ++e) sg = sg == nullptr ? b.CreateFMul(qr[g][e], k[e]) : kb.Fma(qr[g][e], k[e], sg);
            for (int off = KL / 2; off >= 1; off /= 2) sg = b.CreateFAdd(sg, kb.ShflXor(sg, off));
            kb.Set(mloc[g], b.CreateSelect(ok[u], kb.Max(kb.Get(mloc[g]), sg), kb.Get(mloc[g])));
            Value* j = js[u];
            kb.If(b.CreateAnd(ok[u], b.CreateICmpEQ(part, i32c(0))), [&] { note_score(j, g, sg); });
          }
        }
      });
    } else {
      // Rows wider than a warp's 512 bytes (or not a power-of-two count of
      // 16-byte slices): a key per thread, the head
      // dimension in chunks of 16 through a runtime loop, so q is re-read
      // from shared memory rather than hoisted into registers.
      kb.For(tid, n, i32c(NT), [&](Value* j) {
        Value* krow = cache_ptr(kc, b.CreateAdd(start, j), i32c(0));
        std::vector<Value*> s;
        for (int g = 0; g < G; ++g) s.push_back(kb.Var(kb.F32(), kb.F32c(0.0f), "s"));
        kb.For(i32c(0), i32c(D), i32c(16), [&](Value* c) {
          std::vector<Value*> kv;
          for (int q4 = 0; q4 < 4; ++q4) {
            Value* dim = b.CreateAdd(c, i32c(4 * q4));
            std::vector<Value*> v = load4(kb.Gep(krow, b.CreateMul(b.CreateZExt(dim, kb.I64()), kb.I64c(eb))));
            kv.insert(kv.end(), v.begin(), v.end());
          }
          for (int g = 0; g < G; ++g) {
            Value* acc = kb.Get(s[g]);
            for (int q4 = 0; q4 < 4; ++q4) {
              std::vector<Value*> qv = kb.Load4xF32(F32At(kb, q_s, b.CreateAdd(i32c(int64_t{g} * D + 4 * q4), c)));
              for (int e = 0; e < 4; ++e) acc = kb.Fma(qv[e], kv[4 * q4 + e], acc);
            }
            kb.Set(s[g], acc);
          }
        }, /*unroll=*/1);
        for (int g = 0; g < G; ++g) {
          Value* sg = kb.Get(s[g]);
          note_score(j, g, sg);
          kb.Set(mloc[g], kb.Max(kb.Get(mloc[g]), sg));
        }
      });
    }
    // 2. The block's maximum score per query head: the warps' maxima
    // through wmax; the barrier also publishes the scores.
    {
      std::vector<Value*> w;
      for (int g = 0; g < G; ++g) w.push_back(kb.WarpMax(kb.Get(mloc[g])));
      kb.If(b.CreateICmpEQ(lane, i32c(0)), [&] {
        for (int g = 0; g < G; ++g) kb.Store(w[g], F32At(kb, wmax, b.CreateAdd(b.CreateMul(warp, i32c(G)), i32c(g))), 4);
      });
    }
    kb.Barrier();
    // Per query head g, the n values region[k*G + g] combined (max or sum).
    auto combine = [&](Value* region, int n, bool is_max) {
      std::vector<Value*> out;
      for (int g = 0; g < G; ++g) {
        Value* acc = nullptr;
        for (int k = 0; k < n; ++k) {
          Value* v = kb.Load(kb.F32(), kb.Gep(region, int64_t{4} * (int64_t{k} * G + g)), 4);
          acc = acc == nullptr ? v : (is_max ? kb.Max(acc, v) : b.CreateFAdd(acc, v));
        }
        out.push_back(acc);
      }
      return out;
    };
    const std::vector<Value*> M = combine(wmax, NW, /*is_max=*/true);
    // p = ex2(score - M) in place, once per (row, query head); the barrier
    // publishes them.
    kb.For(tid, n, i32c(NT), [&](Value* j) {
      for (int g = 0; g < G; ++g) {
        Value* ptr = F32At(kb, sc_s, b.CreateAdd(b.CreateMul(j, i32c(Gp)), i32c(g)));
        kb.Store(kb.Ex2(b.CreateFSub(kb.Load(kb.F32(), ptr, 4), M[g])), ptr, 4);
      }
    });
    kb.Barrier();
    // 3. p * V: the first round from the loads issued before the scores,
    // then the rest of the split's rows. Each thread also sums the p of its
    // rows (the same in every thread of a row lane).
    std::vector<std::vector<Value*>> acc(G, std::vector<Value*>(4));
    std::vector<Value*> lsum;
    for (int g = 0; g < G; ++g) {
      for (int e = 0; e < 4; ++e) acc[g][e] = kb.Var(kb.F32(), kb.F32c(0.0f), "acc");
      lsum.push_back(kb.Var(kb.F32(), kb.F32c(0.0f), "lsum"));
    }
    auto value_round = [&](const ValueRound& r) {
      for (int u = 0; u < VU; ++u) {
        std::vector<Value*> p;
        for (int g4 = 0; g4 < Gp / 4; ++g4) {
          std::vector<Value*> pv =
              kb.Load4xF32(F32At(kb, sc_s, b.CreateAdd(b.CreateMul(r.jc[u], i32c(Gp)), i32c(4 * g4))));
          p.insert(p.end(), pv.begin(), pv.end());
        }
        std::vector<Value*> v = decode4(r.raw[u]);
        for (int g = 0; g < G; ++g) {
          Value* pg = b.CreateSelect(r.ok[u], p[g], kb.F32c(0.0f));
          kb.Set(lsum[g], b.CreateFAdd(kb.Get(lsum[g]), pg));
          for (int e = 0; e < 4; ++e) kb.Set(acc[g][e], kb.Fma(pg, v[e], kb.Get(acc[g][e])));
        }
      }
    };
    value_round(first_values);
    kb.For(b.CreateAdd(rl, i32c(int64_t{RL} * VU)), n, i32c(int64_t{RL} * VU),
           [&](Value* j0) { value_round(value_loads(j0)); });
    for (int g = 0; g < G; ++g) {
      std::vector<Value*> v;
      for (int e = 0; e < 4; ++e) v.push_back(kb.Get(acc[g][e]));
      Value* idx = b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(rl, i32c(G)), i32c(g)), i32c(D)), b.CreateShl(dc, i32c(2)));
      kb.Store4xF32(F32At(kb, red, idx), v);
    }
    kb.If(b.CreateICmpEQ(dc, i32c(0)), [&] {
      for (int g = 0; g < G; ++g)
        kb.Store(kb.Get(lsum[g]), F32At(kb, lsum_s, b.CreateAdd(b.CreateMul(rl, i32c(G)), i32c(g))), 4);
    });
    kb.Barrier();
    // The sum of p per query head: the row lanes' sums.
    const std::vector<Value*> Lsum = combine(lsum_s, RL, /*is_max=*/false);
    // acc of output i = g*D + d: the sum over the row lanes.
    auto acc_of = [&](Value* i) {
      Value* sum = nullptr;
      for (int r = 0; r < RL; ++r) {
        Value* v = kb.Load(kb.F32(), F32At(kb, red, b.CreateAdd(i32c(int64_t{r} * G * D), i)), 4);
        sum = sum == nullptr ? v : b.CreateFAdd(sum, v);
      }
      return sum;
    };
    Value* out = kb.Param("out");
    Value* out_base = b.CreateMul(kvh, i32c(int64_t{G} * D));
    // 4a. The only live split: out = acc / sum, what the merge below gives
    // for one record (weight 2^0 / sum), without the record, the fence, the
    // counter and the merge's reads.
    kb.IfElse(b.CreateICmpEQ(nact, i32c(1)), [&] {
      // The dependents may launch; only the stores are left.
      kb.GridDependencyLaunchDependents();
      std::vector<Value*> inv;
      for (int g = 0; g < G; ++g) inv.push_back(b.CreateFDiv(kb.F32c(1.0f), Lsum[g]));
      kb.For(tid, i32c(int64_t{G} * D), i32c(NT), [&](Value* i) {
        Value* g = b.CreateUDiv(i, i32c(D));
        Value* w = inv[0];
        for (int h = 1; h < G; ++h) w = b.CreateSelect(b.CreateICmpEQ(g, i32c(h)), inv[h], w);
        kb.Store(b.CreateFMul(w, acc_of(i)), F32At(kb, out, b.CreateAdd(out_base, i)), 4);
      });
    }, [&] {
      // 4b. This split's records: acc 16 bytes at a time, then (max, sum).
      kb.For(tid, i32c(NC), i32c(NT), [&](Value* c) {
        std::vector<Value*> sum;
        for (int r = 0; r < RL; ++r) {
          std::vector<Value*> v = kb.Load4xF32(F32At(kb, red, b.CreateAdd(i32c(int64_t{r} * G * D), b.CreateShl(c, i32c(2)))));
          for (int e = 0; e < 4; ++e) {
            if (r == 0) sum.push_back(v[e]);
            else sum[e] = b.CreateFAdd(sum[e], v[e]);
          }
        }
        kb.Store4xF32(rec.AccChunk(split, c), sum);
      });
      kb.If(b.CreateICmpEQ(tid, i32c(0)), [&] {
        for (int g = 0; g < G; ++g) {
          Value* at = rec.StatsPair(split, i32c(g));
          kb.Store(M[g], at, 4);
          kb.Store(Lsum[g], kb.Gep(at, 4), 4);
        }
      });

      // Arrival, of the live splits only: blocks past the context never get
      // here (their exit triggers the dependents), so at short context the
      // grid's empty blocks cost no barrier, fence or atomic. The last of the
      // nact live blocks to arrive merges. One acq_rel atomic of thread 0
      // orders both ways: the barrier before it puts the block's record
      // stores ahead of its release, and the barrier after it puts its
      // acquire of the other splits' records ahead of the merge's loads (a
      // membar.gl in every thread and another before the merge cost a
      // round trip to L2 each on the chain).
      kb.Barrier();
      Value* counter = kb.Gep(kb.Param("counter"), b.CreateShl(b.CreateZExt(kvh, kb.I64()), kb.I64c(2)));
      kb.If(b.CreateICmpEQ(tid, i32c(0)), [&] {
        Value* old = kb.AtomicAddAcqRelU32(counter, i32c(1));
        kb.Store(b.CreateZExt(b.CreateICmpEQ(old, b.CreateSub(nact, i32c(1))), kb.I32()), flag, 4);
      });
      kb.Barrier();
      // The dependents may launch; only the merge is left.
      kb.GridDependencyLaunchDependents();
      kb.If(b.CreateICmpNE(kb.Load(kb.I32(), flag, 4), i32c(0)), [&] {
        kb.If(b.CreateICmpEQ(tid, i32c(0)), [&] { kb.StoreVolatile(i32c(0), counter, 4); });
        MergeSplits(kb, plan, rec, sc_s, red, nact, tid, lane, warp, out_base);
      });
    });
  });
  kb.Finish();
  return absl::OkStatus();
}

}  // namespace kiln::codegen
