#include "compiler/codegen/kernel_builder.h"

#include <algorithm>
#include <cassert>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Metadata.h"

namespace kiln::codegen {

using llvm::Value;

KernelBuilder::KernelBuilder(llvm::Module& module, const KernelSpec& spec, const KernelAbi& abi,
                             const Target& target)
    : module_(module),
      ctx_(module.getContext()),
      kernel_spec_(spec),
      spec_(&spec),
      abi_(abi),
      target_(target),
      b_(ctx_) {
  std::vector<llvm::Type*> types;
  for (const KernelParam& p : abi.params)
    types.push_back(p.type == ParamType::kPointer ? static_cast<llvm::Type*>(b_.getPtrTy(1))
                                                  : static_cast<llvm::Type*>(b_.getInt32Ty()));
  auto* fty = llvm::FunctionType::get(b_.getVoidTy(), types, false);
  fn_ = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, spec.name, module);
  fn_->setCallingConv(llvm::CallingConv::PTX_Kernel);
  fn_->addFnAttr(llvm::Attribute::NoUnwind);
  for (size_t i = 0; i < abi.params.size(); ++i) {
    llvm::Argument* arg = fn_->getArg(static_cast<unsigned>(i));
    arg->setName(abi.params[i].name);
    if (abi.params[i].type == ParamType::kPointer) arg->addAttr(llvm::Attribute::NoAlias);
  }
  // Launch bounds: .maxntid, and .maxnreg at what the block size (times
  // abi.min_blocks_per_sm) allows (spec/nvptx-llvm19.md §1;
  // MaxRegistersPerThread). With .maxntid alone ptxas 13 sometimes spilled
  // a few registers at 40-56 used (an occupancy heuristic); an explicit
  // .maxnreg stops that.
  const int threads = abi.block[0] * abi.block[1] * abi.block[2];
  const int maxnreg = MaxRegistersPerThread(threads, abi.min_blocks_per_sm);
  llvm::NamedMDNode* ann = module.getOrInsertNamedMetadata("nvvm.annotations");
  auto annotate = [&](const char* key, int value) {
    ann->addOperand(llvm::MDNode::get(ctx_, {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(ctx_, key),
                                             llvm::ConstantAsMetadata::get(b_.getInt32(value))}));
  };
  annotate("maxntidx", threads);
  annotate("maxnreg", maxnreg);
  entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
  b_.SetInsertPoint(entry_);
  invariant_ = llvm::MDNode::get(ctx_, {});
}

void KernelBuilder::Finish() { b_.CreateRetVoid(); }

Value* KernelBuilder::Param(const std::string& name) {
  const std::string full = param_prefix_ + name;
  for (size_t i = 0; i < abi_.params.size(); ++i)
    if (abi_.params[i].name == full) return fn_->getArg(static_cast<unsigned>(i));
  return nullptr;  // emitters only ask for names of their own ABI
}

void KernelBuilder::BeginJoinPart(const KernelSpec& part, int64_t first_block, const std::string& param_prefix) {
  spec_ = &part;
  first_block_ = first_block;
  param_prefix_ = param_prefix;
}

void KernelBuilder::EndJoinPart() {
  spec_ = &kernel_spec_;
  first_block_ = 0;
  param_prefix_.clear();
}

Value* KernelBuilder::F32c(float v) { return llvm::ConstantFP::get(F32(), v); }

Value* KernelBuilder::Tid() {
  return b_.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {});
}

Value* KernelBuilder::Ctaid(int dim) {
  llvm::Intrinsic::ID id = dim == 0   ? llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x
                           : dim == 1 ? llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y
                                      : llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z;
  Value* id_value = b_.CreateIntrinsic(id, {}, {});
  return dim == 0 && first_block_ != 0 ? b_.CreateSub(id_value, I32c(first_block_)) : id_value;
}

Value* KernelBuilder::Lane() { return b_.CreateAnd(Tid(), I32c(31)); }
Value* KernelBuilder::Warp() { return b_.CreateLShr(Tid(), I32c(5)); }

