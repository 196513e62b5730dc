// kAttentionPrefill: T query tokens at positions P..P+T-1 (P = pos[0]),
// causal: query t attends cache positions 0..P+t (spec/qwen3-model.md
// §3.5-3.6). Block (x, h) handles query head h for queries
// [x*query_block, (x+1)*query_block); each warp takes one query at a time,
// lanes split the head dimension, and keys stream through an online
// softmax in the log2 domain, kKeyGroup keys per rescale (their dot
// products reduced by butterfly shuffles, independent of each other).
#include <limits>

#include "compiler/codegen/emitters.h"
#include "compiler/codegen/kernel_plans.h"

namespace kiln::codegen {

using llvm::Value;

namespace {
constexpr float kLog2e = 1.4426950408889634f;
constexpr int kKeyGroup = 4;  // keys in flight per warp (an unroll, not a schedule choice)
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
  kb.GridDependencyWait();
  // Dependents may launch now (they wait for this grid to finish anyway);
  // triggering after the loops made ptxas 13 spill a register on sm_90.
  kb.GridDependencyLaunchDependents();
  Value* P = kb.LoadInput(kb.I32(), kb.Param("pos"), 4);
  Value* T = kb.Param("T");
  Value* dim0 = b.CreateMul(lane, i32c(dpl));
  Value* kc = kb.Param("k_cache");
  Value* vc = kb.Param("v_cache");
  // dpl consecutive elements of row `position` of a cache, as floats.
  auto load_row = [&](Value* cache, Value* position) {
    Value* e = b.CreateAdd(b.CreateMul(b.CreateZExt(position, kb.I64()), kb.I64c(nkv * D)),
                           b.CreateAdd(b.CreateMul(b.CreateZExt(kvh, kb.I64()), kb.I64c(D)), b.CreateZExt(dim0, kb.I64())));
    Value* ptr = kb.Gep(cache, b.CreateMul(e, kb.I64c(eb)));
    std::vector<Value*> v;
    if (eb == 2) {
      llvm::Type* ty = dpl == 1 ? kb.I16() : dpl == 2 ? kb.I32() : kb.I64();
      for (int c = 0; c < dpl; c += 4) {
        int n = dpl - c < 4 ? dpl - c : 4;
        llvm::Type* t = n == 4 ? kb.I64() : ty;
        Value* w = kb.LoadInput(t, kb.Gep(ptr, int64_t{2} * c), 2 * n);
        for (int i = 0; i < n; ++i)
          v.push_back(kb.HalfToFloat(b.CreateTrunc(b.CreateLShr(w, llvm::ConstantInt::get(t, 16 * i)), kb.I16())));
      }
    } else {
      for (int c = 0; c < dpl; c += 4) {
        if (dpl - c >= 4) {
          std::vector<Value*> q = kb.LoadInput4xF32(kb.Gep(ptr, int64_t{4} * c));
          v.insert(v.end(), q.begin(), q.end());
        } else {
          for (int i = c; i < dpl; ++i) v.push_back(kb.LoadInput(kb.F32(), kb.Gep(ptr, int64_t{4} * i), 4));
        }
      }
    }
    return v;
  };

  kb.For(warp, i32c(QB), i32c(NW), [&](Value* ql) {
    Value* t = b.CreateAdd(q0, ql);
    kb.If(b.CreateICmpSLT(t, T), [&] {
      Value* qrow = b.CreateAdd(b.CreateMul(b.CreateZExt(t, kb.I64()), kb.I64c(nq * D)),
                                b.CreateAdd(b.CreateMul(b.CreateZExt(h, kb.I64()), kb.I64c(D)), b.CreateZExt(dim0, kb.I64())));
      Value* qptr = kb.Gep(kb.Param("q"), b.CreateShl(qrow, kb.I64c(2)));
      std::vector<Value*> qv;
      for (int i = 0; i < dpl; ++i)
        qv.push_back(b.CreateFMul(kb.LoadInput(kb.F32(), kb.Gep(qptr, int64_t{4} * i), 4), kb.F32c(spec.attn_scale * kLog2e)));
      Value* lim = b.CreateAdd(P, t);  // last attended position
      Value* m = kb.Var(kb.F32(), kb.F32c(kNegInf), "m");
      Value* l = kb.Var(kb.F32(), kb.F32c(0.0f), "l");
      std::vector<Value*> acc;
      for (int i = 0; i < dpl; ++i) acc.push_back(kb.Var(kb.F32(), kb.F32c(0.0f), "acc"));
      // Online softmax over keys [j0, j0 + n): whole groups of kKeyGroup,
      // then the remainder one by one (no per-key masks: they became uniform
      // predicates that ptxas 13 spilled on sm_90).
      auto step = [&](Value* j0, int n) {
        std::vector<Value*> s(n);
        Value* mnew = kb.Get(m);
        for (int u = 0; u < n; ++u) {
          std::vector<Value*> k = load_row(kc, b.CreateAdd(j0, i32c(u)));
          Value* dot = nullptr;
          for (int i = 0; i < dpl; ++i) dot = dot == nullptr ? b.CreateFMul(qv[i], k[i]) : kb.Fma(qv[i], k[i], dot);
          s[u] = kb.WarpSum(dot);
          mnew = kb.Max(mnew, s[u]);
        }
        Value* corr = kb.Ex2(b.CreateFSub(kb.Get(m), mnew));
        Value* lsum = b.CreateFMul(kb.Get(l), corr);
        std::vector<Value*> av;
        for (int i = 0; i < dpl; ++i) av.push_back(b.CreateFMul(kb.Get(acc[i]), corr));
        for (int u = 0; u < n; ++u) {
          Value* p = kb.Ex2(b.CreateFSub(s[u], mnew));
          lsum = b.CreateFAdd(lsum, p);
          std::vector<Value*> v = load_row(vc, b.CreateAdd(j0, i32c(u)));
          for (int i = 0; i < dpl; ++i) av[i] = kb.Fma(p, v[i], av[i]);
        }
        kb.Set(m, mnew);
        kb.Set(l, lsum);
        for (int i = 0; i < dpl; ++i) kb.Set(acc[i], av[i]);
      };
      Value* keys = b.CreateAdd(lim, i32c(1));
      Value* full = b.CreateMul(b.CreateUDiv(keys, i32c(kKeyGroup)), i32c(kKeyGroup));
      kb.For(i32c(0), full, i32c(kKeyGroup), [&](Value* j0) { step(j0, kKeyGroup); });
      kb.For(full, keys, i32c(1), [&](Value* j) { step(j, 1); }, /*unroll=*/1);
      Value* inv = b.CreateFDiv(kb.F32c(1.0f), kb.Get(l));
      Value* optr = kb.Gep(kb.Param("out"), b.CreateShl(qrow, kb.I64c(2)));
      for (int i = 0; i < dpl; ++i) kb.Store(b.CreateFMul(kb.Get(acc[i]), inv), kb.Gep(optr, int64_t{4} * i), 4);
    });
  });
  kb.Finish();
  return absl::OkStatus();
}

}  // namespace kiln::codegen
