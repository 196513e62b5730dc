#include "runtime/executor.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runtime/bundle/validator.h"
#include "runtime/step_kernels.h"
#include "runtime/weight_upload.h"
#include "support/status_macros.h"

namespace kiln::runtime {
namespace {

using cuda::DeviceBuffer;
using cuda::HostBuffer;

// How long kiln_hold keeps the GPU waiting before a profiled plan: enough
// for the host to queue an event record and a launch per kernel.
constexpr uint64_t kHoldNsPerLaunch = 20000;
constexpr uint64_t kMaxHoldNs = 50000000;

// Without opting in, a block gets at most 48 KiB of shared memory.
constexpr int kDefaultSharedLimit = 48 << 10;

// Pinned IO area layout (bytes): the prefill tokens, then fixed slots, then
// one logits row.
struct IoLayout {
  uint64_t tokens = 0;           // i32[prefill max_tokens]
  uint64_t position = 0;         // i32: prefill start position
  uint64_t step_token = 0;       // i32: decode token written by the host
  uint64_t step_position = 0;    // i32: decode position written by the host
  uint64_t argmax = 0;           // i32: sampled_buffer copied back
  uint64_t ring = 0;             // {i32 position, i32 argmax}[2]: kiln_advance_step's, slot position mod 2
  uint64_t logits = 0;           // f32[n_vocab]
  uint64_t size = 0;
};

IoLayout MakeIoLayout(int64_t max_tokens, int64_t n_vocab) {
  IoLayout l;
  l.tokens = 0;
  l.position = (static_cast<uint64_t>(max_tokens) * 4 + 15) / 16 * 16;
  l.step_token = l.position + 4;
  l.step_position = l.position + 8;
  l.argmax = l.position + 12;
  l.ring = l.position + 16;
  l.logits = l.ring + 16;
  l.size = l.logits + static_cast<uint64_t>(n_vocab) * 4;
  return l;
}

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int32_t LoadI32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void StoreI32(uint8_t* p, int64_t v) {
  int32_t x = static_cast<int32_t>(v);
  std::memcpy(p, &x, 4);
}


}  // namespace

struct Executor::PreparedLaunch {
  const Launch* launch;
  const cuda::Function* function;
  cuda::LaunchConfig config;  // grid filled per launch
  std::string what;           // "prefill launch 3 (kernel 'matvec_q8_0')"
};

struct Executor::Plan {
  std::string name;
  int64_t max_tokens = 0;
  std::vector<PreparedLaunch> launches;
};

Executor::~Executor() = default;

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(const Manifest& m, const SectionBytesFn& sections,
                                                           const gguf::GgufFile& file,
                                                           const ExecutorOptions& options) {
  auto e = std::unique_ptr<Executor>(new Executor());
  e->m_ = &m;
  e->options_ = options;
  e->n_vocab_ = m.config().n_vocab();
  auto log = [&](const std::string& line) {
    if (options.log) options.log(line);
  };

  // Everything that can be checked without the GPU comes first.
  RETURN_IF_ERROR(CheckBinding(m, file));
  RETURN_IF_ERROR(CheckDecodeGraphable(m));
  ASSIGN_OR_RETURN(e->context_, ChooseContext(m, options.context));
  ASSIGN_OR_RETURN(e->memory_, PlanMemory(m, e->context_));

  ASSIGN_OR_RETURN(const cuda::Driver* driver, cuda::Driver::Get());
  ASSIGN_OR_RETURN(e->ctx_, cuda::Context::Create(*driver, options.device));
  const cuda::DeviceInfo& dev = e->ctx_->device();
  ASSIGN_OR_RETURN(e->choice_, SelectSections(m, GpuTarget{dev.name, dev.compute_capability()},
                                              options.allow_ptx_jit));
  ASSIGN_OR_RETURN(cuda::MemoryInfo mem, e->ctx_->GetMemoryInfo());
  log(absl::StrFormat("GPU %d: %s (%s, %d SMs, %s free of %s); kernels: %s %s; context %d", dev.ordinal,
                      dev.name, dev.sm(), dev.sm_count, FormatBytes(mem.free), FormatBytes(mem.total),
                      e->choice_.jit ? "PTX JIT-compiled from" : "cubin", e->choice_.target, e->context_));
  RETURN_IF_ERROR(CheckMemoryFits(m, e->memory_, mem.free, dev.name));

  ASSIGN_OR_RETURN(e->stream_, cuda::Stream::Create(*e->ctx_));
  ASSIGN_OR_RETURN(e->done_, cuda::Event::Create(*e->ctx_));
  for (std::unique_ptr<cuda::Event>& step_done : e->step_done_) {
    ASSIGN_OR_RETURN(step_done, cuda::Event::Create(*e->ctx_));
  }
  ASSIGN_OR_RETURN(e->side_stream_, cuda::Stream::Create(*e->ctx_));
  ASSIGN_OR_RETURN(e->fork_, cuda::Event::Create(*e->ctx_));
  ASSIGN_OR_RETURN(e->join_, cuda::Event::Create(*e->ctx_));
  auto t0 = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(e->LoadKernels(sections));
  RETURN_IF_ERROR(e->PreparePlans());
  log(absl::StrFormat("loaded %d kernels in %.2f s", m.kernels_size(), SecondsSince(t0)));

  e->buffers_.resize(m.buffers_size());
  e->buffer_ptrs_.assign(m.buffers_size(), 0);
  RETURN_IF_ERROR(e->AllocatePhase(/*load_phase=*/true));
  RETURN_IF_ERROR(e->UploadTensors(file));
  t0 = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(e->RunPlan(*e->load_, ExprEnv{0, 0, e->context_}));
  RETURN_IF_ERROR(e->Wait("load plan"));
  for (int i = 0; i < m.buffers_size(); ++i) {
    if (m.buffers(i).kind() != Buffer::GGUF_TENSOR) continue;
    e->buffers_[i].Free();
    e->buffer_ptrs_[i] = 0;
  }
  RETURN_IF_ERROR(e->AllocatePhase(/*load_phase=*/false));
  log(absl::StrFormat("packed weights in %.2f s; %s of GPU buffers for context %d", SecondsSince(t0),
                      FormatBytes(e->memory_.run_bytes), e->context_));

  const IoLayout io = MakeIoLayout(m.prefill().max_tokens(), e->n_vocab_);
  // Mapped: kiln_advance_step writes each decode step's argmax into it.
  ASSIGN_OR_RETURN(e->io_, HostBuffer::Allocate(*e->ctx_, io.size, CU_MEMHOSTALLOC_DEVICEMAP));
  std::memset(e->io_.data(), 0, io.size);
  ASSIGN_OR_RETURN(e->io_device_, e->io_.DevicePointer());
  RETURN_IF_ERROR(e->Warm());
  e->counters_ = {};  // from here on, requests only
  return e;
}

absl::Status Executor::LoadKernels(const SectionBytesFn& sections) {
  const cuda::DeviceInfo& dev = ctx_->device();
  for (int index : choice_.sections) {
    ASSIGN_OR_RETURN(absl::Span<const uint8_t> bytes, sections(index));
    std::string label = absl::StrCat(choice_.jit ? "PTX " : "cubin ", choice_.target, " (bundle section ", index, ")");
    ASSIGN_OR_RETURN(std::unique_ptr<cuda::Module> module,
                     cuda::Module::Load(*ctx_, bytes, choice_.jit ? cuda::ImageKind::kPtx : cuda::ImageKind::kCubin,
                                        std::move(label)));
    modules_.push_back(std::move(module));
  }
  functions_.clear();
  for (const Kernel& k : m_->kernels()) {
    absl::StatusOr<cuda::Function> f = absl::NotFoundError("");
    for (const auto& module : modules_) {
      f = module->GetFunction(k.name());
      if (f.ok() || !absl::IsNotFound(f.status())) break;
    }
    if (!f.ok()) {
      if (absl::IsNotFound(f.status()))
        return absl::NotFoundError(absl::StrCat("kernel '", k.name(), "' is in none of the bundle's ",
                                                choice_.target, " sections"));
      return f.status();
    }
    // IREE's habit: check what the launch needs against what the loaded
    // kernel allows before the first launch, naming the kernel.
    ASSIGN_OR_RETURN(int max_threads, f->GetAttribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
    const int64_t threads = int64_t{k.block_x()} * k.block_y() * k.block_z();
    if (threads > max_threads)
      return absl::FailedPreconditionError(
          absl::StrCat("kernel '", k.name(), "' is launched with ", threads, " threads a block, but as loaded on ",
                       dev.name, " it allows at most ", max_threads, " (registers)"));
    ASSIGN_OR_RETURN(int static_shared, f->GetAttribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES));
    if (k.shared_bytes() > 0 && static_cast<int64_t>(k.shared_bytes()) + static_shared > kDefaultSharedLimit)
      RETURN_IF_ERROR(f->SetMaxDynamicSharedMemory(static_cast<int>(k.shared_bytes()), dev.max_shared_per_block_optin));
    // Finish lazy loading now, not inside the first request or a capture.
    RETURN_IF_ERROR(f->Load());
    functions_.push_back(*f);
  }
  ASSIGN_OR_RETURN(step_module_,
                   cuda::Module::Load(*ctx_, StepKernelsPtx(), cuda::ImageKind::kPtx, "kiln's own PTX"));
  ASSIGN_OR_RETURN(advance_, step_module_->GetFunction("kiln_advance_step"));
  RETURN_IF_ERROR(advance_.Load());
  ASSIGN_OR_RETURN(hold_, step_module_->GetFunction("kiln_hold"));
  RETURN_IF_ERROR(hold_.Load());
  return absl::OkStatus();
}

absl::Status Executor::PreparePlans() {
  auto prepare = [&](const kiln::runtime::Plan& p, const std::string& name) {
    auto plan = std::make_unique<Plan>();
    plan->name = name;
    plan->max_tokens = p.max_tokens();
    for (int i = 0; i < p.launches_size(); ++i) {
      const Launch& l = p.launches(i);
      const Kernel& k = m_->kernels(l.kernel());
      PreparedLaunch pl;
      pl.launch = &l;
      pl.function = &functions_[l.kernel()];
      pl.config.block[0] = k.block_x();
      pl.config.block[1] = k.block_y();
      pl.config.block[2] = k.block_z();
      pl.config.shared_bytes = k.shared_bytes();
      pl.config.programmatic = k.programmatic_launch();  // the stream drops it below sm_90
      pl.what = absl::StrCat(name, " launch ", i, " (kernel '", k.name(), "')");
      plan->launches.push_back(std::move(pl));
    }
    return plan;
  };
  load_ = prepare(m_->load(), "load");
  prefill_ = prepare(m_->prefill(), "prefill");
  decode_ = prepare(m_->decode(), "decode");
  return absl::OkStatus();
}

absl::Status Executor::AllocatePhase(bool load_phase) {
  for (int i = 0; i < m_->buffers_size(); ++i) {
    if (memory_.during_load[i] != load_phase) continue;
    const Buffer& b = m_->buffers(i);
    absl::StatusOr<DeviceBuffer> buf = DeviceBuffer::Allocate(*ctx_, memory_.buffer_bytes[i]);
    if (!buf.ok()) return WithContext(buf.status(), absl::StrCat("allocating buffer '", b.name(), "'"));
    const uint64_t align = std::max<uint32_t>(b.alignment(), 1);
    buffer_ptrs_[i] = (buf->ptr() + align - 1) / align * align;
    // Zero everything kiln does not upload: a kernel that reads a KV slot or
    // scratch it has not written yet then sees 0, never stale NaNs.
    if (b.kind() != Buffer::GGUF_TENSOR) RETURN_IF_ERROR(stream_->Memset(buf->ptr(), 0, buf->size()));
    buffers_[i] = std::move(*buf);
  }
  return absl::OkStatus();
}

absl::Status Executor::UploadTensors(const gguf::GgufFile& file) {
  // The zeroing memsets of the load phase run on stream_; the upload and the
  // load plan must come after them.
  RETURN_IF_ERROR(stream_->Synchronize());
  return UploadWeights(*ctx_, *m_, file, buffer_ptrs_, options_.show_progress && isatty(2), options_.log);
}

absl::Status Executor::LaunchOne(const PreparedLaunch& pl, const ExprEnv& env, const cuda::Stream& stream) {
  const Launch& l = *pl.launch;
  cuda::LaunchConfig config = pl.config;
  const Expr* grid[3] = {&l.grid_x(), &l.grid_y(), &l.grid_z()};
  for (int d = 0; d < 3; ++d) {
    ASSIGN_OR_RETURN(int64_t g, Evaluate(*grid[d], env));
    config.grid[d] = static_cast<uint32_t>(g);
  }
  // One 8-byte slot per argument; params[i] points at slot i (spec §4).
  const int n = l.args_size();
  uint64_t slots[64];
  void* params[64];
  RET_CHECK(n <= 64);
  for (int i = 0; i < n; ++i) {
    const Arg& a = l.args(i);
    slots[i] = 0;
    if (a.has_buffer()) {
      const CUdeviceptr base = BufferPtr(a.buffer().buffer());
      RET_CHECK(base != 0);  // validated: no freed GGUF_TENSOR buffer after load
      ASSIGN_OR_RETURN(int64_t offset, Evaluate(a.buffer().offset(), env));
      const CUdeviceptr p = base + static_cast<CUdeviceptr>(offset);
      std::memcpy(&slots[i], &p, sizeof(p));
    } else if (a.has_i32()) {
      ASSIGN_OR_RETURN(int64_t v, Evaluate(a.i32(), env));
      StoreI32(reinterpret_cast<uint8_t*>(&slots[i]), v);
    } else {
      const float f = a.f32();
      std::memcpy(&slots[i], &f, sizeof(f));
    }
    params[i] = &slots[i];
  }
  ++counters_.launches;
  return stream.Launch(*pl.function, config, params);
}

absl::Status Executor::RunPlan(const Plan& plan, const ExprEnv& env, const LaunchSwap* swap) {
  // A launch beside the next (Launch.beside_next) runs on the side stream,
  // forked off everything queued on the main stream so far; the main stream
  // joins it right after its next launch. Every exit joins a fork still
  // open, so no side work outlives the plan (a capture would end unjoined,
  // and Wait covers the main stream only): also on an error, and for a
  // beside_next on the last launch or on the next of a pair, which the
  // validator rejects and which then simply run in turn.
  bool open = false;  // a side launch the main stream has not joined yet
  auto join = [&]() -> absl::Status {
    if (!open) return absl::OkStatus();
    open = false;
    RETURN_IF_ERROR(join_->Record(*side_stream_));
    return stream_->WaitEvent(*join_);
  };
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    const PreparedLaunch& pl = plan.launches[i];
    const bool beside = pl.launch->beside_next() && !open;
    absl::Status s;
    if (beside) {
      s = fork_->Record(*stream_);
      if (s.ok()) s = side_stream_->WaitEvent(*fork_);
      open = s.ok();
    }
    const cuda::Stream& stream = beside ? *side_stream_ : *stream_;
    if (s.ok()) {
      absl::StatusOr<bool> swapped = swap != nullptr ? (*swap)(static_cast<int>(i), stream) : false;
      s = !swapped.ok() ? swapped.status() : *swapped ? absl::OkStatus() : LaunchOne(pl, env, stream);
    }
    if (s.ok() && !beside) s = join();
    if (!s.ok()) {
      (void)join();  // best effort; the launch's error is the one to report
      return WithContext(s, absl::StrFormat("%s at T=%d P=%d", pl.what, env.t, env.p));
    }
  }
  return join();
}

