#include "runtime/cuda/driver.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "support/status_macros.h"

namespace kiln::runtime::cuda {
namespace {

// Set once a driver is open, so errors can carry cuGetErrorName even from
// code that holds no Driver.
std::atomic<PFN_cuGetErrorName_v6000> g_get_error_name{nullptr};

// "api_->cuModuleLoadDataEx(&m, ...)" -> "cuModuleLoadDataEx".
absl::string_view CallName(absl::string_view expr) {
  size_t paren = expr.find('(');
  absl::string_view head = expr.substr(0, paren);
  size_t end = head.size();
  while (end > 0 && absl::ascii_isspace(static_cast<unsigned char>(head[end - 1]))) --end;
  size_t begin = end;
  while (begin > 0 && (absl::ascii_isalnum(static_cast<unsigned char>(head[begin - 1])) || head[begin - 1] == '_'))
    --begin;
  absl::string_view name = head.substr(begin, end - begin);
  return name.empty() ? expr : name;
}

absl::StatusCode CodeFor(CUresult r) {
  switch (r) {
    case CUDA_ERROR_OUT_OF_MEMORY:
      return absl::StatusCode::kResourceExhausted;
    case CUDA_ERROR_NOT_FOUND:
      return absl::StatusCode::kNotFound;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
    case CUDA_ERROR_JIT_COMPILATION_DISABLED:
      return absl::StatusCode::kFailedPrecondition;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

bool IsStickyError(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
    case CUDA_ERROR_CONTAINED:
    case CUDA_ERROR_EXTERNAL_DEVICE:
    case CUDA_ERROR_ASSERT:
      return true;
    default:
      return false;
  }
}

absl::Status CuError(CUresult result, absl::string_view expression) {
  return CuError(result, expression, "");
}

absl::Status CuError(CUresult result, absl::string_view expression, absl::string_view detail) {
  const char* name = nullptr;
  if (PFN_cuGetErrorName_v6000 fn = g_get_error_name.load(std::memory_order_acquire)) {
    if (fn(result, &name) != CUDA_SUCCESS) name = nullptr;
  }
  std::string msg = absl::StrCat(CallName(expression), ": ", name ? name : "CUDA_ERROR", " (",
                                 static_cast<int>(result), ")");
  if (!detail.empty()) absl::StrAppend(&msg, ": ", detail);
  if (IsStickyError(result))
    absl::StrAppend(&msg, " (a sticky error: the GPU context is unusable and kiln must be restarted)");
  return absl::Status(CodeFor(result), msg);
}

absl::StatusOr<std::unique_ptr<Driver>> Driver::Open(const std::string& library) {
  // RTLD_LOCAL: the driver's symbols must not satisfy anyone else's lookups.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(
        absl::StrCat("no NVIDIA driver found (", library, " not loadable: ", why ? why : "unknown reason",
                     "): kiln needs an NVIDIA GPU"));
  }
  // Check the version with the unversioned, ABI-stable symbol first:
  // cuGetProcAddress at 13000 fails outright on an older driver (spec §8).
  using GetVersionFn = CUresult (*)(int*);
  auto get_version = reinterpret_cast<GetVersionFn>(dlsym(handle, "cuDriverGetVersion"));
  auto get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(handle, "cuGetProcAddress_v2"));
  auto driver = std::unique_ptr<Driver>(new Driver());
  if (get_version == nullptr || get_version(&driver->version_) != CUDA_SUCCESS)
    return absl::FailedPreconditionError(
        absl::StrCat(library, " does not answer cuDriverGetVersion: is it the NVIDIA driver?"));
  if (driver->version_ < kRequiredDriverVersion || get_proc == nullptr)
    return absl::FailedPreconditionError(absl::StrFormat(
        "the NVIDIA driver supports CUDA %d.%d, kiln needs CUDA %d.%d (driver 580 or newer)",
        driver->version_ / 1000, driver->version_ % 1000 / 10, kRequiredDriverVersion / 1000,
        kRequiredDriverVersion % 1000 / 10));

