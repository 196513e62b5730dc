// kGemm: the matvec's math (same parameters, prologue and epilogue) for
// many tokens. Block (x, y) computes rows [x*tile_m, +tile_m) for tokens
// [y*tile_n, +tile_n), stepping through k in tiles of tile_k:
//   * the weight tile is dequantized (exact ggml values, weight_decoder.h)
//     into shared memory, as f16 for tensor cores or f32;
//   * the activation tile (RMSNorm applied: x * norm_w * r_t, r_t computed
//     per token up front) is converted the same way;
//   * tensor cores: each warp owns m_frags x n_frags mma.sync.m16n8k16
//     tiles (f16 inputs, fp32 accumulation; PTX ISA "Matrix fragments for
//     mma.m16n8k16"); fp32 path: each thread owns micro_m x 4 outputs.
// The result tile goes through shared memory, so every epilogue (store,
// residual add, silu(gate)*up pairs) is applied by whichever thread holds
// both of its inputs.
//
// stages = 1: each k tile is loaded, converted into shared memory and
// computed in turn, so every tile waits out its global loads. stages = 2:
// the loads of tile k + 1 (raw weight words, activations) go out into
// registers before tile k is computed and are converted into shared memory
// after it, so their latency overlaps the mma work (two barriers a tile, as
// before; the last tile's loads repeat it, their conversion is unused).
//
// f16 caveat: weights and activations are rounded to f16 (relative error
// 2^-11 each) and activations beyond 65504 overflow; use
// tensor_cores = false where that matters.
#include "compiler/codegen/emitters.h"
#include "compiler/codegen/kernel_plans.h"
#include "compiler/codegen/weight_decoder.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

namespace kiln::codegen {

using llvm::Value;

namespace {

class GemmEmitter {
 public:
  explicit GemmEmitter(KernelBuilder& kb)
      : kb_(kb), b_(kb.b()), spec_(kb.spec()), plan_(PlanGemm(kb.spec())), dec_(kb.spec().weight) {}
  absl::Status Emit();

