#include "runtime/bundle/validator.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "models/gguf/ggml_type.h"
#include "runtime/bundle/bundle_format.h"
#include "support/status_macros.h"

namespace kiln::runtime {
namespace {

template <typename... Args>
absl::Status Invalid(const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat(args...));
}

std::string EnvString(const ExprEnv& env) {
  return absl::StrCat("T=", env.t, " P=", env.p, " C=", env.c);
}

// Evaluates `e`, called `what` in errors, at `env` and requires it < `limit`.
absl::StatusOr<int64_t> EvaluateBelow(const Expr& e, const ExprEnv& env, int64_t limit,
                                      absl::string_view limit_name, absl::string_view what) {
  absl::StatusOr<int64_t> v = Evaluate(e, env);
  if (!v.ok()) return Invalid(what, ": ", v.status().message());
  if (*v >= limit)
    return Invalid(what, " = ", ExprToString(e), " is ", *v, " at ", EnvString(env),
                   "; must be below ", limit_name);
  return *v;
}

std::string EnumName(const google::protobuf::EnumDescriptor* d, int value) {
  const google::protobuf::EnumValueDescriptor* v = d->FindValueByNumber(value);
  return v != nullptr ? v->name() : absl::StrCat("kind ", value);
}

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// What the rules share: the manifest, and every buffer's size at the
// smallest and largest context (sizes never decrease as C grows).
struct Facts {
  const Manifest& m;
  int64_t context = 0;
  std::vector<int64_t> buffer_min_bytes;  // at C = 1
  std::vector<int64_t> buffer_max_bytes;  // at C = context_length
};

std::string BufferName(const Manifest& m, uint32_t i) {
  return absl::StrCat("buffer ", i, " ('", m.buffers(i).name(), "')");
}

absl::Status ValidateConfig(const ModelConfig& c) {
  if (c.architecture().empty()) return Invalid("config: architecture is empty");
  const std::pair<const char*, int64_t> dims[] = {
      {"n_layer", c.n_layer()},     {"n_embd", c.n_embd()},
      {"n_ff", c.n_ff()},           {"n_head", c.n_head()},
      {"n_head_kv", c.n_head_kv()}, {"head_dim", c.head_dim()},
      {"n_vocab", c.n_vocab()},     {"context_length", c.context_length()}};
  for (const auto& [name, v] : dims)
    if (v < 1 || v >= kMaxI32Exclusive)
      return Invalid("config: ", name, " is ", v, "; must be in [1, 2^31)");
  if (c.n_head() % c.n_head_kv() != 0)
    return Invalid("config: n_head ", c.n_head(), " is not a multiple of n_head_kv ",
                   c.n_head_kv());
  if (!std::isfinite(c.rms_eps()) || c.rms_eps() <= 0)
    return Invalid("config: rms_eps ", c.rms_eps(), " is not a positive finite number");
  if (!std::isfinite(c.rope_base()) || c.rope_base() <= 0)
    return Invalid("config: rope_base ", c.rope_base(), " is not a positive finite number");
  return absl::OkStatus();
}

absl::Status ValidateTokenizer(const Tokenizer& t, const ModelConfig& c) {
  if (t.tokens_size() != t.token_types_size())
    return Invalid("tokenizer: ", t.tokens_size(), " tokens but ", t.token_types_size(),
                   " token types");
  if (t.tokens_size() > c.n_vocab())
    return Invalid("tokenizer: ", t.tokens_size(), " tokens exceed config n_vocab ", c.n_vocab());
  const std::pair<const char*, int32_t> ids[] = {
      {"bos_id", t.bos_id()}, {"eos_id", t.eos_id()}, {"pad_id", t.pad_id()}};
  for (const auto& [name, id] : ids)
    if (id < -1 || id >= t.tokens_size())
      return Invalid("tokenizer: ", name, " ", id, " is not a token id (", t.tokens_size(),
                     " tokens; -1 means none)");
  if (t.add_bos() && t.bos_id() < 0) return Invalid("tokenizer: add_bos is set but bos_id is -1");
  return absl::OkStatus();
}

absl::Status ValidatePlanShapes(const Manifest& m) {
  if (m.load().max_tokens() != 0)
    return Invalid("load plan: max_tokens is ", m.load().max_tokens(),
                   "; load runs once with T = 0");
  if (m.prefill().max_tokens() < 1 || m.prefill().max_tokens() > m.config().context_length())
    return Invalid("prefill plan: max_tokens ", m.prefill().max_tokens(),
                   " is not in [1, context_length = ", m.config().context_length(), "]");
  if (m.decode().max_tokens() != 1)
    return Invalid("decode plan: max_tokens is ", m.decode().max_tokens(),
                   "; decode steps exactly one token");
  if (m.prefill().launches_size() == 0) return Invalid("prefill plan has no launches");
  if (m.decode().launches_size() == 0) return Invalid("decode plan has no launches");
  return absl::OkStatus();
}

absl::Status ValidateSections(const Manifest& m, uint64_t file_size) {
  absl::flat_hash_map<std::pair<int, std::string>, int> seen;
  uint64_t prev_end = kBundleHeaderSize;
  for (int i = 0; i < m.sections_size(); ++i) {
    const Section& s = m.sections(i);
    const std::string what = DescribeSection(s, i);
    if (s.kind() != Section::PTX && s.kind() != Section::CUBIN)
      return Invalid(what, ": kind ", s.kind(), " is neither PTX nor CUBIN");
    if (s.target().empty()) return Invalid(what, ": target is empty");
    if (s.size() == 0) return Invalid(what, ": is empty");
    if (s.offset() % kSectionAlignment != 0)
      return Invalid(what, ": offset ", s.offset(), " is not a multiple of ", kSectionAlignment);
    if (s.offset() < prev_end)
      return Invalid(what, ": offset ", s.offset(), " is before the end of ",
                     i == 0 ? std::string("the header") : absl::StrCat("section ", i - 1), " (",
                     prev_end, "); sections must be sorted and disjoint");
    if (s.size() > file_size || s.offset() > file_size - s.size())
      return Invalid(what, ": bytes [", s.offset(), ", ", s.offset(), " + ", s.size(),
                     ") extend past the end of the file (", file_size, " bytes)");
    prev_end = s.offset() + s.size();
    auto [it, inserted] = seen.try_emplace(std::make_pair(int{s.kind()}, s.target()), i);
    if (!inserted) return Invalid(what, ": duplicates section ", it->second);
  }
  if (m.kernels_size() > 0 && m.sections_size() == 0)
    return Invalid("manifest has ", m.kernels_size(), " kernels but no section with their code");
  return absl::OkStatus();
}

absl::Status ValidateBuffers(Facts& f) {
  const Manifest& m = f.m;
  absl::flat_hash_map<std::string, int> names;
  const ExprEnv min_env = BufferEnv(m, 1), max_env = BufferEnv(m, f.context);
  for (int i = 0; i < m.buffers_size(); ++i) {
    const Buffer& b = m.buffers(i);
    if (b.name().empty()) return Invalid("buffer ", i, ": name is empty");
    const std::string what = BufferName(m, i);
    auto [it, inserted] = names.try_emplace(b.name(), i);
    if (!inserted) return Invalid(what, ": name also used by buffer ", it->second);
    if (b.kind() == Buffer::KIND_UNSPECIFIED || !Buffer::Kind_IsValid(b.kind()))
      return Invalid(what, ": kind ", b.kind(), " is not a buffer kind");
    if (!IsPowerOfTwo(b.alignment()) || b.alignment() > kMaxBufferAlignment)
      return Invalid(what, ": alignment ", b.alignment(), " is not a power of two in [1, ",
                     kMaxBufferAlignment, "]");
    if (b.bytes().p() != 0)
      return Invalid(what, ": bytes = ", ExprToString(b.bytes()),
                     " depends on P; buffers are allocated once, before any step");
    ASSIGN_OR_RETURN(int64_t max_bytes, EvaluateBelow(b.bytes(), max_env, kMaxSizeExclusive, "2^40",
                                                      absl::StrCat(what, ": bytes")));
    ASSIGN_OR_RETURN(int64_t min_bytes, Evaluate(b.bytes(), min_env));
    if (min_bytes == 0)
      return Invalid(what, ": bytes = ", ExprToString(b.bytes()), " is 0 at ", EnvString(min_env));
    f.buffer_min_bytes.push_back(min_bytes);
    f.buffer_max_bytes.push_back(max_bytes);
  }
  return absl::OkStatus();
}

// Bytes of a GGUF tensor of `info`'s type and `dims` (ne order), < 2^40.
absl::StatusOr<int64_t> TensorBytes(const gguf::GgmlTypeInfo& info, const TensorBinding& b,
                                    absl::string_view what) {
  if (b.dims(0) % info.block_elems != 0)
    return Invalid(what, ": ne[0] = ", b.dims(0), " is not a multiple of ", std::string(info.name),
                   "'s block of ", info.block_elems, " elements");
  int64_t bytes = b.dims(0) / info.block_elems * info.block_bytes;
  for (int d = 1; d < b.dims_size(); ++d)
    if (__builtin_mul_overflow(bytes, b.dims(d), &bytes) || bytes >= kMaxSizeExclusive)
      return Invalid(what, ": ", std::string(info.name), " [", absl::StrJoin(b.dims(), ", "),
                     "] is 2^40 bytes or more");
  if (bytes >= kMaxSizeExclusive)
    return Invalid(what, ": ", std::string(info.name), " [", absl::StrJoin(b.dims(), ", "),
                   "] is 2^40 bytes or more");
  return bytes;
}

absl::Status ValidateBindings(const Facts& f) {
  const Manifest& m = f.m;
  absl::flat_hash_map<std::string, int> names;
  std::vector<int> bound_by(m.buffers_size(), -1);
  for (int i = 0; i < m.bindings_size(); ++i) {
    const TensorBinding& b = m.bindings(i);
    if (b.name().empty()) return Invalid("binding ", i, ": name is empty");
    const std::string what = absl::StrCat("binding ", i, " ('", b.name(), "')");
    auto [it, inserted] = names.try_emplace(b.name(), i);
    if (!inserted) return Invalid(what, ": tensor also bound by binding ", it->second);
    std::optional<gguf::GgmlTypeInfo> info = gguf::LookupGgmlType(b.ggml_type());
    if (!info) return Invalid(what, ": unknown ggml type id ", b.ggml_type());
    if (b.dims_size() < 1 || static_cast<size_t>(b.dims_size()) > kMaxTensorDims)
      return Invalid(what, ": has ", b.dims_size(), " dims; GGUF tensors have 1 to ",
                     kMaxTensorDims);
    for (int d = 0; d < b.dims_size(); ++d)
      if (b.dims(d) < 1 || b.dims(d) >= kMaxSizeExclusive)
        return Invalid(what, ": ne[", d, "] = ", b.dims(d), " is not in [1, 2^40)");
    ASSIGN_OR_RETURN(int64_t nbytes, TensorBytes(*info, b, what));
    if (b.nbytes() != static_cast<uint64_t>(nbytes))
      return Invalid(what, ": nbytes ", b.nbytes(), " does not match ", std::string(info->name),
                     " [", absl::StrJoin(b.dims(), ", "), "], which is ", nbytes, " bytes");
    if (b.buffer() >= static_cast<uint32_t>(m.buffers_size()))
      return Invalid(what, ": buffer ", b.buffer(), " is out of range (", m.buffers_size(),
                     " buffers)");
    const Buffer& buf = m.buffers(b.buffer());
    if (buf.kind() != Buffer::GGUF_TENSOR)
      return Invalid(what, ": points at ", BufferName(m, b.buffer()), " of kind ",
                     EnumName(Buffer::Kind_descriptor(), buf.kind()),
                     "; tensors upload into GGUF_TENSOR buffers");
    if (bound_by[b.buffer()] >= 0)
      return Invalid(what, ": ", BufferName(m, b.buffer()), " is already bound by binding ",
                     bound_by[b.buffer()]);
    bound_by[b.buffer()] = i;
    if (f.buffer_min_bytes[b.buffer()] < nbytes)
      return Invalid(what, ": ", BufferName(m, b.buffer()), " holds ",
                     f.buffer_min_bytes[b.buffer()], " bytes, fewer than the tensor's ", nbytes);
  }
  for (int i = 0; i < m.buffers_size(); ++i)
    if (m.buffers(i).kind() == Buffer::GGUF_TENSOR && bound_by[i] < 0)
      return Invalid(BufferName(m, i), ": GGUF_TENSOR buffer has no binding");
  return absl::OkStatus();
}

absl::Status ValidateIoBuffers(const Facts& f) {
  const Manifest& m = f.m;
  struct Io {
    const char* field;
    uint32_t index;
    int64_t min_bytes;
    const char* holds;
  };
  const Io io[] = {
      {"tokens_buffer", m.tokens_buffer(), 4 * AllocationTokens(m), "i32[max_tokens]"},
      {"position_buffer", m.position_buffer(), 4, "i32[1]"},
      {"logits_buffer", m.logits_buffer(), 4 * m.config().n_vocab(), "f32[n_vocab]"},
      {"sampled_buffer", m.sampled_buffer(), 4, "i32[1]"},
  };
  for (size_t k = 0; k < std::size(io); ++k) {
    const Io& x = io[k];
    if (x.index >= static_cast<uint32_t>(m.buffers_size()))
      return Invalid(x.field, ": buffer ", x.index, " is out of range (", m.buffers_size(),
                     " buffers)");
    if (m.buffers(x.index).kind() != Buffer::IO)
      return Invalid(x.field, ": ", BufferName(m, x.index), " has kind ",
                     EnumName(Buffer::Kind_descriptor(), m.buffers(x.index).kind()), ", not IO");
    for (size_t j = 0; j < k; ++j)
      if (io[j].index == x.index)
        return Invalid(x.field, ": ", BufferName(m, x.index), " is also ", io[j].field);
    if (f.buffer_min_bytes[x.index] < x.min_bytes)
      return Invalid(x.field, ": ", BufferName(m, x.index), " holds ", f.buffer_min_bytes[x.index],
                     " bytes, fewer than the ", x.min_bytes, " of ", x.holds);
  }
  return absl::OkStatus();
}

absl::Status ValidateKernels(const Facts& f) {
  const Manifest& m = f.m;
  absl::flat_hash_map<std::string, int> names;
  const ExprEnv max_env{AllocationTokens(m), f.context, f.context};
  for (int i = 0; i < m.kernels_size(); ++i) {
    const Kernel& k = m.kernels(i);
    if (k.name().empty()) return Invalid("kernel ", i, ": name is empty");
    const std::string what = absl::StrCat("kernel ", i, " ('", k.name(), "')");
    auto [it, inserted] = names.try_emplace(k.name(), i);
    if (!inserted) return Invalid(what, ": name also used by kernel ", it->second);
    for (int j = 0; j < k.params_size(); ++j) {
      const Param& p = k.params(j);
      if (p.kind() != Param::POINTER && p.kind() != Param::I32 && p.kind() != Param::F32)
        return Invalid(what, ": param ", j, " ('", p.name(), "') has kind ", p.kind(),
                       ", not POINTER, I32 or F32");
    }
    const uint64_t threads = uint64_t{k.block_x()} * k.block_y() * k.block_z();
    if (k.block_x() < 1 || k.block_y() < 1 || k.block_z() < 1 || threads > kMaxThreadsPerBlock)
      return Invalid(what, ": block ", k.block_x(), "x", k.block_y(), "x", k.block_z(),
                     " is not 1 to ", kMaxThreadsPerBlock, " threads with every dim >= 1");
    if (k.shared_bytes() > kMaxSharedBytes)
      return Invalid(what, ": shared_bytes ", k.shared_bytes(), " exceeds ", kMaxSharedBytes);
    RETURN_IF_ERROR(EvaluateBelow(k.bytes_read_per_position(), max_env, kMaxSizeExclusive, "2^40",
                                  absl::StrCat(what, ": bytes_read_per_position"))
                        .status());
  }
  return absl::OkStatus();
}

absl::Status ValidateArg(const Facts& f, const Arg& a, const Param& param, bool after_load,
                         const ExprEnv& max_env, absl::string_view what) {
  const Manifest& m = f.m;
  const Param::Kind want = param.kind();
  const std::string want_name = EnumName(Param::Kind_descriptor(), want);
  switch (a.value_case()) {
    case Arg::kBuffer: {
      if (want != Param::POINTER) return Invalid(what, ": a buffer for a ", want_name, " param");
      const uint32_t index = a.buffer().buffer();
      if (index >= static_cast<uint32_t>(m.buffers_size()))
        return Invalid(what, ": buffer ", index, " is out of range (", m.buffers_size(),
                       " buffers)");
      if (after_load && m.buffers(index).kind() == Buffer::GGUF_TENSOR)
        return Invalid(what, ": uses ", BufferName(m, index),
                       ", a GGUF_TENSOR buffer, which is freed after load");
      ASSIGN_OR_RETURN(int64_t offset,
                       EvaluateBelow(a.buffer().offset(), max_env, kMaxSizeExclusive, "2^40",
                                     absl::StrCat(what, ": offset")));
      if (offset > f.buffer_max_bytes[index])
        return Invalid(what, ": offset ", ExprToString(a.buffer().offset()), " is ", offset, " at ",
                       EnvString(max_env), ", past the end of ", BufferName(m, index), " (",
                       f.buffer_max_bytes[index], " bytes)");
      return absl::OkStatus();
    }
    case Arg::kI32:
      if (want != Param::I32) return Invalid(what, ": an i32 for a ", want_name, " param");
      return EvaluateBelow(a.i32(), max_env, kMaxI32Exclusive, "2^31", what).status();
    case Arg::kF32:
      if (want != Param::F32) return Invalid(what, ": an f32 for a ", want_name, " param");
      if (!std::isfinite(a.f32())) return Invalid(what, ": f32 ", a.f32(), " is not finite");
      return absl::OkStatus();
    case Arg::VALUE_NOT_SET:
      break;
  }
  return Invalid(what, ": has no value");
}

// `min_t` is the smallest T the plan runs with (load: 0, others: 1).
absl::Status ValidatePlan(const Facts& f, const Plan& plan, absl::string_view plan_name,
                          int64_t min_t) {
  const Manifest& m = f.m;
  const bool after_load = plan_name != "load";
  const ExprEnv max_env{plan.max_tokens(), f.context, f.context};
  const ExprEnv min_env{min_t, 0, 1};
  for (int i = 0; i < plan.launches_size(); ++i) {
    const Launch& l = plan.launches(i);
    if (l.kernel() >= static_cast<uint32_t>(m.kernels_size()))
      return Invalid(plan_name, " launch ", i, ": kernel ", l.kernel(), " is out of range (",
                     m.kernels_size(), " kernels)");
    const Kernel& k = m.kernels(l.kernel());
    const std::string what = absl::StrCat(plan_name, " launch ", i, " (kernel '", k.name(), "')");
    const std::pair<const char*, const Expr*> grid[] = {
        {"grid_x", &l.grid_x()}, {"grid_y", &l.grid_y()}, {"grid_z", &l.grid_z()}};
    for (const auto& [name, e] : grid) {
      RETURN_IF_ERROR(
          EvaluateBelow(*e, max_env, kMaxI32Exclusive, "2^31", absl::StrCat(what, ": ", name))
              .status());
      ASSIGN_OR_RETURN(int64_t smallest, Evaluate(*e, min_env));
      if (smallest < 1)
        return Invalid(what, ": ", name, " = ", ExprToString(*e), " is 0 at ", EnvString(min_env),
                       "; grid dims must be at least 1");
    }
    if (l.args_size() != k.params_size())
      return Invalid(what, ": ", l.args_size(), " args for ", k.params_size(), " params");
    for (int j = 0; j < l.args_size(); ++j)
      RETURN_IF_ERROR(
          ValidateArg(f, l.args(j), k.params(j), after_load, max_env,
                      absl::StrCat(what, ": arg ", j, " ('", k.params(j).name(), "')")));
    if (l.beside_next() && i + 1 == plan.launches_size())
      return Invalid(what, ": runs beside the next launch, but it is the plan's last");
    if (l.beside_next() && i > 0 && plan.launches(i - 1).beside_next())
      return Invalid(what, ": runs beside the next launch, but launch ", i - 1,
                     " already runs beside this one");
  }
  return absl::OkStatus();
}

}  // namespace

