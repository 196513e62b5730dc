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
#include "compiler/codegen/kernel_spec_fields.h"

namespace kiln::tune {
namespace {

using codegen::KernelSpec;

// Every field of a KernelSpec, by name (codegen::VisitSpecFields and the
// name): the one list the codec reads.
template <typename F>
void VisitSpec(KernelSpec& s, F&& f) {
  f("name", s.name);
  codegen::VisitSpecFields(s, f);
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
  VisitSpec(copy, [&](absl::string_view name, auto& v) {
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
  VisitSpec(spec, [&](absl::string_view name, auto& v) {
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
