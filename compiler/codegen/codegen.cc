// EmitPtx: validate every spec, then per kernel build an LLVM module with
// its family's emitter, verify it, optimize at O3 and print PTX with the
// NVPTX backend (spec/nvptx-llvm19.md §11). One module per kernel keeps the
// per-kernel dumps exact; the PTX bodies are then joined under one header.
#include "compiler/codegen/codegen.h"

#include <filesystem>
#include <memory>
#include <mutex>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "compiler/codegen/emitters.h"
#include "compiler/codegen/kernel_builder.h"
#include "support/write_file.h"
#include "llvm/Analysis/AliasAnalysis.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace kiln::codegen {
namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";

void InitializeNvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> MakeTargetMachine(const Target& target) {
  InitializeNvptx();
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(kTriple, err);
  if (t == nullptr) return absl::InternalError(absl::StrCat("NVPTX target not available: ", err));
  llvm::TargetOptions opts;  // no FP contraction beyond explicit llvm.fma
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(
      kTriple, target.Name(), target.PtxFeature(), opts, std::nullopt, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (tm == nullptr) return absl::InternalError("cannot create the NVPTX target machine");
  return tm;
}

absl::Status EmitBody(KernelBuilder& kb) {
  switch (kb.spec().family) {
    case Family::kMatVec: return EmitMatVec(kb);
    case Family::kGemm: return EmitGemm(kb);
    case Family::kEmbed: return EmitEmbed(kb);
    case Family::kQkNormRopeStore: return EmitQkNormRopeStore(kb);
    case Family::kAttentionDecode: return EmitAttentionDecode(kb);
    case Family::kAttentionPrefill: return EmitAttentionPrefill(kb);
    case Family::kArgmax: return EmitArgmax(kb);
    case Family::kPackQ8_0: return EmitPackQ8_0(kb);
    case Family::kPackQ6_K: return EmitPackQ6_K(kb);
    case Family::kCopyRows: return EmitCopyRows(kb);
    case Family::kMatVecJoin: return EmitMatVecJoin(kb);
  }
  return absl::InternalError("unknown family");
}

absl::StatusOr<std::string> CompileKernel(const KernelSpec& spec, const KernelAbi& abi, const Target& target,
                                          llvm::TargetMachine& tm, const EmitOptions& opts) {
  llvm::LLVMContext ctx;
  auto module = std::make_unique<llvm::Module>(spec.name, ctx);
  module->setTargetTriple(kTriple);
  module->setDataLayout(tm.createDataLayout());
  KernelBuilder kb(*module, spec, abi, target);
  absl::Status s = EmitBody(kb);
  if (!s.ok()) return s;

  std::string ir_text;
  llvm::raw_string_ostream verify_os(ir_text);
  if (llvm::verifyModule(*module, &verify_os)) {
    verify_os.flush();
    return absl::InternalError(
        absl::StrCat("kernel '", spec.name, "': emitted LLVM IR does not verify: ", ir_text));
  }
  if (!opts.dump_dir.empty()) {
    std::string ll;
    llvm::raw_string_ostream os(ll);
    module->print(os, nullptr);
    os.flush();
    s = WriteFileAtomically(absl::StrCat(opts.dump_dir, "/", spec.name, ".ll"), ll);
    if (!s.ok()) return s;
  }

  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(&tm);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(*module, mam);
  }
  // The optimizer must not have produced anything the backend cannot take.
  std::string err;
  llvm::raw_string_ostream err_os(err);
  if (llvm::verifyModule(*module, &err_os)) {
    err_os.flush();
    return absl::InternalError(absl::StrCat("kernel '", spec.name, "': optimized IR does not verify: ", err));
  }

  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager cg;
  if (tm.addPassesToEmitFile(cg, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    return absl::InternalError("NVPTX cannot emit assembly");
  cg.run(*module);
  std::string text(ptx.begin(), ptx.end());
  if (!opts.dump_dir.empty()) {
    s = WriteFileAtomically(absl::StrCat(opts.dump_dir, "/", spec.name, ".ptx"), text);
    if (!s.ok()) return s;
  }
  return text;
}

}  // namespace

absl::StatusOr<CompiledModule> EmitPtx(const std::vector<KernelSpec>& kernels, const Target& target,
                                       const EmitOptions& opts) {
  if (kernels.empty()) return absl::InvalidArgumentError("no kernels to emit");
  // Validate everything before LLVM sees anything: the backend aborts on
  // what it cannot select.
  CompiledModule out;
  out.target = target;
  std::set<std::string> names;
  for (const KernelSpec& spec : kernels) {
    absl::StatusOr<KernelAbi> abi = DescribeKernel(spec, target);
    if (!abi.ok()) return abi.status();
    if (!names.insert(spec.name).second)
      return absl::InvalidArgumentError(absl::StrCat("kernel '", spec.name, "' is defined twice"));
    CompiledKernel k;
    k.name = spec.name;
    k.family = spec.family;
    k.abi = *std::move(abi);
    k.programmatic_launch = spec.programmatic_launch && target.HasGridDependencyControl();
    out.kernels.push_back(std::move(k));
  }
  if (!opts.dump_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(opts.dump_dir, ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat("cannot create dump dir ", opts.dump_dir, ": ", ec.message()));
  }
  absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> tm = MakeTargetMachine(target);
  if (!tm.ok()) return tm.status();

  const std::string kHeaderEnd = ".address_size 64\n";
  for (size_t i = 0; i < kernels.size(); ++i) {
    absl::StatusOr<std::string> ptx = CompileKernel(kernels[i], out.kernels[i].abi, target, **tm, opts);
    if (!ptx.ok()) return ptx.status();
    size_t pos = ptx->find(kHeaderEnd);
    if (pos == std::string::npos)
      return absl::InternalError(absl::StrCat("kernel '", kernels[i].name, "': unexpected PTX header"));
    pos += kHeaderEnd.size();
    if (i == 0) out.ptx = ptx->substr(0, pos);
    out.ptx.append(*ptx, pos, std::string::npos);
  }
  return out;
}

}  // namespace kiln::codegen