 private:
  Value* I(int64_t v) { return kb_.I32c(v); }
  // Byte address of element (row, col) of a shared tile.
  Value* At(Value* base, Value* row, Value* col, int stride, int elem_bytes) {
    Value* e = b_.CreateAdd(b_.CreateMul(row, I(stride)), col);
    return kb_.Gep(base, b_.CreateMul(b_.CreateZExt(e, kb_.I64()), kb_.I64c(elem_bytes)));
  }
  // Stores 4 floats to a shared tile row as f16 (tensor cores) or f32.
  void Store4(Value* ptr, const std::vector<Value*>& v) {
    if (plan_.elem_bytes == 4) {
      kb_.Store4xF32(ptr, v);
      return;
    }
    Value* vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(kb_.F16(), 4));
    for (int i = 0; i < 4; ++i) vec = b_.CreateInsertElement(vec, b_.CreateFPTrunc(v[i], kb_.F16()), uint64_t(i));
    kb_.Store(vec, ptr, 8);
  }
  // A warp's place in the mma.sync m16n8k16 tiling: lane group (lane / 4),
  // 2 x (lane % 4), and the first row and token of its warp tile. Used by
  // the k loop and by the accumulator store, which must agree.
  struct Fragments {
    Value *grp, *tig2, *mbase, *nbase;
  };
  Fragments WarpFragments() {
    Value* lane = b_.CreateAnd(tid_, I(31));
    Value* warp = b_.CreateLShr(tid_, I(5));
    Value* wm = b_.CreateURem(warp, I(plan_.warps_m));
    Value* wn = b_.CreateUDiv(warp, I(plan_.warps_m));
    return {b_.CreateLShr(lane, I(2)), b_.CreateShl(b_.CreateAnd(lane, I(3)), I(1)),
            b_.CreateMul(wm, I(plan_.tile_m / plan_.warps_m)), b_.CreateMul(wn, I(plan_.tile_n / plan_.warps_n))};
  }
  // Weight item `idx` of tile kt: its row in the tile and its piece.
  struct WeightItem {
    Value* rl;
    PieceRef ref;
  };
  WeightItem WeightItemAt(Value* kt, Value* idx);
  std::vector<Value*> LoadPiece(const WeightItem& it);
  // Decodes the piece exactly into the A tile (columns relative to tile
  // kt); with `ok`, stores only where it holds.
  void StorePiece(Value* kt, const WeightItem& it, const std::vector<Value*>& raw, Value* ok);
  // Activation quad `idx` of tile kt: its token in the tile, column in the
  // tile and in the row, whether the token exists, and its global address.
  struct ActivationQuad {
    Value *tl, *kq, *k, *valid, *x;
  };
  ActivationQuad ActivationQuadAt(Value* kt, Value* idx);
  // RMSNorm applied (x * r_t * norm_w), tokens past T zeroed, into the B tile.
  void StoreQuad(const ActivationQuad& q, std::vector<Value*> x);
  // A thread's share of a k tile's loads: its weight pieces' raw words and
  // its activation quads, issued by Fetch* and converted into the shared
  // tiles by Store*. Each share is a fixed count of items (the last clamped
  // to the tile, `ok` false past it), so the loaded values can wait in
  // registers while other work runs.
  struct WeightShare {
    Value* kt;
    std::vector<WeightItem> items;
    std::vector<Value*> ok;
    std::vector<std::vector<Value*>> raw;
  };
  struct ActivationShare {
    std::vector<ActivationQuad> quads;
    std::vector<std::vector<Value*>> x;
  };
  WeightShare FetchWeights(Value* kt);
  void StoreWeights(const WeightShare& share);
  ActivationShare FetchActivations(Value* kt);
  void StoreActivations(const ActivationShare& share);
  // stages = 1: tile kt loaded and stored in turn.
  void LoadWeightTile(Value* kt);
  void LoadActivationTile(Value* kt);
  void ComputeTensorCores();
  void ComputeFp32();
  void StoreAccumulators();
  void Epilogue();