absl::Status Executor::Wait(absl::string_view what) {
  ++counters_.syncs;
  RETURN_IF_ERROR(WithContext(done_->Record(*stream_), what));
  absl::Status s = done_->Synchronize();
  if (!s.ok()) {
    device_position_ = -1;  // whatever ran, the device's step state is unknown now
    device_token_ = -1;
  }
  return WithContext(s, what);
}

absl::Status Executor::ToDevice(CUdeviceptr dst, const void* src, uint64_t bytes) {
  ++counters_.copies;
  return stream_->CopyToDevice(dst, src, bytes);
}

absl::Status Executor::ToHost(void* dst, CUdeviceptr src, uint64_t bytes) {
  ++counters_.copies;
  return stream_->CopyToHost(dst, src, bytes);
}

int64_t Executor::LogitsRows(int64_t t) const { return logits_per_token_ ? t : 1; }

absl::Status Executor::Warm() {
  auto t0 = std::chrono::steady_clock::now();
  const Manifest& m = *m_;
  // logits_buffer holds one row (the last token's) or one per token of the
  // largest step; its size says which (docs/runtime.md).
  {
    ASSIGN_OR_RETURN(int64_t bytes, Evaluate(m.buffers(m.logits_buffer()).bytes(), BufferEnv(m, context_)));
    logits_per_token_ = m.prefill().max_tokens() > 1 && bytes >= m.prefill().max_tokens() * n_vocab_ * 4;
  }
  // Every prefill size a request can hit is a new grid; run the largest and
  // each power of two below it, so no kernel is first run by a request.
  // (Never past the context: the KV cache holds only C positions.)
  const int64_t largest = std::min(prefill_->max_tokens, context_);
  std::vector<int64_t> sizes = {largest};
  for (int64_t t = int64_t{1} << 62; t >= 1; t >>= 1)
    if (t < largest) sizes.push_back(t);
  for (int64_t t : sizes) {
    std::vector<int32_t> zeros(t, 0);
    position_ = 0;
    RETURN_IF_ERROR(WithContext(PrefillChunk(zeros), absl::StrCat("warming prefill at T=", t)));
    RETURN_IF_ERROR(Wait(absl::StrCat("warming prefill at T=", t)));
  }
  // Decode once eagerly (so a faulting kernel is reported as a launch, not a
  // graph), then capture it and replay the graph once.
  const IoLayout io = MakeIoLayout(m.prefill().max_tokens(), n_vocab_);
  StoreI32(io_.data() + io.step_token, 0);
  StoreI32(io_.data() + io.step_position, 0);
  RETURN_IF_ERROR(ToDevice(BufferPtr(m.tokens_buffer()), io_.data() + io.step_token, 4));
  RETURN_IF_ERROR(ToDevice(BufferPtr(m.position_buffer()), io_.data() + io.step_position, 4));
  RETURN_IF_ERROR(RunPlan(*decode_, ExprEnv{1, 0, context_}));
  RETURN_IF_ERROR(Wait("warming decode"));
  ASSIGN_OR_RETURN(decode_graph_, CaptureDecode());
  RETURN_IF_ERROR(decode_graph_->Launch(*stream_));
  RETURN_IF_ERROR(Wait("warming the decode graph"));
  position_ = 0;
  device_position_ = -1;
  device_token_ = -1;
  if (options_.log)
    options_.log(absl::StrFormat("warmed prefill (T = %s) and the decode graph (%d kernels) in %.2f s",
                                 absl::StrJoin(sizes, ", "), decode_->launches.size() + 1, SecondsSince(t0)));
  return absl::OkStatus();
}

