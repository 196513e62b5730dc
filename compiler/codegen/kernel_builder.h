// KernelBuilder: an llvm::IRBuilder wrapper that knows the NVPTX idioms the
// emitters share (special registers, loops, warp shuffles, barriers,
// read-only 16-byte loads, inline PTX for what LLVM 19 cannot select).
// Internal to compiler/codegen: included only by its .cc files, so LLVM
// headers never leak into headers other folders include.
#ifndef KILN_COMPILER_CODEGEN_KERNEL_BUILDER_H_
#define KILN_COMPILER_CODEGEN_KERNEL_BUILDER_H_

#include <functional>
#include <string>
#include <vector>

#include "compiler/codegen/kernel_abi.h"
#include "compiler/codegen/kernel_spec.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

namespace kiln::codegen {

class KernelBuilder {
 public:
  // Creates `spec.name` as a ptx_kernel in `module` with the parameters of
  // `abi` (pointers are `ptr addrspace(1) noalias`; the ABI says they never
  // overlap) and a `.maxntid` of the block size.
  KernelBuilder(llvm::Module& module, const KernelSpec& spec, const KernelAbi& abi, const Target& target);

  llvm::IRBuilder<>& b() { return b_; }
  llvm::LLVMContext& ctx() { return ctx_; }
  llvm::Module& module() { return module_; }
  llvm::Function* function() { return fn_; }
  // The kernel's spec, or inside BeginJoinPart .. EndJoinPart the part's.
  const KernelSpec& spec() const { return *spec_; }
  const Target& target() const { return target_; }
  // Ends the kernel (ret void) at the current insertion point.
  void Finish();

  // Parameters by ABI name.
  llvm::Value* Param(const std::string& name);

  // kMatVecJoin: what is emitted from here on is `part`'s code (its spec
  // must outlive EndJoinPart), run by the join's blocks [first_block,
  // first_block + its grid.x): Ctaid(0) counts from first_block, Param(name)
  // reads the join's parameter param_prefix + name, and StaticShared
  // returns the one array every part shares (a block runs one part).
  void BeginJoinPart(const KernelSpec& part, int64_t first_block, const std::string& param_prefix);
  void EndJoinPart();

  // Types and constants.
  llvm::Type* I8() { return b_.getInt8Ty(); }
  llvm::Type* I16() { return b_.getInt16Ty(); }
  llvm::Type* I32() { return b_.getInt32Ty(); }
  llvm::Type* I64() { return b_.getInt64Ty(); }
  llvm::Type* F32() { return b_.getFloatTy(); }
  llvm::Type* F16() { return b_.getHalfTy(); }
  llvm::Type* Global() { return b_.getPtrTy(1); }
  llvm::Type* Shared() { return b_.getPtrTy(3); }
  llvm::Value* I32c(int64_t v) { return b_.getInt32(static_cast<uint32_t>(v)); }
  llvm::Value* I64c(int64_t v) { return b_.getInt64(static_cast<uint64_t>(v)); }
  llvm::Value* F32c(float v);

  // Special registers (i32).
  llvm::Value* Tid();
  llvm::Value* Ctaid(int dim);
  llvm::Value* Lane();  // tid & 31
  llvm::Value* Warp();  // tid >> 5

  // Control flow. Loop counters are i32 and compared signed. `unroll`:
  // 0 leaves it to LLVM, 1 forbids unrolling, n > 1 asks for n (keeps
  // loop-invariant loads and registers bounded where full unrolling would
  // put every load up front).
  void For(llvm::Value* begin, llvm::Value* end, llvm::Value* step,
           const std::function<void(llvm::Value*)>& body, int unroll = 0);
  void If(llvm::Value* cond, const std::function<void()>& then_fn);
  void IfElse(llvm::Value* cond, const std::function<void()>& then_fn,
              const std::function<void()>& else_fn);

  // Mutable scalars: entry-block allocas that SROA turns into registers.
  llvm::Value* Var(llvm::Type* type, llvm::Value* init, const char* name = "v");
  llvm::Value* Get(llvm::Value* var);
  void Set(llvm::Value* var, llvm::Value* value);

