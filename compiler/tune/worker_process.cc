#include "compiler/tune/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace kiln::tune {

absl::StatusOr<std::unique_ptr<WorkerProcess>> WorkerProcess::Spawn(const std::vector<std::string>& argv) {
  if (argv.empty()) return absl::InvalidArgumentError("no worker command");
  int req[2], rep[2];
  if (::pipe2(req, O_CLOEXEC) != 0) return absl::InternalError(absl::StrCat("pipe2: ", std::strerror(errno)));
  if (::pipe2(rep, O_CLOEXEC) != 0) {
    ::close(req[0]);
    ::close(req[1]);
    return absl::InternalError(absl::StrCat("pipe2: ", std::strerror(errno)));
  }
  // Everything the child needs, prepared before fork (only async-signal-safe
  // calls between fork and exec).
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {req[0], req[1], rep[0], rep[1], devnull}) ::close(fd);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    // Both ends go to spare numbers first, so neither is overwritten and
    // dup2 (onto a different number) clears close-on-exec on fds 3 and 4.
    const int in = ::fcntl(req[0], F_DUPFD_CLOEXEC, 10), out = ::fcntl(rep[1], F_DUPFD_CLOEXEC, 10);
    if (in < 0 || out < 0 || ::dup2(in, kWorkerInFd) < 0 || ::dup2(out, kWorkerOutFd) < 0) ::_exit(127);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(req[0]);
  ::close(rep[1]);
  if (devnull >= 0) ::close(devnull);
  std::unique_ptr<WorkerProcess> w(new WorkerProcess);
  w->pid_ = pid;
  w->to_ = req[1];
  w->from_ = rep[0];
  w->reader_ = std::make_unique<MessageReader>(w->from_);
  return w;
}

WorkerProcess::~WorkerProcess() {
  Kill();
  if (to_ >= 0) ::close(to_);
  if (from_ >= 0) ::close(from_);
}

absl::Status WorkerProcess::Send(const Message& message) {
  if (to_ < 0) return absl::UnavailableError("the worker's pipe is closed");
  return WriteMessage(to_, message);
}

absl::StatusOr<Message> WorkerProcess::Receive(absl::Duration timeout) { return reader_->Read(timeout); }

bool WorkerProcess::Reap(bool block) {
  if (reaped_ || pid_ < 0) return true;
  for (;;) {
    const pid_t r = ::waitpid(pid_, &wait_status_, block ? 0 : WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      return true;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {  // not our child any more: nothing to reap
      reaped_ = true;
      wait_status_ = 0;
      return true;
    }
    return false;
  }
}

void WorkerProcess::Kill() {
  if (pid_ < 0 || reaped_) return;
  if (!Reap(false)) {
    ::kill(pid_, SIGKILL);
    Reap(true);
  }
}

std::string WorkerProcess::ExitDescription() {
  // A worker that closed its pipe is exiting: give it a moment to finish.
  for (int i = 0; i < 50 && !Reap(false); ++i) ::usleep(20000);
  if (!reaped_) return "running";
  if (WIFEXITED(wait_status_)) return absl::StrCat("exited with status ", WEXITSTATUS(wait_status_));
  if (WIFSIGNALED(wait_status_)) return absl::StrCat("killed by signal ", WTERMSIG(wait_status_));
  return "ended";
}

}  // namespace kiln::tune
