// kilnc compile: builds the Qwen3 IR of a GGUF and runs the pass pipeline
// (compiler/pipelines.cc), with the pipeline's debugging aids.
#include <chrono>
#include <cstdio>
#include <set>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler/bundle_compiler.h"
#include "compiler/codegen/kernel_abi.h"
#include "compiler/commands/command_line.h"
#include "compiler/commands/commands.h"
#include "compiler/pipelines.h"
#include "models/qwen3_config.h"
#include "models/qwen3_graph.h"
#include "support/output_path.h"
#include "support/read_file.h"

ABSL_FLAG(std::string, dump_dir, "", "write D/NNN-<pass>.kir after every pass and D/index.tsv");
ABSL_FLAG(std::string, stop_after, "", "stop after this pass");
ABSL_FLAG(bool, print_after_all, false, "print the IR after every pass to stderr");
ABSL_FLAG(std::string, disable_passes, "", "comma-separated passes to skip");
ABSL_FLAG(bool, time_passes, false, "print a table of per-pass times to stderr");
ABSL_FLAG(std::string, target, "sm_90", "GPU target (schedule tables)");
ABSL_FLAG(std::string, schedules, "", "schedule table (.txtpb) to use instead of the built-in one");
ABSL_FLAG(std::string, prefill_logits, "last",
          "last: a prefill leaves the logits of its last token only; all: of every prompt token");
ABSL_FLAG(bool, no_concurrent_launches, false,
          "run every decode launch on one stream, none beside another (independent q/k/v projections)");
ABSL_FLAG(bool, no_matvec_join, false,
          "launch a layer's q/k and v projections of different weight types apart, not as one matvec join");
ABSL_FLAG(bool, no_programmatic_launch, false,
          "emit no griddepcontrol: each kernel starts after the previous one ends (sm_90)");

namespace kiln::compiler {
namespace {

constexpr char kCompileUsage[] = R"(usage: kilnc compile X.gguf [-o X.kiln] [flags]

Builds the model's IR (load, prefill, decode) and runs the passes:
canonicalize, pack-weights, fuse, select-schedules, plan-buffers. Reads no
weight data: the bundle binds to the GGUF's tensors by name, type and shape.

  -o, --output F         write the bundle (after lower-to-kernels and codegen)
  --dump-dir D           write D/000-input.kir, D/001-canonicalize.kir, ...
                         and D/index.tsv (pass, changed, seconds, op count,
                         plan-buffers' arena/KV sizes)
  --stop-after P         stop after pass P (no bundle is written)
  --print-after-all      print the IR after every pass to stderr
  --disable-passes a,b   skip these passes
  --time-passes          print per-pass times to stderr
  --target sm_90         GPU target for schedule selection (default sm_90)
  --schedules T.txtpb    use this schedule table (e.g. from kilnc tune --export)
                         instead of the built-in table of the target
  --prefill-logits last  last (default): a prefill computes only its last
                         token's logits, the row generation samples from (the
                         final norm and LM head on one row: on the 8B, 512-token
                         time to first token 7 % shorter than with all, on an
                         H200; the logits buffer holds one row, and
                         --dump-logits feeds the prompt a token at a time);
                         all: the logits of every prompt token, which a
                         prefill's --dump-logits reads in one pass
  --no-matvec-join       decode launches a layer's q/k and v projections that
                         could not be packed into one matvec (a V of another
                         weight type, as in Q4_K_M) as two matvecs; by default
                         they are one kernel (a matvec join) wherever the
                         target can run their schedules in one launch (one
                         block size, register cap, k_split; shared memory)
  --no-concurrent-launches  decode runs every launch after the previous one
                         on one stream; by default projections launched as
                         two matvecs run side by side
  --no-programmatic-launch  no programmatic dependent launch (griddepcontrol) on sm_90:
                         each kernel starts only after the previous one has ended
                         (slower; for isolating launch-overlap effects)
)";

}  // namespace