void KernelBuilder::For(Value* begin, Value* end, Value* step, const std::function<void(Value*)>& body,
                        int unroll) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, "loop", fn_);
  llvm::BasicBlock* loop_body = llvm::BasicBlock::Create(ctx_, "body", fn_);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "after", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* iv = b_.CreatePHI(I32(), 2, "i");
  iv->addIncoming(begin, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(iv, end), loop_body, exit);
  b_.SetInsertPoint(loop_body);
  body(iv);
  Value* next = b_.CreateAdd(iv, step, "", /*HasNUW=*/false, /*HasNSW=*/true);
  iv->addIncoming(next, b_.GetInsertBlock());
  llvm::BranchInst* latch = b_.CreateBr(header);
  if (unroll > 0) {
    llvm::Metadata* hint =
        unroll == 1 ? static_cast<llvm::Metadata*>(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")}))
                    : static_cast<llvm::Metadata*>(llvm::MDNode::get(
                          ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.count"),
                                 llvm::ConstantAsMetadata::get(b_.getInt32(static_cast<uint32_t>(unroll)))}));
    llvm::MDNode* loop = llvm::MDNode::getDistinct(ctx_, {nullptr, hint});
    loop->replaceOperandWith(0, loop);
    latch->setMetadata(llvm::LLVMContext::MD_loop, loop);
  }
  b_.SetInsertPoint(exit);
}

void KernelBuilder::If(Value* cond, const std::function<void()>& then_fn) {
  llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "endif", fn_);
  b_.CreateCondBr(cond, then_bb, exit);
  b_.SetInsertPoint(then_bb);
  then_fn();
  b_.CreateBr(exit);
  b_.SetInsertPoint(exit);
}

void KernelBuilder::IfElse(Value* cond, const std::function<void()>& then_fn,
                           const std::function<void()>& else_fn) {
  llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
  llvm::BasicBlock* else_bb = llvm::BasicBlock::Create(ctx_, "else", fn_);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "endif", fn_);
  b_.CreateCondBr(cond, then_bb, else_bb);
  b_.SetInsertPoint(then_bb);
  then_fn();
  b_.CreateBr(exit);
  b_.SetInsertPoint(else_bb);
  else_fn();
  b_.CreateBr(exit);
  b_.SetInsertPoint(exit);
}

Value* KernelBuilder::Var(llvm::Type* type, Value* init, const char* name) {
  llvm::IRBuilder<> tmp(entry_, entry_->begin());
  llvm::AllocaInst* a = tmp.CreateAlloca(type, nullptr, name);
  b_.CreateStore(init, a);
  return a;
}

Value* KernelBuilder::Get(Value* var) {
  return b_.CreateLoad(llvm::cast<llvm::AllocaInst>(var)->getAllocatedType(), var);
}

void KernelBuilder::Set(Value* var, Value* value) { b_.CreateStore(value, var); }

Value* KernelBuilder::Gep(Value* ptr, Value* offset) { return b_.CreateGEP(I8(), ptr, offset); }

Value* KernelBuilder::LoadNc(llvm::Type* type, Value* ptr, unsigned align) {
  llvm::LoadInst* l = b_.CreateAlignedLoad(type, ptr, llvm::Align(align));
  l->setMetadata(llvm::LLVMContext::MD_invariant_load, invariant_);
  return l;
}

Value* KernelBuilder::Load(llvm::Type* type, Value* ptr, unsigned align) {
  return b_.CreateAlignedLoad(type, ptr, llvm::Align(align));
}

Value* KernelBuilder::LoadVolatile(llvm::Type* type, Value* ptr, unsigned align) {
  return b_.CreateAlignedLoad(type, ptr, llvm::Align(align), /*isVolatile=*/true);
}

void KernelBuilder::Store(Value* value, Value* ptr, unsigned align) {
  b_.CreateAlignedStore(value, ptr, llvm::Align(align));
}