absl::Status Executor::SwapDecodeLaunches(const LaunchSwap& swap) {
  // The compiled graph stays: restoring it cannot fail.
  swapped_graph_.reset();
  if (!swap) return absl::OkStatus();
  ASSIGN_OR_RETURN(swapped_graph_, CaptureDecode(&swap));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<cuda::Graph>> Executor::CaptureDecode(const LaunchSwap* swap) {
  const Manifest& m = *m_;
  CUdeviceptr tokens = BufferPtr(m.tokens_buffer()), position = BufferPtr(m.position_buffer()),
              sampled = BufferPtr(m.sampled_buffer());
  CUdeviceptr ring = io_device_ + MakeIoLayout(m.prefill().max_tokens(), n_vocab_).ring;
  ASSIGN_OR_RETURN(std::unique_ptr<cuda::Graph> graph, stream_->Capture([&]() -> absl::Status {
    // P is 0 here and unused: CheckDecodeGraphable made sure no Expr reads it.
    RETURN_IF_ERROR(RunPlan(*decode_, ExprEnv{1, 0, context_}, swap));
    void* params[4] = {&tokens, &position, &sampled, &ring};
    cuda::LaunchConfig one;  // 1 block of 1 thread, no PDL: runs after decode completes
    return stream_->Launch(advance_, one, params);
  }));
  RETURN_IF_ERROR(WithContext(graph->Instantiate(*stream_), "instantiating the decode graph"));
  return graph;
}

absl::Status Executor::WritePrefillInputs(absl::Span<const int32_t> tokens) {
  const Manifest& m = *m_;
  const IoLayout io = MakeIoLayout(m.prefill().max_tokens(), n_vocab_);
  RET_CHECK(!tokens.empty() && static_cast<int64_t>(tokens.size()) <= prefill_->max_tokens);
  std::memcpy(io_.data() + io.tokens, tokens.data(), tokens.size() * 4);
  StoreI32(io_.data() + io.position, position_);
  RETURN_IF_ERROR(ToDevice(BufferPtr(m.tokens_buffer()), io_.data() + io.tokens, tokens.size() * 4));
  return ToDevice(BufferPtr(m.position_buffer()), io_.data() + io.position, 4);
}

absl::Status Executor::PrefillChunk(absl::Span<const int32_t> tokens) {
  RETURN_IF_ERROR(WritePrefillInputs(tokens));
  return RunPlan(*prefill_, ExprEnv{static_cast<int64_t>(tokens.size()), position_, context_});
}

absl::Status Executor::ReadLogits(int64_t first_row, int64_t rows, std::vector<float>* out) {
  const size_t old = out->size();
  out->resize(old + static_cast<size_t>(rows * n_vocab_));
  // Into pageable memory: the driver stages it and returns when it is done
  // (rows of every token are for --dump-logits, not the hot path).
  const uint64_t row_bytes = static_cast<uint64_t>(n_vocab_) * 4;
  RETURN_IF_ERROR(
      ToHost(out->data() + old, BufferPtr(m_->logits_buffer()) + first_row * row_bytes, rows * row_bytes));
  return absl::OkStatus();
}

absl::Status Executor::CheckPrefillTokens(absl::Span<const int32_t> tokens) const {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) return absl::InvalidArgumentError("prefill of no tokens");
  if (position_ + n > context_)
    return absl::ResourceExhaustedError(absl::StrCat(n, " tokens at position ", position_, " exceed the context of ",
                                                     context_, " tokens; rerun with a larger --ctx-size"));
  for (int32_t t : tokens)
    if (t < 0 || t >= n_vocab_)
      return absl::InvalidArgumentError(absl::StrCat("token id ", t, " is outside the vocabulary of ", n_vocab_));
  return absl::OkStatus();
}

