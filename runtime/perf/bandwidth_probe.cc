#include "runtime/perf/bandwidth_probe.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "runtime/perf/stats.h"
#include "runtime/preflight.h"
#include "support/status_macros.h"

namespace kiln::runtime {
namespace {

// kiln_read_probe(src, n, sink): every thread xors the 16-byte vectors
// src[i], src[i + s], src[i + 2s], ... (i its index in the grid, s the grid's
// thread count, so each warp reads 512 contiguous bytes per load), four loads
// in flight per thread in the main loop, with ld.global.nc (read-only path,
// PTX ISA, "ld.global.nc"). The xor is stored only when it equals a constant the
// compiler cannot rule out, so every load stays and nothing is written.
// PTX ISA 7.0 for sm_75 JITs on every GPU kiln supports.
constexpr char kProbePtx[] = R"(.version 7.0
.target sm_75
.address_size 64

.visible .entry kiln_read_probe(
	.param .u64 kiln_read_probe_param_0,
	.param .u64 kiln_read_probe_param_1,
	.param .u64 kiln_read_probe_param_2
)
{
	.reg .pred 	%p<5>;
	.reg .b32 	%r<25>;
	.reg .b64 	%rd<19>;

	ld.param.u64 	%rd1, [kiln_read_probe_param_0];
	ld.param.u64 	%rd2, [kiln_read_probe_param_1];
	ld.param.u64 	%rd3, [kiln_read_probe_param_2];
	cvta.to.global.u64 	%rd4, %rd1;
	cvta.to.global.u64 	%rd5, %rd3;
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ntid.x;
	mov.u32 	%r3, %tid.x;
	mov.u32 	%r4, %nctaid.x;
	mul.wide.u32 	%rd6, %r1, %r2;
	cvt.u64.u32 	%rd7, %r3;
	add.s64 	%rd8, %rd6, %rd7;
	mul.wide.u32 	%rd9, %r4, %r2;
	shl.b64 	%rd10, %rd9, 4;
	shl.b64 	%rd11, %rd8, 4;
	add.s64 	%rd12, %rd4, %rd11;
	mul.lo.s64 	%rd13, %rd9, 3;
	shl.b64 	%rd18, %rd9, 2;
	mov.u32 	%r5, 0;
	mov.u32 	%r6, 0;
	mov.u32 	%r7, 0;
	mov.u32 	%r8, 0;
	add.s64 	%rd14, %rd8, %rd13;
	setp.ge.u64 	%p1, %rd14, %rd2;
	@%p1 bra 	TAIL;
MAIN:
	add.s64 	%rd15, %rd12, %rd10;
	add.s64 	%rd16, %rd15, %rd10;
	add.s64 	%rd17, %rd16, %rd10;
	ld.global.nc.v4.u32 	{%r9, %r10, %r11, %r12}, [%rd12];
	ld.global.nc.v4.u32 	{%r13, %r14, %r15, %r16}, [%rd15];
	ld.global.nc.v4.u32 	{%r17, %r18, %r19, %r20}, [%rd16];
	ld.global.nc.v4.u32 	{%r21, %r22, %r23, %r24}, [%rd17];
	xor.b32 	%r5, %r5, %r9;
	xor.b32 	%r6, %r6, %r10;
	xor.b32 	%r7, %r7, %r11;
	xor.b32 	%r8, %r8, %r12;
	xor.b32 	%r5, %r5, %r13;
	xor.b32 	%r6, %r6, %r14;
	xor.b32 	%r7, %r7, %r15;
	xor.b32 	%r8, %r8, %r16;
	xor.b32 	%r5, %r5, %r17;
	xor.b32 	%r6, %r6, %r18;
	xor.b32 	%r7, %r7, %r19;
	xor.b32 	%r8, %r8, %r20;
	xor.b32 	%r5, %r5, %r21;
	xor.b32 	%r6, %r6, %r22;
	xor.b32 	%r7, %r7, %r23;
	xor.b32 	%r8, %r8, %r24;
	add.s64 	%rd12, %rd17, %rd10;
	add.s64 	%rd8, %rd8, %rd18;
	add.s64 	%rd14, %rd8, %rd13;
	setp.lt.u64 	%p2, %rd14, %rd2;
	@%p2 bra 	MAIN;
TAIL:
	setp.ge.u64 	%p3, %rd8, %rd2;
	@%p3 bra 	DONE;
	ld.global.nc.v4.u32 	{%r9, %r10, %r11, %r12}, [%rd12];
	xor.b32 	%r5, %r5, %r9;
	xor.b32 	%r6, %r6, %r10;
	xor.b32 	%r7, %r7, %r11;
	xor.b32 	%r8, %r8, %r12;
	add.s64 	%rd12, %rd12, %rd10;
	add.s64 	%rd8, %rd8, %rd9;
	bra 	TAIL;
DONE:
	xor.b32 	%r5, %r5, %r6;
	xor.b32 	%r7, %r7, %r8;
	xor.b32 	%r5, %r5, %r7;
	setp.ne.u32 	%p4, %r5, 1234567;
	@%p4 bra 	END;
	st.global.u32 	[%rd5], %r5;
END:
	ret;
}
)";

constexpr int kProbeThreads = 256;

}  // namespace

