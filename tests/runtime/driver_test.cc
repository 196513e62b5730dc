// The CUDA driver wrapper. CPU tests (CI): a missing driver is a clear
// error, not a crash, and errors name the call. GPU tests (suite
// DriverGpuTest, CTest label `gpu`): hand-written PTX is loaded, launched
// eagerly, with PDL and >48 KiB of shared memory, and replayed as a graph.
#include "runtime/cuda/driver.h"

#include <dlfcn.h>

#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::runtime::cuda {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// ------------------------------------------------------------------ CPU

TEST(DriverTest, MissingLibraryIsACleanFailedPrecondition) {
  absl::StatusOr<std::unique_ptr<Driver>> d = Driver::Open("/nonexistent/libcuda.so.1");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(d.status().message()), StartsWith("no NVIDIA driver found (/nonexistent/libcuda.so.1 not loadable"));
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("kiln needs an NVIDIA GPU"));
}

TEST(DriverTest, ProcessDriverReportsNoGpuWhereThereIsNone) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) {
    dlclose(h);
    GTEST_SKIP() << "this machine has an NVIDIA driver";
  }
  absl::StatusOr<const Driver*> d = Driver::Get();
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(d.status().message()), StartsWith("no NVIDIA driver found (libcuda.so.1 not loadable"));
  // The outcome is kept: asking again gives the same answer, no crash.
  EXPECT_EQ(Driver::Get().status(), d.status());
}

TEST(DriverTest, ALibraryThatIsNotTheDriverIsRejected) {
  absl::StatusOr<std::unique_ptr<Driver>> d = Driver::Open("libm.so.6");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("does not answer cuDriverGetVersion"));
}

TEST(DriverTest, ErrorsNameTheCallAndTheCode) {
  absl::Status s = CuError(CUDA_ERROR_INVALID_PTX, "api_->cuModuleLoadDataEx(&m, image, 4, options, values)");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(s.message()), StartsWith("cuModuleLoadDataEx: "));
  EXPECT_THAT(std::string(s.message()), HasSubstr("(218)"));
  EXPECT_THAT(std::string(s.message()), ::testing::Not(HasSubstr("restart")));

  absl::Status oom = CuError(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc", "4096 bytes");
  EXPECT_EQ(oom.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(oom.message()), StartsWith("cuMemAlloc: "));
  EXPECT_THAT(std::string(oom.message()), HasSubstr("(2): 4096 bytes"));

  EXPECT_EQ(CuError(CUDA_ERROR_NO_BINARY_FOR_GPU, "cuModuleLoadDataEx").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CuError(CUDA_ERROR_NOT_FOUND, "cuModuleGetFunction").code(), absl::StatusCode::kNotFound);
}

TEST(DriverTest, StickyErrorsSayTheProcessMustRestart) {
  EXPECT_TRUE(IsStickyError(CUDA_ERROR_ILLEGAL_ADDRESS));
  EXPECT_TRUE(IsStickyError(CUDA_ERROR_LAUNCH_FAILED));
  EXPECT_FALSE(IsStickyError(CUDA_ERROR_OUT_OF_MEMORY));
  EXPECT_FALSE(IsStickyError(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
  EXPECT_THAT(std::string(CuError(CUDA_ERROR_ILLEGAL_ADDRESS, "cuEventSynchronize(e)").message()),
              HasSubstr("sticky error: the GPU context is unusable and kiln must be restarted"));
}

CUresult FakeCall(CUresult r) { return r; }

absl::Status UsesTheMacro(CUresult r) {
  CU_RETURN_IF_ERROR(FakeCall(r));
  return absl::OkStatus();
}

TEST(DriverTest, ReturnIfErrorPassesSuccessAndReturnsFailure) {
  EXPECT_TRUE(UsesTheMacro(CUDA_SUCCESS).ok());
  absl::Status s = UsesTheMacro(CUDA_ERROR_INVALID_VALUE);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), StartsWith("FakeCall: "));
}

TEST(DriverTest, DeviceInfoNamesTheCubinTarget) {
  DeviceInfo h200;
  h200.cc_major = 9;
  h200.cc_minor = 0;
  EXPECT_EQ(h200.sm(), "sm_90");
  EXPECT_TRUE(h200.supports_pdl());
  DeviceInfo ada;
  ada.cc_major = 8;
  ada.cc_minor = 9;
  EXPECT_EQ(ada.sm(), "sm_89");
  EXPECT_EQ(ada.compute_capability(), 89);
  EXPECT_FALSE(ada.supports_pdl());
}

// ------------------------------------------------------------------ GPU

