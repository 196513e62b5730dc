#include "compiler/tune/worker.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "compiler/codegen/kernel_abi.h"
#include "compiler/codegen/reference_kernels.h"
#include "compiler/tune/bench.h"
#include "compiler/tune/candidates.h"
#include "compiler/tune/wire.h"
#include "runtime/cuda/driver.h"
#include "schedules/tuning.h"
#include "support/parallel_for.h"
#include "support/status_macros.h"

namespace kiln::tune {
namespace {

using codegen::Epilogue;
using codegen::Family;
using codegen::KernelAbi;
using codegen::KernelSpec;
using schedules::TuneStatus;

// Relative error bounds: the codegen GPU tests' (1e-4), which leave a wide
// margin over what the kernels measure (docs/codegen.md "Numerics": matvecs
// <= 8.5e-6, decode attention <= 3e-7); a wrong schedule is off by far more.
constexpr double kMatVecBound = 1e-4;
constexpr double kAttentionBound = 1e-4;
// The new token's K row in the cache (rope_fused; V must be exact): RoPE
// through sin/cos.approx lands within an f16 ulp.
constexpr double kCacheRowBoundF16 = 2e-3, kCacheRowBoundF32 = 1e-5;

struct Device {
  const cu::Driver* driver = nullptr;
  std::unique_ptr<cu::Context> ctx;
  std::unique_ptr<cu::Stream> stream;
};

struct Outcome {
  TuneStatus status = TuneStatus::kError;
  double us = 0, gbps = 0, rel_err = 0;
  std::string detail;
  bool context_lost = false;
};

// A failed driver call: a sticky error is a fault (the context is gone).
Outcome FromError(const absl::Status& s) {
  Outcome o;
  o.detail = std::string(s.message());
  o.context_lost = absl::StrContains(s.message(), "sticky error");
  o.status = o.context_lost ? TuneStatus::kFault : TuneStatus::kError;
  return o;
}

// Device buffers of one candidate, freed together.
class Buffers {
 public:
  explicit Buffers(const Device& d) : d_(d) {}
  // 256 bytes of slack: weights must be readable past their end (docs/codegen.md "Kernel ABI").
  absl::StatusOr<CUdeviceptr> Alloc(size_t bytes) {
    ASSIGN_OR_RETURN(cu::DeviceBuffer b, cu::DeviceBuffer::Allocate(*d_.ctx, std::max<size_t>(bytes, 256) + 256));
    bufs_.push_back(std::move(b));
    return bufs_.back().ptr();
  }
  absl::StatusOr<CUdeviceptr> Upload(const void* data, size_t bytes) {
    ASSIGN_OR_RETURN(CUdeviceptr p, Alloc(bytes));
    if (bytes > 0) RETURN_IF_ERROR(d_.stream->CopyToDevice(p, data, bytes));
    return p;
  }
  template <typename T>
  absl::StatusOr<CUdeviceptr> Upload(const std::vector<T>& v) {
    return Upload(v.data(), v.size() * sizeof(T));
  }
  // All 0xFF bytes: NaN floats, so an unwritten output element shows.
  absl::StatusOr<CUdeviceptr> Poisoned(size_t bytes) {
    ASSIGN_OR_RETURN(CUdeviceptr p, Alloc(bytes));
    RETURN_IF_ERROR(d_.stream->Memset(p, 0xFF, bytes));
    return p;
  }
  template <typename T>
  absl::StatusOr<std::vector<T>> Download(CUdeviceptr p, size_t n) {
    std::vector<T> v(n);
    RETURN_IF_ERROR(d_.stream->CopyToHost(v.data(), p, n * sizeof(T)));
    RETURN_IF_ERROR(d_.stream->Synchronize());
    return v;
  }

