// The parent's handle on a tuner worker (docs/tuning.md): fork/exec of
// `kilnc tune-worker` with two pipes (requests on its fd 3, replies on its
// fd 4), a reply deadline per request, SIGKILL and reaping. The parent
// never touches the GPU; a worker that faults, hangs or dies is replaced.
#ifndef KILN_COMPILER_TUNE_WORKER_PROCESS_H_
#define KILN_COMPILER_TUNE_WORKER_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "compiler/tune/wire.h"

namespace kiln::tune {

inline constexpr int kWorkerInFd = 3;   // the worker reads requests here
inline constexpr int kWorkerOutFd = 4;  // and writes replies here

class WorkerProcess {
 public:
  // Starts argv (argv[0] a path). Its stdin is /dev/null, stdout and stderr
  // are the parent's. The caller must ignore SIGPIPE (a dead worker's pipe).
  static absl::StatusOr<std::unique_ptr<WorkerProcess>> Spawn(const std::vector<std::string>& argv);
  ~WorkerProcess();  // kills and reaps
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  absl::Status Send(const Message& message);
  // DeadlineExceeded after `timeout`; Unavailable when the worker closed its
  // end (it exited or died: see ExitDescription).
  absl::StatusOr<Message> Receive(absl::Duration timeout);
  // SIGKILL (if still running) and reap.
  void Kill();
  // "exited with status 3", "killed by signal 9", or "running".
  std::string ExitDescription();
  pid_t pid() const { return pid_; }

 private:
  WorkerProcess() = default;
  bool Reap(bool block);
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  int wait_status_ = 0;
  bool reaped_ = false;
  std::unique_ptr<MessageReader> reader_;
};

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_WORKER_PROCESS_H_
