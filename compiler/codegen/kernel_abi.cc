#include "compiler/codegen/kernel_abi.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/codegen/kernel_plans.h"
#include "compiler/codegen/kernel_validation.h"

namespace kiln::codegen {
namespace {
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

int MaxRegistersPerThread(int threads, int blocks_per_sm) {
  const int64_t warps = int64_t{std::max(blocks_per_sm, 1)} * CeilDiv(std::max(threads, 1), kWarp);
  const int64_t per_partition = CeilDiv(warps, 4);
  return static_cast<int>(std::min<int64_t>(255, 16384 / (kWarp * per_partition) / 8 * 8));
}

// ---------------------------------------------------------------------------

int Target::sm() const {
  switch (arch) {
    case GpuArch::kSm80: return 80;
    case GpuArch::kSm86: return 86;
    case GpuArch::kSm89: return 89;
    case GpuArch::kSm90: return 90;
  }
  return 0;
}

std::string Target::Name() const { return absl::StrCat("sm_", sm()); }

int64_t Target::MaxSharedPerBlock() const {
  switch (arch) {
    case GpuArch::kSm80: return 163 * 1024;
    case GpuArch::kSm86:
    case GpuArch::kSm89: return 99 * 1024;
    case GpuArch::kSm90: return 227 * 1024;
  }
  return 48 * 1024;
}

std::string Target::PtxFeature() const {
  // The lowest PTX each SM allows, except sm_90 where ptxas needs 8.0 for
  // the Hopper instructions (spec/nvptx-llvm19.md §0).
  switch (arch) {
    case GpuArch::kSm80: return "+ptx70";
    case GpuArch::kSm86: return "+ptx71";
    case GpuArch::kSm89: return "+ptx78";
    case GpuArch::kSm90: return "+ptx80";
  }
  return "";
}

absl::StatusOr<Target> Target::FromName(absl::string_view name) {
  std::string n = absl::AsciiStrToLower(std::string(name));
  if (absl::StartsWith(n, "sm_")) n = n.substr(3);
  Target t;
  if (n == "80") t.arch = GpuArch::kSm80;
  else if (n == "86") t.arch = GpuArch::kSm86;
  else if (n == "89") t.arch = GpuArch::kSm89;
  else if (n == "90") t.arch = GpuArch::kSm90;
  else
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported GPU target '", name, "' (expected sm_80, sm_86, sm_89 or sm_90)"));
  return t;
}

int64_t LaunchExpr::Eval(int64_t tokens, int64_t rows_arg) const {
  int64_t num = constant + t * tokens + rows * rows_arg;
  int64_t d = std::max<int64_t>(div, 1);
  return (num + d - 1) / d;
}

std::string LaunchExpr::ToString() const {
  std::string num;
  auto add = [&](int64_t coef, const char* sym) {
    if (coef == 0) return;
    if (!num.empty()) absl::StrAppend(&num, "+");
    if (coef == 1) absl::StrAppend(&num, sym);
    else absl::StrAppend(&num, coef, "*", sym);
  };
  add(t, "T");
  add(rows, "rows");
  if (constant != 0 || num.empty()) {
    if (!num.empty()) absl::StrAppend(&num, "+");
    absl::StrAppend(&num, constant);
  }
  if (div <= 1) return num;
  return absl::StrCat("ceil((", num, ")/", div, ")");
}

FormatGeometry GetFormatGeometry(WeightFormat format) {
  FormatGeometry g;
  switch (format) {
    case WeightFormat::kF32:
      g = {1, 4, 4, 4, 1, 1, false, 4};
      break;
    case WeightFormat::kF16:
    case WeightFormat::kBF16:
      g = {1, 2, 8, 8, 1, 1, false, 4};
      break;
    case WeightFormat::kQ8_0Planar:
      g = {32, 32, 32, 32, 1, 1, false, 9};
      break;
    case WeightFormat::kQ8_0:
      g = {32, 34, 32, 32, 1, 1, true, 17};
      break;
    case WeightFormat::kQ4_0:
      g = {32, 18, 32, 32, 1, 1, true, 9};
      break;
    case WeightFormat::kQ4_K:
      g = {256, 144, 64, 64, 1, 4, false, 12};
      break;
    case WeightFormat::kQ5_K:
      g = {256, 176, 64, 64, 1, 4, false, 20};
      break;
    case WeightFormat::kQ6_K:
      g = {256, 210, 32, 128, 4, 8, true, 17};
      break;
    case WeightFormat::kQ6_KPlanar:
      g = {256, 208, 64, 128, 2, 4, false, 15};
      break;
  }
  return g;
}

int64_t WeightRowBytes(WeightFormat format, int64_t cols) {
  FormatGeometry g = GetFormatGeometry(format);
  return cols / g.block_elems * g.block_bytes;
}

bool StreamableFormat(WeightFormat format) { return !GetFormatGeometry(format).staged; }

int64_t ScaleRowBytes(WeightFormat format, int64_t cols) {
  switch (format) {
    case WeightFormat::kQ8_0Planar: return cols / 32 * 2;
    case WeightFormat::kQ6_KPlanar: return cols / 256 * 2;
    default: return 0;
  }
}

const char* WeightFormatName(WeightFormat format) {
  switch (format) {
    case WeightFormat::kF16: return "f16";
    case WeightFormat::kBF16: return "bf16";
    case WeightFormat::kF32: return "f32";
    case WeightFormat::kQ8_0Planar: return "q8_0p";
    case WeightFormat::kQ8_0: return "q8_0";
    case WeightFormat::kQ4_0: return "q4_0";
    case WeightFormat::kQ4_K: return "q4_k";
    case WeightFormat::kQ5_K: return "q5_k";
    case WeightFormat::kQ6_K: return "q6_k";
    case WeightFormat::kQ6_KPlanar: return "q6_kp";
  }
  return "?";
}

const char* FamilyName(Family family) {
  switch (family) {
    case Family::kEmbed: return "embed";
    case Family::kMatVec: return "matvec";
    case Family::kGemm: return "gemm";
    case Family::kQkNormRopeStore: return "qk_norm_rope_store";
    case Family::kAttentionDecode: return "attention_decode";
    case Family::kAttentionPrefill: return "attention_prefill";
    case Family::kArgmax: return "argmax";
    case Family::kPackQ8_0: return "pack_q8_0";
    case Family::kPackQ6_K: return "pack_q6_k";
    case Family::kCopyRows: return "copy_rows";
    case Family::kMatVecJoin: return "matvec_join";
  }
  return "?";
}

KernelSpec JoinPart(const KernelSpec& join, size_t i) {
  KernelSpec part = join.parts[i];
  part.name = absl::StrCat(join.name, "_p", i);
  part.programmatic_launch = join.programmatic_launch;
  return part;
}

std::string JoinParamPrefix(size_t i) { return absl::StrCat("p", i, "_"); }

absl::StatusOr<KernelAbi> DescribeKernel(const KernelSpec& spec, const Target& target) {
  absl::Status s = ValidateKernelSpec(spec, target);
  if (!s.ok()) return s;
  KernelAbi abi;
  auto ptr = [&](const char* name) { abi.params.push_back({name, ParamType::kPointer, 0, 8}); };
  auto i32 = [&](const char* name) { abi.params.push_back({name, ParamType::kI32, 0, 4}); };
  auto constant = [](int64_t v) { LaunchExpr e; e.constant = v; return e; };
  auto ceil_t = [](int64_t d) { LaunchExpr e; e.t = 1; e.div = d; return e; };
  LaunchExpr rows_arg;
  rows_arg.rows = 1;
  switch (spec.family) {
    case Family::kMatVec:
    case Family::kGemm: {
      ptr("w");
      ptr("w_scales");
      ptr("x");
      ptr("norm_w");
      ptr("out");
      i32("T");
      if (spec.epilogue == Epilogue::kSiluMulWith) ptr("extra");  // f32 [T, rows], the gate
      if (spec.family == Family::kMatVec) {
        MatVecPlan p = PlanMatVec(spec);
        abi.block = {p.threads, 1, 1};
        abi.grid = {constant(CeilDiv(spec.rows, int64_t{p.rows_per_block} * p.row_tiles)), constant(p.k_split),
                    constant(1)};
        abi.static_shared_bytes = p.shared_bytes;
        abi.dynamic_shared_bytes = p.x_bytes + p.stream_bytes;
        abi.max_tokens = p.tokens;
        abi.min_blocks_per_sm = spec.matvec.blocks_per_sm;
      } else {
        GemmPlan p = PlanGemm(spec);
        abi.block = {p.threads, 1, 1};
        abi.grid = {constant(CeilDiv(spec.rows, p.tile_m)), ceil_t(p.tile_n), constant(1)};
        abi.dynamic_shared_bytes = p.shared_bytes;
        abi.max_tokens = 1 << 30;
      }
      break;
    }
    case Family::kEmbed:
      ptr("table");
      ptr("tokens");
      ptr("out");
      i32("T");
      abi.block = {spec.elementwise.threads, 1, 1};
      abi.grid = {ceil_t(1), constant(1), constant(1)};
      abi.max_tokens = 1 << 30;
      break;
    case Family::kQkNormRopeStore:
      ptr("qkv");
      ptr("q_norm");
      ptr("k_norm");
      ptr("pos");
      ptr("k_cache");
      ptr("v_cache");
      ptr("q_out");
      i32("T");
      abi.block = {spec.elementwise.threads, 1, 1};
      abi.grid = {ceil_t(1), constant(spec.n_head + spec.n_head_kv), constant(1)};
      abi.static_shared_bytes = 4 * (spec.elementwise.threads / kWarp) + 16;
      abi.max_tokens = 1 << 30;
      break;
    case Family::kAttentionDecode: {
      ptr(spec.rope_fused ? "qkv" : "q");
      ptr("k_cache");
      ptr("v_cache");
      ptr("pos");
      ptr("out");
      ptr("partial");
      ptr("counter");
      if (spec.rope_fused) {
        ptr("q_norm");
        ptr("k_norm");
      }
      DecodePlan p = PlanAttentionDecode(spec);
      abi.block = {p.threads, 1, 1};
      abi.grid = {constant(spec.n_head_kv), constant(p.max_splits), constant(1)};
      abi.static_shared_bytes = p.shared_bytes;
      abi.min_blocks_per_sm = spec.attention.blocks_per_sm;
      break;
    }
    case Family::kAttentionPrefill:
      ptr("q");
      ptr("k_cache");
      ptr("v_cache");
      ptr("pos");
      ptr("out");
      i32("T");
      abi.block = {spec.attention.threads, 1, 1};
      abi.grid = {ceil_t(spec.attention.query_block), constant(spec.n_head), constant(1)};
      abi.max_tokens = 1 << 30;
      if (spec.attention.stage_keys) abi.static_shared_bytes = PlanAttentionPrefill(spec).shared_bytes;
      break;
    case Family::kArgmax: {
      ptr("logits");
      ptr("out");
      ptr("partial");
      ptr("counter");
      i32("cols");
      ArgmaxPlan p = PlanArgmax(spec);
      abi.block = {p.threads, 1, 1};
      abi.grid = {constant(spec.rows), constant(p.blocks), constant(1)};
      abi.static_shared_bytes = p.shared_bytes;
      break;
    }
    case Family::kPackQ8_0:
    case Family::kPackQ6_K:
      ptr("src");
      ptr("qs");
      ptr("d");
      i32("rows");
      abi.block = {spec.elementwise.threads, 1, 1};
      abi.grid = {rows_arg, constant(1), constant(1)};
      break;
    case Family::kMatVecJoin:
      // Part i's parameters, named "p<i>_<name>", then part i + 1's; its
      // blocks follow part i - 1's along x.
      abi.grid = {constant(0), constant(spec.parts[0].matvec.k_split), constant(1)};
      for (size_t i = 0; i < spec.parts.size(); ++i) {
        absl::StatusOr<KernelAbi> part = DescribeKernel(JoinPart(spec, i), target);
        if (!part.ok()) return part.status();
        for (const KernelParam& p : part->params)
          abi.params.push_back({absl::StrCat(JoinParamPrefix(i), p.name), p.type, 0, p.size});
        abi.grid[0].constant += part->grid[0].constant;
        abi.block = part->block;
        abi.static_shared_bytes = std::max(abi.static_shared_bytes, part->static_shared_bytes);
        abi.dynamic_shared_bytes = std::max(abi.dynamic_shared_bytes, part->dynamic_shared_bytes);
        abi.max_tokens = part->max_tokens;
        abi.min_blocks_per_sm = part->min_blocks_per_sm;
      }
      break;
    case Family::kCopyRows:
      ptr("src");
      ptr("dst");
      i32("rows");
      i32("dst_row0");
      i32("group_rows");
      i32("group_stride");
      abi.block = {spec.elementwise.threads, 1, 1};
      abi.grid = {rows_arg, constant(1), constant(1)};
      break;
  }
  int offset = 0;
  for (KernelParam& p : abi.params) {
    offset = (offset + p.size - 1) / p.size * p.size;
    p.offset = offset;
    offset += p.size;
  }
  return abi;
}

}  // namespace kiln::codegen