  // Memory. `offset` is a byte offset (i32 or i64).
  llvm::Value* Gep(llvm::Value* ptr, llvm::Value* offset);
  llvm::Value* Gep(llvm::Value* ptr, int64_t offset) { return Gep(ptr, I64c(offset)); }
  // A load through the read-only path (ld.global.nc): !invariant.load.
  llvm::Value* LoadNc(llvm::Type* type, llvm::Value* ptr, unsigned align);
  llvm::Value* Load(llvm::Type* type, llvm::Value* ptr, unsigned align);
  llvm::Value* LoadVolatile(llvm::Type* type, llvm::Value* ptr, unsigned align);
  void Store(llvm::Value* value, llvm::Value* ptr, unsigned align);
  void StoreVolatile(llvm::Value* value, llvm::Value* ptr, unsigned align);
  // 16 read-only bytes as 4 x i32; Load4xI32 the same through a plain load.
  std::vector<llvm::Value*> LoadNc4xI32(llvm::Value* ptr);
  std::vector<llvm::Value*> Load4xI32(llvm::Value* ptr);
  // 4 consecutive floats (16-byte aligned) as 4 scalars.
  std::vector<llvm::Value*> LoadNc4xF32(llvm::Value* ptr);
  std::vector<llvm::Value*> Load4xF32(llvm::Value* ptr);
  // A value through L2 only (ld.global.cg[.vN]): for data other blocks of
  // this launch wrote, read after their membar.gl and ours
  // (spec/nvptx-llvm19.md §8), which the non-coherent path (.nc) may serve
  // stale. `type`: f32 or an 8- to 64-bit integer, or 2 or 4 of them (a PTX
  // vector), aligned to its size. `pinned`: issued where it is emitted
  // (LLVM may otherwise sink the read-only asm toward its first use), for
  // a load meant to be in flight during the work that follows it.
  llvm::Value* LoadCg(llvm::Type* type, llvm::Value* ptr, bool pinned = false);
  // n = 1, 2 or 4 consecutive floats (4n-byte aligned), the same way.
  std::vector<llvm::Value*> LoadCgF32(llvm::Value* ptr, int n, bool pinned = false);
  // What an earlier kernel of the plan wrote (activations, the KV cache):
  // ld.global.nc when this kernel starts only after that one has ended,
  // through L2 (LoadCg) under programmatic launch. .nc promises the data
  // stays unchanged while the kernel runs, and a programmatic launch runs
  // beside its predecessor: on an H200, streamed matvecs (copies issued
  // before griddepcontrol.wait) read their predecessor's output stale
  // through .nc and right through .cg (bench/RESULTS.md, 2026-12-03). A
  // plain load is no way out: LLVM turns loads through a read-only noalias
  // parameter into ld.global.nc. `pinned` as LoadCg's; it only binds the
  // L2 path: the .nc load is an invariant load, which LLVM may still move.
  llvm::Value* LoadInput(llvm::Type* type, llvm::Value* ptr, unsigned align, bool pinned = false);
  std::vector<llvm::Value*> LoadInput4xF32(llvm::Value* ptr, bool pinned = false);
  void Store4xF32(llvm::Value* ptr, const std::vector<llvm::Value*>& v);

  // Asynchronous copy global -> shared (cp.async.cg, sm_80+): 16 bytes,
  // both addresses 16-byte aligned, through L2 only. Commit closes a group
  // of this thread's copies; Wait(n) returns once at most n of its groups
  // are still in flight, their data then visible to this thread (others
  // see it after a barrier: bar.warp.sync within a warp).
  void CpAsync16(llvm::Value* shared_dst, llvm::Value* global_src);
  void CpAsyncCommit();
  void CpAsyncWait(int n);
  // Asks the L2 for the global bytes [address, address + bytes) without
  // waiting (cp.async.bulk.prefetch.L2; targets with HasBulkCopy only). A
  // hint: nothing is written and nothing waits on it. `address` 16-byte
  // aligned, `bytes` a positive multiple of 16.
  void PrefetchL2(llvm::Value* address, int bytes);

  // Shared memory: a per-kernel static array (aligned 16) or the dynamic one.
  llvm::Value* StaticShared(int64_t bytes);
  llvm::Value* DynamicShared();

  // Warp and block collectives.
  llvm::Value* ShflXor(llvm::Value* v, int lane_mask);   // f32 or i32
  llvm::Value* ShflIdx(llvm::Value* v, llvm::Value* lane);
  llvm::Value* WarpSum(llvm::Value* v);                  // butterfly: every lane gets the sum
  llvm::Value* WarpMax(llvm::Value* v);
  void Barrier();
  void SyncWarp();

