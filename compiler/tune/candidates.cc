#include "compiler/tune/candidates.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/kernel_validation.h"
#include "compiler/lower/lower_to_kernels.h"
#include "runtime/bundle/bundle_format.h"
#include "models/qwen3_config.h"
#include "models/vocab_from_gguf.h"
#include "support/status_macros.h"

namespace kiln::tune {
namespace {

using codegen::Family;
using codegen::KernelSpec;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

const std::vector<std::string>& TunableFamilies() {
  static const std::vector<std::string> kFamilies = {"matvec", "attention_decode"};
  return kFamilies;
}

absl::StatusOr<std::vector<TuneUnit>> CollectUnits(const ir::Module& module, const gguf::GgufFile& file,
                                                   const CollectOptions& options) {
  ASSIGN_OR_RETURN(models::Qwen3Config config, models::ReadQwen3Config(file));
  ASSIGN_OR_RETURN(tokenizer::Vocab vocab, models::ReadVocab(file));
  compiler::LowerOptions lo;
  ASSIGN_OR_RETURN(lo.target, codegen::Target::FromName(options.target));
  lo.max_prefill_tokens = std::min<int64_t>(lo.max_prefill_tokens, config.context_length);
  lo.join_matvecs = options.join_matvecs;
  ASSIGN_OR_RETURN(compiler::LoweredModel lowered, compiler::LowerToKernels(module, file, config, vocab, lo));

  const std::vector<std::string>& families = options.families.empty() ? TunableFamilies() : options.families;
  // Launches per kernel of one decode step.
  std::map<uint32_t, int> launches;
  for (const runtime::Launch& l : lowered.manifest.decode().launches()) ++launches[l.kernel()];
  std::map<std::string, TuneUnit> by_key;
  std::map<std::string, int> representative;  // launches of the spec standing for the key
  std::vector<std::string> order;
  auto add = [&](const KernelSpec& spec, int n) -> absl::Status {
    const std::string family = codegen::FamilyName(spec.family);
    if (std::find(families.begin(), families.end(), family) == families.end()) return absl::OkStatus();
    ASSIGN_OR_RETURN(schedules::ScheduleKey key, KeyOfSpec(spec));
    const std::string id = schedules::ShapeKey(key);
    auto [it, fresh] = by_key.try_emplace(id);
    TuneUnit& u = it->second;
    if (fresh) order.push_back(id);
    if (fresh || n > representative[id]) {
      representative[id] = n;
      u.key = key;
      u.spec = spec;
      u.context = config.context_length;
    }
    u.launches += n;
    return absl::OkStatus();
  };
  for (const auto& [k, n] : launches) {
    if (k >= lowered.kernels.size()) return absl::InternalError("a decode launch names no kernel");
    const KernelSpec& spec = lowered.kernels[k];
    // A join's parts keep their own schedules (of their shapes' entries):
    // they are tuned as the matvecs they are.
    if (spec.family == Family::kMatVecJoin) {
      for (size_t i = 0; i < spec.parts.size(); ++i) RETURN_IF_ERROR(add(codegen::JoinPart(spec, i), n));
    } else {
      RETURN_IF_ERROR(add(spec, n));
    }
  }
  std::vector<TuneUnit> units;
  for (const std::string& id : order) units.push_back(std::move(by_key[id]));
  auto rank = [&](const TuneUnit& u) {
    return std::find(families.begin(), families.end(), u.key.family) - families.begin();
  };
  std::stable_sort(units.begin(), units.end(), [&](const TuneUnit& a, const TuneUnit& b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    return BytesRead(a.spec, 4095) * a.launches > BytesRead(b.spec, 4095) * b.launches;
  });
  return units;
}

absl::StatusOr<std::vector<Candidate>> EnumerateCandidates(const TuneUnit& unit, int unit_index,
                                                           const schedules::SearchSpaces& spaces,
                                                           const codegen::Target& target, int limit,
                                                           int* rejected) {
  ASSIGN_OR_RETURN(schedules::ScheduleEntry base, EntryOfSpec(unit.spec));
  std::vector<schedules::ScheduleEntry> entries = {base};
  if (const schedules::SearchSpace* space = schedules::FindSpace(spaces, unit.key)) {
    ASSIGN_OR_RETURN(entries, schedules::EnumerateSchedules(*space, base));
  }
  std::vector<Candidate> out;
  std::set<std::string> seen;
  if (rejected != nullptr) *rejected = 0;
  for (schedules::ScheduleEntry& e : entries) {
    // Decode attention must cover the whole context (lower-to-kernels
    // checks): the cap on a split's length is the longest split the context
    // needs, ceil(context / max_splits) rounded up to 32 as the kernel rounds,
    // and at least min_split_positions. The smallest cap is the smallest
    // score buffer.
    if (unit.spec.family == Family::kAttentionDecode && unit.context > 0 && e.attention().max_splits() > 0) {
      const int64_t need = CeilDiv(CeilDiv(unit.context, e.attention().max_splits()), 32) * 32;
      e.mutable_attention()->set_split_positions(
          static_cast<int32_t>(std::max<int64_t>(need, e.attention().min_split_positions())));
    }
    Candidate c;
    c.unit = unit_index;
    c.schedule = schedules::CanonicalSchedule(e);
    if (!seen.insert(c.schedule).second) continue;
    c.spec = unit.spec;
    RETURN_IF_ERROR(ApplyEntry(e, &c.spec));
    c.entry = std::move(e);
    c.spec.name = absl::StrCat("tune_u", unit_index, "_c", out.size());
    if (!codegen::ValidateKernelSpec(c.spec, target).ok()) {
      if (rejected != nullptr) ++*rejected;
      continue;
    }
    out.push_back(std::move(c));
    if (limit > 0 && static_cast<int>(out.size()) >= limit) break;
  }
  return out;
}

std::vector<Candidate> SyntheticCandidates(const TuneUnit& unit, int unit_index) {
  std::vector<Candidate> out;
  for (const char* variant : {"test_fault", "test_hang"}) {
    Candidate c;
    c.unit = unit_index;
    c.spec = unit.spec;
    c.spec.name = absl::StrCat("tune_u", unit_index, "_", variant);
    c.variant = variant;
    absl::StatusOr<schedules::ScheduleEntry> e = EntryOfSpec(unit.spec);
    if (e.ok()) c.entry = *e;
    c.schedule = schedules::CanonicalSchedule(c.entry);
    out.push_back(std::move(c));
  }
  return out;
}

absl::StatusOr<std::string> SyntheticPtx(const KernelSpec& spec, const codegen::Target& target,
                                         const std::string& variant) {
  if (variant != "test_fault" && variant != "test_hang")
    return absl::InvalidArgumentError(absl::StrCat("unknown synthetic variant '", variant, "'"));
  ASSIGN_OR_RETURN(codegen::KernelAbi abi, codegen::DescribeKernel(spec, target));
  // "+ptx80" -> "8.0".
  std::string isa = target.PtxFeature().substr(4);
  isa = absl::StrCat(isa.substr(0, isa.size() - 1), ".", isa.substr(isa.size() - 1));
  std::string params;
  int out = -1;
  for (size_t i = 0; i < abi.params.size(); ++i) {
    const codegen::KernelParam& p = abi.params[i];
    absl::StrAppend(&params, i ? ",\n" : "", "  .param .", p.type == codegen::ParamType::kPointer ? "u64" : "u32",
                    " p", i);
    if (p.type == codegen::ParamType::kPointer && (out < 0 || p.name == "out")) out = static_cast<int>(i);
  }
  if (out < 0) return absl::InvalidArgumentError("a synthetic kernel needs a pointer parameter");
  // test_fault: one store 1 TiB past the output (an illegal address, a
  // sticky error). test_hang: spins on a volatile load of the (poisoned)
  // output until it holds a value nothing writes.
  const std::string body =
      variant == "test_fault"
          ? absl::StrCat("  ld.param.u64 %rd1, [p", out, "];\n  cvta.to.global.u64 %rd2, %rd1;\n",
                         "  add.u64 %rd3, %rd2, 1099511627776;\n  st.global.u32 [%rd3], 1;\n  ret;\n")
          : absl::StrCat("  ld.param.u64 %rd1, [p", out, "];\n  cvta.to.global.u64 %rd2, %rd1;\n", "$Lspin:\n",
                         "  ld.volatile.global.u32 %r1, [%rd2];\n  setp.ne.u32 %p1, %r1, 2143354862;\n",
                         "  @%p1 bra $Lspin;\n  ret;\n");
  return absl::StrCat("// Synthetic test kernel (kilnc tune test hook): ", variant, "\n.version ", isa, "\n.target ",
                      target.Name(), "\n.address_size 64\n\n.visible .entry ", spec.name, "(\n", params,
                      "\n)\n{\n  .reg .b64 %rd<4>;\n  .reg .b32 %r<2>;\n  .reg .pred %p<2>;\n", body, "}\n");
}

int64_t BytesRead(const KernelSpec& spec, int64_t position) {
  switch (spec.family) {
    case Family::kMatVec:
    case Family::kGemm: {
      int64_t bytes = codegen::WeightRowBytes(spec.weight, spec.cols) * spec.rows;
      bytes += spec.rows * codegen::ScaleRowBytes(spec.weight, spec.cols);
      return bytes;
    }
    case Family::kAttentionDecode:
      return 2 * (position + 1) * spec.n_head_kv * spec.head_dim * (spec.kv_f16 ? 2 : 4);
    default:
      return 0;
  }
}

absl::StatusOr<std::string> CandidatePtx(const Candidate& c, const codegen::Target& target) {
  if (!c.variant.empty()) return SyntheticPtx(c.spec, target, c.variant);
  absl::StatusOr<codegen::CompiledModule> m = codegen::EmitPtx({c.spec}, target);
  if (!m.ok()) return absl::Status(m.status().code(), absl::StrCat("codegen: ", m.status().message()));
  return std::move(m->ptx);
}

std::string CodeDigest(std::string_view ptx) {
  return absl::StrFormat("%016x", runtime::Fnv1a64(absl::Span<const uint8_t>(
                                      reinterpret_cast<const uint8_t*>(ptx.data()), ptx.size())));
}

absl::StatusOr<CandidateIdentity> IdentifyCandidate(const Candidate& c, const codegen::Target& target) {
  // The candidate's name (its place in the search) is in the PTX; the code
  // is the kernel's, so every candidate is compiled under one name here.
  Candidate named = c;
  named.spec.name = kCodeIdentityName;
  CandidateIdentity id;
  ASSIGN_OR_RETURN(id.ptx, CandidatePtx(named, target));
  id.code = CodeDigest(id.ptx);
  return id;
}

std::string NamedPtx(std::string_view identity_ptx, std::string_view name) {
  return absl::StrReplaceAll(absl::string_view(identity_ptx.data(), identity_ptx.size()),
                             {{absl::string_view(kCodeIdentityName), absl::string_view(name.data(), name.size())}});
}

}  // namespace kiln::tune