std::string DescribeSection(const Section& s, int index) {
  return absl::StrCat("section ", index, " (", EnumName(Section::Kind_descriptor(), s.kind()), " ",
                      s.target().empty() ? "<no target>" : s.target(), ")");
}

int64_t AllocationTokens(const Manifest& m) {
  return std::max<int64_t>(
      {int64_t{0}, m.load().max_tokens(), m.prefill().max_tokens(), m.decode().max_tokens()});
}

ExprEnv BufferEnv(const Manifest& m, int64_t context) {
  return ExprEnv{AllocationTokens(m), 0, context};
}

absl::Status ValidateManifest(const Manifest& m, uint64_t file_size) {
  if (m.format_version() != kBundleFormatVersion)
    return Invalid("manifest format_version is ", m.format_version(),
                   "; this runtime reads version ", kBundleFormatVersion);
  RETURN_IF_ERROR(ValidateConfig(m.config()));
  RETURN_IF_ERROR(ValidateTokenizer(m.tokenizer(), m.config()));
  RETURN_IF_ERROR(ValidatePlanShapes(m));
  RETURN_IF_ERROR(ValidateSections(m, file_size));
  Facts f{m, m.config().context_length(), {}, {}};
  RETURN_IF_ERROR(ValidateBuffers(f));
  RETURN_IF_ERROR(ValidateBindings(f));
  RETURN_IF_ERROR(ValidateIoBuffers(f));
  RETURN_IF_ERROR(ValidateKernels(f));
  RETURN_IF_ERROR(ValidatePlan(f, m.load(), "load", 0));
  RETURN_IF_ERROR(ValidatePlan(f, m.prefill(), "prefill", 1));
  RETURN_IF_ERROR(ValidatePlan(f, m.decode(), "decode", 1));
  return absl::OkStatus();
}

}  // namespace kiln::runtime
