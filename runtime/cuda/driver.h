// A thin, checked wrapper over the CUDA driver API. libcuda.so.1 is opened
// with dlopen and every entry point resolved with cuGetProcAddress at CUDA
// 13.0's ABI (spec/cuda-driver-api.md §8), so `kiln` starts and reports
// "no GPU" cleanly on machines without a driver. Every call is checked; a
// failure becomes an absl::Status naming the call and cuGetErrorName.
#ifndef KILN_RUNTIME_CUDA_DRIVER_H_
#define KILN_RUNTIME_CUDA_DRIVER_H_

#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace kiln::runtime::cuda {

// The entry points kiln calls, each with the PFN typedef of its CUDA 13.0 ABI
// (cudaTypedefs.h: the largest _v<N> with N <= 13000; spec §0 and §8).
// cuCtxSynchronize/cuCtxGetDevice are left out on purpose: 13.0 gave them a
// second ABI, and streams and events cover what kiln needs.
#define KILN_CUDA_ENTRY_POINTS(X)         \
  X(cuGetErrorName, 6000)                 \
  X(cuGetErrorString, 6000)               \
  X(cuInit, 2000)                         \
  X(cuDeviceGetCount, 2000)               \
  X(cuDeviceGet, 2000)                    \
  X(cuDeviceGetName, 2000)                \
  X(cuDeviceGetAttribute, 2000)           \
  X(cuDeviceTotalMem, 3020)               \
  X(cuDevicePrimaryCtxRetain, 7000)       \
  X(cuDevicePrimaryCtxRelease, 11000)     \
  X(cuCtxSetCurrent, 4000)                \
  X(cuMemGetInfo, 3020)                   \
  X(cuModuleLoadDataEx, 2010)             \
  X(cuModuleUnload, 2000)                 \
  X(cuModuleGetFunction, 2000)            \
  X(cuFuncSetAttribute, 9000)             \
  X(cuFuncGetAttribute, 2020)             \
  X(cuFuncLoad, 12040)                    \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050) \
  X(cuMemAlloc, 3020)                     \
  X(cuMemFree, 3020)                      \
  X(cuMemHostAlloc, 2020)                 \
  X(cuMemHostGetDevicePointer, 3020)      \
  X(cuMemFreeHost, 2000)                  \
  X(cuMemcpyHtoDAsync, 3020)              \
  X(cuMemcpyDtoHAsync, 3020)              \
  X(cuMemcpyDtoDAsync, 3020)              \
  X(cuMemsetD8Async, 3020)                \
  X(cuStreamCreate, 2000)                 \
  X(cuStreamDestroy, 4000)                \
  X(cuStreamSynchronize, 2000)            \
  X(cuStreamQuery, 2000)                  \
  X(cuStreamWaitEvent, 3020)              \
  X(cuEventCreate, 2000)                  \
  X(cuEventDestroy, 4000)                 \
  X(cuEventRecord, 2000)                  \
  X(cuEventSynchronize, 2000)             \
  X(cuEventQuery, 2000)                   \
  X(cuEventElapsedTime, 12080)            \
  X(cuStreamBeginCapture, 10010)          \
  X(cuStreamEndCapture, 10000)            \
  X(cuGraphInstantiateWithFlags, 11040)   \
  X(cuGraphUpload, 11010)                 \
  X(cuGraphLaunch, 10000)                 \
  X(cuGraphDestroy, 10000)                \
  X(cuGraphExecDestroy, 10000)            \
  X(cuLaunchKernelEx, 11060)

// cuda.h #defines many of these names to their versioned symbols (cuMemAlloc
// -> cuMemAlloc_v2); the member names follow the same macros, so
// `api.cuMemAlloc(...)` works as written, while cuGetProcAddress is asked
// for the base name (stringized before expansion).
struct DriverApi {
#define KILN_CUDA_DECLARE_MEMBER_(name, version) PFN_##name##_v##version name = nullptr;
  KILN_CUDA_ENTRY_POINTS(KILN_CUDA_DECLARE_MEMBER_)
#undef KILN_CUDA_DECLARE_MEMBER_
};

// The error for a failed driver call. `expression` is the call's source text
// (e.g. "api.cuModuleLoadDataEx(&m, ...)"); the message names the function:
// "cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (218)". Sticky errors (spec
// §7) say that the process must be restarted.
absl::Status CuError(CUresult result, absl::string_view expression);
// Same, with extra context appended after the error name.
absl::Status CuError(CUresult result, absl::string_view expression, absl::string_view detail);
// True for the errors after which the context is unusable (spec §7).
bool IsStickyError(CUresult result);