  KernelBuilder& kb_;
  llvm::IRBuilder<>& b_;
  const KernelSpec& spec_;
  GemmPlan plan_;
  WeightDecoder dec_;
  Value* smem_ = nullptr;
  Value* a_s_ = nullptr;
  Value* b_s_ = nullptr;
  Value* c_s_ = nullptr;
  Value* r_s_ = nullptr;
  Value* tid_ = nullptr;
  Value* m0_ = nullptr;
  Value* n0_ = nullptr;
  Value* tokens_ = nullptr;
  Value* last_token_ = nullptr;
  std::vector<Value*> acc_;  // tensor: [mf][nf][4]; fp32: [mm][nn]
};

absl::Status GemmEmitter::Emit() {
  const int TN = plan_.tile_n, NW = plan_.warps;
  smem_ = kb_.DynamicShared();
  a_s_ = kb_.Gep(smem_, plan_.a_offset);
  b_s_ = kb_.Gep(smem_, plan_.b_offset);
  c_s_ = kb_.Gep(smem_, plan_.c_offset);
  r_s_ = kb_.Gep(smem_, plan_.r_offset);
  tid_ = kb_.Tid();
  m0_ = b_.CreateMul(kb_.Ctaid(0), I(plan_.tile_m));
  n0_ = b_.CreateMul(kb_.Ctaid(1), I(TN));
  kb_.GridDependencyWait();
  tokens_ = kb_.Param("T");
  last_token_ = b_.CreateSub(b_.CreateSelect(b_.CreateICmpSGT(tokens_, I(1)), tokens_, I(1)), I(1));

  if (plan_.rms) {
    // r_t = 1/sqrt(mean(x_t^2) + eps) for the block's tokens, a warp per token.
    Value* lane = b_.CreateAnd(tid_, I(31));
    Value* X = kb_.Param("x");
    kb_.For(b_.CreateLShr(tid_, I(5)), I(TN), I(NW), [&](Value* tl) {
      Value* t = b_.CreateAdd(n0_, tl);
      t = kb_.SMin(t, last_token_);
      Value* row = kb_.Gep(X, b_.CreateMul(b_.CreateZExt(t, kb_.I64()), kb_.I64c(spec_.cols * 4)));
      Value* ss = kb_.Var(kb_.F32(), kb_.F32c(0.0f), "ss");
      kb_.For(b_.CreateShl(lane, I(2)), I(spec_.cols), I(4 * kWarp), [&](Value* k) {
        std::vector<Value*> x = kb_.LoadInput4xF32(kb_.Gep(row, b_.CreateShl(b_.CreateZExt(k, kb_.I64()), kb_.I64c(2))));
        Value* s = kb_.Get(ss);
        for (int i = 0; i < 4; ++i) s = kb_.Fma(x[i], x[i], s);
        kb_.Set(ss, s);
      });
      Value* total = kb_.WarpSum(kb_.Get(ss));
      kb_.If(b_.CreateICmpEQ(lane, I(0)), [&] {
        Value* mean = b_.CreateFDiv(total, kb_.F32c(static_cast<float>(spec_.cols)));
        Value* r = b_.CreateFDiv(kb_.F32c(1.0f), kb_.Sqrt(b_.CreateFAdd(mean, kb_.F32c(spec_.eps))));
        kb_.Store(r, kb_.Gep(r_s_, b_.CreateShl(b_.CreateZExt(tl, kb_.I64()), kb_.I64c(2))), 4);
      });
    });
    kb_.Barrier();
  }

  int n_acc = plan_.tensor_cores ? plan_.m_frags * plan_.n_frags * 4 : plan_.micro_m * plan_.micro_n;
  for (int i = 0; i < n_acc; ++i) acc_.push_back(kb_.Var(kb_.F32(), kb_.F32c(0.0f), "acc"));
  auto compute = [&] {
    if (plan_.tensor_cores)
      ComputeTensorCores();
    else
      ComputeFp32();
  };
  if (plan_.stages == 2) {
    // Tile 0, then each tile's compute with the next one's loads in flight.
    StoreWeights(FetchWeights(I(0)));
    StoreActivations(FetchActivations(I(0)));
    kb_.Barrier();
    kb_.For(I(0), I(plan_.k_tiles), I(1), [&](Value* kt) {
      Value* next = kb_.SMin(b_.CreateAdd(kt, I(1)), I(plan_.k_tiles - 1));
      WeightShare w = FetchWeights(next);
      ActivationShare x = FetchActivations(next);
      compute();
      kb_.Barrier();
      StoreWeights(w);
      StoreActivations(x);
      kb_.Barrier();
    }, /*unroll=*/1);
  } else {
    kb_.For(I(0), I(plan_.k_tiles), I(1), [&](Value* kt) {
      LoadWeightTile(kt);
      LoadActivationTile(kt);
      kb_.Barrier();
      compute();
      kb_.Barrier();
    });
  }
  kb_.GridDependencyLaunchDependents();
  StoreAccumulators();
  kb_.Barrier();
  Epilogue();
  kb_.Finish();
  return absl::OkStatus();
}

GemmEmitter::WeightItem GemmEmitter::WeightItemAt(Value* kt, Value* idx) {
  const int ppr = plan_.pieces_per_tile_row;
  Value* rl = b_.CreateUDiv(idx, I(ppr));
  Value* piece = b_.CreateAdd(b_.CreateMul(kt, I(ppr)), b_.CreateURem(idx, I(ppr)));
  Value* row = b_.CreateAdd(m0_, rl);
  row = b_.CreateSelect(b_.CreateICmpSLT(row, I(spec_.rows)), row, I(spec_.rows - 1));
  Value* row64 = b_.CreateZExt(row, kb_.I64());
  Value* rowptr = kb_.Gep(kb_.Param("w"), b_.CreateMul(row64, kb_.I64c(WeightRowBytes(spec_.weight, spec_.cols))));
  const int64_t scale_row_bytes = ScaleRowBytes(spec_.weight, spec_.cols);
  Value* scale_row =
      scale_row_bytes > 0 ? kb_.Gep(kb_.Param("w_scales"), b_.CreateMul(row64, kb_.I64c(scale_row_bytes))) : nullptr;
  return {rl, PieceRef{rowptr, scale_row, piece}};
}

std::vector<Value*> GemmEmitter::LoadPiece(const WeightItem& it) {
  // Staged formats read their 2-byte units straight from the row.
  Value* rowptr = it.ref.row;
  U16Reader reader = [&](Value* block, Value* off) -> Value* {
    Value* byte = b_.CreateAdd(b_.CreateMul(b_.CreateZExt(block, kb_.I64()), kb_.I64c(plan_.fmt.block_bytes)),
                               b_.CreateZExt(off, kb_.I64()));
    return kb_.LoadNc(kb_.I16(), kb_.Gep(rowptr, byte), 2);
  };
  return dec_.Load(kb_, it.ref, &reader);
}

void GemmEmitter::StorePiece(Value* kt, const WeightItem& it, const std::vector<Value*>& raw, Value* ok) {
  // Decoded before any branch, so the loads' first use stays here.
  Value* k0 = b_.CreateMul(kt, I(plan_.tile_k));
  std::vector<std::pair<Value*, std::vector<Value*>>> stores;
  for (const Segment& s : dec_.Decode(kb_, it.ref, raw)) {
    for (const Quad& q : s.quads) {
      std::vector<Value*> w;
      for (int i = 0; i < 4; ++i) w.push_back(dec_.ExactWeight(kb_, s, q.f[i]));
      stores.emplace_back(At(a_s_, it.rl, b_.CreateSub(q.col, k0), plan_.a_stride, plan_.elem_bytes), w);
    }
  }
  auto store = [&] {
    for (const auto& [ptr, w] : stores) Store4(ptr, w);
  };
  if (ok == nullptr)
    store();
  else
    kb_.If(ok, store);
}

void GemmEmitter::LoadWeightTile(Value* kt) {
  kb_.For(tid_, I(int64_t{plan_.tile_m} * plan_.pieces_per_tile_row), I(plan_.threads), [&](Value* idx) {
    const WeightItem it = WeightItemAt(kt, idx);
    StorePiece(kt, it, LoadPiece(it), nullptr);
  }, /*unroll=*/2);
}

GemmEmitter::WeightShare GemmEmitter::FetchWeights(Value* kt) {
  const int64_t total = int64_t{plan_.tile_m} * plan_.pieces_per_tile_row;
  WeightShare share{kt, {}, {}, {}};
  for (int64_t i = 0; i * plan_.threads < total; ++i) {
    Value* idx = b_.CreateAdd(tid_, I(i * plan_.threads));
    Value* ok = b_.CreateICmpSLT(idx, I(total));
    share.items.push_back(WeightItemAt(kt, b_.CreateSelect(ok, idx, I(total - 1))));
    share.ok.push_back(ok);
    share.raw.push_back(LoadPiece(share.items.back()));
  }
  return share;
}

void GemmEmitter::StoreWeights(const WeightShare& share) {
  for (size_t i = 0; i < share.items.size(); ++i) StorePiece(share.kt, share.items[i], share.raw[i], share.ok[i]);
}

GemmEmitter::ActivationQuad GemmEmitter::ActivationQuadAt(Value* kt, Value* idx) {
  const int quads = plan_.tile_k / 4;
  Value* tl = b_.CreateUDiv(idx, I(quads));
  Value* kq = b_.CreateShl(b_.CreateURem(idx, I(quads)), I(2));
  Value* t = b_.CreateAdd(n0_, tl);
  Value* tc = kb_.SMin(t, last_token_);
  Value* k = b_.CreateAdd(b_.CreateMul(kt, I(plan_.tile_k)), kq);
  Value* off = b_.CreateAdd(b_.CreateMul(b_.CreateZExt(tc, kb_.I64()), kb_.I64c(spec_.cols)), b_.CreateZExt(k, kb_.I64()));
  return {tl, kq, k, b_.CreateICmpSLT(t, tokens_), kb_.Gep(kb_.Param("x"), b_.CreateShl(off, kb_.I64c(2)))};
}

void GemmEmitter::StoreQuad(const ActivationQuad& q, std::vector<Value*> x) {
  if (plan_.rms) {
    std::vector<Value*> w =
        kb_.LoadNc4xF32(kb_.Gep(kb_.Param("norm_w"), b_.CreateShl(b_.CreateZExt(q.k, kb_.I64()), kb_.I64c(2))));
    Value* r = kb_.Load(kb_.F32(), kb_.Gep(r_s_, b_.CreateShl(b_.CreateZExt(q.tl, kb_.I64()), kb_.I64c(2))), 4);
    for (int i = 0; i < 4; ++i) x[i] = b_.CreateFMul(b_.CreateFMul(x[i], r), w[i]);
  }
  for (int i = 0; i < 4; ++i) x[i] = b_.CreateSelect(q.valid, x[i], kb_.F32c(0.0f));
  Store4(At(b_s_, q.tl, q.kq, plan_.b_stride, plan_.elem_bytes), x);
}

void GemmEmitter::LoadActivationTile(Value* kt) {
  kb_.For(tid_, I(int64_t{plan_.tile_n} * (plan_.tile_k / 4)), I(plan_.threads), [&](Value* idx) {
    const ActivationQuad q = ActivationQuadAt(kt, idx);
    StoreQuad(q, kb_.LoadInput4xF32(q.x));
  }, /*unroll=*/4);
}

GemmEmitter::ActivationShare GemmEmitter::FetchActivations(Value* kt) {
  const int64_t total = int64_t{plan_.tile_n} * (plan_.tile_k / 4);
  ActivationShare share;
  for (int64_t i = 0; i * plan_.threads < total; ++i) {
    Value* idx = b_.CreateAdd(tid_, I(i * plan_.threads));
    // Past the tile: a repeat of its last quad, stored to the same place.
    share.quads.push_back(ActivationQuadAt(kt, kb_.SMin(idx, I(total - 1))));
    share.x.push_back(kb_.LoadInput4xF32(share.quads.back().x, /*pinned=*/true));
  }
  return share;
}

void GemmEmitter::StoreActivations(const ActivationShare& share) {
  for (size_t i = 0; i < share.quads.size(); ++i) StoreQuad(share.quads[i], share.x[i]);
}

void GemmEmitter::ComputeTensorCores() {
  const int MF = plan_.m_frags, NF = plan_.n_frags;
  const Fragments f = WarpFragments();
  Value *grp = f.grp, *tig2 = f.tig2, *mbase = f.mbase, *nbase = f.nbase;
  llvm::Type* h2 = llvm::FixedVectorType::get(kb_.F16(), 2);
  auto frag = [&](Value* base, Value* row, Value* col, int stride) {
    return b_.CreateBitCast(kb_.Load(kb_.I32(), At(base, row, col, stride, 2), 4), h2);
  };
  // k steps of 16 as a runtime loop: unrolled, every fragment load of the
  // tile would be hoisted up front.
  kb_.For(I(0), I(plan_.tile_k), I(16), [&](Value* kk) {
    Value* c0 = b_.CreateAdd(kk, tig2);
    Value* c8 = b_.CreateAdd(c0, I(8));
    std::vector<std::array<Value*, 4>> a(MF);
    for (int mf = 0; mf < MF; ++mf) {
      Value* r0 = b_.CreateAdd(mbase, b_.CreateAdd(I(16 * mf), grp));
      Value* r8 = b_.CreateAdd(r0, I(8));
      a[mf] = {frag(a_s_, r0, c0, plan_.a_stride), frag(a_s_, r8, c0, plan_.a_stride),
               frag(a_s_, r0, c8, plan_.a_stride), frag(a_s_, r8, c8, plan_.a_stride)};
    }
    for (int nf = 0; nf < NF; ++nf) {
      Value* n = b_.CreateAdd(nbase, b_.CreateAdd(I(8 * nf), grp));
      Value* b0 = frag(b_s_, n, c0, plan_.b_stride);
      Value* b1 = frag(b_s_, n, c8, plan_.b_stride);
      for (int mf = 0; mf < MF; ++mf) {
        int base = (mf * NF + nf) * 4;
        Value* r = b_.CreateIntrinsic(
            llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32, {},
            {a[mf][0], a[mf][1], a[mf][2], a[mf][3], b0, b1, kb_.Get(acc_[base]), kb_.Get(acc_[base + 1]),
             kb_.Get(acc_[base + 2]), kb_.Get(acc_[base + 3])});
        for (int i = 0; i < 4; ++i) kb_.Set(acc_[base + i], b_.CreateExtractValue(r, unsigned(i)));
      }
    }
  }, /*unroll=*/2);
}

void GemmEmitter::ComputeFp32() {
  const int MM = plan_.micro_m, NN = plan_.micro_n;
  Value* tm = b_.CreateURem(tid_, I(plan_.threads_m));
  Value* tn = b_.CreateMul(b_.CreateUDiv(tid_, I(plan_.threads_m)), I(NN));
  kb_.For(I(0), I(plan_.tile_k), I(4), [&](Value* k) {
    std::vector<std::vector<Value*>> a(MM), x(NN);
    for (int mm = 0; mm < MM; ++mm)
      a[mm] = kb_.Load4xF32(At(a_s_, b_.CreateAdd(tm, I(int64_t{mm} * plan_.threads_m)), k, plan_.a_stride, 4));
    for (int nn = 0; nn < NN; ++nn) x[nn] = kb_.Load4xF32(At(b_s_, b_.CreateAdd(tn, I(nn)), k, plan_.b_stride, 4));
    for (int mm = 0; mm < MM; ++mm) {
      for (int nn = 0; nn < NN; ++nn) {
        Value* v = kb_.Get(acc_[mm * NN + nn]);
        for (int i = 0; i < 4; ++i) v = kb_.Fma(a[mm][i], x[nn][i], v);
        kb_.Set(acc_[mm * NN + nn], v);
      }
    }
  }, /*unroll=*/2);
}

void GemmEmitter::StoreAccumulators() {
  // C tile: [tile_n][c_stride] floats, token-major so the epilogue's stores
  // along rows are coalesced.
  auto store = [&](Value* n, Value* m, Value* v) { kb_.Store(v, At(c_s_, n, m, plan_.c_stride, 4), 4); };
  if (plan_.tensor_cores) {
    const Fragments f = WarpFragments();
    Value *grp = f.grp, *tig2 = f.tig2, *mbase = f.mbase, *nbase = f.nbase;
    for (int mf = 0; mf < plan_.m_frags; ++mf) {
      for (int nf = 0; nf < plan_.n_frags; ++nf) {
        int base = (mf * plan_.n_frags + nf) * 4;
        Value* m = b_.CreateAdd(mbase, b_.CreateAdd(I(16 * mf), grp));
        Value* n = b_.CreateAdd(nbase, b_.CreateAdd(I(8 * nf), tig2));
        store(n, m, kb_.Get(acc_[base]));
        store(b_.CreateAdd(n, I(1)), m, kb_.Get(acc_[base + 1]));
        store(n, b_.CreateAdd(m, I(8)), kb_.Get(acc_[base + 2]));
        store(b_.CreateAdd(n, I(1)), b_.CreateAdd(m, I(8)), kb_.Get(acc_[base + 3]));
      }
    }
    return;
  }
  Value* tm = b_.CreateURem(tid_, I(plan_.threads_m));
  Value* tn = b_.CreateMul(b_.CreateUDiv(tid_, I(plan_.threads_m)), I(plan_.micro_n));
  for (int mm = 0; mm < plan_.micro_m; ++mm)
    for (int nn = 0; nn < plan_.micro_n; ++nn)
      store(b_.CreateAdd(tn, I(nn)), b_.CreateAdd(tm, I(int64_t{mm} * plan_.threads_m)),
            kb_.Get(acc_[mm * plan_.micro_n + nn]));
}

void GemmEmitter::Epilogue() {
  const int TM = plan_.tile_m, TN = plan_.tile_n;
  Value* out = kb_.Param("out");
  auto c_at = [&](Value* n, Value* m) { return kb_.Load(kb_.F32(), At(c_s_, n, m, plan_.c_stride, 4), 4); };
  if (spec_.epilogue == Epilogue::kSiluMulPairs) {
    const int pg = spec_.pair_group, half = TM / 2;
    kb_.For(tid_, I(int64_t{TN} * half), I(plan_.threads), [&](Value* idx) {
      Value* tl = b_.CreateUDiv(idx, I(half));
      Value* jl = b_.CreateURem(idx, I(half));
      Value* gate = b_.CreateAdd(b_.CreateMul(b_.CreateUDiv(jl, I(pg)), I(2 * pg)), b_.CreateURem(jl, I(pg)));
      Value* t = b_.CreateAdd(n0_, tl);
      Value* ok = b_.CreateAnd(b_.CreateICmpSLT(b_.CreateAdd(m0_, gate), I(spec_.rows)), b_.CreateICmpSLT(t, tokens_));
      kb_.If(ok, [&] {
        Value* g = c_at(tl, gate);
        Value* u = c_at(tl, b_.CreateAdd(gate, I(pg)));
        Value* e = kb_.Ex2(b_.CreateFMul(g, kb_.F32c(-1.4426950408889634f)));
        Value* silu = b_.CreateFDiv(g, b_.CreateFAdd(kb_.F32c(1.0f), e));
        Value* j = b_.CreateAdd(b_.CreateLShr(m0_, I(1)), jl);
        Value* o = b_.CreateAdd(b_.CreateMul(b_.CreateZExt(t, kb_.I64()), kb_.I64c(spec_.rows / 2)), b_.CreateZExt(j, kb_.I64()));
        kb_.Store(b_.CreateFMul(silu, u), kb_.Gep(out, b_.CreateShl(o, kb_.I64c(2))), 4);
      });
    });
    return;
  }
  kb_.For(tid_, I(int64_t{TN} * TM), I(plan_.threads), [&](Value* idx) {
    Value* tl = b_.CreateUDiv(idx, I(TM));
    Value* ml = b_.CreateURem(idx, I(TM));
    Value* t = b_.CreateAdd(n0_, tl);
    Value* m = b_.CreateAdd(m0_, ml);
    Value* ok = b_.CreateAnd(b_.CreateICmpSLT(m, I(spec_.rows)), b_.CreateICmpSLT(t, tokens_));
    kb_.If(ok, [&] {
      Value* v = c_at(tl, ml);
      Value* o = b_.CreateAdd(b_.CreateMul(b_.CreateZExt(t, kb_.I64()), kb_.I64c(spec_.rows)), b_.CreateZExt(m, kb_.I64()));
      Value* ptr = kb_.Gep(out, b_.CreateShl(o, kb_.I64c(2)));
      if (spec_.epilogue == Epilogue::kAddInPlace) v = b_.CreateFAdd(kb_.Load(kb_.F32(), ptr, 4), v);
      if (spec_.epilogue == Epilogue::kSiluMulWith) {
        Value* g = kb_.LoadInput(kb_.F32(), kb_.Gep(kb_.Param("extra"), b_.CreateShl(o, kb_.I64c(2))), 4);
        Value* e = kb_.Ex2(b_.CreateFMul(g, kb_.F32c(-1.4426950408889634f)));
        v = b_.CreateFMul(b_.CreateFDiv(g, b_.CreateFAdd(kb_.F32c(1.0f), e)), v);
      }
      kb_.Store(v, ptr, 4);
    });
  });
}

}  // namespace

absl::Status EmitGemm(KernelBuilder& kb) { return GemmEmitter(kb).Emit(); }

}  // namespace kiln::codegen
