#include "runtime/preflight.h"

#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runtime/bundle/expr.h"
#include "runtime/bundle/model_keys.h"
#include "runtime/bundle/validator.h"
#include "support/status_macros.h"

namespace kiln::runtime {
namespace {

std::string TypeName(uint32_t id) {
  std::optional<gguf::GgmlTypeInfo> info = gguf::LookupGgmlType(id);
  return info ? std::string(info->name) : absl::StrCat("type ", id);
}

std::vector<int64_t> TrimTrailingOnes(std::vector<int64_t> dims) {
  while (dims.size() > 1 && dims.back() == 1) dims.pop_back();
  return dims;
}

std::string Shape(const std::vector<int64_t>& dims) { return absl::StrCat("[", absl::StrJoin(dims, ", "), "]"); }

// "sm_90" -> 90, "sm_90a" -> 90 with *arch_specific; nullopt if malformed.
std::optional<int> ParseTarget(const std::string& target, bool* arch_specific) {
  if (target.rfind("sm_", 0) != 0) return std::nullopt;
  std::string digits = target.substr(3);
  *arch_specific = !digits.empty() && digits.back() == 'a';
  if (*arch_specific) digits.pop_back();
  int cc;
  if (digits.empty() || !absl::SimpleAtoi(digits, &cc) || cc <= 0) return std::nullopt;
  return cc;
}

std::string SmName(int cc) { return absl::StrCat("sm_", cc); }

uint64_t AllocationBytes(uint64_t bytes, uint32_t alignment) {
  // cuMemAlloc returns 256-byte aligned memory; a larger alignment needs slack.
  uint64_t n = (bytes + 255) / 256 * 256;
  if (alignment > 256) n += alignment - 256;
  return n;
}

// The GGUF's architecture keys against those the bundle was compiled with
// (Manifest.model_keys; bundles made before them have none to compare).
absl::Status CheckModelKeys(const Manifest& m, const gguf::GgufFile& file) {
  if (m.model_keys().empty()) return absl::OkStatus();
  const std::string hint = " (is this GGUF the model the bundle was compiled for?)";
  absl::flat_hash_map<std::string, const ModelKey*> want;
  for (const ModelKey& k : m.model_keys()) want[k.key()] = &k;
  for (const auto& [key, value] : file.metadata()) {
    if (!IsModelKey(key)) continue;
    auto it = want.find(key);
    if (it == want.end())
      return absl::InvalidArgumentError(absl::StrCat("metadata '", key, "' in ", file.name(),
                                                     " was not in the GGUF the bundle was compiled from", hint));
    if (const std::string have = value.ExactString(); have != it->second->value())
      return absl::InvalidArgumentError(absl::StrCat("metadata '", key, "' is ", have, " in ", file.name(),
                                                     ", the bundle was compiled with ", it->second->value(), hint));
    want.erase(it);
  }
  for (const ModelKey& k : m.model_keys())
    if (want.contains(k.key()))
      return absl::InvalidArgumentError(absl::StrCat("metadata '", k.key(), "' is missing from ", file.name(),
                                                     "; the bundle was compiled with ", k.value(), hint));
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckBinding(const Manifest& m, const gguf::GgufFile& file) {
  RETURN_IF_ERROR(CheckModelKeys(m, file));
  if (m.config().tied_embeddings() && file.FindTensor("output.weight") != nullptr)
    return absl::InvalidArgumentError(absl::StrCat(
        file.name(), " has 'output.weight', but the bundle was compiled for a model without one (its LM head is "
                     "token_embd.weight); compile the bundle from this GGUF"));
  for (const TensorBinding& b : m.bindings()) {
    const std::vector<int64_t> want = TrimTrailingOnes({b.dims().begin(), b.dims().end()});
    const gguf::TensorInfo* t = file.FindTensor(b.name());
    if (t == nullptr)
      return absl::InvalidArgumentError(absl::StrCat("tensor '", b.name(), "' is missing from ", file.name(),
                                                     "; the bundle expects ", TypeName(b.ggml_type()), " ",
                                                     Shape(want), " (is this GGUF the model the bundle was compiled for?)"));
    if (static_cast<uint32_t>(t->type) != b.ggml_type())
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", b.name(), "' is ", std::string(gguf::TypeName(t->type)), " in ", file.name(), ", the bundle expects ",
          TypeName(b.ggml_type()), " (was the bundle compiled for another quantization?)"));
    const std::vector<int64_t> have = TrimTrailingOnes(t->dims);
    if (have != want)
      return absl::InvalidArgumentError(absl::StrCat("tensor '", b.name(), "' has shape ", Shape(have), " in ",
                                                     file.name(), ", the bundle expects ", Shape(want),
                                                     " (was the bundle compiled for another model size?)"));
    if (t->nbytes != b.nbytes())
      return absl::InvalidArgumentError(absl::StrCat("tensor '", b.name(), "' has ", t->nbytes, " bytes in ",
                                                     file.name(), ", the bundle expects ", b.nbytes()));
  }
  return absl::OkStatus();
}

absl::StatusOr<SectionChoice> SelectSections(const Manifest& m, const GpuTarget& gpu, bool allow_ptx_jit) {
  const std::string gpu_sm = SmName(gpu.cc);
  std::vector<std::string> cubin_targets, ptx_targets;
  std::optional<std::string> exact_cubin;
  std::optional<int> best_ptx_cc;
  std::string best_ptx;
  for (const Section& s : m.sections()) {
    bool arch_specific = false;
    std::optional<int> cc = ParseTarget(s.target(), &arch_specific);
    if (s.kind() == Section::CUBIN) {
      cubin_targets.push_back(s.target());
      if (cc && *cc == gpu.cc && !exact_cubin) exact_cubin = s.target();
    } else if (s.kind() == Section::PTX) {
      ptx_targets.push_back(s.target());
      // PTX for sm_XY compiles for any later GPU; sm_XYa only for XY itself.
      bool usable = cc && (arch_specific ? *cc == gpu.cc : *cc <= gpu.cc);
      if (usable && (!best_ptx_cc || *cc > *best_ptx_cc)) {
        best_ptx_cc = *cc;
        best_ptx = s.target();
      }
    }
  }
  auto choose = [&](Section::Kind kind, const std::string& target) {
    SectionChoice c;
    c.jit = kind == Section::PTX;
    c.target = target;
    for (int i = 0; i < m.sections_size(); ++i)
      if (m.sections(i).kind() == kind && m.sections(i).target() == target) c.sections.push_back(i);
    return c;
  };
  if (exact_cubin) return choose(Section::CUBIN, *exact_cubin);

  const std::string gpu_desc = absl::StrCat(gpu.name, " (", gpu_sm, ")");
  std::string built_for =
      !cubin_targets.empty() ? absl::StrCat("bundle built for ", absl::StrJoin(cubin_targets, ", "))
                             : absl::StrCat("bundle has no cubin, only PTX for ", absl::StrJoin(ptx_targets, ", "));
  if (!best_ptx_cc) {
    return absl::FailedPreconditionError(absl::StrCat(
        built_for, ", this GPU is ", gpu_desc, ", and the bundle has no PTX this GPU can JIT",
        ptx_targets.empty() ? std::string() : absl::StrCat(" (PTX for ", absl::StrJoin(ptx_targets, ", "), ")"),
        "; recompile the bundle with kilnc for ", gpu_sm));
  }
  if (!allow_ptx_jit)
    return absl::FailedPreconditionError(
        absl::StrCat(built_for, ", this GPU is ", gpu_desc, "; rerun with --allow-ptx-jit to JIT the PTX (",
                     best_ptx, "), or recompile the bundle with kilnc for ", gpu_sm));
  return choose(Section::PTX, best_ptx);
}

absl::StatusOr<MemoryPlan> PlanMemory(const Manifest& m, int64_t context) {
  MemoryPlan plan;
  plan.context = context;
  const ExprEnv env = BufferEnv(m, context);
  std::vector<bool> load_uses(m.buffers_size(), false);
  for (const Launch& l : m.load().launches())
    for (const Arg& a : l.args())
      if (a.has_buffer() && a.buffer().buffer() < load_uses.size()) load_uses[a.buffer().buffer()] = true;
  for (int i = 0; i < m.buffers_size(); ++i) {
    const Buffer& b = m.buffers(i);
    ASSIGN_OR_RETURN(int64_t bytes, Evaluate(b.bytes(), env));
    const uint64_t n = AllocationBytes(static_cast<uint64_t>(bytes), b.alignment());
    const bool gguf = b.kind() == Buffer::GGUF_TENSOR;
    const bool during_load = gguf || b.kind() == Buffer::WEIGHT || load_uses[i];
    plan.buffer_bytes.push_back(n);
    plan.during_load.push_back(during_load);
    if (during_load) plan.load_bytes += n;
    if (!gguf) plan.run_bytes += n;
  }
  plan.peak_bytes = std::max(plan.load_bytes, plan.run_bytes) + kMemoryHeadroom;
  return plan;
}

absl::Status CheckMemoryFits(const Manifest& m, const MemoryPlan& plan, uint64_t free_bytes,
                             const std::string& gpu_name) {
  if (plan.peak_bytes <= free_bytes) return absl::OkStatus();
  std::string msg = absl::StrCat("context ", plan.context, " needs ", FormatBytes(plan.peak_bytes),
                                 " of GPU memory, ", FormatBytes(free_bytes), " free on ", gpu_name);
  if (plan.load_bytes > plan.run_bytes)
    absl::StrAppend(&msg, " (the peak is while loading, when the GGUF tensors and their packed copies coexist)");
  // Sizes never shrink as C grows (bundle/expr.h), so bisect for the largest C that fits.
  int64_t lo = 0, hi = plan.context;  // lo fits (0 = none known), hi does not
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    ASSIGN_OR_RETURN(MemoryPlan p, PlanMemory(m, mid));
    (p.peak_bytes <= free_bytes ? lo : hi) = mid;
  }
  if (lo == 0) {
    absl::StrAppend(&msg, "; even --ctx-size 1 does not fit: this model needs a GPU with more free memory");
  } else {
    int64_t suggest = lo >= 1024 ? lo / 256 * 256 : lo;
    absl::StrAppend(&msg, "; rerun with --ctx-size ", suggest, " or less");
  }
  return absl::ResourceExhaustedError(msg);
}