  DriverApi& api = driver->api_;
  CUdriverProcAddressQueryResult found;
  CUresult r;
#define KILN_CUDA_RESOLVE_(name, version)                                                         \
  found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;                                                   \
  r = get_proc(#name, reinterpret_cast<void**>(&api.name), kRequiredDriverVersion,                \
               CU_GET_PROC_ADDRESS_DEFAULT, &found);                                              \
  if (r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || api.name == nullptr)           \
    return absl::FailedPreconditionError(absl::StrCat("the NVIDIA driver (CUDA ", driver->version_, \
                                                      ") lacks " #name " at the CUDA 13.0 ABI (query status ", \
                                                      static_cast<int>(found), ")"));
  KILN_CUDA_ENTRY_POINTS(KILN_CUDA_RESOLVE_)
#undef KILN_CUDA_RESOLVE_
  g_get_error_name.store(api.cuGetErrorName, std::memory_order_release);

  r = api.cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE)
    return absl::FailedPreconditionError(
        "no NVIDIA GPU found: the driver is installed but sees no device (check CUDA_VISIBLE_DEVICES)");
  if (r != CUDA_SUCCESS) return CuError(r, "cuInit(0)");
  CU_RETURN_IF_ERROR(api.cuDeviceGetCount(&driver->device_count_));
  if (driver->device_count_ == 0)
    return absl::FailedPreconditionError("no NVIDIA GPU found: the driver reports 0 devices");
  return driver;
}

absl::StatusOr<const Driver*> Driver::Get() {
  static absl::StatusOr<std::unique_ptr<Driver>>* opened = nullptr;
  static std::once_flag once;
  std::call_once(once, [] { opened = new absl::StatusOr<std::unique_ptr<Driver>>(Open()); });
  if (!opened->ok()) return opened->status();
  return opened->value().get();
}