absl::StatusOr<StepResult> Executor::Prefill(absl::Span<const int32_t> tokens, Logits logits) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  RETURN_IF_ERROR(CheckPrefillTokens(tokens));
  if (logits == Logits::kAll && !logits_per_token_ && n > 1) {
    // The prefill plan keeps only its last row: feed token by token instead.
    StepResult all;
    for (int32_t t : tokens) {
      ASSIGN_OR_RETURN(StepResult r, Decode(t, Logits::kLast));
      all.logits.insert(all.logits.end(), r.logits.begin(), r.logits.end());
      all.rows += 1;
      all.argmax = r.argmax;
    }
    return all;
  }
  const Manifest& m = *m_;
  const IoLayout io = MakeIoLayout(m.prefill().max_tokens(), n_vocab_);
  StepResult result;
  const int64_t start = position_;
  for (int64_t off = 0; off < n; off += prefill_->max_tokens) {
    const int64_t len = std::min(prefill_->max_tokens, n - off);
    const bool last = off + len == n;
    const std::string what = absl::StrFormat("prefill of tokens [%d, %d) at position %d", start + off,
                                             start + off + len, position_);
    device_position_ = -1;  // position_buffer now holds the chunk's start, tokens[0] its first token
    device_token_ = -1;
    RETURN_IF_ERROR(WithContext(PrefillChunk(tokens.subspan(off, len)), what));
    if (last) {
      RETURN_IF_ERROR(ToHost(io_.data() + io.argmax, BufferPtr(m.sampled_buffer()), 4));
      if (logits == Logits::kLast) {
        const int64_t row = LogitsRows(len) == len ? len - 1 : 0;
        RETURN_IF_ERROR(
            ToHost(io_.data() + io.logits, BufferPtr(m.logits_buffer()) + row * n_vocab_ * 4, n_vocab_ * 4));
      }
    }
    RETURN_IF_ERROR(Wait(what));
    if (logits == Logits::kAll) {
      RETURN_IF_ERROR(ReadLogits(0, len, &result.logits));
      RETURN_IF_ERROR(Wait(what));
      result.rows += len;
    }
    position_ += len;
  }
  result.argmax = LoadI32(io_.data() + io.argmax);
  if (logits == Logits::kLast) {
    const float* row = reinterpret_cast<const float*>(io_.data() + io.logits);
    result.logits.assign(row, row + n_vocab_);
    result.rows = 1;
  }
  return result;
}