absl::StatusOr<int64_t> ChooseContext(const Manifest& m, int64_t requested) {
  const int64_t max = m.config().context_length();
  if (requested < 0) return absl::InvalidArgumentError(absl::StrCat("--ctx-size must be >= 0, got ", requested));
  if (requested == 0) return max;
  if (requested > max)
    return absl::InvalidArgumentError(
        absl::StrCat("--ctx-size ", requested, " exceeds the model's context length ", max));
  return requested;
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes >= 1000000000ull) return absl::StrFormat("%.1f GB", static_cast<double>(bytes) * 1e-9);
  return absl::StrFormat("%.1f MB", static_cast<double>(bytes) * 1e-6);
}

absl::Status CheckDecodeGraphable(const Manifest& m) {
  for (int i = 0; i < m.decode().launches_size(); ++i) {
    const Launch& l = m.decode().launches(i);
    std::vector<std::pair<std::string, const Expr*>> exprs = {
        {"grid_x", &l.grid_x()}, {"grid_y", &l.grid_y()}, {"grid_z", &l.grid_z()}};
    for (int j = 0; j < l.args_size(); ++j) {
      if (l.args(j).has_i32()) exprs.push_back({absl::StrCat("arg ", j), &l.args(j).i32()});
      if (l.args(j).has_buffer()) exprs.push_back({absl::StrCat("arg ", j, " offset"), &l.args(j).buffer().offset()});
    }
    for (const auto& [what, e] : exprs) {
      if (e->p() == 0) continue;
      std::string kernel = l.kernel() < static_cast<uint32_t>(m.kernels_size()) ? m.kernels(l.kernel()).name() : "?";
      return absl::InvalidArgumentError(absl::StrCat(
          "decode launch ", i, " (kernel '", kernel, "'): ", what, " = ", ExprToString(*e),
          " depends on P; decode is one CUDA graph replayed at every position, so its kernels must read the "
          "position from position_buffer"));
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::runtime
