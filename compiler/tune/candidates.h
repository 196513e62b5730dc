// What `kilnc tune` searches (docs/tuning.md): the tuning units of a model —
// one per distinct (family, weight dtype, rows, cols) its decode plan
// launches — and each unit's candidate kernels: the unit's kernel spec with
// a schedule from the family's search space (schedules/spaces.txtpb),
// minus the combinations the kernel ABI rejects.
#ifndef KILN_COMPILER_TUNE_CANDIDATES_H_
#define KILN_COMPILER_TUNE_CANDIDATES_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/codegen/kernel_abi.h"
#include "compiler/codegen/kernel_spec.h"
#include "compiler/tune/spec_entries.h"
#include "ir/ir.h"
#include "models/gguf/gguf_file.h"
#include "schedules/schedule.pb.h"
#include "schedules/schedules.h"
#include "schedules/tuning.h"

namespace kiln::tune {

// The families the tuner can time (the worker has a runner for each).
const std::vector<std::string>& TunableFamilies();

struct TuneUnit {
  schedules::ScheduleKey key;
  codegen::KernelSpec spec;  // as lowered (prologue, epilogue, current schedule)
  int launches = 0;          // launches of this key per decode step
  int64_t context = 0;       // the model's context (decode attention: split_positions covers it)
};

struct CollectOptions {
  std::string target = "sm_90";
  std::vector<std::string> families;  // empty: every tunable family
  bool join_matvecs = true;           // compiler::LowerOptions::join_matvecs
};

// Lowers `module` (after the pass pipeline, compiler/pipelines.h) and
// returns one unit per distinct key of the decode plan's kernels of the
// chosen families (the spec launched most often represents a key shared by
// several kernels), ordered by family, then bytes per step, largest first.
absl::StatusOr<std::vector<TuneUnit>> CollectUnits(const ir::Module& module, const gguf::GgufFile& file,
                                                   const CollectOptions& options);

struct Candidate {
  int unit = 0;                      // index into the units
  schedules::ScheduleEntry entry;    // family + schedule
  std::string schedule;              // schedules::CanonicalSchedule(entry)
  std::string variant;               // "" for real ones; "test_fault"/"test_hang" from the test hook
  codegen::KernelSpec spec;          // the unit's spec with this schedule, named for the candidate
  std::string code;                  // CodeDigest of its PTX (set by the search before the cache lookup)
  // Its PTX under kCodeIdentityName, kept from the code pass until the
  // search compiles it (NamedPtx), so LLVM runs once per candidate; "" once
  // it is compiled, found in the cache, or when codegen failed.
  std::string identity_ptx;
};

// The candidate's PTX: codegen's, or SyntheticPtx's for the test hook's.
absl::StatusOr<std::string> CandidatePtx(const Candidate& c, const codegen::Target& target);
// 64-bit FNV-1a of PTX text, 16 hex digits. Stable across runs and machines.
std::string CodeDigest(std::string_view ptx);
// The fixed kernel name a candidate's code identity is taken under.
inline constexpr char kCodeIdentityName[] = "kiln_tune_candidate";
// A candidate's code identity in the cache (TuneRecord::code): CodeDigest
// of its PTX compiled under kCodeIdentityName, so the same schedule of the
// same shape has the same code whatever its place in a search (unit and
// candidate index name the kernel otherwise); and that PTX.
struct CandidateIdentity {
  std::string code;
  std::string ptx;
};
absl::StatusOr<CandidateIdentity> IdentifyCandidate(const Candidate& c, const codegen::Target& target);
// PTX emitted under kCodeIdentityName with every occurrence of that name
// (the entry, its parameters) replaced by `name`: what CandidatePtx gives
// for the candidate named `name` (tune_test checks it on every family).
std::string NamedPtx(std::string_view identity_ptx, std::string_view name);

// The unit's candidates: its current schedule first, then the search space
// (`limit` > 0 keeps only the first `limit`), dropping what
// codegen::ValidateKernelSpec rejects. `rejected` (optional) counts those.
absl::StatusOr<std::vector<Candidate>> EnumerateCandidates(const TuneUnit& unit, int unit_index,
                                                           const schedules::SearchSpaces& spaces,
                                                           const codegen::Target& target, int limit,
                                                           int* rejected = nullptr);

// The test hook's synthetic candidates of a unit (docs/tuning.md): kernels
// with the unit's ABI that store out of bounds ("test_fault") or spin
// forever ("test_hang"). Their image is SyntheticPtx's.
std::vector<Candidate> SyntheticCandidates(const TuneUnit& unit, int unit_index);
// A PTX module with one entry named spec.name taking the ABI's parameters,
// whose body faults (variant "test_fault") or never ends ("test_hang").
absl::StatusOr<std::string> SyntheticPtx(const codegen::KernelSpec& spec, const codegen::Target& target,
                                         const std::string& variant);

// Bytes one launch reads from device memory (weights and scales for
// matvec; K and V up to `position` for decode attention): GB/s = bytes / time.
int64_t BytesRead(const codegen::KernelSpec& spec, int64_t position);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_CANDIDATES_H_