// x[i] += a for i < n. PTX ISA 7.8 for sm_80 JITs on every GPU kiln targets.
constexpr char kAddPtx[] = R"(.version 7.8
.target sm_80
.address_size 64

.visible .entry add_scaled(.param .u64 x_param, .param .f32 a_param, .param .u32 n_param)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<5>;
	ld.param.u64 	%rd1, [x_param];
	ld.param.f32 	%f1, [a_param];
	ld.param.u32 	%r1, [n_param];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	setp.ge.s32 	%p1, %r5, %r1;
	@%p1 bra 	DONE;
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.s32 	%rd3, %r5, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.f32 	%f2, [%rd4];
	add.f32 	%f3, %f2, %f1;
	st.global.f32 	[%rd4], %f3;
DONE:
	ret;
}

.extern .shared .align 16 .b8 dyn_smem[];

// One block: x[t] = x[(t + 1) % ntid], passed through dynamic shared memory
// at byte `offset`.
.visible .entry smem_rotate(.param .u64 x_param, .param .u32 offset_param)
{
	.reg .b32 	%r<10>;
	.reg .f32 	%f<3>;
	.reg .b64 	%rd<5>;
	ld.param.u64 	%rd1, [x_param];
	ld.param.u32 	%r1, [offset_param];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r2, %tid.x;
	mov.u32 	%r3, %ntid.x;
	mul.wide.u32 	%rd3, %r2, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.f32 	%f1, [%rd4];
	mov.u32 	%r4, dyn_smem;
	add.u32 	%r5, %r4, %r1;
	shl.b32 	%r6, %r2, 2;
	add.u32 	%r7, %r5, %r6;
	st.shared.f32 	[%r7], %f1;
	bar.sync 	0;
	add.u32 	%r8, %r2, 1;
	rem.u32 	%r8, %r8, %r3;
	shl.b32 	%r8, %r8, 2;
	add.u32 	%r9, %r5, %r8;
	ld.shared.f32 	%f2, [%r9];
	st.global.f32 	[%rd4], %f2;
	ret;
}
)";

// griddepcontrol.wait (sm_90), then x[i] = 2 * x[i] + a: must see everything
// the previous kernel wrote although it may start before that kernel ends.
constexpr char kPdlPtx[] = R"(.version 7.8
.target sm_90
.address_size 64

.visible .entry pdl_scale_add(.param .u64 x_param, .param .f32 a_param, .param .u32 n_param)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<5>;
	griddepcontrol.wait;
	ld.param.u64 	%rd1, [x_param];
	ld.param.f32 	%f1, [a_param];
	ld.param.u32 	%r1, [n_param];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	setp.ge.s32 	%p1, %r5, %r1;
	@%p1 bra 	DONE;
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.s32 	%rd3, %r5, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.f32 	%f2, [%rd4];
	fma.rn.f32 	%f3, %f2, 0f40000000, %f1;
	st.global.f32 	[%rd4], %f3;
DONE:
	ret;
}
)";

absl::Span<const uint8_t> Bytes(const char* text) {
  return {reinterpret_cast<const uint8_t*>(text), std::strlen(text)};
}

class DriverGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<const Driver*> d = Driver::Get();
    ASSERT_TRUE(d.ok()) << d.status();
    driver_ = *d;
    absl::StatusOr<std::unique_ptr<Context>> ctx = Context::Create(*driver_, 0);
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    ctx_ = std::move(*ctx);
    absl::StatusOr<std::unique_ptr<Stream>> s = Stream::Create(*ctx_);
    ASSERT_TRUE(s.ok()) << s.status();
    stream_ = std::move(*s);
    absl::StatusOr<std::unique_ptr<Module>> m = Module::Load(*ctx_, Bytes(kAddPtx), ImageKind::kPtx, "test PTX");
    ASSERT_TRUE(m.ok()) << m.status();
    module_ = std::move(*m);
  }

  // n floats 0, 1, 2, ... on the device.
  DeviceBuffer Iota(int n) {
    std::vector<float> host(n);
    for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i);
    absl::StatusOr<DeviceBuffer> b = DeviceBuffer::Allocate(*ctx_, n * 4);
    EXPECT_TRUE(b.ok()) << b.status();
    EXPECT_TRUE(stream_->CopyToDevice(b->ptr(), host.data(), n * 4).ok());
    EXPECT_TRUE(stream_->Synchronize().ok());
    return *std::move(b);
  }

  std::vector<float> Read(const DeviceBuffer& b, int n) {
    absl::StatusOr<HostBuffer> h = HostBuffer::Allocate(*ctx_, n * 4);
    EXPECT_TRUE(h.ok()) << h.status();
    std::memset(h->data(), 0xff, n * 4);  // poison: NaNs unless the copy lands
    EXPECT_TRUE(stream_->CopyToHost(h->data(), b.ptr(), n * 4).ok());
    EXPECT_TRUE(stream_->Synchronize().ok());
    std::vector<float> out(n);
    std::memcpy(out.data(), h->data(), n * 4);
    return out;
  }

  absl::Status Add(const Function& f, const DeviceBuffer& x, float a, int n, bool programmatic = false) {
    CUdeviceptr p = x.ptr();
    void* params[] = {&p, &a, &n};
    LaunchConfig c;
    c.grid[0] = (n + 127) / 128;
    c.block[0] = 128;
    c.programmatic = programmatic;
    return stream_->Launch(f, c, params);
  }

  const Driver* driver_ = nullptr;
  std::unique_ptr<Context> ctx_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<Module> module_;
};

