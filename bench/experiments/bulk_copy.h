// What bench/experiments' Hopper streaming kernels share: mbarrier and
// cp.async.bulk helpers (PTX 8.0, sm_90), shared addresses 32-bit. A
// producer thread arms a stage's `full` barrier with the bytes it expects
// and copies them in; consumers wait on its parity and release the stage on
// its `empty` barrier.
#ifndef KILN_BENCH_EXPERIMENTS_BULK_COPY_H_
#define KILN_BENCH_EXPERIMENTS_BULK_COPY_H_

__device__ inline unsigned SharedAddress(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ inline void BarrierInit(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(SharedAddress(bar)), "r"(count) : "memory");
}
__device__ inline void BarrierArrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(SharedAddress(bar)) : "memory");
}
__device__ inline void BarrierExpect(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(SharedAddress(bar)), "r"(bytes)
               : "memory");
}
__device__ inline void BarrierWait(unsigned long long* bar, unsigned phase) {
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{\n\t.reg .pred P;\n\tmbarrier.try_wait.parity.shared::cta.b64 P, [%1], %2;\n\tselp.b32 %0, 1, 0, P;\n\t}"
        : "=r"(done)
        : "r"(SharedAddress(bar)), "r"(phase)
        : "memory");
}
__device__ inline void BulkCopy(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   SharedAddress(dst)),
               "l"(src), "r"(bytes), "r"(SharedAddress(bar))
               : "memory");
}

// Makes the initialized barriers visible to the async proxy (the bulk
// copies); the block synchronizes after it.
__device__ inline void BarrierInitFence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

// An S-stage ring's barriers, by one thread: each stage's `full` waits for
// the producer's one arrival (and its bytes), its `empty` for `consumers`
// arrivals; then the fence. The block synchronizes after it.
__device__ inline void InitRingBarriers(unsigned long long* full, unsigned long long* empty, int stages,
                                        unsigned consumers) {
  for (int s = 0; s < stages; ++s) {
    BarrierInit(full + s, 1);
    BarrierInit(empty + s, consumers);
  }
  BarrierInitFence();
}

#endif  // KILN_BENCH_EXPERIMENTS_BULK_COPY_H_