absl::Status Executor::WriteDecodeInputs(int32_t token) {
  if (position_ >= context_)
    return absl::ResourceExhaustedError(
        absl::StrCat("the context of ", context_, " tokens is full; rerun with a larger --ctx-size"));
  if (token < 0 || token >= n_vocab_)
    return absl::InvalidArgumentError(absl::StrCat("token id ", token, " is outside the vocabulary of ", n_vocab_));
  const Manifest& m = *m_;
  const IoLayout io = MakeIoLayout(m.prefill().max_tokens(), n_vocab_);
  // Greedy steady state: the previous graph launch already advanced the
  // position and copied its argmax into tokens[0], so nothing is written.
  if (device_position_ != position_) {
    StoreI32(io_.data() + io.step_position, position_);
    RETURN_IF_ERROR(ToDevice(BufferPtr(m.position_buffer()), io_.data() + io.step_position, 4));
  }
  if (device_token_ != token) {
    StoreI32(io_.data() + io.step_token, token);
    RETURN_IF_ERROR(ToDevice(BufferPtr(m.tokens_buffer()), io_.data() + io.step_token, 4));
  }
  device_position_ = -1;
  device_token_ = -1;
  return absl::OkStatus();
}

absl::StatusOr<StepResult> Executor::Decode(int32_t token, Logits logits) {
  RETURN_IF_ERROR(WriteDecodeInputs(token));
  const Manifest& m = *m_;
  const IoLayout io = MakeIoLayout(m.prefill().max_tokens(), n_vocab_);
  const std::string what = absl::StrCat("decode at position ", position_);
  ++counters_.launches;
  const cuda::Graph& graph = DecodeGraph();
  StoreI32(RingSlot(position_), -1);  // the step's own write must be what RingArgmax finds
  RETURN_IF_ERROR(WithContext(graph.Launch(*stream_), what));
  if (logits != Logits::kNone)
    RETURN_IF_ERROR(ToHost(io_.data() + io.logits, BufferPtr(m.logits_buffer()), n_vocab_ * 4));
  RETURN_IF_ERROR(Wait(what));
  StepResult result;
  ASSIGN_OR_RETURN(result.argmax, RingArgmax(position_));
  if (logits != Logits::kNone) {
    const float* row = reinterpret_cast<const float*>(io_.data() + io.logits);
    result.logits.assign(row, row + n_vocab_);
    result.rows = 1;
  }
  position_ += 1;
  device_position_ = position_;
  device_token_ = result.argmax;
  return result;
}

