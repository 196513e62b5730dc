// The tuner's worker process (`kilnc tune-worker`, docs/tuning.md): the
// only part of `kilnc tune` that touches the GPU. It opens the driver and a
// context, says hello (GPU name, SM count, driver), then for each request —
// a kernel spec, its cubin or PTX, a seed — loads the kernel, checks it
// against the reference kernels on fresh random inputs with a poisoned
// output, and times it with CUDA events. After a sticky error (a fault) it
// replies and exits: the parent starts a fresh worker with a fresh context.
#ifndef KILN_COMPILER_TUNE_WORKER_H_
#define KILN_COMPILER_TUNE_WORKER_H_

namespace kiln::tune {

// Serves requests read from `in_fd`, replying on `out_fd`, until the parent
// closes the pipe (returns 0) or the context is lost (returns 3). With
// `fake_device` no GPU is opened: requests get deterministic made-up
// timings, and the test hook's synthetic kernels act out their failure
// (test_fault: a fault reply and exit; test_hang: sleep until killed), so
// CPU tests can drive the whole isolation path.
int RunWorker(int in_fd, int out_fd, bool fake_device);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_WORKER_H_
