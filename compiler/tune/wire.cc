#include "compiler/tune/wire.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kiln::tune {
namespace {

using codegen::KernelSpec;

// Every field of a KernelSpec, by name: the one list the codec reads.
template <typename F>
void VisitSpec(KernelSpec& s, F&& f) {
  f("name", s.name);
  f("family", s.family);
  f("weight", s.weight);
  f("rows", s.rows);
  f("cols", s.cols);
  f("prologue", s.prologue);
  f("epilogue", s.epilogue);
  f("pair_group", s.pair_group);
  f("eps", s.eps);
  f("row_bytes", s.row_bytes);
  f("n_head", s.n_head);
  f("n_head_kv", s.n_head_kv);
  f("head_dim", s.head_dim);
  f("rope_base", s.rope_base);
  f("rope_scaling.freq_scale", s.rope_scaling.freq_scale);
  f("rope_scaling.ext_factor", s.rope_scaling.ext_factor);
  f("rope_scaling.ramp_low", s.rope_scaling.ramp_low);
  f("rope_scaling.ramp_high", s.rope_scaling.ramp_high);
  f("rope_scaling.mscale", s.rope_scaling.mscale);
  f("attn_scale", s.attn_scale);
  f("kv_f16", s.kv_f16);
  f("rope_fused", s.rope_fused);
  f("matvec.threads", s.matvec.threads);
  f("matvec.rows_per_block", s.matvec.rows_per_block);
  f("matvec.vector_bytes", s.matvec.vector_bytes);
  f("matvec.k_split", s.matvec.k_split);
  f("matvec.max_tokens", s.matvec.max_tokens);
  f("matvec.unroll", s.matvec.unroll);
  f("matvec.row_groups", s.matvec.row_groups);
  f("matvec.stage_all", s.matvec.stage_all);
  f("matvec.int8_activations", s.matvec.int8_activations);
  f("matvec.row_tiles", s.matvec.row_tiles);
  f("matvec.stream_stages", s.matvec.stream_stages);
  f("matvec.release_early", s.matvec.release_early);
  f("matvec.pipeline_loads", s.matvec.pipeline_loads);
  f("matvec.pipeline_rows", s.matvec.pipeline_rows);
  f("matvec.blocks_per_sm", s.matvec.blocks_per_sm);
  f("matvec.warp_reduce", s.matvec.warp_reduce);
  f("gemm.tile_m", s.gemm.tile_m);
  f("gemm.tile_n", s.gemm.tile_n);
  f("gemm.tile_k", s.gemm.tile_k);
  f("gemm.threads", s.gemm.threads);
  f("gemm.stages", s.gemm.stages);
  f("gemm.tensor_cores", s.gemm.tensor_cores);
  f("attention.threads", s.attention.threads);
  f("attention.split_positions", s.attention.split_positions);
  f("attention.max_splits", s.attention.max_splits);
  f("attention.min_split_positions", s.attention.min_split_positions);
  f("attention.blocks_per_sm", s.attention.blocks_per_sm);
  f("attention.release_after_wait", s.attention.release_after_wait);
  f("attention.query_block", s.attention.query_block);
  f("attention.key_block", s.attention.key_block);
  f("attention.stage_keys", s.attention.stage_keys);
  f("elementwise.threads", s.elementwise.threads);
  f("elementwise.block_cols", s.elementwise.block_cols);
  f("elementwise.max_blocks", s.elementwise.max_blocks);
  f("programmatic_launch", s.programmatic_launch);
}

}  // namespace

void Message::SetInt(const std::string& name, int64_t value) { fields[name] = absl::StrCat(value); }

void Message::SetDouble(const std::string& name, double value) {
  fields[name] = absl::StrFormat("%a", value);  // exact
}

std::string Message::Get(const std::string& name) const {
  auto it = fields.find(name);
  return it == fields.end() ? "" : it->second;
}

int64_t Message::GetInt(const std::string& name, int64_t fallback) const {
  int64_t v = 0;
  return absl::SimpleAtoi(Get(name), &v) ? v : fallback;
}

double Message::GetDouble(const std::string& name, double fallback) const {
  const std::string s = Get(name);
  if (s.empty()) return fallback;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  return end != nullptr && *end == '\0' ? v : fallback;
}