 private:
  const Device& d_;
  std::vector<cu::DeviceBuffer> bufs_;
};

struct Request {
  KernelSpec spec;
  codegen::Target target;
  uint64_t seed = 1;
  int samples = 15;
  int64_t rotate_bytes = int64_t{512} << 20;
  int64_t position = 4095;        // decode attention: the position timed
  int64_t check_position = 3000;  // and the ones checked: several splits,
  int64_t short_position = 30;    // and one (<= 32 positions: the direct path)
};

Outcome Timed(const Request& rq, const Timing& t, double err, int64_t bytes) {
  Outcome o;
  o.status = TuneStatus::kOk;
  o.us = t.median_us;
  o.gbps = t.median_us > 0 ? double(bytes) / (t.median_us * 1e3) : 0;
  o.rel_err = err;
  o.detail = absl::StrFormat("min %.2f us", t.min_us);
  return o;
}

Outcome Wrong(double err, double bound, const std::string& what) {
  Outcome o;
  o.status = TuneStatus::kWrong;
  o.rel_err = err;
  o.detail = absl::StrFormat("%srel err %.3g > %.0e", what, err, bound);
  return o;
}

// Times `f` with launch i reading copy i % n: its two planes are written
// through `a` and `b`, which `params` (the kernel's argument array) points at.
absl::StatusOr<Timing> TimeRotating(const Device& d, const Request& rq, const cu::Function& f,
                                    const cu::LaunchConfig& cfg, const WeightCopies& copies, CUdeviceptr* a,
                                    CUdeviceptr* b, void** params) {
  const int n = copies.count();
  auto rotate = [&](int i) {
    *a = copies.w[size_t(i % n)].ptr();
    *b = copies.scales[size_t(i % n)].ptr();
    return params;
  };
  return TimeLaunches(*d.ctx, *d.stream, f, cfg, rotate, n, rq.samples, std::max(n, 8));
}

absl::StatusOr<Outcome> RunMatVec(const Device& d, const Request& rq, const KernelAbi& abi, const cu::Function& f) {
  const KernelSpec& spec = rq.spec;
  std::vector<uint8_t> w, ws;
  RandomWeights(rq.seed, spec.weight, spec.rows, spec.cols, &w, &ws);
  std::mt19937 rng(static_cast<uint32_t>(rq.seed));
  const bool pairs = spec.epilogue == Epilogue::kSiluMulPairs, add = spec.epilogue == Epilogue::kAddInPlace;
  const bool with = spec.epilogue == Epilogue::kSiluMulWith;
  const int64_t out_n = pairs ? spec.rows / 2 : spec.rows;
  std::vector<float> x = RandomFloats(rng, size_t(spec.cols)), nw = RandomFloats(rng, size_t(spec.cols), 0.5f, 1.5f);
  std::vector<float> out0 = RandomFloats(rng, size_t(out_n)), extra = RandomFloats(rng, size_t(spec.rows), -4.0f, 4.0f);
  Buffers bufs(d);
  ASSIGN_OR_RETURN(CUdeviceptr dw, bufs.Upload(w));
  ASSIGN_OR_RETURN(CUdeviceptr dws, ws.empty() ? bufs.Alloc(256) : bufs.Upload(ws));
  ASSIGN_OR_RETURN(CUdeviceptr dx, bufs.Upload(x));
  ASSIGN_OR_RETURN(CUdeviceptr dnw, bufs.Upload(nw));
  ASSIGN_OR_RETURN(CUdeviceptr dout, add ? bufs.Upload(out0) : bufs.Poisoned(out0.size() * 4));
  ASSIGN_OR_RETURN(CUdeviceptr dextra, bufs.Upload(extra));
  struct Params {
    CUdeviceptr w, s, x, nw, out, extra;
    int32_t t = 1;
    std::array<void*, 7> p = {};
  } p{dw, dws, dx, dnw, dout, dextra};
  p.p = {&p.w, &p.s, &p.x, &p.nw, &p.out, &p.t, &p.extra};
  if (abi.params.size() != (with ? 7u : 6u)) return absl::InternalError("unexpected matvec parameters");
  const cu::LaunchConfig cfg = LaunchConfigFor(abi, spec.programmatic_launch, 1);
  RETURN_IF_ERROR(d.stream->Launch(f, cfg, p.p.data()));
  RETURN_IF_ERROR(d.stream->Synchronize());
  ASSIGN_OR_RETURN(std::vector<float> got, bufs.Download<float>(dout, out0.size()));
  std::vector<float> want = out0;
  RETURN_IF_ERROR(ParallelReferenceMatVec(spec, w.data(), ws.empty() ? nullptr : ws.data(), x.data(), nw.data(),
                                          want.data(), with ? extra.data() : nullptr, DefaultThreads()));
  if (add) {
    // Compare the increments, so the error is relative to what was added.
    for (size_t i = 0; i < got.size(); ++i) {
      got[i] -= out0[i];
      want[i] -= out0[i];
    }
  }
  const double err = RelErr(got, want);
  if (!(err <= kMatVecBound)) return Wrong(err, kMatVecBound, "");

  const int64_t wbytes = codegen::WeightRowBytes(spec.weight, spec.cols) * spec.rows;
  ASSIGN_OR_RETURN(WeightCopies copies, CopyWeights(*d.ctx, *d.stream, dw, wbytes, ws.empty() ? 0 : dws,
                                                    int64_t(ws.size()), rq.rotate_bytes));
  ASSIGN_OR_RETURN(Timing t, TimeRotating(d, rq, f, cfg, copies, &p.w, &p.s, p.p.data()));
  return Timed(rq, t, err, BytesRead(spec, 0));
}

absl::StatusOr<Outcome> RunAttentionDecode(const Device& d, const Request& rq, const KernelAbi& abi,
                                           const cu::Function& f) {
  const KernelSpec& spec = rq.spec;
  const int64_t D = spec.head_dim, nq = spec.n_head, nkv = spec.n_head_kv, G = nq / nkv, row = nkv * D;
  const int64_t eb = spec.kv_f16 ? 2 : 4;
  const int64_t cap = int64_t{spec.attention.max_splits} * spec.attention.split_positions;
  const int32_t p_check = static_cast<int32_t>(std::min(rq.check_position, cap - 1));
  const int32_t p_time = static_cast<int32_t>(std::min(rq.position, cap - 1));
  const int64_t positions = std::max(p_check, p_time) + 1;
  std::mt19937 rng(static_cast<uint32_t>(rq.seed));
  std::vector<uint8_t> kc = RandomCache(rng, positions * row, spec.kv_f16);
  std::vector<uint8_t> vc = RandomCache(rng, positions * row, spec.kv_f16);
  // rope_fused: the raw qkv row and the two norm weights stand for q, and
  // the kernel writes the new K/V row (the reference writes its own copy).
  std::vector<float> q = RandomFloats(rng, size_t((spec.rope_fused ? nq + 2 * nkv : nq) * D));
  std::vector<float> qn = RandomFloats(rng, size_t(D)), kn = RandomFloats(rng, size_t(D));
  std::vector<int32_t> pos = {0};
  Buffers bufs(d);
  ASSIGN_OR_RETURN(CUdeviceptr dq, bufs.Upload(q));
  ASSIGN_OR_RETURN(CUdeviceptr dk, bufs.Upload(kc));
  ASSIGN_OR_RETURN(CUdeviceptr dv, bufs.Upload(vc));
  ASSIGN_OR_RETURN(CUdeviceptr dpos, bufs.Upload(pos));
  ASSIGN_OR_RETURN(CUdeviceptr dpart, bufs.Poisoned(size_t(nkv * spec.attention.max_splits * G * (D + 2) * 4)));
  ASSIGN_OR_RETURN(CUdeviceptr dcnt, bufs.Upload(std::vector<uint32_t>(size_t(nkv), 0)));
  ASSIGN_OR_RETURN(CUdeviceptr dout, bufs.Alloc(size_t(nq * D * 4)));
  ASSIGN_OR_RETURN(CUdeviceptr dqn, bufs.Upload(qn));
  ASSIGN_OR_RETURN(CUdeviceptr dkn, bufs.Upload(kn));
  struct Params {
    CUdeviceptr q, k, v, pos, out, part, cnt, qn, kn;
    std::array<void*, 9> p = {};
  } p{dq, dk, dv, dpos, dout, dpart, dcnt, dqn, dkn};
  p.p = {&p.q, &p.k, &p.v, &p.pos, &p.out, &p.part, &p.cnt, &p.qn, &p.kn};
  if (abi.params.size() != (spec.rope_fused ? 9u : 7u)) return absl::InternalError("unexpected attention parameters");
  const cu::LaunchConfig cfg = LaunchConfigFor(abi, spec.programmatic_launch, 1);
  double err = 0;
  for (int32_t at : {p_check, static_cast<int32_t>(std::min<int64_t>(rq.short_position, p_check))}) {
    pos[0] = at;
    RETURN_IF_ERROR(d.stream->CopyToDevice(dpos, pos.data(), 4));
    std::vector<float> want(size_t(nq * D));
    if (spec.rope_fused) {
      RETURN_IF_ERROR(codegen::reference::AttentionDecodeFused(spec, q.data(), qn.data(), kn.data(), pos.data(),
                                                               kc.data(), vc.data(), want.data()));
    } else {
      RETURN_IF_ERROR(
          codegen::reference::AttentionDecode(spec, q.data(), kc.data(), vc.data(), pos.data(), want.data()));
    }
    // Twice: the merge counter must come back to zero.
    for (int rep = 0; rep < 2; ++rep) {
      RETURN_IF_ERROR(d.stream->Memset(dout, 0xFF, size_t(nq * D * 4)));
      RETURN_IF_ERROR(d.stream->Launch(f, cfg, p.p.data()));
      RETURN_IF_ERROR(d.stream->Synchronize());
      ASSIGN_OR_RETURN(std::vector<float> got, bufs.Download<float>(dout, want.size()));
      err = std::max(err, RelErr(got, want));
      ASSIGN_OR_RETURN(std::vector<uint32_t> cnt, bufs.Download<uint32_t>(dcnt, size_t(nkv)));
      for (uint32_t c : cnt)
        if (c != 0) return Wrong(err, kAttentionBound, "the split counter was not reset; ");
    }
    if (spec.rope_fused) {
      // The new token's K/V row, against the reference's.
      const size_t at_bytes = size_t(at) * size_t(row * eb), n = size_t(row * eb);
      ASSIGN_OR_RETURN(std::vector<uint8_t> gk, bufs.Download<uint8_t>(dk + at_bytes, n));
      ASSIGN_OR_RETURN(std::vector<uint8_t> gv, bufs.Download<uint8_t>(dv + at_bytes, n));
      const double bound = spec.kv_f16 ? kCacheRowBoundF16 : kCacheRowBoundF32;
      const double ek = RelErr(CacheAsFloats(gk.data(), n, spec.kv_f16), CacheAsFloats(kc.data() + at_bytes, n, spec.kv_f16));
      if (!(ek <= bound)) return Wrong(ek, bound, "the new K row; ");
      if (!std::equal(gv.begin(), gv.end(), vc.begin() + static_cast<std::ptrdiff_t>(at_bytes)))
        return Wrong(err, kAttentionBound, "the new V row differs; ");
    }
  }
  if (!(err <= kAttentionBound)) return Wrong(err, kAttentionBound, "");

  pos[0] = p_time;
  RETURN_IF_ERROR(d.stream->CopyToDevice(dpos, pos.data(), 4));
  const int64_t kv_bytes = (int64_t{p_time} + 1) * row * eb;
  ASSIGN_OR_RETURN(WeightCopies copies, CopyWeights(*d.ctx, *d.stream, dk, kv_bytes, dv, kv_bytes, rq.rotate_bytes));
  ASSIGN_OR_RETURN(Timing t, TimeRotating(d, rq, f, cfg, copies, &p.k, &p.v, p.p.data()));
  return Timed(rq, t, err, BytesRead(spec, p_time));
}

absl::StatusOr<Request> ParseRequest(const Message& m) {
  Request rq;
  ASSIGN_OR_RETURN(rq.spec, DecodeSpec(m));
  ASSIGN_OR_RETURN(rq.target, codegen::Target::FromName(m.Get(kFieldTarget)));
  rq.seed = static_cast<uint64_t>(m.GetInt(kFieldSeed, 1));
  rq.samples = static_cast<int>(std::max<int64_t>(1, m.GetInt(kFieldSamples, rq.samples)));
  rq.rotate_bytes = m.GetInt(kFieldRotateBytes, rq.rotate_bytes);
  rq.position = m.GetInt(kFieldPosition, rq.position);
  return rq;
}

Outcome RunCandidate(const Device& d, const Message& m) {
  absl::StatusOr<Request> rq = ParseRequest(m);
  if (!rq.ok()) return FromError(rq.status());
  absl::StatusOr<KernelAbi> abi = codegen::DescribeKernel(rq->spec, rq->target);
  if (!abi.ok()) return FromError(abi.status());
  const std::string image = m.Get(kFieldImage);
  const bool cubin = m.Get(kFieldImageKind) == "cubin";
  absl::StatusOr<std::unique_ptr<cu::Module>> module =
      cu::Module::Load(*d.ctx, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(image.data()), image.size()),
                       cubin ? cu::ImageKind::kCubin : cu::ImageKind::kPtx, absl::StrCat("candidate ", rq->spec.name));
  if (!module.ok()) return FromError(module.status());
  absl::StatusOr<cu::Function> f = (*module)->GetFunction(rq->spec.name);
  if (!f.ok()) return FromError(f.status());
  if (absl::Status s = AllowSharedMemory(*d.ctx, *f, *abi); !s.ok()) return FromError(s);
  absl::StatusOr<Outcome> o = absl::UnimplementedError(
      absl::StrCat("the worker cannot time '", codegen::FamilyName(rq->spec.family), "' kernels"));
  if (rq->spec.family == Family::kMatVec) o = RunMatVec(d, *rq, *abi, *f);
  if (rq->spec.family == Family::kAttentionDecode) o = RunAttentionDecode(d, *rq, *abi, *f);
  if (!o.ok()) return FromError(o.status());
  if (absl::StatusOr<int> regs = f->GetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS); regs.ok())
    absl::StrAppend(&o->detail, o->detail.empty() ? "" : ", ", *regs, " regs");
  return *o;
}

