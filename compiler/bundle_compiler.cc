#include "compiler/bundle_compiler.h"

#include "absl/strings/str_cat.h"
#include "compiler/bundle_writer.h"
#include "compiler/codegen/codegen.h"
#include "compiler/lower/lower_to_kernels.h"
#include "models/tokenizer/tokenizer.h"
#include "models/vocab_from_gguf.h"
#include "support/status_macros.h"

namespace kiln::compiler {

absl::StatusOr<BundleSummary> CompileBundle(const ir::Module& module, const gguf::GgufFile& file,
                                            const models::Qwen3Config& config, const BundleOptions& options,
                                            const std::string& output) {
  ASSIGN_OR_RETURN(codegen::Target target, codegen::Target::FromName(options.target));
  ASSIGN_OR_RETURN(tokenizer::Vocab vocab, models::ReadVocab(file));
  // What the runtime will build from the bundle, checked now: a vocabulary
  // kiln cannot tokenize with makes no bundle.
  RETURN_IF_ERROR(tokenizer::Tokenizer::Create(vocab).status());
  LowerOptions lo;
  lo.target = target;
  lo.max_prefill_tokens = std::min<int64_t>(options.max_prefill_tokens, config.context_length);
  lo.programmatic_launch = options.programmatic_launch;
  lo.concurrent_launches = options.concurrent_launches;
  lo.join_matvecs = options.join_matvecs;
  ASSIGN_OR_RETURN(LoweredModel lowered, LowerToKernels(module, file, config, vocab, lo));

  codegen::EmitOptions eo;
  eo.dump_dir = options.dump_dir;
  ASSIGN_OR_RETURN(codegen::CompiledModule compiled, codegen::EmitPtx(lowered.kernels, target, eo));
  std::vector<SectionInput> sections;
  sections.push_back({runtime::Section::PTX, target.Name(), compiled.ptx});
  BundleSummary summary;
  if (options.cubin && codegen::FindPtxas()) {
    ASSIGN_OR_RETURN(std::string cubin, codegen::RunPtxas(compiled.ptx, target));
    sections.push_back({runtime::Section::CUBIN, target.Name(), std::move(cubin)});
    summary.has_cubin = true;
  }
  summary.kernels = static_cast<int>(lowered.kernels.size());
  summary.load_launches = lowered.manifest.load().launches_size();
  summary.prefill_launches = lowered.manifest.prefill().launches_size();
  summary.decode_launches = lowered.manifest.decode().launches_size();
  RETURN_IF_ERROR(WriteBundle(output, std::move(lowered.manifest), sections));
  return summary;
}

}  // namespace kiln::compiler