uint8_t* Executor::RingSlot(int64_t position) const {
  return io_.data() + MakeIoLayout(m_->prefill().max_tokens(), n_vocab_).ring + 8 * (position & 1);
}

absl::StatusOr<int32_t> Executor::RingArgmax(int64_t position) const {
  const uint8_t* slot = RingSlot(position);
  const int32_t at = LoadI32(slot);
  if (at != position)
    return absl::InternalError(absl::StrCat("the decode step at position ", position, " left its argmax under position ",
                                            at));
  return LoadI32(slot + 4);
}

absl::StatusOr<int64_t> Executor::DecodeGreedy(int32_t token, int64_t max_steps,
                                               const std::function<bool(int32_t)>& on_token) {
  if (max_steps < 1) return absl::InvalidArgumentError(absl::StrCat("greedy decoding of ", max_steps, " steps"));
  RETURN_IF_ERROR(WriteDecodeInputs(token));
  const cuda::Graph& graph = DecodeGraph();
  const int64_t start = position_;
  // Step k (position start + k) leaves its argmax in ring slot (start + k)
  // mod 2 (kiln_advance_step) and records step_done_[k mod 2]; the host
  // writes nothing to the device between steps, and step k + 2, which reuses
  // the slot, is queued only once the host has read it. The slot's position
  // is cleared first, so a step that never wrote it cannot pass for one
  // that did.
  auto queue = [&](int64_t k) -> absl::Status {
    const std::string what = absl::StrCat("decode at position ", start + k);
    StoreI32(RingSlot(start + k), -1);
    ++counters_.launches;
    RETURN_IF_ERROR(WithContext(graph.Launch(*stream_), what));
    return WithContext(step_done_[k % kStepsAhead]->Record(*stream_), what);
  };
  auto wait = [&](int64_t k) -> absl::Status {
    ++counters_.syncs;
    return WithContext(step_done_[k % kStepsAhead]->Synchronize(), absl::StrCat("decode at position ", start + k));
  };
  int64_t queued = 0, kept = 0;
  int32_t last = token;
  absl::Status status = [&]() -> absl::Status {
    RETURN_IF_ERROR(queue(0));
    queued = 1;
    while (true) {
      // The next step goes in before the host waits for this one, so the
      // GPU starts it the moment this one ends.
      if (queued == kept + 1 && queued < max_steps && start + queued < context_) {
        RETURN_IF_ERROR(queue(queued));
        ++queued;
      }
      RETURN_IF_ERROR(wait(kept));
      ASSIGN_OR_RETURN(last, RingArgmax(start + kept));
      ++kept;
      position_ = start + kept;
      if (!on_token(last) || queued == kept) return absl::OkStatus();
    }
  }();
  // A step queued past the last one kept has run (or is running) on the
  // device: wait for it and forget it (after an error too, so nothing still
  // writes the ring when the caller goes on or the executor goes away). Its
  // KV row lies at position() and is overwritten by whatever is fed next;
  // the device's token and position are then unknown to the host.
  const bool spare = queued > kept;
  if (spare) {
    absl::Status waited = wait(queued - 1);
    if (status.ok()) status = waited;
  }
  device_position_ = status.ok() && !spare ? position_ : -1;
  device_token_ = status.ok() && !spare ? last : -1;
  if (!status.ok()) return status;
  return kept;
}