void KernelBuilder::StoreVolatile(Value* value, Value* ptr, unsigned align) {
  b_.CreateAlignedStore(value, ptr, llvm::Align(align), /*isVolatile=*/true);
}

std::vector<Value*> KernelBuilder::Elements4(Value* vec) {
  std::vector<Value*> out;
  for (int i = 0; i < 4; ++i) out.push_back(b_.CreateExtractElement(vec, uint64_t(i)));
  return out;
}

std::vector<Value*> KernelBuilder::LoadNc4xI32(Value* ptr) {
  return Elements4(LoadNc(llvm::FixedVectorType::get(I32(), 4), ptr, 16));
}

std::vector<Value*> KernelBuilder::Load4xI32(Value* ptr) {
  return Elements4(Load(llvm::FixedVectorType::get(I32(), 4), ptr, 16));
}

std::vector<Value*> KernelBuilder::LoadNc4xF32(Value* ptr) {
  return Elements4(LoadNc(llvm::FixedVectorType::get(F32(), 4), ptr, 16));
}

std::vector<Value*> KernelBuilder::Load4xF32(Value* ptr) {
  return Elements4(Load(llvm::FixedVectorType::get(F32(), 4), ptr, 16));
}

void KernelBuilder::Store4xF32(Value* ptr, const std::vector<Value*>& v) {
  Value* vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(F32(), 4));
  for (int i = 0; i < 4; ++i) vec = b_.CreateInsertElement(vec, v[i], uint64_t(i));
  Store(vec, ptr, 16);
}

Value* KernelBuilder::StaticShared(int64_t bytes) {
  if (spec_ != &kernel_spec_) {
    // A join's parts share the array the ABI sized for the largest.
    assert(bytes <= abi_.static_shared_bytes);
    if (join_shared_ == nullptr) {
      const KernelSpec* part = spec_;
      spec_ = &kernel_spec_;
      join_shared_ = StaticShared(abi_.static_shared_bytes);
      spec_ = part;
    }
    return join_shared_;
  }
  auto* ty = llvm::ArrayType::get(I8(), static_cast<uint64_t>(bytes));
  auto* gv = new llvm::GlobalVariable(module_, ty, false, llvm::GlobalValue::InternalLinkage,
                                      llvm::UndefValue::get(ty),
                                      absl::StrCat(spec_->name, "_smem", shared_count_++), nullptr,
                                      llvm::GlobalValue::NotThreadLocal, 3);
  gv->setAlignment(llvm::Align(16));
  return gv;
}

Value* KernelBuilder::DynamicShared() {
  if (dynamic_shared_ != nullptr) return dynamic_shared_;
  auto* ty = llvm::ArrayType::get(I8(), 0);
  auto* gv = new llvm::GlobalVariable(module_, ty, false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                      absl::StrCat(kernel_spec_.name, "_dsmem"), nullptr,
                                      llvm::GlobalValue::NotThreadLocal, 3);
  gv->setAlignment(llvm::Align(16));
  dynamic_shared_ = gv;
  return gv;
}

Value* KernelBuilder::ShflXor(Value* v, int lane_mask) {
  bool is_float = v->getType()->isFloatTy();
  return b_.CreateIntrinsic(is_float ? llvm::Intrinsic::nvvm_shfl_sync_bfly_f32
                                     : llvm::Intrinsic::nvvm_shfl_sync_bfly_i32,
                            {}, {I32c(-1), v, I32c(lane_mask), I32c(31)});
}

Value* KernelBuilder::ShflIdx(Value* v, Value* lane) {
  bool is_float = v->getType()->isFloatTy();
  return b_.CreateIntrinsic(is_float ? llvm::Intrinsic::nvvm_shfl_sync_idx_f32
                                     : llvm::Intrinsic::nvvm_shfl_sync_idx_i32,
                            {}, {I32c(-1), v, lane, I32c(31)});
}