  // Arithmetic.
  llvm::Value* Fma(llvm::Value* a, llvm::Value* b, llvm::Value* c);
  llvm::Value* Ex2(llvm::Value* x);          // ex2.approx.ftz.f32
  llvm::Value* Sqrt(llvm::Value* x);         // sqrt.rn.f32
  llvm::Value* Max(llvm::Value* a, llvm::Value* b);  // max.f32 (NaN-ignoring)
  llvm::Value* SMin(llvm::Value* a, llvm::Value* b);  // signed integer min (a select)
  llvm::Value* SMax(llvm::Value* a, llvm::Value* b);  // signed integer max (a select)
  llvm::Value* HalfToFloat(llvm::Value* bits16);     // i16 -> f32, exact
  llvm::Value* FloatToHalf(llvm::Value* f);          // f32 -> i16, round to nearest even
  llvm::Value* Bf16ToFloat(llvm::Value* bits16);
  llvm::Value* AsFloat(llvm::Value* i32) { return b_.CreateBitCast(i32, F32()); }
  llvm::Value* AsInt(llvm::Value* f32) { return b_.CreateBitCast(f32, I32()); }
  // Exact small unsigned integer (< 2^22) to float without a cvt:
  // as_float(0x4B000000 | v) - 2^23.
  llvm::Value* SmallUIntToFloat(llvm::Value* v);
  llvm::Value* Prmt(llvm::Value* a, llvm::Value* b, uint32_t selector);
  llvm::Value* Prmt(llvm::Value* a, llvm::Value* b, llvm::Value* selector);
  llvm::Value* Lop3(llvm::Value* a, llvm::Value* b, llvm::Value* c, int lut);
  // c + the dot product of a's and b's four bytes (dp4a; b signed, a signed
  // or unsigned).
  llvm::Value* Dp4a(llvm::Value* a, llvm::Value* b, llvm::Value* c, bool a_signed);
  // f32 multiply and add rounded to nearest (mul.rn / add.rn): never
  // contracted into an fma, for results a host reference must reproduce.
  llvm::Value* MulRn(llvm::Value* a, llvm::Value* b);
  llvm::Value* AddRn(llvm::Value* a, llvm::Value* b);
  // (a & mask) | c, as one lop3.
  llvm::Value* AndOr(llvm::Value* a, uint32_t mask, llvm::Value* c);

  // An opaque copy (a side-effecting mov): pins computation on `v` below the
  // preceding barrier. Without it LLVM hoisted a whole piece's dequantization
  // above the activation staging, keeping hundreds of values live.
  llvm::Value* Opaque(llvm::Value* v);
  // Inline PTX with no outputs (side effects, memory clobber).
  void AsmVoid(const std::string& text);
  // An empty asm that takes `ptrs` and clobbers memory. Kernel pointer
  // parameters are noalias, and LLVM assumes a call (bar.sync is one) cannot
  // touch a noalias object whose pointer has not escaped; after this, it
  // must assume later calls may read or write what `ptrs` point into, so
  // loads below a barrier stay below it.
  void EscapeBeforeBarrier(const std::vector<llvm::Value*>& ptrs);
  // griddepcontrol, only when the target and the spec ask for it. Every
  // emitter waits before it writes global memory or reads anything but
  // weights, so LaunchDependents may come anywhere, even before the wait
  // (a streamed matvec's release_early): a dependent's own wait covers this
  // grid's completion, and through this grid's wait every earlier one's.
  bool UsesGridDependency() const;
  void GridDependencyWait();
  void GridDependencyLaunchDependents();
  // atom.acq_rel.gpu.global.add.u32 (inline asm: LLVM 19 drops an
  // atomicrmw's ordering): releases what this thread, and every thread of
  // the block before a barrier, wrote, and acquires what the releasers it
  // reads from wrote. Returns the old value.
  llvm::Value* AtomicAddAcqRelU32(llvm::Value* ptr, llvm::Value* v);
  void AtomicAddF32(llvm::Value* ptr, llvm::Value* v);

 private:
  // The four elements of a 4-vector.
  std::vector<llvm::Value*> Elements4(llvm::Value* vec);

  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  const KernelSpec& kernel_spec_;
  const KernelSpec* spec_;  // kernel_spec_, or the join part being emitted
  int64_t first_block_ = 0;
  std::string param_prefix_;
  llvm::Value* join_shared_ = nullptr;
  const KernelAbi& abi_;
  Target target_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  llvm::IRBuilder<> b_;
  llvm::MDNode* invariant_ = nullptr;
  llvm::Value* dynamic_shared_ = nullptr;
  int shared_count_ = 0;
};

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_KERNEL_BUILDER_H_