absl::StatusOr<DeviceInfo> GetDeviceInfo(const Driver& driver, int ordinal) {
  const DriverApi& api = driver.api();
  if (ordinal < 0 || ordinal >= driver.device_count())
    return absl::InvalidArgumentError(
        absl::StrCat("GPU ", ordinal, " requested, but the driver sees ", driver.device_count(), " GPU(s)"));
  CUdevice dev;
  CU_RETURN_IF_ERROR(api.cuDeviceGet(&dev, ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  CU_RETURN_IF_ERROR(api.cuDeviceGetName(name, sizeof(name) - 1, dev));
  info.name = name;
  CU_RETURN_IF_ERROR(api.cuDeviceGetAttribute(&info.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CU_RETURN_IF_ERROR(api.cuDeviceGetAttribute(&info.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  CU_RETURN_IF_ERROR(api.cuDeviceGetAttribute(&info.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CU_RETURN_IF_ERROR(api.cuDeviceGetAttribute(&info.max_shared_per_block_optin,
                                              CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev));
  size_t total = 0;
  CU_RETURN_IF_ERROR(api.cuDeviceTotalMem(&total, dev));
  info.total_memory = total;
  return info;
}

// ---------------------------------------------------------------- Context

absl::StatusOr<std::unique_ptr<Context>> Context::Create(const Driver& driver, int ordinal) {
  auto ctx = std::unique_ptr<Context>(new Context());
  ASSIGN_OR_RETURN(ctx->device_, GetDeviceInfo(driver, ordinal));
  ctx->api_ = &driver.api();
  const DriverApi& api = driver.api();
  CU_RETURN_IF_ERROR(api.cuDeviceGet(&ctx->dev_, ordinal));
  CU_RETURN_IF_ERROR(api.cuDevicePrimaryCtxRetain(&ctx->ctx_, ctx->dev_));
  RETURN_IF_ERROR(ctx->MakeCurrent());
  return ctx;
}

Context::~Context() {
  if (ctx_ != nullptr) api_->cuDevicePrimaryCtxRelease(dev_);
}

absl::Status Context::MakeCurrent() const {
  CU_RETURN_IF_ERROR(api_->cuCtxSetCurrent(ctx_));
  return absl::OkStatus();
}

absl::StatusOr<MemoryInfo> Context::GetMemoryInfo() const {
  size_t free = 0, total = 0;
  CU_RETURN_IF_ERROR(api_->cuMemGetInfo(&free, &total));
  return MemoryInfo{free, total};
}

// ---------------------------------------------------------------- Function

absl::StatusOr<int> Function::GetAttribute(CUfunction_attribute attribute) const {
  int v = 0;
  CU_RETURN_IF_ERROR(api_->cuFuncGetAttribute(&v, attribute, f_));
  return v;
}

absl::Status Function::SetMaxDynamicSharedMemory(int bytes, int optin_limit) {
  ASSIGN_OR_RETURN(int static_bytes, GetAttribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES));
  if (static_cast<int64_t>(bytes) + static_bytes > optin_limit)
    return absl::FailedPreconditionError(absl::StrCat(
        "kernel '", name_, "' needs ", bytes, " bytes of dynamic + ", static_bytes,
        " bytes of static shared memory; this GPU allows ", optin_limit, " per block"));
  CUresult r = api_->cuFuncSetAttribute(f_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
  if (r != CUDA_SUCCESS) return CuError(r, "cuFuncSetAttribute", absl::StrCat("kernel '", name_, "'"));
  return absl::OkStatus();
}

absl::Status Function::Load() const {
  CUresult r = api_->cuFuncLoad(f_);
  if (r != CUDA_SUCCESS) return CuError(r, "cuFuncLoad", absl::StrCat("kernel '", name_, "'"));
  return absl::OkStatus();
}

absl::StatusOr<int> Function::MaxActiveBlocksPerSm(int block_threads, size_t dynamic_shared) const {
  int blocks = 0;
  CUresult r = api_->cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f_, block_threads, dynamic_shared);
  if (r != CUDA_SUCCESS)
    return CuError(r, "cuOccupancyMaxActiveBlocksPerMultiprocessor", absl::StrCat("kernel '", name_, "'"));
  return blocks;
}

// ---------------------------------------------------------------- Module

absl::StatusOr<std::unique_ptr<Module>> Module::Load(const Context& ctx, absl::Span<const uint8_t> image,
                                                     ImageKind kind, std::string label) {
  auto m = std::unique_ptr<Module>(new Module());
  m->api_ = &ctx.api();
  m->label_ = std::move(label);
  // PTX must be NUL-terminated; bundle sections are not.
  std::vector<uint8_t> ptx;
  const void* data = image.data();
  if (kind == ImageKind::kPtx) {
    ptx.assign(image.begin(), image.end());
    ptx.push_back(0);
    data = ptx.data();
  }
  // JIT logs (spec §2): the size slots are in/out, passed by value.
  std::vector<char> error_log(16384, 0), info_log(4096, 0);
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log.data(), reinterpret_cast<void*>(static_cast<uintptr_t>(error_log.size() - 1)),
                    info_log.data(), reinterpret_cast<void*>(static_cast<uintptr_t>(info_log.size() - 1))};
  CUresult r = m->api_->cuModuleLoadDataEx(&m->module_, data, 4, options, values);
  if (r != CUDA_SUCCESS) {
    m->module_ = nullptr;
    std::string detail = absl::StrCat("loading ", m->label_);
    std::string log(error_log.data());
    while (!log.empty() && absl::ascii_isspace(static_cast<unsigned char>(log.back()))) log.pop_back();
    if (!log.empty()) absl::StrAppend(&detail, ":\n", log);
    return CuError(r, "cuModuleLoadDataEx", detail);
  }
  return m;
}

Module::~Module() {
  if (module_ != nullptr) api_->cuModuleUnload(module_);
}

absl::StatusOr<Function> Module::GetFunction(const std::string& name) const {
  CUfunction f = nullptr;
  CUresult r = api_->cuModuleGetFunction(&f, module_, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND)
    return absl::NotFoundError(absl::StrCat("kernel '", name, "' is not in ", label_));
  if (r != CUDA_SUCCESS) return CuError(r, "cuModuleGetFunction", absl::StrCat("kernel '", name, "'"));
  return Function(api_, f, name);
}

// ---------------------------------------------------------------- memory

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(const Context& ctx, uint64_t bytes) {
  DeviceBuffer b;
  b.api_ = &ctx.api();
  if (bytes == 0) return b;
  CUresult r = b.api_->cuMemAlloc(&b.ptr_, bytes);
  if (r != CUDA_SUCCESS) return CuError(r, "cuMemAlloc", absl::StrCat(bytes, " bytes"));
  b.size_ = bytes;
  return b;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    Free();
    api_ = o.api_;
    ptr_ = std::exchange(o.ptr_, 0);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

void DeviceBuffer::Free() {
  if (ptr_ != 0) api_->cuMemFree(ptr_);
  ptr_ = 0;
  size_ = 0;
}

absl::StatusOr<HostBuffer> HostBuffer::Allocate(const Context& ctx, uint64_t bytes, unsigned flags) {
  HostBuffer b;
  b.api_ = &ctx.api();
  if (bytes == 0) return b;
  CUresult r = b.api_->cuMemHostAlloc(&b.p_, bytes, flags);
  if (r != CUDA_SUCCESS) return CuError(r, "cuMemHostAlloc", absl::StrCat(bytes, " bytes of pinned memory"));
  b.size_ = bytes;
  return b;
}

absl::StatusOr<CUdeviceptr> HostBuffer::DevicePointer() const {
  CUdeviceptr d = 0;
  CUresult r = api_->cuMemHostGetDevicePointer(&d, p_, 0);
  if (r != CUDA_SUCCESS) return CuError(r, "cuMemHostGetDevicePointer", absl::StrCat(size_, " bytes of pinned memory"));
  return d;
}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    Free();
    api_ = o.api_;
    p_ = std::exchange(o.p_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

void HostBuffer::Free() {
  if (p_ != nullptr) api_->cuMemFreeHost(p_);
  p_ = nullptr;
  size_ = 0;
}

// ---------------------------------------------------------------- Stream

absl::StatusOr<std::unique_ptr<Stream>> Stream::Create(const Context& ctx) {
  auto s = std::unique_ptr<Stream>(new Stream());
  s->api_ = &ctx.api();
  s->pdl_ = ctx.device().supports_pdl();
  CU_RETURN_IF_ERROR(s->api_->cuStreamCreate(&s->stream_, CU_STREAM_NON_BLOCKING));
  return s;
}

Stream::~Stream() {
  if (stream_ != nullptr) api_->cuStreamDestroy(stream_);
}

absl::Status Stream::Synchronize() const {
  CU_RETURN_IF_ERROR(api_->cuStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::Status Stream::Launch(const Function& f, const LaunchConfig& c, void** params) const {
  CUlaunchConfig config;
  std::memset(&config, 0, sizeof(config));
  config.gridDimX = c.grid[0];
  config.gridDimY = c.grid[1];
  config.gridDimZ = c.grid[2];
  config.blockDimX = c.block[0];
  config.blockDimY = c.block[1];
  config.blockDimZ = c.block[2];
  config.sharedMemBytes = c.shared_bytes;
  config.hStream = stream_;
  CUlaunchAttribute attr;
  std::memset(&attr, 0, sizeof(attr));  // spec §4: zero the 72-byte attribute first
  if (c.programmatic && pdl_) {
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    config.attrs = &attr;
    config.numAttrs = 1;
  }
  CUresult r = api_->cuLaunchKernelEx(&config, f.handle(), params, nullptr);
  if (r != CUDA_SUCCESS)
    return CuError(r, "cuLaunchKernelEx",
                   absl::StrFormat("kernel '%s', grid (%u, %u, %u), block (%u, %u, %u), %u bytes shared",
                                   f.name(), c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1],
                                   c.block[2], c.shared_bytes));
  return absl::OkStatus();
}

absl::Status Stream::CopyToDevice(CUdeviceptr dst, const void* src, uint64_t bytes) const {
  CU_RETURN_IF_ERROR(api_->cuMemcpyHtoDAsync(dst, src, bytes, stream_));
  return absl::OkStatus();
}

absl::Status Stream::CopyToHost(void* dst, CUdeviceptr src, uint64_t bytes) const {
  CU_RETURN_IF_ERROR(api_->cuMemcpyDtoHAsync(dst, src, bytes, stream_));
  return absl::OkStatus();
}

absl::Status Stream::CopyDeviceToDevice(CUdeviceptr dst, CUdeviceptr src, uint64_t bytes) const {
  CU_RETURN_IF_ERROR(api_->cuMemcpyDtoDAsync(dst, src, bytes, stream_));
  return absl::OkStatus();
}

absl::Status Stream::Memset(CUdeviceptr dst, uint8_t value, uint64_t bytes) const {
  CU_RETURN_IF_ERROR(api_->cuMemsetD8Async(dst, value, bytes, stream_));
  return absl::OkStatus();
}

absl::Status Stream::WaitEvent(const Event& event) const {
  CU_RETURN_IF_ERROR(api_->cuStreamWaitEvent(stream_, event.handle(), 0));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Graph>> Stream::Capture(absl::FunctionRef<absl::Status()> body) const {
  CU_RETURN_IF_ERROR(api_->cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  absl::Status body_status = body();
  CUgraph g = nullptr;
  CUresult r = api_->cuStreamEndCapture(stream_, &g);
  auto graph = std::unique_ptr<Graph>(new Graph(api_, g));  // owns g whatever happens next
  RETURN_IF_ERROR(body_status);
  if (r != CUDA_SUCCESS) return CuError(r, "cuStreamEndCapture");
  return graph;
}

// ---------------------------------------------------------------- Event

absl::StatusOr<std::unique_ptr<Event>> Event::Create(const Context& ctx, unsigned flags) {
  auto e = std::unique_ptr<Event>(new Event());
  e->api_ = &ctx.api();
  CU_RETURN_IF_ERROR(e->api_->cuEventCreate(&e->event_, flags));
  return e;
}

Event::~Event() {
  if (event_ != nullptr) api_->cuEventDestroy(event_);
}

absl::Status Event::Record(const Stream& stream) const {
  CU_RETURN_IF_ERROR(api_->cuEventRecord(event_, stream.handle()));
  return absl::OkStatus();
}

absl::Status Event::Synchronize() const {
  CU_RETURN_IF_ERROR(api_->cuEventSynchronize(event_));
  return absl::OkStatus();
}

absl::StatusOr<float> Event::ElapsedMs(const Event& start, const Event& end) {
  float ms = 0;
  CU_RETURN_IF_ERROR(start.api_->cuEventElapsedTime(&ms, start.event_, end.event_));
  return ms;
}

// ---------------------------------------------------------------- Graph

Graph::~Graph() {
  if (exec_ != nullptr) api_->cuGraphExecDestroy(exec_);
  if (graph_ != nullptr) api_->cuGraphDestroy(graph_);
}

absl::Status Graph::Instantiate(const Stream& stream) {
  RET_CHECK(graph_ != nullptr && exec_ == nullptr);
  CU_RETURN_IF_ERROR(api_->cuGraphInstantiateWithFlags(&exec_, graph_, 0));
  CU_RETURN_IF_ERROR(api_->cuGraphUpload(exec_, stream.handle()));
  return absl::OkStatus();
}

absl::Status Graph::Launch(const Stream& stream) const {
  RET_CHECK(exec_ != nullptr);
  CU_RETURN_IF_ERROR(api_->cuGraphLaunch(exec_, stream.handle()));
  return absl::OkStatus();
}

}  // namespace kiln::runtime::cuda