Value* KernelBuilder::WarpSum(Value* v) {
  for (int m = 16; m >= 1; m /= 2) v = b_.CreateFAdd(v, ShflXor(v, m));
  return v;
}

Value* KernelBuilder::WarpMax(Value* v) {
  for (int m = 16; m >= 1; m /= 2) v = Max(v, ShflXor(v, m));
  return v;
}

void KernelBuilder::CpAsync16(Value* shared_dst, Value* global_src) {
  b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16, {}, {shared_dst, global_src});
}

void KernelBuilder::CpAsyncCommit() { b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {}); }

void KernelBuilder::CpAsyncWait(int n) {
  b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {}, {I32c(n)});
}

void KernelBuilder::PrefetchL2(Value* address, int bytes) {
  assert(target_.HasBulkCopy() && bytes > 0 && bytes % 16 == 0);
  auto* fty = llvm::FunctionType::get(b_.getVoidTy(), {I64()}, false);
  auto* asm_fn = llvm::InlineAsm::get(
      fty, absl::StrCat("cp.async.bulk.prefetch.L2.global [$0], ", bytes, ";"), "l", /*hasSideEffects=*/true);
  b_.CreateCall(fty, asm_fn, {b_.CreatePtrToInt(address, I64())});
}

void KernelBuilder::Barrier() { b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); }

void KernelBuilder::SyncWarp() {
  b_.CreateIntrinsic(llvm::Intrinsic::nvvm_bar_warp_sync, {}, {I32c(-1)});
}

Value* KernelBuilder::Fma(Value* a, Value* b, Value* c) {
  return b_.CreateIntrinsic(llvm::Intrinsic::fma, {F32()}, {a, b, c});
}

Value* KernelBuilder::Ex2(Value* x) {
  return b_.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {}, {x});
}

Value* KernelBuilder::Sqrt(Value* x) { return b_.CreateIntrinsic(llvm::Intrinsic::sqrt, {F32()}, {x}); }

Value* KernelBuilder::Max(Value* a, Value* b) {
  return b_.CreateIntrinsic(llvm::Intrinsic::maxnum, {F32()}, {a, b});
}

Value* KernelBuilder::SMin(Value* a, Value* b) { return b_.CreateSelect(b_.CreateICmpSLT(a, b), a, b); }

Value* KernelBuilder::SMax(Value* a, Value* b) { return b_.CreateSelect(b_.CreateICmpSGT(a, b), a, b); }

Value* KernelBuilder::HalfToFloat(Value* bits16) {
  return b_.CreateFPExt(b_.CreateBitCast(bits16, F16()), F32());
}

Value* KernelBuilder::FloatToHalf(Value* f) { return b_.CreateBitCast(b_.CreateFPTrunc(f, F16()), I16()); }

Value* KernelBuilder::Bf16ToFloat(Value* bits16) {
  return AsFloat(b_.CreateShl(b_.CreateZExt(bits16, I32()), I32c(16)));
}

Value* KernelBuilder::SmallUIntToFloat(Value* v) {
  return b_.CreateFSub(AsFloat(b_.CreateOr(v, I32c(0x4B000000))), F32c(8388608.0f));
}

Value* KernelBuilder::Prmt(Value* a, Value* b, uint32_t selector) { return Prmt(a, b, I32c(selector)); }

Value* KernelBuilder::Prmt(Value* a, Value* b, Value* selector) {
  return b_.CreateIntrinsic(llvm::Intrinsic::nvvm_prmt, {}, {a, b, selector});
}

Value* KernelBuilder::Lop3(Value* a, Value* b, Value* c, int lut) {
  // No lop3 intrinsic in LLVM 19 and llc never forms it (spec §4).
  auto* fty = llvm::FunctionType::get(I32(), {I32(), I32(), I32()}, false);
  auto* asm_fn = llvm::InlineAsm::get(fty, absl::StrFormat("lop3.b32 $0, $1, $2, $3, 0x%02X;", lut),
                                      "=r,r,r,r", /*hasSideEffects=*/false);
  return b_.CreateCall(fty, asm_fn, {a, b, c});
}