std::string EncodeMessage(const Message& m) {
  std::string out;
  for (const auto& [k, v] : m.fields) absl::StrAppend(&out, k, " ", v.size(), "\n", v, "\n");
  absl::StrAppend(&out, "end\n");
  return out;
}

absl::Status WriteMessage(int fd, const Message& m) {
  const std::string bytes = EncodeMessage(m);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError(absl::StrCat("writing to the peer failed: ", std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> MessageReader::TakeMessage(Message* out) {
  Message m;
  size_t pos = 0;
  for (;;) {
    const size_t nl = buf_.find('\n', pos);
    if (nl == std::string::npos) return false;
    const std::string line = buf_.substr(pos, nl - pos);
    if (line == "end") {
      buf_.erase(0, nl + 1);
      *out = std::move(m);
      return true;
    }
    const size_t sp = line.rfind(' ');
    uint64_t len = 0;
    if (sp == std::string::npos || sp == 0 || !absl::SimpleAtoi(line.substr(sp + 1), &len))
      return absl::DataLossError(absl::StrCat("malformed field header '", line.substr(0, 80), "'"));
    // A field is at most 1 GiB; the check below cannot overflow.
    if (len > (uint64_t{1} << 30))
      return absl::DataLossError(absl::StrCat("field '", line.substr(0, std::min<size_t>(sp, 80)), "' claims ", len,
                                              " bytes"));
    const size_t value = nl + 1;
    if (buf_.size() - value < len + 1) return false;
    if (buf_[value + len] != '\n') return absl::DataLossError("a field does not end with a newline");
    m.fields[line.substr(0, sp)] = buf_.substr(value, len);
    pos = value + len + 1;
  }
}

absl::StatusOr<Message> MessageReader::Read(absl::Duration timeout) {
  const absl::Time deadline = timeout == absl::InfiniteDuration() ? absl::InfiniteFuture() : absl::Now() + timeout;
  Message m;
  for (;;) {
    absl::StatusOr<bool> got = TakeMessage(&m);
    if (!got.ok()) return got.status();
    if (*got) return m;
    int wait_ms = -1;
    if (deadline != absl::InfiniteFuture()) {
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return absl::DeadlineExceededError("no reply within the time limit");
      wait_ms = static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1 << 30));
    }
    pollfd p = {fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return absl::InternalError(absl::StrCat("poll failed: ", std::strerror(errno)));
    if (r == 0) continue;  // the deadline check above ends it
    char chunk[65536];
    const ssize_t n = ::read(fd_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(absl::StrCat("read failed: ", std::strerror(errno)));
    if (n == 0) return absl::UnavailableError("the peer closed the pipe");
    buf_.append(chunk, static_cast<size_t>(n));
  }
}

void EncodeSpec(const KernelSpec& spec, Message* m) {
  KernelSpec copy = spec;
  VisitSpec(copy, [&](const char* name, auto& v) {
    using T = std::remove_reference_t<decltype(v)>;
    const std::string key = absl::StrCat("spec.", name);
    if constexpr (std::is_same_v<T, std::string>) {
      m->Set(key, v);
    } else if constexpr (std::is_same_v<T, float>) {
      m->SetDouble(key, v);
    } else if constexpr (std::is_enum_v<T> || std::is_same_v<T, bool>) {
      m->SetInt(key, static_cast<int64_t>(v));
    } else {
      m->SetInt(key, v);
    }
  });
}

absl::StatusOr<KernelSpec> DecodeSpec(const Message& m) {
  KernelSpec spec;
  std::string missing;
  VisitSpec(spec, [&](const char* name, auto& v) {
    using T = std::remove_reference_t<decltype(v)>;
    const std::string key = absl::StrCat("spec.", name);
    if (!m.Has(key)) {
      if (missing.empty()) missing = key;
      return;
    }
    if constexpr (std::is_same_v<T, std::string>) {
      v = m.Get(key);
    } else if constexpr (std::is_same_v<T, float>) {
      v = static_cast<float>(m.GetDouble(key));
    } else if constexpr (std::is_same_v<T, bool>) {
      v = m.GetInt(key) != 0;
    } else {
      v = static_cast<T>(m.GetInt(key));
    }
  });
  if (!missing.empty()) return absl::DataLossError(absl::StrCat("the request lacks '", missing, "'"));
  return spec;
}

}  // namespace kiln::tune