// Deterministic made-up timings for CPU tests (RunWorker's fake_device).
Outcome RunFake(const Message& m) {
  const std::string variant = m.Get(kFieldVariant);
  if (variant == "test_hang") {
    for (;;) ::pause();  // until the parent's SIGKILL
  }
  Outcome o;
  if (variant == "test_fault") {
    o.status = TuneStatus::kFault;
    o.detail = "cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (700) (fake device)";
    o.context_lost = true;
    return o;
  }
  absl::StatusOr<KernelSpec> spec = DecodeSpec(m);
  if (!spec.ok()) return FromError(spec.status());
  // Faster with more threads per row group and fewer rows: any fixed order will do.
  const KernelSpec& s = *spec;
  o.status = TuneStatus::kOk;
  o.us = 10.0 + (s.matvec.rows_per_block * 7 + s.matvec.unroll * 3 + s.matvec.row_groups * 5) % 13 +
         1000.0 / (s.matvec.threads + s.attention.threads + s.attention.split_positions);
  o.gbps = double(BytesRead(s, m.GetInt(kFieldPosition, 4095))) / (o.us * 1e3);
  o.rel_err = 1e-7;
  o.detail = "fake device";
  return o;
}

// "580.65.06 (CUDA 13.0)": the kernel module's version (/proc) and the
// driver API's.
std::string DriverDescription(int api_version) {
  std::string module;
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (std::getline(in, line)) {
    // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04
    // Release Build ...": the first word after "Kernel Module" made of
    // digits and dots, with a dot.
    const size_t at = line.find("Kernel Module");
    if (at != std::string::npos) {
      for (absl::string_view w : absl::StrSplit(line.substr(at + 13), ' ', absl::SkipEmpty())) {
        if (w.find('.') != absl::string_view::npos &&
            w.find_first_not_of("0123456789.") == absl::string_view::npos) {
          module = std::string(w);
          break;
        }
      }
    }
  }
  const std::string api = absl::StrCat("CUDA ", api_version / 1000, ".", (api_version % 1000) / 10);
  return module.empty() ? api : absl::StrCat(module, " (", api, ")");
}

}  // namespace

