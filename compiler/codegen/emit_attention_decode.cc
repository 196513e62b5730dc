// kAttentionDecode: one query token against cache positions 0..pos[0]
// (flash-decoding, spec/qwen3-model.md §3.5-3.6). Block (kv, s) handles KV
// head kv for all n_head/n_head_kv query heads that share it, so each K/V
// row is read once, over positions [s*len, (s+1)*len). The split length
// follows L = pos[0]+1 at run time (kernel_spec.h AttentionSchedule):
// len = min(split_positions, max(min_split_positions,
// roundup(ceil(L/max_splits), 32))), so long contexts use every split and
// short ones few; the first nact = ceil(L/len) splits are live.
//
//  1. q (pre-scaled by attn_scale*log2 e) into shared memory; lanes take
//     16-byte slices of key rows (a row per D*elem/16 lanes, several rows
//     in flight) and form the group's scores in the log2 domain.
//  2. Block max, p = ex2(score - max), block sum.
//  3. Threads take (key row lane, 4 dims) and accumulate p * V, several
//     rows in flight.
//  4. nact == 1: the block writes acc / sum straight to `out` (no record,
//     fence, counter or merge). Otherwise it writes its record (max, sum,
//     acc[D]) per query head to `partial`, fences, and counts itself in
//     counter[kv] (the "last block done" pattern, spec/nvptx-llvm19.md §8).
//     Splits past nact exit at once and are not counted. The last live
//     block to arrive resets the counter and merges the live records with
//     ld.volatile reads.
// Positions past max_splits*split_positions are not attended: the cache
// capacity C must not exceed that product.
#include <limits>

#include "compiler/codegen/emitters.h"
#include "compiler/codegen/kernel_plans.h"