#define CU_RETURN_IF_ERROR(call)                                                       \
  do {                                                                                 \
    ::CUresult kiln_cu_result_ = (call);                                               \
    if (kiln_cu_result_ != CUDA_SUCCESS) return ::kiln::runtime::cuda::CuError(kiln_cu_result_, #call); \
  } while (0)

inline constexpr int kRequiredDriverVersion = 13000;  // CUDA 13.0, driver R580

class Driver {
 public:
  // Opens `library`, checks cuDriverGetVersion() >= 13000, resolves every
  // entry point and calls cuInit(0). No library: FailedPrecondition "no
  // NVIDIA driver found ..."; a driver that sees no GPU: FailedPrecondition
  // "no NVIDIA GPU found ...".
  static absl::StatusOr<std::unique_ptr<Driver>> Open(const std::string& library = "libcuda.so.1");
  // The process-wide driver, opened on first use; the outcome (driver or
  // error) is kept, since libcuda cannot be initialized twice anyway.
  static absl::StatusOr<const Driver*> Get();
  // The library stays loaded: contexts and modules may outlive this object.
  ~Driver() = default;
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  const DriverApi& api() const { return api_; }
  int version() const { return version_; }  // 1000*major + 10*minor
  int device_count() const { return device_count_; }

 private:
  Driver() = default;
  DriverApi api_;
  int version_ = 0;
  int device_count_ = 0;
};

struct DeviceInfo {
  int ordinal = 0;
  std::string name;          // "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int max_shared_per_block_optin = 0;  // bytes of dynamic + static shared memory
  uint64_t total_memory = 0;
  // "sm_90": the cubin target this device runs exactly.
  std::string sm() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
  int compute_capability() const { return cc_major * 10 + cc_minor; }
  // Programmatic dependent launch (griddepcontrol) needs compute capability 9.0.
  bool supports_pdl() const { return cc_major >= 9; }
};

struct MemoryInfo {
  uint64_t free = 0, total = 0;
};

// Queries a device's properties (no context needed).
absl::StatusOr<DeviceInfo> GetDeviceInfo(const Driver& driver, int ordinal);

// The device's primary context, retained and made current on the creating
// thread (spec §1: prefer the primary context). Released on destruction.
class Context {
 public:
  static absl::StatusOr<std::unique_ptr<Context>> Create(const Driver& driver, int ordinal = 0);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Makes the context current on the calling thread.
  absl::Status MakeCurrent() const;
  absl::StatusOr<MemoryInfo> GetMemoryInfo() const;
  const DeviceInfo& device() const { return device_; }
  const DriverApi& api() const { return *api_; }
  CUcontext handle() const { return ctx_; }

 private:
  Context() = default;
  const DriverApi* api_ = nullptr;
  DeviceInfo device_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
};

// A kernel in a loaded module (a non-owning handle; the Module owns it).
class Function {
 public:
  Function() = default;
  Function(const DriverApi* api, CUfunction f, std::string name)
      : api_(api), f_(f), name_(std::move(name)) {}
  CUfunction handle() const { return f_; }
  const std::string& name() const { return name_; }
  absl::StatusOr<int> GetAttribute(CUfunction_attribute attribute) const;
  // Allows `bytes` of dynamic shared memory. Needed above 48 KB (spec §2);
  // fails with a message naming the kernel if static + dynamic exceeds
  // `optin_limit` (the device's per-block opt-in maximum).
  absl::Status SetMaxDynamicSharedMemory(int bytes, int optin_limit);
  // Finishes a lazy load now, so the first launch (or a capture) does not
  // pay for it (spec §2, "Lazy loading").
  absl::Status Load() const;
  // How many blocks of `block_threads` (with `dynamic_shared` bytes) fit on
  // one multiprocessor at once, for grids of exactly one wave.
  absl::StatusOr<int> MaxActiveBlocksPerSm(int block_threads, size_t dynamic_shared = 0) const;

 private:
  const DriverApi* api_ = nullptr;
  CUfunction f_ = nullptr;
  std::string name_;
};

enum class ImageKind { kPtx, kCubin };

class Module {
 public:
  // Loads a cubin or PTX image. PTX is JIT-compiled by the driver; its error
  // log is part of the error message. `label` (e.g. "PTX for sm_90") names
  // the image in errors.
  static absl::StatusOr<std::unique_ptr<Module>> Load(const Context& ctx, absl::Span<const uint8_t> image,
                                                      ImageKind kind, std::string label);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // NotFound (naming the kernel and the image) if the image lacks it.
  absl::StatusOr<Function> GetFunction(const std::string& name) const;
  const std::string& label() const { return label_; }

 private:
  Module() = default;
  const DriverApi* api_ = nullptr;
  CUmodule module_ = nullptr;
  std::string label_;
};

// Device memory from cuMemAlloc (256-byte aligned), freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static absl::StatusOr<DeviceBuffer> Allocate(const Context& ctx, uint64_t bytes);
  ~DeviceBuffer() { Free(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  uint64_t size() const { return size_; }
  // Releases the memory now (errors are ignored: this cannot fail usefully).
  void Free();

 private:
  const DriverApi* api_ = nullptr;
  CUdeviceptr ptr_ = 0;
  uint64_t size_ = 0;
};

// Page-locked host memory (cuMemHostAlloc): the source or target of truly
// asynchronous copies (spec §3).
class HostBuffer {
 public:
  HostBuffer() = default;
  static absl::StatusOr<HostBuffer> Allocate(const Context& ctx, uint64_t bytes, unsigned flags = 0);
  ~HostBuffer() { Free(); }
  HostBuffer(HostBuffer&& o) noexcept { *this = std::move(o); }
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  uint8_t* data() const { return static_cast<uint8_t*>(p_); }
  uint64_t size() const { return size_; }
  // Where kernels write it (allocated with CU_MEMHOSTALLOC_DEVICEMAP):
  // cuMemHostGetDevicePointer.
  absl::StatusOr<CUdeviceptr> DevicePointer() const;
  void Free();

 private:
  const DriverApi* api_ = nullptr;
  void* p_ = nullptr;
  uint64_t size_ = 0;
};

struct LaunchConfig {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;
  // The kernel waits with griddepcontrol.wait before reading what earlier
  // kernels wrote, so it may start early (PDL). Honoured only on sm_90+.
  bool programmatic = false;
};

class Event;
class Graph;

// A non-blocking stream (never synchronizes with the legacy NULL stream).
class Stream {
 public:
  static absl::StatusOr<std::unique_ptr<Stream>> Create(const Context& ctx);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  CUstream handle() const { return stream_; }
  absl::Status Synchronize() const;

  // cuLaunchKernelEx; adds the programmatic-stream-serialization attribute
  // when config.programmatic and the device is sm_90+ (spec §4).
  // `params[i]` points at argument i.
  absl::Status Launch(const Function& f, const LaunchConfig& config, void** params) const;

  absl::Status CopyToDevice(CUdeviceptr dst, const void* src, uint64_t bytes) const;
  absl::Status CopyToHost(void* dst, CUdeviceptr src, uint64_t bytes) const;
  absl::Status CopyDeviceToDevice(CUdeviceptr dst, CUdeviceptr src, uint64_t bytes) const;
  absl::Status Memset(CUdeviceptr dst, uint8_t value, uint64_t bytes) const;
  // cuStreamWaitEvent: work enqueued here after this call starts only once
  // the work recorded in `event` has completed (under capture: a graph
  // edge, which also brings a second stream into the capture).
  absl::Status WaitEvent(const Event& event) const;

  // Captures everything `body` enqueues on this stream into a graph
  // (thread-local capture mode, spec §5). The capture is always ended, also
  // when `body` fails; then body's error is returned.
  absl::StatusOr<std::unique_ptr<Graph>> Capture(absl::FunctionRef<absl::Status()> body) const;

 private:
  Stream() = default;
  const DriverApi* api_ = nullptr;
  bool pdl_ = false;
  CUstream stream_ = nullptr;
};

class Event {
 public:
  // Default flags: no timing (cheapest; required for PDL events, spec §4).
  static absl::StatusOr<std::unique_ptr<Event>> Create(const Context& ctx,
                                                       unsigned flags = CU_EVENT_DISABLE_TIMING);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  CUevent handle() const { return event_; }
  absl::Status Record(const Stream& stream) const;
  absl::Status Synchronize() const;
  // Milliseconds between two recorded timing events (flags = CU_EVENT_DEFAULT).
  static absl::StatusOr<float> ElapsedMs(const Event& start, const Event& end);

 private:
  Event() = default;
  const DriverApi* api_ = nullptr;
  CUevent event_ = nullptr;
};

// An instantiated, uploaded CUDA graph; replayed with Launch.
class Graph {
 public:
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Instantiates the captured graph and uploads it on `stream`, so the first
  // launch is not slow (spec §5).
  absl::Status Instantiate(const Stream& stream);
  absl::Status Launch(const Stream& stream) const;
  bool instantiated() const { return exec_ != nullptr; }

 private:
  friend class Stream;
  Graph(const DriverApi* api, CUgraph g) : api_(api), graph_(g) {}
  const DriverApi* api_ = nullptr;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

}  // namespace kiln::runtime::cuda

#endif  // KILN_RUNTIME_CUDA_DRIVER_H_