absl::StatusOr<ReadProbeKernel> ReadProbeKernel::Load(const cuda::Context& ctx, bool programmatic) {
  RETURN_IF_ERROR(ctx.MakeCurrent());
  if (programmatic && !ctx.device().supports_pdl())
    return absl::FailedPreconditionError(
        absl::StrCat("programmatic launch needs sm_90 or newer; ", ctx.device().name, " does not have it"));
  std::string text = kProbePtx;
  if (programmatic) {
    // The same kernel for sm_90 (PTX 7.8 has griddepcontrol), releasing its
    // dependents and waiting for its predecessor before anything else.
    const int replaced = absl::StrReplaceAll(
        {{".version 7.0\n.target sm_75", ".version 7.8\n.target sm_90"},
         {"\tld.param.u64 \t%rd1, [kiln_read_probe_param_0];",
          "\tgriddepcontrol.launch_dependents;\n\tgriddepcontrol.wait;\n\tld.param.u64 \t%rd1, [kiln_read_probe_param_0];"}},
        &text);
    if (replaced != 2) return absl::InternalError("the probe PTX has changed: cannot make its sm_90 variant");
  }
  absl::Span<const uint8_t> ptx(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  ReadProbeKernel k;
  k.programmatic_ = programmatic;
  ASSIGN_OR_RETURN(std::unique_ptr<cuda::Module> module,
                   cuda::Module::Load(ctx, ptx, cuda::ImageKind::kPtx, "kiln's bandwidth-probe PTX"));
  k.module_ = std::move(module);
  ASSIGN_OR_RETURN(k.f_, k.module_->GetFunction("kiln_read_probe"));
  ASSIGN_OR_RETURN(int per_sm, k.f_.MaxActiveBlocksPerSm(kProbeThreads));
  // One full wave: every thread reads the same number of vectors, so no
  // block of a second wave runs alone at the end.
  k.threads_ = kProbeThreads;
  k.blocks_ = std::max(1, per_sm) * std::max(1, ctx.device().sm_count);
  ASSIGN_OR_RETURN(cuda::DeviceBuffer sink, cuda::DeviceBuffer::Allocate(ctx, 256));
  k.sink_ = std::make_shared<cuda::DeviceBuffer>(std::move(sink));
  return k;
}

absl::Status ReadProbeKernel::Launch(const cuda::Stream& stream, CUdeviceptr src, uint64_t bytes) const {
  CUdeviceptr sink_ptr = sink_->ptr();
  uint64_t vectors = bytes / 16;
  void* params[3] = {&src, &vectors, &sink_ptr};
  cuda::LaunchConfig config;
  config.grid[0] = static_cast<uint32_t>(blocks_);
  config.block[0] = static_cast<uint32_t>(threads_);
  config.programmatic = programmatic_;
  return stream.Launch(f_, config, params);
}

uint64_t ProbeBytes(uint64_t free_bytes, const ProbeOptions& o) {
  const double fraction = std::clamp(o.free_fraction, 0.0, 1.0);
  uint64_t bytes = std::min(o.max_bytes, static_cast<uint64_t>(static_cast<double>(free_bytes) * fraction));
  bytes = bytes >> 20 << 20;
  return bytes < kMinProbeBytes ? 0 : bytes;
}

absl::StatusOr<ReadBuffer> PrepareReadBuffer(const cuda::Context& ctx, const ProbeOptions& o,
                                             const char* what) {
  RETURN_IF_ERROR(ctx.MakeCurrent());
  ASSIGN_OR_RETURN(cuda::MemoryInfo mem, ctx.GetMemoryInfo());
  const uint64_t bytes = ProbeBytes(mem.free, o);
  if (bytes == 0)
    return absl::FailedPreconditionError(absl::StrCat(what, " needs ", FormatBytes(kMinProbeBytes),
                                                      " of GPU memory to read, ", FormatBytes(mem.free), " is free on ",
                                                      ctx.device().name));
  ReadBuffer r;
  ASSIGN_OR_RETURN(r.buffer, cuda::DeviceBuffer::Allocate(ctx, bytes));
  ASSIGN_OR_RETURN(r.stream, cuda::Stream::Create(ctx));
  RETURN_IF_ERROR(r.stream->Memset(r.buffer.ptr(), 1, bytes));  // backs every page; the values do not matter
  return r;
}

absl::StatusOr<ReadRing> OpenReadRing(int ordinal, const char* what) {
  ASSIGN_OR_RETURN(const cuda::Driver* driver, cuda::Driver::Get());
  ReadRing r;
  ASSIGN_OR_RETURN(r.ctx, cuda::Context::Create(*driver, ordinal));
  ASSIGN_OR_RETURN(r.buffer, PrepareReadBuffer(*r.ctx, ProbeOptions{}, what));
  return r;
}

absl::StatusOr<std::vector<double>> TimeLaunches(const cuda::Context& ctx, const cuda::Stream& stream,
                                                 const ProbeOptions& o, absl::FunctionRef<absl::Status()> launch) {
  if (o.reps < 1 || o.warmup < 0)
    return absl::InvalidArgumentError(absl::StrCat("timing needs reps >= 1 and warmup >= 0, not ", o.reps, " and ",
                                                   o.warmup));
  ASSIGN_OR_RETURN(std::unique_ptr<cuda::Event> start, cuda::Event::Create(ctx, CU_EVENT_DEFAULT));
  ASSIGN_OR_RETURN(std::unique_ptr<cuda::Event> end, cuda::Event::Create(ctx, CU_EVENT_DEFAULT));
  for (int i = 0; i < o.warmup; ++i) RETURN_IF_ERROR(launch());
  std::vector<double> ms;
  for (int i = 0; i < o.reps; ++i) {
    RETURN_IF_ERROR(start->Record(stream));
    RETURN_IF_ERROR(launch());
    RETURN_IF_ERROR(end->Record(stream));
    RETURN_IF_ERROR(end->Synchronize());
    ASSIGN_OR_RETURN(float t, cuda::Event::ElapsedMs(*start, *end));
    ms.push_back(t);
  }
  return ms;
}

absl::StatusOr<ProbeResult> MeasureReadBandwidth(const cuda::Context& ctx, const ReadBuffer& src,
                                                 const ProbeOptions& o) {
  ASSIGN_OR_RETURN(ReadProbeKernel kernel, ReadProbeKernel::Load(ctx));
  ProbeResult r;
  r.bytes = src.buffer.size();
  r.threads = kernel.threads();
  r.blocks = kernel.blocks();
  ASSIGN_OR_RETURN(std::vector<double> ms, TimeLaunches(ctx, *src.stream, o, [&] {
    return kernel.Launch(*src.stream, src.buffer.ptr(), r.bytes);
  }));
  r.reps = o.reps;
  r.median_ms = Median(ms);
  r.best_ms = *std::min_element(ms.begin(), ms.end());
  return r;
}

}  // namespace kiln::runtime