namespace kiln::codegen {

using llvm::Value;

namespace {
constexpr float kLog2e = 1.4426950408889634f;
// K and V rows each thread has in flight in the score and p*V loops.
constexpr int kKeysInFlight = 4;
}

absl::Status EmitAttentionDecode(KernelBuilder& kb) {
  const KernelSpec& spec = kb.spec();
  auto& b = kb.b();
  const DecodePlan plan = PlanAttentionDecode(spec);
  const int G = plan.group, Gp = plan.group_pad, D = plan.head_dim, SP = plan.split, MS = plan.max_splits;
  const int MIN = plan.min_split;
  const int NT = plan.threads, NW = plan.warps, eb = plan.elem_bytes;
  const int TR = plan.threads_per_row, RL = plan.row_lanes;
  const int64_t row_elems = spec.n_head_kv * spec.head_dim;
  const int rec = plan.record;
  const float kNegInf = -std::numeric_limits<float>::infinity();

  Value* smem = kb.StaticShared(plan.shared_bytes);
  Value* q_s = kb.Gep(smem, plan.q_offset);
  Value* sc_s = kb.Gep(smem, plan.score_offset);
  Value* red = kb.Gep(smem, plan.red_offset);
  Value* flag = kb.Gep(smem, plan.flag_offset);
  auto f32at = [&](Value* base, Value* idx) { return kb.Gep(base, b.CreateShl(b.CreateZExt(idx, kb.I64()), kb.I64c(2))); };
  auto i32c = [&](int64_t v) { return kb.I32c(v); };

  Value* tid = kb.Tid();
  Value* lane = b.CreateAnd(tid, i32c(31));
  Value* warp = b.CreateLShr(tid, i32c(5));
  Value* kvh = kb.Ctaid(0);
  Value* split = kb.Ctaid(1);
  kb.GridDependencyWait();
  Value* L = b.CreateAdd(kb.Load(kb.I32(), kb.Param("pos"), 4), i32c(1));
  auto smin = [&](Value* x, Value* y) { return b.CreateSelect(b.CreateICmpSLT(x, y), x, y); };
  auto smax = [&](Value* x, Value* y) { return b.CreateSelect(b.CreateICmpSGT(x, y), x, y); };
  // Positions per split: ceil(L/MS) rounded up to 32, at least MIN, at
  // most SP (the score buffer).
  Value* len = b.CreateAnd(b.CreateAdd(b.CreateUDiv(b.CreateAdd(L, i32c(MS - 1)), i32c(MS)), i32c(31)), i32c(~31));
  len = smin(smax(len, i32c(MIN)), i32c(SP));
  // Live splits: those that start before L (at least one, at most MS; MS
  // only binds past the capacity MS*SP).
  Value* nact = smin(b.CreateUDiv(b.CreateAdd(L, b.CreateSub(len, i32c(1))), len), i32c(MS));
  Value* start = b.CreateMul(split, len);
  Value* partial = kb.Param("partial");
  auto record = [&](Value* s, Value* g) {  // float index of (kv, s, g)'s record
    Value* r = b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(kvh, i32c(MS)), s), i32c(G)), g);
    return b.CreateMul(b.CreateZExt(r, kb.I64()), kb.I64c(rec));
  };
  auto partial_at = [&](Value* float_index) { return kb.Gep(partial, b.CreateShl(float_index, kb.I64c(2))); };
  // Element offset of (position, kv head, dim) in a cache.
  auto cache_ptr = [&](Value* cache, Value* position, Value* dim) {
    Value* e = b.CreateAdd(b.CreateMul(b.CreateZExt(position, kb.I64()), kb.I64c(row_elems)),
                           b.CreateAdd(b.CreateMul(b.CreateZExt(kvh, kb.I64()), kb.I64c(D)), b.CreateZExt(dim, kb.I64())));
    return kb.Gep(cache, b.CreateMul(e, kb.I64c(eb)));
  };
  // 4 cache elements as floats (dims 4k..4k+3, 8- or 16-byte aligned).
  auto load4 = [&](Value* ptr) -> std::vector<Value*> {
    if (eb == 4) return kb.LoadNc4xF32(ptr);
    Value* w = kb.LoadNc(kb.I64(), ptr, 8);
    std::vector<Value*> v;
    for (int i = 0; i < 4; ++i)
      v.push_back(kb.HalfToFloat(b.CreateTrunc(b.CreateLShr(w, kb.I64c(16 * i)), kb.I16())));
    return v;
  };

  kb.If(b.CreateICmpSLT(split, nact), [&] {
    Value* n = smin(b.CreateSub(L, start), len);
    // 1. Scaled q, then scores.
    Value* q = kb.Param("q");
    Value* qbase = b.CreateMul(kvh, i32c(int64_t{G} * D));
    kb.For(tid, i32c(int64_t{G} * D), i32c(NT), [&](Value* i) {
      Value* v = kb.Load(kb.F32(), f32at(q, b.CreateAdd(qbase, i)), 4);
      kb.Store(b.CreateFMul(v, kb.F32c(spec.attn_scale * kLog2e)), f32at(q_s, i), 4);
    });
    kb.Barrier();
    std::vector<Value*> mloc;
    for (int g = 0; g < G; ++g) mloc.push_back(kb.Var(kb.F32(), kb.F32c(kNegInf), "mloc"));
    Value* kc = kb.Param("k_cache");
    auto note_score = [&](Value* j, int g, Value* sg) {
      kb.Store(sg, f32at(sc_s, b.CreateAdd(b.CreateMul(j, i32c(Gp)), i32c(g))), 4);
    };
    const int KL = D * eb / 16;  // lanes that read one key row, 16 bytes each
    if (KL <= kWarp && (KL & (KL - 1)) == 0) {
      // KL lanes per key, 32/KL keys per warp and kKeysInFlight of them per
      // lane in flight: every load is 16 bytes and a row is read by
      // consecutive lanes (coalesced). Each lane keeps its slice of the
      // group's q in registers; the dot is finished by xor shuffles within
      // the KL lanes (all of them end with the sum).
      const int KPW = kWarp / KL, E = 16 / eb, U = kKeysInFlight;
      Value* key_lane = b.CreateUDiv(lane, i32c(KL));
      Value* part = b.CreateURem(lane, i32c(KL));
      Value* dim0 = b.CreateMul(part, i32c(E));
      std::vector<std::vector<Value*>> qr(G);
      for (int g = 0; g < G; ++g)
        for (int e = 0; e < E; e += 4) {
          std::vector<Value*> v = kb.Load4xF32(f32at(q_s, b.CreateAdd(dim0, i32c(int64_t{g} * D + e))));
          qr[g].insert(qr[g].end(), v.begin(), v.end());
        }
      kb.For(b.CreateMul(warp, i32c(KPW * U)), n, i32c(int64_t{NW} * KPW * U), [&](Value* j0) {
        std::vector<Value*> raw(U), js(U), ok(U);
        for (int u = 0; u < U; ++u) {
          js[u] = b.CreateAdd(j0, b.CreateAdd(i32c(u * KPW), key_lane));
          ok[u] = b.CreateICmpSLT(js[u], n);
          Value* jc = b.CreateSelect(ok[u], js[u], b.CreateSub(n, i32c(1)));
          raw[u] = kb.LoadNc(llvm::FixedVectorType::get(kb.I32(), 4), cache_ptr(kc, b.CreateAdd(start, jc), dim0), 16);
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
              std::vector<Value*> qv = kb.Load4xF32(f32at(q_s, b.CreateAdd(i32c(int64_t{g} * D + 4 * q4), c)));
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
    // 2. Block max and sum per query head.
    auto block_reduce = [&](const std::vector<Value*>& vars, bool is_max) {
      std::vector<Value*> w;
      for (int g = 0; g < G; ++g) w.push_back(is_max ? kb.WarpMax(kb.Get(vars[g])) : kb.WarpSum(kb.Get(vars[g])));
      kb.If(b.CreateICmpEQ(lane, i32c(0)), [&] {
        for (int g = 0; g < G; ++g) kb.Store(w[g], f32at(red, b.CreateAdd(b.CreateMul(warp, i32c(G)), i32c(g))), 4);
      });
      kb.Barrier();
      std::vector<Value*> out;
      for (int g = 0; g < G; ++g) {
        Value* acc = nullptr;
        for (int k = 0; k < NW; ++k) {
          Value* v = kb.Load(kb.F32(), kb.Gep(red, int64_t{4} * (int64_t{k} * G + g)), 4);
          acc = acc == nullptr ? v : (is_max ? kb.Max(acc, v) : b.CreateFAdd(acc, v));
        }
        out.push_back(acc);
      }
      kb.Barrier();  // red is reused next
      return out;
    };
    std::vector<Value*> M = block_reduce(mloc, true);
    std::vector<Value*> lsum;
    for (int g = 0; g < G; ++g) lsum.push_back(kb.Var(kb.F32(), kb.F32c(0.0f), "lsum"));
    kb.For(tid, n, i32c(NT), [&](Value* j) {
      for (int g = 0; g < G; ++g) {
        Value* ptr = f32at(sc_s, b.CreateAdd(b.CreateMul(j, i32c(Gp)), i32c(g)));
        Value* p = kb.Ex2(b.CreateFSub(kb.Load(kb.F32(), ptr, 4), M[g]));
        kb.Store(p, ptr, 4);
        kb.Set(lsum[g], b.CreateFAdd(kb.Get(lsum[g]), p));
      }
    });
    std::vector<Value*> Lsum = block_reduce(lsum, false);  // its barrier publishes p
    // 3. p * V: thread = (row lane rl, dims 4dc..4dc+3).
    Value* rl = b.CreateUDiv(tid, i32c(TR));
    Value* dc = b.CreateURem(tid, i32c(TR));
    std::vector<std::vector<Value*>> acc(G, std::vector<Value*>(4));
    for (int g = 0; g < G; ++g)
      for (int e = 0; e < 4; ++e) acc[g][e] = kb.Var(kb.F32(), kb.F32c(0.0f), "acc");
    Value* vc = kb.Param("v_cache");
    // kKeysInFlight rows per thread per step, their loads issued together;
    // rows past n are clamped and weighted 0.
    const int U = kKeysInFlight;
    kb.For(rl, n, i32c(int64_t{RL} * U), [&](Value* j0) {
      std::vector<std::vector<Value*>> vs(U);
      std::vector<Value*> ok(U), jc(U);
      for (int u = 0; u < U; ++u) {
        Value* j = b.CreateAdd(j0, i32c(int64_t{u} * RL));
        ok[u] = b.CreateICmpSLT(j, n);
        jc[u] = b.CreateSelect(ok[u], j, b.CreateSub(n, i32c(1)));
        vs[u] = load4(cache_ptr(vc, b.CreateAdd(start, jc[u]), b.CreateShl(dc, i32c(2))));
      }
      for (int u = 0; u < U; ++u) {
        std::vector<Value*> p;
        for (int g4 = 0; g4 < Gp / 4; ++g4) {
          std::vector<Value*> pv = kb.Load4xF32(f32at(sc_s, b.CreateAdd(b.CreateMul(jc[u], i32c(Gp)), i32c(4 * g4))));
          p.insert(p.end(), pv.begin(), pv.end());
        }
        for (int g = 0; g < G; ++g) {
          Value* pg = b.CreateSelect(ok[u], p[g], kb.F32c(0.0f));
          for (int e = 0; e < 4; ++e) kb.Set(acc[g][e], kb.Fma(pg, vs[u][e], kb.Get(acc[g][e])));
        }
      }
    });
    for (int g = 0; g < G; ++g) {
      std::vector<Value*> v;
      for (int e = 0; e < 4; ++e) v.push_back(kb.Get(acc[g][e]));
      Value* idx = b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(rl, i32c(G)), i32c(g)), i32c(D)), b.CreateShl(dc, i32c(2)));
      kb.Store4xF32(f32at(red, idx), v);
    }
    kb.Barrier();
    // acc of output i = g*D + d: the sum over the row lanes.
    auto acc_of = [&](Value* i) {
      Value* sum = nullptr;
      for (int r = 0; r < RL; ++r) {
        Value* v = kb.Load(kb.F32(), f32at(red, b.CreateAdd(i32c(int64_t{r} * G * D), i)), 4);
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
        kb.Store(b.CreateFMul(w, acc_of(i)), f32at(out, b.CreateAdd(out_base, i)), 4);
      });
    }, [&] {
      // 4b. This split's records.
      kb.For(tid, i32c(int64_t{G} * D), i32c(NT), [&](Value* i) {
        Value* g = b.CreateUDiv(i, i32c(D));
        Value* d = b.CreateURem(i, i32c(D));
        Value* at = b.CreateAdd(record(split, g), b.CreateAdd(kb.I64c(2), b.CreateZExt(d, kb.I64())));
        kb.Store(acc_of(i), partial_at(at), 4);
      });
      kb.If(b.CreateICmpEQ(tid, i32c(0)), [&] {
        for (int g = 0; g < G; ++g) {
          Value* at = record(split, i32c(g));
          kb.Store(M[g], partial_at(at), 4);
          kb.Store(Lsum[g], partial_at(b.CreateAdd(at, kb.I64c(1))), 4);
        }
      });
      kb.MembarGl();

      // Arrival, of the live splits only: blocks past the context never get
      // here (their exit triggers the dependents), so at short context the
      // grid's empty blocks cost no barrier, fence or atomic. The last of the
      // nact live blocks to arrive merges.
      kb.Barrier();
      Value* counter = kb.Gep(kb.Param("counter"), b.CreateShl(b.CreateZExt(kvh, kb.I64()), kb.I64c(2)));
      kb.If(b.CreateICmpEQ(tid, i32c(0)), [&] {
        Value* old = kb.AtomicAddU32(counter, i32c(1));
        kb.Store(b.CreateZExt(b.CreateICmpEQ(old, b.CreateSub(nact, i32c(1))), kb.I32()), flag, 4);
      });
      kb.Barrier();
      // The dependents may launch; only the merge is left.
      kb.GridDependencyLaunchDependents();
      kb.If(b.CreateICmpNE(kb.Load(kb.I32(), flag, 4), i32c(0)), [&] {
        kb.MembarGl();
        kb.If(b.CreateICmpEQ(tid, i32c(0)), [&] { kb.StoreVolatile(i32c(0), counter, 4); });
        // Maxima and sums of every live record into shared memory:
        // m at sc_s[g*MS + s], l at sc_s[(G + g)*MS + s].
        kb.For(tid, b.CreateMul(nact, i32c(G)), i32c(NT), [&](Value* i) {
          Value* s = b.CreateUDiv(i, i32c(G));
          Value* g = b.CreateURem(i, i32c(G));
          Value* at = record(s, g);
          Value* m = kb.LoadVolatile(kb.F32(), partial_at(at), 4);
          Value* l = kb.LoadVolatile(kb.F32(), partial_at(b.CreateAdd(at, kb.I64c(1))), 4);
          Value* slot = b.CreateAdd(b.CreateMul(g, i32c(MS)), s);
          kb.Store(m, f32at(sc_s, slot), 4);
          kb.Store(l, f32at(sc_s, b.CreateAdd(slot, i32c(int64_t{G} * MS))), 4);
        }, /*unroll=*/1);
        kb.Barrier();
        // Thread g turns them into weights w[g][s] = 2^(m_s - M) / sum_s' 2^(m_s' - M) l_s'.
        kb.If(b.CreateICmpSLT(tid, i32c(G)), [&] {
          Value* base = b.CreateMul(tid, i32c(MS));
          Value* mx = kb.Var(kb.F32(), kb.F32c(kNegInf), "mx");
          kb.For(i32c(0), nact, i32c(1), [&](Value* s) {
            kb.Set(mx, kb.Max(kb.Get(mx), kb.Load(kb.F32(), f32at(sc_s, b.CreateAdd(base, s)), 4)));
          }, /*unroll=*/1);
          Value* den = kb.Var(kb.F32(), kb.F32c(0.0f), "den");
          kb.For(i32c(0), nact, i32c(1), [&](Value* s) {
            Value* slot = b.CreateAdd(base, s);
            Value* e = kb.Ex2(b.CreateFSub(kb.Load(kb.F32(), f32at(sc_s, slot), 4), kb.Get(mx)));
            Value* l = kb.Load(kb.F32(), f32at(sc_s, b.CreateAdd(slot, i32c(int64_t{G} * MS))), 4);
            kb.Set(den, kb.Fma(e, l, kb.Get(den)));
          }, /*unroll=*/1);
          Value* inv = b.CreateFDiv(kb.F32c(1.0f), kb.Get(den));
          kb.For(i32c(0), nact, i32c(1), [&](Value* s) {
            Value* slot = b.CreateAdd(base, s);
            Value* e = kb.Ex2(b.CreateFSub(kb.Load(kb.F32(), f32at(sc_s, slot), 4), kb.Get(mx)));
            kb.Store(b.CreateFMul(e, inv), f32at(sc_s, slot), 4);
          }, /*unroll=*/1);
        });
        kb.Barrier();
        // out = sum_s w[g][s] * acc_s: each thread owns `per` outputs and
        // streams the splits, kUnroll at a time so their loads are in flight
        // together, then the remainder one by one (no masks: masks became
        // uniform predicates that ptxas 13 spilled on sm_90).
        const int per = (G * D + NT - 1) / NT;
        const int kUnroll = 4;
        std::vector<Value*> outv;
        for (int k = 0; k < per; ++k) outv.push_back(kb.Var(kb.F32(), kb.F32c(0.0f), "o"));
        std::vector<Value*> og(per), od(per);
        for (int k = 0; k < per; ++k) {
          Value* i = b.CreateAdd(tid, i32c(int64_t{k} * NT));
          if (int64_t{k + 1} * NT > int64_t{G} * D)
            i = b.CreateSelect(b.CreateICmpSLT(i, i32c(int64_t{G} * D)), i, i32c(0));
          og[k] = b.CreateUDiv(i, i32c(D));
          od[k] = b.CreateZExt(b.CreateURem(i, i32c(D)), kb.I64());
        }
        auto accumulate = [&](Value* s) {
          for (int k = 0; k < per; ++k) {
            Value* at = b.CreateAdd(record(s, og[k]), b.CreateAdd(kb.I64c(2), od[k]));
            Value* a = kb.LoadVolatile(kb.F32(), partial_at(at), 4);
            Value* w = kb.Load(kb.F32(), f32at(sc_s, b.CreateAdd(b.CreateMul(og[k], i32c(MS)), s)), 4);
            kb.Set(outv[k], kb.Fma(w, a, kb.Get(outv[k])));
          }
        };
        Value* full = b.CreateMul(b.CreateUDiv(nact, i32c(kUnroll)), i32c(kUnroll));
        kb.For(i32c(0), full, i32c(kUnroll), [&](Value* s0) {
          for (int u = 0; u < kUnroll; ++u) accumulate(b.CreateAdd(s0, i32c(u)));
        });
        kb.For(full, nact, i32c(1), [&](Value* s) { accumulate(s); }, /*unroll=*/1);
        for (int k = 0; k < per; ++k) {
          Value* i = b.CreateAdd(tid, i32c(int64_t{k} * NT));
          kb.If(b.CreateICmpSLT(i, i32c(int64_t{G} * D)), [&] {
            kb.Store(kb.Get(outv[k]), f32at(out, b.CreateAdd(out_base, i)), 4);
          });
        }
      });
    });
  });
  kb.Finish();
  return absl::OkStatus();
}

}  // namespace kiln::codegen