TEST_F(DriverGpuTest, DeviceAndMemoryInfoAreSane) {
  EXPECT_GE(driver_->version(), kRequiredDriverVersion);
  const DeviceInfo& d = ctx_->device();
  EXPECT_FALSE(d.name.empty());
  EXPECT_GE(d.cc_major, 7);
  EXPECT_GT(d.sm_count, 0);
  EXPECT_GE(d.max_shared_per_block_optin, 48 * 1024);
  absl::StatusOr<MemoryInfo> m = ctx_->GetMemoryInfo();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_GT(m->free, 0u);
  EXPECT_LE(m->free, m->total);
  EXPECT_EQ(m->total, d.total_memory);
}

TEST_F(DriverGpuTest, LaunchesAHandWrittenKernel) {
  absl::StatusOr<Function> f = module_->GetFunction("add_scaled");
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(f->Load().ok());
  const int n = 1000;  // not a multiple of the block: the bounds check matters
  DeviceBuffer x = Iota(n);
  ASSERT_TRUE(Add(*f, x, 0.5f, n).ok());
  std::vector<float> got = Read(x, n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], i + 0.5f) << i;
}

TEST_F(DriverGpuTest, GraphReplaysTheCapturedLaunches) {
  absl::StatusOr<Function> f = module_->GetFunction("add_scaled");
  ASSERT_TRUE(f.ok()) << f.status();
  const int n = 4096;
  DeviceBuffer x = Iota(n);
  absl::StatusOr<std::unique_ptr<Graph>> g = stream_->Capture([&]() -> absl::Status {
    if (absl::Status s = Add(*f, x, 1.0f, n); !s.ok()) return s;
    return Add(*f, x, 2.0f, n);
  });
  ASSERT_TRUE(g.ok()) << g.status();
  // Capture records, it does not run.
  std::vector<float> before = Read(x, n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(before[i], static_cast<float>(i));
  ASSERT_TRUE((*g)->Instantiate(*stream_).ok());
  for (int k = 0; k < 3; ++k) ASSERT_TRUE((*g)->Launch(*stream_).ok());
  std::vector<float> got = Read(x, n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], i + 9.0f) << i;
}

TEST_F(DriverGpuTest, FailedCaptureBodyEndsTheCaptureAndReportsTheError) {
  absl::StatusOr<std::unique_ptr<Graph>> g =
      stream_->Capture([]() -> absl::Status { return absl::InternalError("body failed"); });
  EXPECT_EQ(g.status().message(), "body failed");
  // The stream is usable again: not stuck in capture mode.
  absl::StatusOr<Function> f = module_->GetFunction("add_scaled");
  ASSERT_TRUE(f.ok());
  DeviceBuffer x = Iota(16);
  ASSERT_TRUE(Add(*f, x, 1.0f, 16).ok());
  EXPECT_EQ(Read(x, 16)[15], 16.0f);
}