Value* KernelBuilder::Dp4a(Value* a, Value* b, Value* c, bool a_signed) {
  // No dp4a intrinsic in LLVM 19 (spec/nvptx-llvm19.md): inline asm.
  auto* fty = llvm::FunctionType::get(I32(), {I32(), I32(), I32()}, false);
  auto* asm_fn = llvm::InlineAsm::get(fty, a_signed ? "dp4a.s32.s32 $0, $1, $2, $3;" : "dp4a.u32.s32 $0, $1, $2, $3;",
                                      "=r,r,r,r", /*hasSideEffects=*/false);
  return b_.CreateCall(fty, asm_fn, {a, b, c});
}

Value* KernelBuilder::LoadCg(llvm::Type* type, Value* ptr, bool pinned) {
  // No ld.global.cg in LLVM 19's NVPTX intrinsics (spec/nvptx-llvm19.md §8):
  // inline asm. It only reads memory, so it stays below the fences,
  // barriers and griddepcontrol.wait before it but orders nothing else;
  // pinned, it also has side effects, so it stays where it was emitted.
  auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(type);
  llvm::Type* elem = vec ? vec->getElementType() : type;
  const int n = vec ? static_cast<int>(vec->getNumElements()) : 1;
  // PTX type and register constraint per element; bytes in 16-bit registers.
  const bool f32 = elem->isFloatTy();
  const unsigned bits = f32 ? 32 : elem->getIntegerBitWidth();
  const std::string ptx = f32 ? "f32" : absl::StrCat("u", bits);
  const char* con = f32 ? "=f," : bits <= 16 ? "=h," : bits == 32 ? "=r," : "=l,";
  llvm::Type* reg = bits == 8 ? I16() : elem;
  std::string regs, cons;
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&regs, i ? ", " : "", "$", i);
    absl::StrAppend(&cons, con);
  }
  const std::string text = n == 1 ? absl::StrCat("ld.global.cg.", ptx, " $0, [$1];")
                                  : absl::StrCat("ld.global.cg.v", n, ".", ptx, " {", regs, "}, [$", n, "];");
  llvm::Type* ret = n == 1 ? reg : llvm::StructType::get(ctx_, std::vector<llvm::Type*>(n, reg));
  auto* fty = llvm::FunctionType::get(ret, {I64()}, false);
  auto* asm_fn = llvm::InlineAsm::get(fty, text, absl::StrCat(cons, "l"), /*hasSideEffects=*/pinned);
  llvm::CallInst* call = b_.CreateCall(fty, asm_fn, {b_.CreatePtrToInt(ptr, I64())});
  call->setOnlyReadsMemory();
  call->setDoesNotThrow();
  auto element = [&](int i) -> Value* {
    Value* e = n == 1 ? static_cast<Value*>(call) : b_.CreateExtractValue(call, {static_cast<unsigned>(i)});
    return bits == 8 ? b_.CreateTrunc(e, elem) : e;
  };
  if (n == 1) return element(0);
  Value* v = llvm::PoisonValue::get(type);
  for (int i = 0; i < n; ++i) v = b_.CreateInsertElement(v, element(i), uint64_t(i));
  return v;
}

std::vector<Value*> KernelBuilder::LoadCgF32(Value* ptr, int n, bool pinned) {
  if (n == 1) return {LoadCg(F32(), ptr, pinned)};
  Value* v = LoadCg(llvm::FixedVectorType::get(F32(), n), ptr, pinned);
  std::vector<Value*> out;
  for (int i = 0; i < n; ++i) out.push_back(b_.CreateExtractElement(v, uint64_t(i)));
  return out;
}

Value* KernelBuilder::LoadInput(llvm::Type* type, Value* ptr, unsigned align, bool pinned) {
  return UsesGridDependency() ? LoadCg(type, ptr, pinned) : LoadNc(type, ptr, align);
}