int RunCompile(const std::vector<std::string>& args) {
  ParsedArgs parsed = ParseArgs("compile", args, kCompileUsage, {"model", "output", "target", "schedules", "dump_dir", "stop_after", "print_after_all", "disable_passes", "time_passes", "prefill_logits", "no_concurrent_launches", "no_matvec_join", "no_programmatic_launch"});
  if (parsed.exit_code) return *parsed.exit_code;
  const auto start = std::chrono::steady_clock::now();
  if (absl::Status s = CheckPositionals(parsed.positional, ModelPositionals()); !s.ok()) return Fail("compile", s);
  const std::string target = absl::GetFlag(FLAGS_target);
  const std::string output = absl::GetFlag(FLAGS_output);
  if (absl::Status s = CheckTargetFlag(target); !s.ok()) return Fail("compile", s);
  const std::string prefill_logits = absl::GetFlag(FLAGS_prefill_logits);
  if (prefill_logits != "all" && prefill_logits != "last")
    return Fail("compile", UsageError(absl::StrCat("--prefill-logits is '", prefill_logits, "', expected all or last")));
  passes::Pipeline pipeline;
  BuildPipeline(pipeline);
  passes::PipelineOptions po;
  po.dump_dir = absl::GetFlag(FLAGS_dump_dir);
  po.stop_after = absl::GetFlag(FLAGS_stop_after);
  po.print_after_all = absl::GetFlag(FLAGS_print_after_all);
  po.time_passes = absl::GetFlag(FLAGS_time_passes);
  for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_disable_passes), ',', absl::SkipEmpty()))
    po.disabled.insert(std::string(name));
  // Pass names are a flag's choices: a wrong one is a usage error.
  if (absl::Status s = pipeline.CheckOptions(po); !s.ok()) return Fail("compile", UsageError(s.message()));
  if (!output.empty())
    for (const char* needed : kPassesLoweringNeeds)
      if (po.disabled.contains(needed))
        return Fail("compile", UsageError(absl::StrCat("--disable-passes ", needed, ": a bundle (-o) needs ",
                                                       absl::StrJoin(kPassesLoweringNeeds, " and "),
                                                       "; without -o any pass may be skipped")));
  if (!po.stop_after.empty() && !output.empty())
    return Fail("compile", UsageError("--stop-after ends before the bundle is made, so -o would write nothing: "
                                      "give one of them (--dump-dir keeps what the passes did)"));
  auto file = OpenModel(parsed.positional);
  if (!file.ok()) return Fail("compile", file.status());
  auto config = models::ReadQwen3Config(**file);
  if (!config.ok()) return Fail("compile", config.status());
  if (absl::Status s = CheckOutputPath("-o", output,
                                       {(*file)->name(), absl::GetFlag(FLAGS_schedules)});
      !s.ok())
    return Fail("compile", s);
  models::GraphOptions graph;
  graph.prefill_last_logits = prefill_logits == "last";
  auto module = models::BuildQwen3Module(**file, *config, graph);
  if (!module.ok()) return Fail("compile", module.status());
  const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  passes::PassContext context;
  context.target = target;
  const std::string table_path = absl::GetFlag(FLAGS_schedules);
  std::string table_text;
  if (!table_path.empty()) {
    absl::StatusOr<std::string> text = ReadTextFile(table_path);
    if (!text.ok()) return Fail("compile", text.status());
    if (text->empty())
      return Fail("compile", absl::InvalidArgumentError(absl::StrCat(
                                 "--schedules ", table_path, " is empty (a table names its target and entries)")));
    table_text = *std::move(text);
    context.schedule_table = table_text;
    context.schedule_table_origin = table_path;
  }
  if (po.time_passes) std::fprintf(stderr, "building the IR: %.6f s\n", build_s);
  if (absl::Status s = pipeline.Run(**module, context, po); !s.ok()) return Fail("compile", s);

  std::string summary;
  for (const passes::PassRecord& r : pipeline.records())
    for (const auto& [k, v] : r.summary) absl::StrAppend(&summary, summary.empty() ? "" : ", ", k, " = ", v);
  const std::string& last = pipeline.records().empty() ? "input" : pipeline.records().back().pass;
  std::fprintf(stderr, "compile: %s: %zu passes run, stopped after %s%s%s\n", (*file)->name().c_str(),
               pipeline.records().size(), last.c_str(), summary.empty() ? "" : "; ", summary.c_str());

  if (output.empty()) return 0;  // with -o, --stop-after is refused above
  // lower-to-kernels, codegen and write-bundle.
  compiler::BundleOptions bo;
  bo.target = target;
  bo.dump_dir = po.dump_dir;
  bo.programmatic_launch = !absl::GetFlag(FLAGS_no_programmatic_launch);
  bo.concurrent_launches = !absl::GetFlag(FLAGS_no_concurrent_launches);
  bo.join_matvecs = !absl::GetFlag(FLAGS_no_matvec_join);
  auto done = CompileBundle(**module, **file, *config, bo, output);
  if (!done.ok()) return Fail("compile", done.status());
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr,
               "compile: wrote %s for %s: %d kernels (%s), launches load %d, prefill %d, decode %d; %.1f s\n",
               output.c_str(), target.c_str(), done->kernels, done->has_cubin ? "PTX + cubin" : "PTX only",
               done->load_launches, done->prefill_launches, done->decode_launches, total_s);
  return 0;
}

}  // namespace kiln::compiler