TEST_F(DriverGpuTest, ProgrammaticLaunchSeesThePreviousKernelsWrites) {
  if (!ctx_->device().supports_pdl()) GTEST_SKIP() << "PDL needs sm_90";
  absl::StatusOr<std::unique_ptr<Module>> pm = Module::Load(*ctx_, Bytes(kPdlPtx), ImageKind::kPtx, "PDL PTX");
  ASSERT_TRUE(pm.ok()) << pm.status();
  absl::StatusOr<Function> add = module_->GetFunction("add_scaled");
  absl::StatusOr<Function> pdl = (*pm)->GetFunction("pdl_scale_add");
  ASSERT_TRUE(add.ok() && pdl.ok());
  const int n = 1 << 20;
  DeviceBuffer x = Iota(n);
  // Eager: (i + 1) * 2 + 3.
  ASSERT_TRUE(Add(*add, x, 1.0f, n).ok());
  ASSERT_TRUE(Add(*pdl, x, 3.0f, n, /*programmatic=*/true).ok());
  std::vector<float> got = Read(x, n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], (i + 1.0f) * 2 + 3) << i;
  // Captured: the programmatic edge must keep the same order.
  DeviceBuffer y = Iota(n);
  absl::StatusOr<std::unique_ptr<Graph>> g = stream_->Capture([&]() -> absl::Status {
    if (absl::Status s = Add(*add, y, 1.0f, n); !s.ok()) return s;
    return Add(*pdl, y, 3.0f, n, /*programmatic=*/true);
  });
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE((*g)->Instantiate(*stream_).ok());
  ASSERT_TRUE((*g)->Launch(*stream_).ok());
  got = Read(y, n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], (i + 1.0f) * 2 + 3) << i;
}

TEST_F(DriverGpuTest, DynamicSharedMemoryAbove48KiBNeedsTheAttribute) {
  absl::StatusOr<Function> f = module_->GetFunction("smem_rotate");
  ASSERT_TRUE(f.ok()) << f.status();
  const int optin = ctx_->device().max_shared_per_block_optin;
  absl::Status too_big = f->SetMaxDynamicSharedMemory(optin + 1, optin);
  EXPECT_EQ(too_big.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(too_big.message()), HasSubstr("kernel 'smem_rotate' needs"));

  const int shared = 64 * 1024, threads = 256;
  ASSERT_TRUE(f->SetMaxDynamicSharedMemory(shared, optin).ok());
  DeviceBuffer x = Iota(threads);
  CUdeviceptr p = x.ptr();
  uint32_t offset = shared - threads * 4;  // the last KiB: past the 48 KiB default
  void* params[] = {&p, &offset};
  LaunchConfig c;
  c.block[0] = threads;
  c.shared_bytes = shared;
  ASSERT_TRUE(stream_->Launch(*f, c, params).ok());
  std::vector<float> got = Read(x, threads);
  for (int i = 0; i < threads; ++i) ASSERT_EQ(got[i], static_cast<float>((i + 1) % threads)) << i;
}

TEST_F(DriverGpuTest, BadPtxCarriesTheJitLog) {
  constexpr char kBad[] = ".version 7.0\n.target sm_75\n.address_size 64\n"
                          ".visible .entry bad()\n{\n\tbogus.instruction;\n\tret;\n}\n";
  absl::StatusOr<std::unique_ptr<Module>> m = Module::Load(*ctx_, Bytes(kBad), ImageKind::kPtx, "bad PTX");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), StartsWith("cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (218): loading bad PTX"));
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("bogus"));
}

TEST_F(DriverGpuTest, MissingKernelIsNotFound) {
  absl::StatusOr<Function> f = module_->GetFunction("no_such_kernel");
  EXPECT_EQ(f.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(f.status().message(), "kernel 'no_such_kernel' is not in test PTX");
}

TEST_F(DriverGpuTest, TimingEventsMeasureElapsedTime) {
  absl::StatusOr<std::unique_ptr<Event>> a = Event::Create(*ctx_, CU_EVENT_DEFAULT);
  absl::StatusOr<std::unique_ptr<Event>> b = Event::Create(*ctx_, CU_EVENT_DEFAULT);
  ASSERT_TRUE(a.ok() && b.ok());
  absl::StatusOr<Function> f = module_->GetFunction("add_scaled");
  ASSERT_TRUE(f.ok());
  DeviceBuffer x = Iota(1 << 20);
  ASSERT_TRUE((*a)->Record(*stream_).ok());
  ASSERT_TRUE(Add(*f, x, 1.0f, 1 << 20).ok());
  ASSERT_TRUE((*b)->Record(*stream_).ok());
  ASSERT_TRUE((*b)->Synchronize().ok());
  absl::StatusOr<float> ms = Event::ElapsedMs(**a, **b);
  ASSERT_TRUE(ms.ok()) << ms.status();
  EXPECT_GT(*ms, 0.0f);
  EXPECT_LT(*ms, 1000.0f);
}

TEST_F(DriverGpuTest, OutOfMemoryIsResourceExhausted) {
  absl::StatusOr<DeviceBuffer> b = DeviceBuffer::Allocate(*ctx_, uint64_t{1} << 50);  // 1 PiB
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(b.status().message()), StartsWith("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2)"));
}

}  // namespace
}  // namespace kiln::runtime::cuda