absl::Status Executor::RunPlanTimed(const Plan& plan, const ExprEnv& env) {
  const size_t n = plan.launches.size();
  while (timing_.size() < n + 1) {
    ASSIGN_OR_RETURN(std::unique_ptr<cuda::Event> e, cuda::Event::Create(*ctx_, CU_EVENT_DEFAULT));
    timing_.push_back(std::move(e));
  }
  // Hold the GPU while the host queues every event and launch, so a span is
  // the kernel's own time and never includes the host's launch latency.
  uint64_t ns = std::min<uint64_t>(kHoldNsPerLaunch * (n + 1), kMaxHoldNs);
  void* params[1] = {&ns};
  ++counters_.launches;
  RETURN_IF_ERROR(stream_->Launch(hold_, cuda::LaunchConfig{}, params));
  for (size_t i = 0; i < n; ++i) {
    RETURN_IF_ERROR(timing_[i]->Record(*stream_));
    absl::Status s = LaunchOne(plan.launches[i], env, *stream_);
    if (!s.ok()) return WithContext(s, absl::StrFormat("%s at T=%d P=%d", plan.launches[i].what, env.t, env.p));
  }
  return timing_[n]->Record(*stream_);
}

absl::StatusOr<ProfiledStep> Executor::FinishProfiled(const Plan& plan, int64_t tokens, const std::string& what) {
  const IoLayout io = MakeIoLayout(m_->prefill().max_tokens(), n_vocab_);
  RETURN_IF_ERROR(ToHost(io_.data() + io.argmax, BufferPtr(m_->sampled_buffer()), 4));
  RETURN_IF_ERROR(Wait(what));
  ProfiledStep out;
  out.result.argmax = LoadI32(io_.data() + io.argmax);
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    ASSIGN_OR_RETURN(float ms, cuda::Event::ElapsedMs(*timing_[i], *timing_[i + 1]));
    out.launch_us.push_back(1e3 * static_cast<double>(ms));
  }
  position_ += tokens;
  return out;
}

