// kAttentionPrefill: T query tokens at positions P..P+T-1 (P = pos[0]),
// causal: query t attends cache positions 0..P+t (spec/qwen3-model.md
// §3.5-3.6). Block (x, h) handles query head h for queries
// [x*query_block, (x+1)*query_block); each warp takes one query at a time,
// lanes split the head dimension, and keys stream through an online
// softmax in the log2 domain, kKeyGroup keys per rescale (their dot
// products reduced by butterfly shuffles, independent of each other).
//
// With stage_keys the block's warps share the rows instead: key_block K
// and V rows at a time are copied into shared memory with 16-byte loads,
// and each warp runs its query_block / warps queries over the tile from
// there, in the same order of operations per query (groups of kKeyGroup
// never straddle a tile: key_block is a multiple of it), so the results
// are the streaming kernel's bit for bit; the L2 reads drop by the warps
// per block.
#include <functional>
#include <limits>
#include <vector>

#include "compiler/codegen/emitters.h"
#include "compiler/codegen/kernel_plans.h"

namespace kiln::codegen {

using llvm::Value;

namespace {
constexpr float kLog2e = 1.4426950408889634f;
constexpr int kKeyGroup = 4;  // keys in flight per warp (an unroll, not a schedule choice)

// dpl consecutive cache elements (f16 or f32: eb bytes) at `ptr` as floats:
// from global memory (what an earlier kernel wrote) or from the block's
// shared copy of the row.
std::vector<Value*> RowFloats(KernelBuilder& kb, Value* ptr, int dpl, int eb, bool shared) {
  auto& b = kb.b();
  auto load = [&](llvm::Type* t, Value* at, unsigned align) {
    return shared ? kb.Load(t, at, align) : kb.LoadInput(t, at, align);
  };
  std::vector<Value*> v;
  if (eb == 2) {
    llvm::Type* ty = dpl == 1 ? kb.I16() : dpl == 2 ? kb.I32() : kb.I64();
    for (int c = 0; c < dpl; c += 4) {
      int n = dpl - c < 4 ? dpl - c : 4;
      llvm::Type* t = n == 4 ? kb.I64() : ty;
      Value* w = load(t, kb.Gep(ptr, int64_t{2} * c), 2 * n);
      for (int i = 0; i < n; ++i)
        v.push_back(kb.HalfToFloat(b.CreateTrunc(b.CreateLShr(w, llvm::ConstantInt::get(t, 16 * i)), kb.I16())));
    }
    return v;
  }
  for (int c = 0; c < dpl; c += 4) {
    if (dpl - c >= 4) {
      std::vector<Value*> q = shared ? kb.Load4xF32(kb.Gep(ptr, int64_t{4} * c)) : kb.LoadInput4xF32(kb.Gep(ptr, int64_t{4} * c));
      v.insert(v.end(), q.begin(), q.end());
    } else {
      for (int i = c; i < dpl; ++i) v.push_back(load(kb.F32(), kb.Gep(ptr, int64_t{4} * i), 4));
    }
  }
  return v;
}

// One query's online-softmax state: running max m, sum l, and its dpl
// accumulated value dims; qv its scaled query dims.
struct QueryState {
  std::vector<Value*> qv;
  Value* m = nullptr;
  Value* l = nullptr;
  std::vector<Value*> acc;
};

// Keys [j0, j0 + n) of one query: their scores (a dot product of the
// lane's dims, then a butterfly), one rescale, then p * V. key(j) and
// value(j) give the lane's dims of row j.
void SoftmaxStep(KernelBuilder& kb, QueryState& q, Value* j0, int n,
                 const std::function<std::vector<Value*>(Value*)>& key,
                 const std::function<std::vector<Value*>(Value*)>& value) {
  auto& b = kb.b();
  const size_t dpl = q.qv.size();
  std::vector<Value*> s(n);
  Value* mnew = kb.Get(q.m);
  for (int u = 0; u < n; ++u) {
    std::vector<Value*> k = key(b.CreateAdd(j0, kb.I32c(u)));
    Value* dot = nullptr;
    for (size_t i = 0; i < dpl; ++i) dot = dot == nullptr ? b.CreateFMul(q.qv[i], k[i]) : kb.Fma(q.qv[i], k[i], dot);
    s[u] = kb.WarpSum(dot);
    mnew = kb.Max(mnew, s[u]);
  }
  Value* corr = kb.Ex2(b.CreateFSub(kb.Get(q.m), mnew));
  Value* lsum = b.CreateFMul(kb.Get(q.l), corr);
  std::vector<Value*> av;
  for (size_t i = 0; i < dpl; ++i) av.push_back(b.CreateFMul(kb.Get(q.acc[i]), corr));
  for (int u = 0; u < n; ++u) {
    Value* p = kb.Ex2(b.CreateFSub(s[u], mnew));
    lsum = b.CreateFAdd(lsum, p);
    std::vector<Value*> v = value(b.CreateAdd(j0, kb.I32c(u)));
    for (size_t i = 0; i < dpl; ++i) av[i] = kb.Fma(p, v[i], av[i]);
  }
  kb.Set(q.m, mnew);
  kb.Set(q.l, lsum);
  for (size_t i = 0; i < dpl; ++i) kb.Set(q.acc[i], av[i]);
}

}  // namespace

absl::Status EmitAttentionPrefill(KernelBuilder& kb) {
  const KernelSpec& spec = kb.spec();
  auto& b = kb.b();
  const AttentionSchedule& a = spec.attention;
  const int64_t D = spec.head_dim, nq = spec.n_head, nkv = spec.n_head_kv, G = nq / nkv;
  const int NT = a.threads, NW = NT / kWarp, QB = a.query_block;
  const int dpl = static_cast<int>(D / kWarp);  // dims per lane
  const int eb = spec.kv_f16 ? 2 : 4;
  const float kNegInf = -std::numeric_limits<float>::infinity();
  auto i32c = [&](int64_t v) { return kb.I32c(v); };

  Value* tid = kb.Tid();
  Value* lane = b.CreateAnd(tid, i32c(31));
  Value* warp = b.CreateLShr(tid, i32c(5));
  Value* h = kb.Ctaid(1);
  Value* kvh = b.CreateUDiv(h, i32c(G));
  Value* q0 = b.CreateMul(kb.Ctaid(0), i32c(QB));
  const PrefillPlan plan = PlanAttentionPrefill(spec);  // stage_keys
  Value* smem = a.stage_keys ? kb.StaticShared(plan.shared_bytes) : nullptr;
  kb.GridDependencyWait();
  // Dependents may launch now (they wait for this grid to finish anyway);
  // triggering after the loops made ptxas 13 spill a register on sm_90.
  kb.GridDependencyLaunchDependents();
  Value* P = kb.LoadInput(kb.I32(), kb.Param("pos"), 4);
  Value* T = kb.Param("T");
  Value* dim0 = b.CreateMul(lane, i32c(dpl));
  Value* kc = kb.Param("k_cache");
  Value* vc = kb.Param("v_cache");
  // Byte offset of (position, this KV head, dim) in a cache.
  auto cache_offset = [&](Value* position, Value* dim) {
    Value* e = b.CreateAdd(b.CreateMul(b.CreateZExt(position, kb.I64()), kb.I64c(nkv * D)),
                           b.CreateAdd(b.CreateMul(b.CreateZExt(kvh, kb.I64()), kb.I64c(D)), b.CreateZExt(dim, kb.I64())));
    return b.CreateMul(e, kb.I64c(eb));
  };
  // Query t's element offset in q and out (lane's first dim).
  auto qrow_of = [&](Value* t) {
    return b.CreateAdd(b.CreateMul(b.CreateZExt(t, kb.I64()), kb.I64c(nq * D)),
                       b.CreateAdd(b.CreateMul(b.CreateZExt(h, kb.I64()), kb.I64c(D)), b.CreateZExt(dim0, kb.I64())));
  };
  auto start_query = [&](Value* qrow) {
    QueryState q;
    Value* qptr = kb.Gep(kb.Param("q"), b.CreateShl(qrow, kb.I64c(2)));
    for (int i = 0; i < dpl; ++i)
      q.qv.push_back(b.CreateFMul(kb.LoadInput(kb.F32(), kb.Gep(qptr, int64_t{4} * i), 4), kb.F32c(spec.attn_scale * kLog2e)));
    q.m = kb.Var(kb.F32(), kb.F32c(kNegInf), "m");
    q.l = kb.Var(kb.F32(), kb.F32c(0.0f), "l");
    for (int i = 0; i < dpl; ++i) q.acc.push_back(kb.Var(kb.F32(), kb.F32c(0.0f), "acc"));
    return q;
  };
  auto finish_query = [&](QueryState& q, Value* qrow) {
    Value* inv = b.CreateFDiv(kb.F32c(1.0f), kb.Get(q.l));
    Value* optr = kb.Gep(kb.Param("out"), b.CreateShl(qrow, kb.I64c(2)));
    for (int i = 0; i < dpl; ++i) kb.Store(b.CreateFMul(kb.Get(q.acc[i]), inv), kb.Gep(optr, int64_t{4} * i), 4);
  };
  // Query t attends keys [0, keys(t)); the first full(t) in whole groups of
  // kKeyGroup, the remainder one by one (no per-key masks: they became
  // uniform predicates that ptxas 13 spilled on sm_90).
  auto keys_of = [&](Value* t) { return b.CreateAdd(b.CreateAdd(P, t), i32c(1)); };
  auto full_of = [&](Value* keys) { return b.CreateMul(b.CreateUDiv(keys, i32c(kKeyGroup)), i32c(kKeyGroup)); };

  if (!a.stage_keys) {
    // A warp takes one query at a time and reads every key row itself.
    auto global_row = [&](Value* cache) {
      return [&, cache](Value* j) { return RowFloats(kb, kb.Gep(cache, cache_offset(j, dim0)), dpl, eb, false); };
    };
    const auto key = global_row(kc), value = global_row(vc);
    kb.For(warp, i32c(QB), i32c(NW), [&](Value* ql) {
      Value* t = b.CreateAdd(q0, ql);
      kb.If(b.CreateICmpSLT(t, T), [&] {
        Value* qrow = qrow_of(t);
        QueryState q = start_query(qrow);
        Value* keys = keys_of(t);
        Value* full = full_of(keys);
        kb.For(i32c(0), full, i32c(kKeyGroup), [&](Value* j0) { SoftmaxStep(kb, q, j0, kKeyGroup, key, value); });
        kb.For(full, keys, i32c(1), [&](Value* j) { SoftmaxStep(kb, q, j, 1, key, value); }, /*unroll=*/1);
        finish_query(q, qrow);
      });
    });
    kb.Finish();
    return absl::OkStatus();
  }

  // stage_keys: warp w keeps queries q0 + w + NW*i, i < QPW; the block's
  // rows go through shared memory key_block at a time.
  const int QPW = plan.queries_per_warp, KB = plan.key_block;
  const int64_t units = plan.row_bytes / 16;  // 16-byte units of a row
  std::vector<Value*> active(QPW), qrow(QPW), keys(QPW), full(QPW);
  std::vector<QueryState> qs(QPW);
  for (int i = 0; i < QPW; ++i) {
    Value* t = b.CreateAdd(q0, b.CreateAdd(warp, i32c(int64_t{NW} * i)));
    active[i] = b.CreateICmpSLT(t, T);
    // Past T a query reads row T - 1 and stores nothing.
    Value* tc = b.CreateSelect(active[i], t, b.CreateSub(T, i32c(1)));
    qrow[i] = qrow_of(tc);
    qs[i] = start_query(qrow[i]);
    keys[i] = keys_of(tc);
    full[i] = full_of(keys[i]);
  }
  // The block's keys: those of its last query.
  Value* block_keys = keys_of(b.CreateSub(kb.SMin(b.CreateAdd(q0, i32c(QB)), T), i32c(1)));
  kb.For(i32c(0), block_keys, i32c(KB), [&](Value* j0) {
    // Rows [j0, j0 + n) of K, then of V, 16 bytes a thread at a time.
    Value* n = kb.SMin(i32c(KB), b.CreateSub(block_keys, j0));
    kb.For(tid, b.CreateMul(n, i32c(2 * units)), i32c(NT), [&](Value* u) {
      Value* is_v = b.CreateICmpSGE(u, b.CreateMul(n, i32c(units)));
      Value* uu = b.CreateSelect(is_v, b.CreateSub(u, b.CreateMul(n, i32c(units))), u);
      Value* row = b.CreateUDiv(uu, i32c(units));
      Value* c16 = b.CreateShl(b.CreateZExt(b.CreateURem(uu, i32c(units)), kb.I64()), kb.I64c(4));
      Value* src = kb.Gep(b.CreateSelect(is_v, vc, kc), b.CreateAdd(cache_offset(b.CreateAdd(j0, row), i32c(0)), c16));
      Value* dst = kb.Gep(smem, b.CreateAdd(b.CreateSelect(is_v, kb.I64c(plan.v_offset), kb.I64c(0)),
                                            b.CreateAdd(b.CreateMul(b.CreateZExt(row, kb.I64()), kb.I64c(plan.row_bytes)), c16)));
      kb.Store4xF32(dst, kb.LoadInput4xF32(src));
    });
    kb.Barrier();
    auto shared_row = [&](int64_t base) {
      return [&, base](Value* j) {
        Value* at = b.CreateAdd(b.CreateMul(b.CreateZExt(b.CreateSub(j, j0), kb.I64()), kb.I64c(plan.row_bytes)),
                                b.CreateMul(b.CreateZExt(dim0, kb.I64()), kb.I64c(eb)));
        return RowFloats(kb, kb.Gep(smem, b.CreateAdd(kb.I64c(base), at)), dpl, eb, /*shared=*/true);
      };
    };
    const auto key = shared_row(0), value = shared_row(plan.v_offset);
    Value* tile_end = b.CreateAdd(j0, i32c(KB));
    for (int i = 0; i < QPW; ++i) {
      kb.If(active[i], [&] {
        kb.For(j0, kb.SMin(tile_end, full[i]), i32c(kKeyGroup),
               [&](Value* j) { SoftmaxStep(kb, qs[i], j, kKeyGroup, key, value); });
        kb.For(kb.SMax(j0, full[i]), kb.SMin(tile_end, keys[i]), i32c(1),
               [&](Value* j) { SoftmaxStep(kb, qs[i], j, 1, key, value); }, /*unroll=*/1);
      });
    }
    kb.Barrier();  // the next tile overwrites these rows
  }, /*unroll=*/1);
  for (int i = 0; i < QPW; ++i) kb.If(active[i], [&] { finish_query(qs[i], qrow[i]); });
  kb.Finish();
  return absl::OkStatus();
}

}  // namespace kiln::codegen