std::vector<Value*> KernelBuilder::LoadInput4xF32(Value* ptr, bool pinned) {
  return Elements4(LoadInput(llvm::FixedVectorType::get(F32(), 4), ptr, 16, pinned));
}

Value* KernelBuilder::MulRn(Value* a, Value* b) { return b_.CreateIntrinsic(llvm::Intrinsic::nvvm_mul_rn_f, {}, {a, b}); }

Value* KernelBuilder::AddRn(Value* a, Value* b) { return b_.CreateIntrinsic(llvm::Intrinsic::nvvm_add_rn_f, {}, {a, b}); }

Value* KernelBuilder::AndOr(Value* a, uint32_t mask, Value* c) {
  // LUT of (a & b) | c with a = 0xF0, b = 0xCC, c = 0xAA.
  return Lop3(a, I32c(mask), c, (0xF0 & 0xCC) | 0xAA);
}

Value* KernelBuilder::Opaque(Value* v) {
  bool wide = v->getType()->isIntegerTy(32) || v->getType()->isFloatTy();
  llvm::Type* ty = v->getType();
  auto* fty = llvm::FunctionType::get(ty, {ty}, false);
  const char* text = wide ? "mov.b32 $0, $1;" : "mov.b16 $0, $1;";
  const char* cons = ty->isFloatTy() ? "=f,f" : wide ? "=r,r" : "=h,h";
  auto* asm_fn = llvm::InlineAsm::get(fty, text, cons, /*hasSideEffects=*/true);
  return b_.CreateCall(fty, asm_fn, {v});
}

void KernelBuilder::AsmVoid(const std::string& text) {
  auto* fty = llvm::FunctionType::get(b_.getVoidTy(), {}, false);
  auto* asm_fn = llvm::InlineAsm::get(fty, text, "~{memory}", /*hasSideEffects=*/true);
  b_.CreateCall(fty, asm_fn, {});
}

void KernelBuilder::EscapeBeforeBarrier(const std::vector<Value*>& ptrs) {
  std::vector<llvm::Type*> types(ptrs.size(), I64());
  std::string cons;
  std::vector<Value*> args;
  for (Value* p : ptrs) {
    absl::StrAppend(&cons, "l,");
    args.push_back(b_.CreatePtrToInt(p, I64()));
  }
  auto* fty = llvm::FunctionType::get(b_.getVoidTy(), types, false);
  auto* asm_fn = llvm::InlineAsm::get(fty, "", absl::StrCat(cons, "~{memory}"), /*hasSideEffects=*/true);
  b_.CreateCall(fty, asm_fn, args);
}

bool KernelBuilder::UsesGridDependency() const {
  return spec_->programmatic_launch && target_.HasGridDependencyControl();
}

void KernelBuilder::GridDependencyWait() {
  if (UsesGridDependency()) AsmVoid("griddepcontrol.wait;");
}

void KernelBuilder::GridDependencyLaunchDependents() {
  if (UsesGridDependency()) AsmVoid("griddepcontrol.launch_dependents;");
}

Value* KernelBuilder::AtomicAddAcqRelU32(Value* ptr, Value* v) {
  auto* fty = llvm::FunctionType::get(I32(), {I64(), I32()}, false);
  auto* asm_fn = llvm::InlineAsm::get(fty, "atom.acq_rel.gpu.global.add.u32 $0, [$1], $2;", "=r,l,r,~{memory}",
                                      /*hasSideEffects=*/true);
  return b_.CreateCall(fty, asm_fn, {b_.CreatePtrToInt(ptr, I64()), v});
}

void KernelBuilder::AtomicAddF32(Value* ptr, Value* v) {
  b_.CreateAtomicRMW(llvm::AtomicRMWInst::FAdd, ptr, v, llvm::MaybeAlign(4),
                     llvm::AtomicOrdering::Monotonic);
}

}  // namespace kiln::codegen
