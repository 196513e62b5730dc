#include "support/write_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace kiln {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  return absl::UnavailableError(absl::StrCat(what, " '", path, "': ", std::strerror(errno)));
}

}  // namespace

absl::StatusOr<TempFile> CreateTempBeside(const std::string& path) {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::random_device device;
  std::mt19937_64 rng((uint64_t{device()} << 32) ^ device() ^ static_cast<uint64_t>(::getpid()));
  for (int attempt = 0; attempt < 100; ++attempt) {
    TempFile t;
    t.path = path + ".tmp.";
    for (int i = 0; i < 6; ++i) t.path += kChars[rng() % (sizeof(kChars) - 1)];
    t.fd = ::open(t.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (t.fd >= 0) return t;
    if (errno != EEXIST) return ErrnoError("cannot create", t.path);
  }
  return absl::UnavailableError(absl::StrCat("cannot create a temporary file beside '", path,
                                             "': 100 names taken"));
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes) {
  ASSIGN_OR_RETURN(TempFile temp, CreateTempBeside(path));
  const int fd = temp.fd;
  const std::string& tmp = temp.path;
  absl::Status status;
  for (size_t done = 0; done < bytes.size() && status.ok();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      status = ErrnoError("cannot write", tmp);
    else
      done += static_cast<size_t>(n);
  }
  if (status.ok() && ::fsync(fd) != 0) status = ErrnoError("cannot fsync", tmp);
  if (::close(fd) != 0 && status.ok()) status = ErrnoError("cannot close", tmp);
  if (status.ok() && std::rename(tmp.c_str(), path.c_str()) != 0)
    status = ErrnoError(absl::StrCat("cannot rename '", tmp, "' to"), path);
  if (!status.ok()) ::unlink(tmp.c_str());
  return status;
}

}  // namespace kiln