int RunWorker(int in_fd, int out_fd, bool fake_device) {
  Device d;
  Message hello;
  hello.Set(kFieldKind, kKindHello);
  if (fake_device) {
    hello.Set(kFieldGpu, "fake GPU");
    hello.SetInt(kFieldSmCount, 1);
    hello.Set(kFieldDriver, "fake driver");
  } else {
    absl::Status s = [&]() -> absl::Status {
      ASSIGN_OR_RETURN(d.driver, cu::Driver::Get());
      ASSIGN_OR_RETURN(d.ctx, cu::Context::Create(*d.driver, 0));
      ASSIGN_OR_RETURN(d.stream, cu::Stream::Create(*d.ctx));
      return absl::OkStatus();
    }();
    if (!s.ok()) {
      hello.Set(kFieldError, std::string(s.message()));
      (void)WriteMessage(out_fd, hello);
      return 1;
    }
    hello.Set(kFieldGpu, d.ctx->device().name);
    hello.SetInt(kFieldSmCount, d.ctx->device().sm_count);
    hello.Set(kFieldDriver, DriverDescription(d.driver->version()));
    hello.Set(kFieldSm, d.ctx->device().sm());
  }
  if (!WriteMessage(out_fd, hello).ok()) return 1;
  MessageReader reader(in_fd);
  for (;;) {
    absl::StatusOr<Message> m = reader.Read(absl::InfiniteDuration());
    if (!m.ok()) return absl::IsUnavailable(m.status()) ? 0 : 1;  // the parent is done (or gone)
    const Outcome o = fake_device ? RunFake(*m) : RunCandidate(d, *m);
    Message reply;
    reply.Set(kFieldKind, kKindResult);
    reply.Set(kFieldStatus, std::string(schedules::TuneStatusName(o.status)));
    reply.SetDouble(kFieldUs, o.us);
    reply.SetDouble(kFieldGbps, o.gbps);
    reply.SetDouble(kFieldRelErr, o.rel_err);
    reply.Set(kFieldDetail, o.detail);
    if (!WriteMessage(out_fd, reply).ok()) return 1;
    if (o.context_lost) return 3;  // a fresh process gets a fresh context
  }
}

}  // namespace kiln::tune
