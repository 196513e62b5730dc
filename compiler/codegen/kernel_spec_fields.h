// The fields of a KernelSpec by name: the one list that every walk over a
// spec's fields reads, so a new field is added once. Its users: the tuner's
// worker messages (compiler/tune/wire.cc), schedule table entries
// (compiler/tune/spec_entries.cc: a schedule's fields, named as in
// schedules/schedule.proto), kernel deduplication
// (compiler/lower/lowering_context.cc) and the lowering's reading of the
// IR's schedule dicts (compiler/lower/lower_to_kernels.cc ApplySchedule).
// `f(name, value)` gets each field as an lvalue (const when the spec is);
// take the name as absl::string_view (the prefixed names are temporaries).
#ifndef KILN_COMPILER_CODEGEN_KERNEL_SPEC_FIELDS_H_
#define KILN_COMPILER_CODEGEN_KERNEL_SPEC_FIELDS_H_

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "compiler/codegen/kernel_spec.h"

namespace kiln::codegen {

template <typename Schedule, typename F>
void VisitMatVecScheduleFields(Schedule& m, F&& f) {
  f("threads", m.threads);
  f("rows_per_block", m.rows_per_block);
  f("vector_bytes", m.vector_bytes);
  f("k_split", m.k_split);
  f("max_tokens", m.max_tokens);
  f("unroll", m.unroll);
  f("row_groups", m.row_groups);
  f("stage_all", m.stage_all);
  f("int8_activations", m.int8_activations);
  f("row_tiles", m.row_tiles);
  f("stream_stages", m.stream_stages);
  f("release_early", m.release_early);
  f("pipeline_loads", m.pipeline_loads);
  f("pipeline_rows", m.pipeline_rows);
  f("blocks_per_sm", m.blocks_per_sm);
  f("warp_reduce", m.warp_reduce);
}

template <typename Schedule, typename F>
void VisitGemmScheduleFields(Schedule& g, F&& f) {
  f("tile_m", g.tile_m);
  f("tile_n", g.tile_n);
  f("tile_k", g.tile_k);
  f("threads", g.threads);
  f("stages", g.stages);
  f("tensor_cores", g.tensor_cores);
}

template <typename Schedule, typename F>
void VisitAttentionScheduleFields(Schedule& a, F&& f) {
  f("threads", a.threads);
  f("split_positions", a.split_positions);
  f("max_splits", a.max_splits);
  f("min_split_positions", a.min_split_positions);
  f("blocks_per_sm", a.blocks_per_sm);
  f("release_after_wait", a.release_after_wait);
  f("keys_in_flight", a.keys_in_flight);
  f("value_bytes_in_flight", a.value_bytes_in_flight);
  f("query_block", a.query_block);
  f("key_block", a.key_block);
  f("stage_keys", a.stage_keys);
}

template <typename Schedule, typename F>
void VisitElementwiseScheduleFields(Schedule& e, F&& f) {
  f("threads", e.threads);
  f("block_cols", e.block_cols);
  f("max_blocks", e.max_blocks);
}

// Every field of the spec but its name; the schedules' fields prefixed
// "matvec.", "gemm.", "attention.", "elementwise.".
template <typename Spec, typename F>
void VisitSpecFields(Spec& s, F&& f) {
  f("family", s.family);
  f("weight", s.weight);
  f("rows", s.rows);
  f("cols", s.cols);
  f("prologue", s.prologue);
  f("epilogue", s.epilogue);
  f("pair_group", s.pair_group);
  f("eps", s.eps);
  f("row_bytes", s.row_bytes);
  f("n_head", s.n_head);
  f("n_head_kv", s.n_head_kv);
  f("head_dim", s.head_dim);
  f("rope_base", s.rope_base);
  f("rope_scaling.freq_scale", s.rope_scaling.freq_scale);
  f("rope_scaling.ext_factor", s.rope_scaling.ext_factor);
  f("rope_scaling.ramp_low", s.rope_scaling.ramp_low);
  f("rope_scaling.ramp_high", s.rope_scaling.ramp_high);
  f("rope_scaling.mscale", s.rope_scaling.mscale);
  f("attn_scale", s.attn_scale);
  f("kv_f16", s.kv_f16);
  f("rope_fused", s.rope_fused);
  auto prefixed = [&f](absl::string_view prefix) {
    return [&f, prefix](absl::string_view name, auto& v) { f(absl::StrCat(prefix, name), v); };
  };
  VisitMatVecScheduleFields(s.matvec, prefixed("matvec."));
  VisitGemmScheduleFields(s.gemm, prefixed("gemm."));
  VisitAttentionScheduleFields(s.attention, prefixed("attention."));
  VisitElementwiseScheduleFields(s.elementwise, prefixed("elementwise."));
  f("programmatic_launch", s.programmatic_launch);
}

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_KERNEL_SPEC_FIELDS_H_
