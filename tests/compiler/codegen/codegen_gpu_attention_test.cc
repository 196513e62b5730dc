// GPU numerics of the RoPE, q/k-norm + KV store and attention kernels
// (decode and prefill, f16 and f32 caches, scaled RoPE) against the
// reference kernels, on fresh random inputs with poisoned outputs (CTest
// label `gpu`; skipped where no GPU is visible).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/kernel_validation.h"
#include "compiler/codegen/reference_kernels.h"
#include "gtest/gtest.h"
#include "models/quant/float16.h"
#include "tests/compiler/codegen/gpu_harness.h"
#include "tests/compiler/codegen/test_specs.h"

namespace kiln::codegen {
namespace {

struct AttnModel {
  const char* name;
  int64_t heads, kv_heads, head_dim;
};

KernelSpec AttnBase(const AttnModel& m, bool f16) {
  KernelSpec s;
  s.n_head = m.heads;
  s.n_head_kv = m.kv_heads;
  s.head_dim = m.head_dim;
  s.kv_f16 = f16;
  s.rope_base = 1000000.0f;
  s.attn_scale = 1.0f / std::sqrt(static_cast<float>(m.head_dim));
  s.programmatic_launch = true;
  return s;
}

std::vector<float> CacheAsFloat(const std::vector<uint8_t>& c, bool f16) {
  return tune::CacheAsFloats(c.data(), c.size(), f16);
}

// Rope + store of spec `rs` (kQkNormRopeStore): T = 3 tokens at position
// 1000 against the reference, q and the new K/V rows.
void CheckRopeStore(Gpu* gpu, const Loaded& l, Buffers& bufs, const KernelSpec& rs, std::mt19937& rng) {
  const int64_t D = rs.head_dim, nq = rs.n_head, nkv = rs.n_head_kv;
  const int64_t C = 4096, row = nkv * D;
  const int eb = rs.kv_f16 ? 2 : 4;
  const int32_t T = 3, pos = 1000;
  std::vector<float> qkv = RandomFloats(rng, size_t(T * (nq + 2 * nkv) * D));
  std::vector<float> qn = RandomFloats(rng, size_t(D), 0.5f, 1.5f), kn = RandomFloats(rng, size_t(D), 0.5f, 1.5f);
  std::vector<int32_t> posv = {pos};
  std::vector<uint8_t> kc(size_t(C * row * eb), 0), vc(kc.size(), 0);
  CUdeviceptr dqkv = bufs.Upload(qkv), dqn = bufs.Upload(qn), dkn = bufs.Upload(kn), dpos = bufs.Upload(posv),
              dk = bufs.Upload(kc), dv = bufs.Upload(vc), dq = bufs.Poisoned(size_t(T * nq * D * 4));
  Launch(gpu, l, rs.name, {P(dqkv), P(dqn), P(dkn), P(dpos), P(dk), P(dv), P(dq), I(T)}, T);
  std::vector<float> q_got = bufs.Download<float>(dq, size_t(T * nq * D)), q_want(q_got.size());
  std::vector<uint8_t> k_got = bufs.Download<uint8_t>(dk, kc.size()), v_got = bufs.Download<uint8_t>(dv, vc.size());
  ASSERT_TRUE(reference::QkNormRopeStore(rs, qkv.data(), qn.data(), kn.data(), posv.data(), kc.data(), vc.data(),
                                         q_want.data(), T)
                  .ok());
  double eq = RelErr(q_got, q_want);
  double ek = RelErr(CacheAsFloat(k_got, rs.kv_f16), CacheAsFloat(kc, rs.kv_f16));
  double ev = RelErr(CacheAsFloat(v_got, rs.kv_f16), CacheAsFloat(vc, rs.kv_f16));
  std::printf("%-20s q %.2e k %.2e v %.2e\n", rs.name.c_str(), eq, ek, ev);
  EXPECT_LT(eq, 1e-5) << rs.name;
  EXPECT_LT(ek, rs.kv_f16 ? 2e-3 : 1e-5) << rs.name;
  EXPECT_EQ(ev, 0.0) << rs.name;
}

// Decode attention `s` at position `pos`, twice (the counter must come back
// to zero), against the reference; with rope_fused, the new token's K/V row
// starts poisoned and must come out as the reference's.
void CheckDecode(Gpu* gpu, const Loaded& l, Buffers& bufs, const KernelSpec& s, int32_t pos, std::mt19937& rng) {
  const int64_t D = s.head_dim, nq = s.n_head, nkv = s.n_head_kv, row = nkv * D;
  const int eb = s.kv_f16 ? 2 : 4;
  std::vector<uint8_t> kc = RandomCache(rng, (pos + 1) * row, s.kv_f16), vc = RandomCache(rng, (pos + 1) * row, s.kv_f16);
  std::vector<float> q = RandomFloats(rng, size_t((s.rope_fused ? nq + 2 * nkv : nq) * D));
  std::vector<float> qn = RandomFloats(rng, size_t(D), 0.5f, 1.5f), kn = RandomFloats(rng, size_t(D), 0.5f, 1.5f);
  std::vector<int32_t> posv = {pos};
  const int64_t G = nq / nkv;
  std::vector<uint32_t> counter(size_t(nkv), 0);
  if (s.rope_fused) {
    std::fill(kc.end() - row * eb, kc.end(), uint8_t{0xFF});
    std::fill(vc.end() - row * eb, vc.end(), uint8_t{0xFF});
  }
  CUdeviceptr dq = bufs.Upload(q), dk = bufs.Upload(kc), dv = bufs.Upload(vc), dpos = bufs.Upload(posv),
              dpart = bufs.Poisoned(size_t(nkv * s.attention.max_splits * G * (D + 2) * 4)),
              dcnt = bufs.Upload(counter), dqn = bufs.Upload(qn), dkn = bufs.Upload(kn);
  std::vector<float> want(size_t(nq * D));
  if (s.rope_fused) {
    ASSERT_TRUE(reference::AttentionDecodeFused(s, q.data(), qn.data(), kn.data(), posv.data(), kc.data(), vc.data(),
                                                want.data())
                    .ok());
  } else {
    ASSERT_TRUE(reference::AttentionDecode(s, q.data(), kc.data(), vc.data(), posv.data(), want.data()).ok());
  }
  for (int rep = 0; rep < 2; ++rep) {
    CUdeviceptr dout = bufs.Poisoned(size_t(nq * D * 4));
    if (s.rope_fused)
      Launch(gpu, l, s.name, {P(dq), P(dk), P(dv), P(dpos), P(dout), P(dpart), P(dcnt), P(dqn), P(dkn)}, 1);
    else
      Launch(gpu, l, s.name, {P(dq), P(dk), P(dv), P(dpos), P(dout), P(dpart), P(dcnt)}, 1);
    double e = RelErr(bufs.Download<float>(dout, size_t(nq * D)), want);
    std::printf("%-20s pos %5d rep %d rel err %.2e\n", s.name.c_str(), pos, rep, e);
    EXPECT_LT(e, 1e-4) << s.name << " pos " << pos;
    std::vector<uint32_t> c = bufs.Download<uint32_t>(dcnt, size_t(nkv));
    for (uint32_t v : c) EXPECT_EQ(v, 0u) << s.name;
  }
  if (s.rope_fused) {
    // Row pos as the reference wrote it, the rows before it untouched.
    const std::vector<uint8_t> gk = bufs.Download<uint8_t>(dk, kc.size()), gv = bufs.Download<uint8_t>(dv, vc.size());
    auto row_pos = [&](const std::vector<uint8_t>& c) {
      return CacheAsFloat(std::vector<uint8_t>(c.end() - row * eb, c.end()), s.kv_f16);
    };
    double ek = RelErr(row_pos(gk), row_pos(kc)), ev = RelErr(row_pos(gv), row_pos(vc));
    std::printf("%-20s pos %5d k %.2e v %.2e\n", s.name.c_str(), pos, ek, ev);
    EXPECT_LT(ek, s.kv_f16 ? 2e-3 : 1e-5) << s.name << " pos " << pos;
    EXPECT_EQ(ev, 0.0) << s.name << " pos " << pos;
    EXPECT_TRUE(std::equal(gk.begin(), gk.end() - row * eb, kc.begin())) << s.name << ": K rows before pos changed";
    EXPECT_TRUE(std::equal(gv.begin(), gv.end() - row * eb, vc.begin())) << s.name << ": V rows before pos changed";
  }
}

TEST(CodegenGpu, RopeAndAttention) {
  REQUIRE_GPU();
  // wide with an f32 cache takes the decode attention's key-per-thread path.
  const AttnModel models[] = {{"tiny", 4, 2, 64}, {"b8", 32, 8, 128}, {"wide", 8, 2, 256}};
  std::vector<KernelSpec> specs;
  for (const AttnModel& m : models)
    for (bool f16 : {true, false}) {
      const char* kv = f16 ? "f16" : "f32";
      KernelSpec r = AttnBase(m, f16);
      r.family = Family::kQkNormRopeStore;
      r.name = absl::StrCat("rope_", m.name, "_", kv);
      r.elementwise.threads = 64;
      specs.push_back(r);
      // Decode: 64 splits of 64 positions or more, up to 640 (covers 40960).
      KernelSpec d = AttnBase(m, f16);
      d.family = Family::kAttentionDecode;
      d.name = absl::StrCat("dec_", m.name, "_", kv);
      d.attention.max_splits = 64;
      d.attention.min_split_positions = 64;
      d.attention.split_positions = 640;
      specs.push_back(d);
      // Decode with a small capacity, 4 splits of at most 64 positions:
      // positions from 256 on are not attended.
      KernelSpec c = d;
      c.name = absl::StrCat("dec_cap_", m.name, "_", kv);
      c.attention.max_splits = 4;
      c.attention.split_positions = 64;
      c.attention.keys_in_flight = 1;  // the fewest loads in flight: more rounds a split
      c.attention.value_bytes_in_flight = f16 ? 8 : 16;  // one row a round
      specs.push_back(c);
      // Decode with 16 splits of up to 1024 positions (covers 16384) on 256
      // threads: the merge's threads split the splits in groups (tiny, b8)
      // or take one 16-byte chunk each (wide).
      KernelSpec f = d;
      f.name = absl::StrCat("dec16_", m.name, "_", kv);
      f.attention.max_splits = 16;
      f.attention.split_positions = 1024;
      f.attention.threads = 256;
      f.attention.keys_in_flight = 8;  // twice the default's loads in flight
      f.attention.value_bytes_in_flight = 128;
      specs.push_back(f);
      KernelSpec p = AttnBase(m, f16);
      p.family = Family::kAttentionPrefill;
      p.name = absl::StrCat("pre_", m.name, "_", kv);
      p.attention.query_block = 16;
      specs.push_back(p);
      // The three decode schedules with q/k-norm + RoPE + store fused in;
      // the 16-split one releases its dependents right after its wait.
      for (const KernelSpec* dec : {&d, &c, &f}) {
        KernelSpec x = *dec;
        x.name = "rope_" + x.name;
        x.rope_fused = true;
        x.eps = 1e-6f;
        x.attention.release_after_wait = dec == &f;
        specs.push_back(x);
      }
      // Prefill with K/V tiles in shared memory (tiles of 16 KiB at most:
      // several tiles for b8 f32 and wide, the last one partial), 4
      // queries a warp (128 threads), 2 (256: in the last block of 37
      // queries some warps have none) and 8 (64 threads).
      for (int threads : {128, 256, 64}) {
        KernelSpec st = p;
        st.name = absl::StrCat("pre_staged", threads, "_", m.name, "_", kv);
        st.attention.threads = threads;
        st.attention.query_block = threads == 64 && m.head_dim > 128 ? 8 : 16;  // state in registers
        st.attention.stage_keys = true;
        st.attention.key_block = static_cast<int>(std::min<int64_t>(64, 16384 / (m.head_dim * (f16 ? 2 : 4))));
        specs.push_back(st);
      }
    }
  Loaded l = Load(gpu, specs);
  std::mt19937 rng(11);
  for (size_t i = 0; i < specs.size(); i += 11) {
    const KernelSpec& rs = specs[i];
    const KernelSpec& ds = specs[i + 1];
    const KernelSpec& cs = specs[i + 2];
    const KernelSpec& fs = specs[i + 3];
    const KernelSpec& ps = specs[i + 4];
    const KernelSpec* fused[] = {&specs[i + 5], &specs[i + 6], &specs[i + 7]};
    const KernelSpec* staged[] = {&specs[i + 8], &specs[i + 9], &specs[i + 10]};
    const int64_t D = rs.head_dim, nq = rs.n_head, nkv = rs.n_head_kv, row = nkv * D;
    Buffers bufs(gpu);
    CheckRopeStore(gpu, l, bufs, rs, rng);
    // Decode, twice at each position (the counter must come back to zero).
    // dec_*: L = pos+1 positions go to splits of len = max(64,
    // roundup(ceil(L/64), 32)): one split (the direct path) at 0 and 63,
    // two at 64, 16 at 1000, all 64 at 4095; len 96 (43 splits) at 4096,
    // 256 (all 64) at 16383 and 320 (63 splits) at 20000. dec_cap_*: one
    // split at 0, all 4 full at 255, and at 300 only positions 0..255 are
    // attended (the reference stops at max_splits x split_positions too).
    // dec16_*: len = max(64, roundup(ceil(L/16), 32)): one split at 0, 5 at
    // 300, all 16 at 4095 (256 positions each) and 16383 (1024 each). The
    // merge keeps 8 / per-thread-chunks record loads in flight, so 2, 5, 43
    // and 63 splits exercise its masked last round.
    // rope_*: the same cases fused; the new token's K/V row (position pos)
    // starts poisoned and must come out as the reference's.
    struct DecodeCase {
      const KernelSpec* spec;
      int32_t pos;
    };
    std::vector<DecodeCase> cases = {{&ds, 0},    {&ds, 63},    {&ds, 64},   {&ds, 1000}, {&ds, 4095},
                                     {&ds, 4096}, {&ds, 16383}, {&ds, 20000}, {&cs, 0},    {&cs, 255},
                                     {&cs, 300},  {&fs, 0},     {&fs, 300},  {&fs, 4095}, {&fs, 16383}};
    const KernelSpec* unfused[] = {&ds, &cs, &fs};
    for (size_t n = cases.size(), ci = 0; ci < n; ++ci)
      for (int u = 0; u < 3; ++u)
        if (cases[ci].spec == unfused[u]) cases.push_back({fused[u], cases[ci].pos});
    for (const DecodeCase& dc : cases) CheckDecode(gpu, l, bufs, *dc.spec, dc.pos, rng);
    // Prefill: T = 37 queries after P = 20 cached positions, and a fresh
    // prompt (P = 0).
    for (const int32_t P0 : {20, 0}) {
      const int32_t T = 37;
      std::vector<uint8_t> kc = RandomCache(rng, (P0 + T) * row, rs.kv_f16), vc = RandomCache(rng, (P0 + T) * row, rs.kv_f16);
      std::vector<float> q = RandomFloats(rng, size_t(T * nq * D));
      std::vector<int32_t> posv = {P0};
      CUdeviceptr dq = bufs.Upload(q), dk = bufs.Upload(kc), dv = bufs.Upload(vc), dpos = bufs.Upload(posv),
                  dout = bufs.Poisoned(size_t(T * nq * D * 4));
      Launch(gpu, l, ps.name, {P(dq), P(dk), P(dv), P(dpos), P(dout), I(T)}, T);
      std::vector<float> want(size_t(T * nq * D));
      ASSERT_TRUE(reference::AttentionPrefill(ps, q.data(), kc.data(), vc.data(), posv.data(), want.data(), T).ok());
      const std::vector<float> streamed = bufs.Download<float>(dout, want.size());
      double e = RelErr(streamed, want);
      std::printf("%-20s rel err %.2e\n", ps.name.c_str(), e);
      EXPECT_LT(e, 1e-4) << ps.name;
      // The staged kernels: the same operations in the same order per query.
      for (const KernelSpec* st : staged) {
        CUdeviceptr dout2 = bufs.Poisoned(size_t(T * nq * D * 4));
        Launch(gpu, l, st->name, {P(dq), P(dk), P(dv), P(dpos), P(dout2), I(T)}, T);
        const std::vector<float> tiled = bufs.Download<float>(dout2, want.size());
        const double et = RelErr(tiled, want);
        std::printf("%-20s P %2d rel err %.2e\n", st->name.c_str(), P0, et);
        EXPECT_LT(et, 1e-4) << st->name << " P " << P0;
        EXPECT_TRUE(std::equal(tiled.begin(), tiled.end(), streamed.begin(),
                               [](float x, float y) { return std::memcmp(&x, &y, 4) == 0; }))
            << st->name << " P " << P0 << ": not bit-identical to " << ps.name;
      }
    }
  }
}

// Linear and YaRN RoPE scaling (KernelSpec::rope_scaling, folded into the
// kernels' frequency table, YaRN's magnitude on cos and sin) in both rope
// kernels, f16 caches: the rope + store kernel at position 1000 and the
// fused decode attention at 300 and 4095, against the reference's own
// scaled angles. YaRN as an 8x extension whose ramp runs over pairs [3, 12]
// (tiny: of 32; b8: of 64), so pairs are extrapolated, mixed and
// interpolated.
TEST(CodegenGpu, ScaledRope) {
  REQUIRE_GPU();
  const AttnModel models[] = {{"tiny", 4, 2, 64}, {"b8", 32, 8, 128}};
  const std::pair<const char*, KernelSpec::RopeScaling> scalings[] = {
      {"linear", {0.25f, 0.0f, 0.0f, 0.0f, 1.0f}}, {"yarn", {0.125f, 1.0f, 3.0f, 12.0f, 1.0871497f}}};
  std::vector<KernelSpec> specs;  // per model and scaling: rope + store, fused decode
  for (const AttnModel& m : models)
    for (const auto& [kind, scaling] : scalings) {
      KernelSpec r = AttnBase(m, true);
      r.family = Family::kQkNormRopeStore;
      r.name = absl::StrCat("rope_", kind, "_", m.name);
      r.elementwise.threads = 64;
      r.rope_scaling = scaling;
      specs.push_back(r);
      KernelSpec d = AttnBase(m, true);
      d.family = Family::kAttentionDecode;
      d.name = absl::StrCat("rope_dec_", kind, "_", m.name);
      d.attention.max_splits = 64;
      d.attention.min_split_positions = 64;
      d.attention.split_positions = 640;
      d.rope_fused = true;
      d.eps = 1e-6f;
      d.rope_scaling = scaling;
      specs.push_back(d);
    }
  Loaded l = Load(gpu, specs);
  std::mt19937 rng(13);
  Buffers bufs(gpu);
  for (size_t i = 0; i < specs.size(); i += 2) {
    CheckRopeStore(gpu, l, bufs, specs[i], rng);
    for (int32_t pos : {300, 4095}) CheckDecode(gpu, l, bufs, specs[i + 1], pos, rng);
  }
}

}  // namespace
}  // namespace kiln::codegen
