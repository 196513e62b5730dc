// Runs a validated bundle on the GPU: binds it to the GGUF, loads the
// kernels, uploads and packs the weights, warms every plan, captures decode
// into one CUDA graph, and then steps prefill (eager) and decode (one graph
// launch per token). docs/runtime.md describes the whole sequence.
#ifndef KILN_RUNTIME_EXECUTOR_H_
#define KILN_RUNTIME_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "models/gguf/gguf_file.h"
#include "runtime/bundle/expr.h"
#include "runtime/cuda/driver.h"
#include "runtime/manifest.pb.h"
#include "runtime/preflight.h"

namespace kiln::runtime {

struct ExecutorOptions {
  int device = 0;
  int64_t context = 0;         // C; 0 = the model's context_length
  bool allow_ptx_jit = false;  // load PTX when no cubin matches the GPU
  bool show_progress = true;   // upload progress line (drawn only on a terminal)
  // Receives one-line status reports (GPU, kernels, memory, load and warm-up
  // times); null: silent.
  std::function<void(absl::string_view)> log;
};

// Which logits a step copies back to the host.
enum class Logits {
  kNone,  // only the device's argmax of the last row (greedy decoding)
  kLast,  // the last row
  kAll,   // every row fed (prefill: one row per token)
};

struct StepResult {
  int32_t argmax = 0;         // the device's argmax of the last row (sampled_buffer)
  int64_t rows = 0;           // rows in `logits`
  std::vector<float> logits;  // rows x n_vocab, row-major
};

// What requests cost the host since Executor::Create (or ResetCounters):
// `kiln bench` divides them by the tokens fed. A greedy decode step is one
// graph launch and one sync: its argmax arrives in mapped pinned memory,
// no copy.
struct ExecutorCounters {
  int64_t launches = 0;  // kernel and graph launches (cuLaunchKernelEx, cuGraphLaunch)
  int64_t syncs = 0;     // waits of the host for the GPU
  int64_t copies = 0;    // host <-> device copies
};

// A step run eagerly with a CUDA timing event between launches (profiles).
struct ProfiledStep {
  StepResult result;              // the argmax only
  std::vector<double> launch_us;  // per launch of the plan, in plan order
};

// The bundle's kernel images: section i's bytes (bundle/bundle_reader.h
// Bundle::SectionBytes in kiln, a byte vector in tests).
using SectionBytesFn = std::function<absl::StatusOr<absl::Span<const uint8_t>>(int index)>;

class Executor {
 public:
  // `m` must have passed ValidateManifest; `m` and `file` must outlive the
  // executor. Does everything up to the first request: checks the binding,
  // picks the kernel image, checks memory for the context, uploads and packs
  // the weights, warms every plan and captures the decode graph.
  static absl::StatusOr<std::unique_ptr<Executor>> Create(const Manifest& m, const SectionBytesFn& sections,
                                                          const gguf::GgufFile& file,
                                                          const ExecutorOptions& options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Feeds `tokens` at positions [position(), position() + n), in chunks of
  // the prefill plan's max_tokens. kLast returns the last token's row, kAll
  // every token's row.
  absl::StatusOr<StepResult> Prefill(absl::Span<const int32_t> tokens, Logits logits);
  // Feeds one token at position() with one launch of the decode graph.
  // Writes nothing from the host when `token` is the previous step's device
  // argmax (greedy decoding); copies nothing back unless `logits` (the
  // argmax arrives in mapped pinned memory).
  absl::StatusOr<StepResult> Decode(int32_t token, Logits logits);
  // Greedy decoding with the next step queued before the host waits for
  // the current one, so the GPU never idles on the host between tokens:
  // feeds `token` at position(), then each step's device argmax to the next,
  // and calls `on_token` with each step's argmax in order, until it returns
  // false, `max_steps` steps have run or the context is full. A step
  // already queued past the one that stopped is waited for and forgotten:
  // position() counts only the steps whose argmax `on_token` saw. Returns
  // that count. Each step is one graph launch and one wait. `on_token` must
  // not call into the executor.
  absl::StatusOr<int64_t> DecodeGreedy(int32_t token, int64_t max_steps,
                                       const std::function<bool(int32_t)>& on_token);
  // Forgets positions >= `position` (their KV entries are overwritten by
  // whatever is fed next). Rewind(0) starts a new sequence.
  absl::Status Rewind(int64_t position);
  void Reset() { (void)Rewind(0); }

  // For `kiln profile` and `kiln bench`; slower than the calls above. Like
  // Decode(token, kNone), but runs the decode plan eagerly (not the graph)
  // with a timing event before each launch and after the last. The GPU is
  // held until every launch is queued, so a launch's span is its kernel's
  // time (with the gap to the next), never the host's launch latency.
  absl::StatusOr<ProfiledStep> ProfileDecode(int32_t token);
  // Feeds `tokens` (at most the prefill plan's max_tokens) as one prefill
  // chunk at position(), timed the same way.
  absl::StatusOr<ProfiledStep> ProfilePrefill(absl::Span<const int32_t> tokens);

  // For `kiln profile --attribution`: captures a second decode graph,
  // asking `swap` about each launch of the decode plan in order (its
  // index). Where swap returns true it has enqueued work of its own on
  // `stream` in that launch's place (the side stream for a launch beside
  // the next), and the plan's kernel is left out;
  // what it enqueues (buffers, modules) must outlive the swapped graph.
  // Until the next call, Decode replays that graph: the timing is real, the
  // outputs are not (what a left-out kernel writes keeps its last value).
  // An empty `swap`, or a failed capture, leaves Decode on the graph the
  // bundle plans, which is kept throughout (restoring cannot fail).
  using LaunchSwap = std::function<absl::StatusOr<bool>(int launch, const cuda::Stream& stream)>;
  absl::Status SwapDecodeLaunches(const LaunchSwap& swap);

  const ExecutorCounters& counters() const { return counters_; }
  void ResetCounters() { counters_ = {}; }

  int64_t position() const { return position_; }
  int64_t context() const { return context_; }
  int64_t n_vocab() const { return n_vocab_; }
  const cuda::DeviceInfo& device() const { return ctx_->device(); }
  const SectionChoice& sections() const { return choice_; }
  const MemoryPlan& memory() const { return memory_; }

 private:
  struct PreparedLaunch;
  struct Plan;
  Executor() = default;

  absl::Status LoadKernels(const SectionBytesFn& sections);
  absl::Status AllocatePhase(bool load_phase);
  absl::Status UploadTensors(const gguf::GgufFile& file);
  absl::Status PreparePlans();
  // `swap` (decode captures only) as SwapDecodeLaunches says.
  absl::Status RunPlan(const Plan& plan, const ExprEnv& env, const LaunchSwap* swap = nullptr);
  // Queues kiln_hold, then the plan with timing_[i] recorded before launch i
  // and timing_[n] after the last; FinishProfiled reads the spans. Every
  // launch runs on the main stream, also one beside the next (Launch.beside_next),
  // so each span is one kernel's.
  absl::Status RunPlanTimed(const Plan& plan, const ExprEnv& env);
  absl::StatusOr<ProfiledStep> FinishProfiled(const Plan& plan, int64_t tokens, const std::string& what);
  absl::Status LaunchOne(const PreparedLaunch& launch, const ExprEnv& env, const cuda::Stream& stream);
  absl::Status Warm();
  // The decode plan and the step advance as an instantiated graph.
  absl::StatusOr<std::unique_ptr<cuda::Graph>> CaptureDecode(const LaunchSwap* swap = nullptr);
  // Writes tokens and the position, runs the prefill plan for one chunk.
  absl::Status PrefillChunk(absl::Span<const int32_t> tokens);
  absl::Status WritePrefillInputs(absl::Span<const int32_t> tokens);
  // Empty, within the context, every id in the vocabulary.
  absl::Status CheckPrefillTokens(absl::Span<const int32_t> tokens) const;
  // Checks a decode step's token and position and writes what the device
  // does not hold yet (nothing in the greedy steady state).
  absl::Status WriteDecodeInputs(int32_t token);
  // Counted host <-> device copies on stream_.
  absl::Status ToDevice(CUdeviceptr dst, const void* src, uint64_t bytes);
  absl::Status ToHost(void* dst, CUdeviceptr src, uint64_t bytes);
  // Copies `rows` logits rows starting at `first_row` to the host.
  absl::Status ReadLogits(int64_t first_row, int64_t rows, std::vector<float>* out);
  absl::Status Wait(absl::string_view what);
  // The graph a decode step replays: SwapDecodeLaunches' while set, else
  // the bundle's.
  const cuda::Graph& DecodeGraph() const { return swapped_graph_ != nullptr ? *swapped_graph_ : *decode_graph_; }
  // The ring slot of io_ that kiln_advance_step writes for the decode step
  // at `position`: {i32 position, i32 argmax}.
  uint8_t* RingSlot(int64_t position) const;
  // The argmax kiln_advance_step left there, once that step has been waited
  // for; Internal if the slot holds another position (the host clears it to
  // -1 before it queues the step).
  absl::StatusOr<int32_t> RingArgmax(int64_t position) const;
  // Rows the prefill plan leaves in logits_buffer for a step of T tokens:
  // T when the buffer holds T rows, else 1 (the last row, at row 0).
  int64_t LogitsRows(int64_t t) const;
  CUdeviceptr BufferPtr(uint32_t index) const { return buffer_ptrs_[index]; }

  const Manifest* m_ = nullptr;
  ExecutorOptions options_;
  int64_t context_ = 0;
  int64_t n_vocab_ = 0;
  SectionChoice choice_;
  MemoryPlan memory_;

  // Destroyed in reverse order: the graph before the buffers and modules it
  // uses, everything before the context.
  std::unique_ptr<cuda::Context> ctx_;
  std::vector<std::unique_ptr<cuda::Module>> modules_;
  std::unique_ptr<cuda::Module> step_module_;  // kiln's own kernels (step_kernels.h)
  std::vector<cuda::Function> functions_;      // per Manifest.kernels
  cuda::Function advance_;
  cuda::Function hold_;                        // kiln_hold, before a profiled plan
  std::unique_ptr<cuda::Stream> stream_;
  std::unique_ptr<cuda::Event> done_;
  // DecodeGreedy: one step runs while the host waits for the one before.
  static constexpr int kStepsAhead = 2;
  std::unique_ptr<cuda::Event> step_done_[kStepsAhead];  // step k's completion in slot k mod 2
  // Launches beside the next (Launch.beside_next) run on side_stream_,
  // after fork_ (recorded on stream_); stream_ waits for join_.
  std::unique_ptr<cuda::Stream> side_stream_;
  std::unique_ptr<cuda::Event> fork_, join_;
  std::vector<cuda::DeviceBuffer> buffers_;  // per Manifest.buffers
  std::vector<CUdeviceptr> buffer_ptrs_;     // aligned base of each buffer (0 when not allocated)
  cuda::HostBuffer io_;                      // pinned, mapped: tokens, position, argmax, the decode ring, one logits row
  CUdeviceptr io_device_ = 0;                // io_ as the device writes it
  std::unique_ptr<Plan> load_, prefill_, decode_;
  std::unique_ptr<cuda::Graph> decode_graph_;
  std::unique_ptr<cuda::Graph> swapped_graph_;  // SwapDecodeLaunches': replayed instead while set
  std::vector<std::unique_ptr<cuda::Event>> timing_;  // profiles: one per launch + 1, made on first use
  ExecutorCounters counters_;

  // Host mirror of the device's step state (see Decode).
  int64_t position_ = 0;
  int64_t device_position_ = -1;  // what position_buffer holds; -1: unknown
  int64_t device_token_ = -1;     // what tokens[0] holds; -1: unknown
  bool logits_per_token_ = false;  // prefill leaves one logits row per token
};

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_EXECUTOR_H_