absl::StatusOr<ProfiledStep> Executor::ProfileDecode(int32_t token) {
  RETURN_IF_ERROR(WriteDecodeInputs(token));
  const std::string what = absl::StrCat("profiled decode at position ", position_);
  // P is unused by decode (CheckDecodeGraphable), as in the graph.
  RETURN_IF_ERROR(WithContext(RunPlanTimed(*decode_, ExprEnv{1, 0, context_}), what));
  return FinishProfiled(*decode_, 1, what);
}

absl::StatusOr<ProfiledStep> Executor::ProfilePrefill(absl::Span<const int32_t> tokens) {
  RETURN_IF_ERROR(CheckPrefillTokens(tokens));
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n > prefill_->max_tokens)
    return absl::InvalidArgumentError(absl::StrCat("a profiled prefill chunk of ", n, " tokens exceeds the plan's ",
                                                   prefill_->max_tokens));
  const std::string what = absl::StrFormat("profiled prefill of %d tokens at position %d", n, position_);
  device_position_ = -1;
  device_token_ = -1;
  RETURN_IF_ERROR(WithContext(WritePrefillInputs(tokens), what));
  RETURN_IF_ERROR(WithContext(RunPlanTimed(*prefill_, ExprEnv{n, position_, context_}), what));
  return FinishProfiled(*prefill_, n, what);
}

absl::Status Executor::Rewind(int64_t position) {
  if (position < 0 || position > position_)
    return absl::InvalidArgumentError(
        absl::StrCat("cannot rewind to position ", position, ": the sequence has ", position_, " tokens"));
  position_ = position;
  return absl::OkStatus();
}

}  // namespace kiln::runtime
