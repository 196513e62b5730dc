#include "schedules/schedules.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace kiln::schedules {
namespace {

struct FamilyKind {
  std::string_view family;
  ScheduleEntry::ScheduleCase kind;
};
constexpr FamilyKind kFamilies[] = {
    {"embed", ScheduleEntry::kElementwise},
    {"matvec", ScheduleEntry::kMatvec},
    {"gemm", ScheduleEntry::kGemm},
    {"qk_norm_rope_store", ScheduleEntry::kElementwise},
    {"attention_decode", ScheduleEntry::kAttention},
    {"attention_prefill", ScheduleEntry::kAttention},
    {"argmax", ScheduleEntry::kElementwise},
};

std::string_view CaseName(ScheduleEntry::ScheduleCase c) {
  switch (c) {
    case ScheduleEntry::kMatvec: return "matvec";
    case ScheduleEntry::kGemm: return "gemm";
    case ScheduleEntry::kAttention: return "attention";
    case ScheduleEntry::kElementwise: return "elementwise";
    case ScheduleEntry::SCHEDULE_NOT_SET: break;
  }
  return "none";
}

bool InRange(int64_t v, int64_t lo, int64_t hi) { return v >= lo && (hi == 0 || v <= hi); }

bool Matches(const ScheduleEntry& e, const ScheduleKey& key) {
  if (e.family() != key.family) return false;
  if (!e.weight_dtype().empty() && e.weight_dtype() != key.weight_dtype) return false;
  return InRange(key.rows, e.min_rows(), e.max_rows()) && InRange(key.cols, e.min_cols(), e.max_cols());
}

// Bytes per weight decide how many rows one 256-thread block streams: a
// pass of 256 x 16-byte loads is 4 KiB, so formats with fewer bytes per
// weight take more rows per block to keep loads deep (docs/codegen.md,
// "Performance risks").
int MatVecRowsPerBlock(std::string_view dtype) {
  if (dtype == "f32" || dtype == "f16" || dtype == "bf16") return 2;
  if (dtype == "q4_0" || dtype == "q4_k" || dtype == "q5_k") return 8;
  return 4;  // q8_0, q8_0_planar, q6_k, q6_k_blocks
}

// The format's column window (compiler/codegen kernel_abi.cc
// GetFormatGeometry), rounded up to 32: gemm tile_k must be a multiple.
int GemmTileK(std::string_view dtype) {
  if (dtype == "q6_k" || dtype == "q6_k_blocks") return 128;
  if (dtype == "q4_k" || dtype == "q5_k") return 64;
  return 32;
}

}  // namespace

std::string NormalizeTarget(std::string_view target) { return absl::AsciiStrToLower(std::string(target)); }

absl::StatusOr<ScheduleEntry::ScheduleCase> ScheduleCaseOf(std::string_view family) {
  for (const FamilyKind& f : kFamilies)
    if (f.family == family) return f.kind;
  return absl::InvalidArgumentError(absl::StrCat("unknown kernel family '", std::string(family), "'"));
}

ScheduleEntry HeuristicSchedule(const ScheduleKey& key) {
  ScheduleEntry e;
  e.set_family(key.family);
  e.set_weight_dtype(key.weight_dtype);
  const std::string& f = key.family;
  if (f == "matvec") {
    MatVecSchedule* m = e.mutable_matvec();
    m->set_threads(256);
    m->set_rows_per_block(MatVecRowsPerBlock(key.weight_dtype));
    m->set_vector_bytes(16);
    m->set_unroll(2);
  } else if (f == "gemm") {
    GemmSchedule* g = e.mutable_gemm();
    g->set_tile_m(64);
    g->set_tile_n(64);
    g->set_tile_k(GemmTileK(key.weight_dtype));
    g->set_threads(128);
    g->set_stages(1);
    g->set_tensor_cores(true);
  } else if (f == "attention_decode") {
    AttentionSchedule* a = e.mutable_attention();
    a->set_threads(128);
    // n_head_kv x 64 blocks (512 for 8 KV heads: ~4 per SM on 108-132
    // SMs) at long context; splits of at least 64 positions, so a short
    // context runs on few splits (one up to 64 positions: no merge). The
    // cap 640 makes 64 x 640 = 40960, Qwen3's full context.
    a->set_split_positions(640);
    a->set_max_splits(64);
    a->set_min_split_positions(64);
  } else if (f == "attention_prefill") {
    AttentionSchedule* a = e.mutable_attention();
    a->set_threads(128);
    a->set_query_block(64);
    a->set_key_block(64);
  } else {
    e.mutable_elementwise()->set_threads(f == "argmax" ? 1024 : f == "qk_norm_rope_store" ? 128 : 256);
    if (f == "argmax") {
      // A row over blocks of 2048 logits (8 KiB, 2 loads per thread), at
      // most 128 (151936 logits: 75 blocks), merged by the last to finish.
      e.mutable_elementwise()->set_block_cols(2048);
      e.mutable_elementwise()->set_max_blocks(128);
    }
  }
  return e;
}

absl::StatusOr<ScheduleLibrary> ScheduleLibrary::Builtin() {
  ScheduleLibrary lib;
  for (const EmbeddedTable& t : EmbeddedTables()) {
    absl::Status s = lib.AddTableText(t.text, t.file);
    if (!s.ok()) return s;
  }
  return lib;
}

absl::Status ParseTextProto(std::string_view text, std::string_view origin, google::protobuf::Message* out) {
  google::protobuf::TextFormat::Parser parser;
  std::string error;
  struct Collector : google::protobuf::io::ErrorCollector {
    std::string* out;
    explicit Collector(std::string* o) : out(o) {}
    void AddError(int line, int column, const std::string& message) override {
      if (out->empty()) *out = absl::StrCat(line + 1, ":", column + 1, ": ", message);
    }
  } collector(&error);
  parser.RecordErrorsTo(&collector);
  if (!parser.ParseFromString(std::string(text), out))
    return absl::InvalidArgumentError(absl::StrCat(std::string(origin), ":", error));
  return absl::OkStatus();
}

absl::Status ScheduleLibrary::AddTableText(std::string_view text, std::string_view origin) {
  ScheduleTable table;
  if (absl::Status s = ParseTextProto(text, origin, &table); !s.ok()) return s;
  return AddTable(std::move(table), origin);
}

absl::Status ScheduleLibrary::AddTable(ScheduleTable table, std::string_view origin) {
  auto bad = [&](std::string what) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(origin), ": ", what));
  };
  if (table.target().empty()) return bad("the table has no target");
  table.set_target(NormalizeTarget(table.target()));
  if (HasTarget(table.target())) return bad(absl::StrCat("a second table for ", table.target()));
  for (int i = 0; i < table.entries_size(); ++i) {
    const ScheduleEntry& e = table.entries(i);
    const std::string at = absl::StrCat("entry ", i, " (family \"", e.family(), "\"): ");
    absl::StatusOr<ScheduleEntry::ScheduleCase> kind = ScheduleCaseOf(e.family());
    if (!kind.ok()) return bad(absl::StrCat(at, kind.status().message()));
    if (e.schedule_case() != *kind)
      return bad(absl::StrCat(at, "has a ", std::string(CaseName(e.schedule_case())), " schedule, expected ",
                              std::string(CaseName(*kind))));
    if (e.min_rows() < 0 || e.max_rows() < 0 || e.min_cols() < 0 || e.max_cols() < 0 ||
        (e.max_rows() != 0 && e.max_rows() < e.min_rows()) ||
        (e.max_cols() != 0 && e.max_cols() < e.min_cols()))
      return bad(absl::StrCat(at, "has an empty or negative shape range"));
  }
  tables_.push_back(std::move(table));
  return absl::OkStatus();
}

std::vector<std::string> ScheduleLibrary::Targets() const {
  std::vector<std::string> out;
  for (const ScheduleTable& t : tables_) out.push_back(t.target());
  std::sort(out.begin(), out.end());
  return out;
}

bool ScheduleLibrary::HasTarget(std::string_view target) const {
  const std::string n = NormalizeTarget(target);
  return std::any_of(tables_.begin(), tables_.end(), [&](const ScheduleTable& t) { return t.target() == n; });
}

absl::StatusOr<ScheduleChoice> ScheduleLibrary::Lookup(const ScheduleKey& key, std::string_view target) const {
  absl::StatusOr<ScheduleEntry::ScheduleCase> kind = ScheduleCaseOf(key.family);
  if (!kind.ok()) return kind.status();
  ScheduleChoice choice;
  choice.target = NormalizeTarget(target);
  for (const ScheduleTable& t : tables_) {
    if (t.target() != choice.target) continue;
    for (const ScheduleEntry& e : t.entries()) {
      if (!Matches(e, key)) continue;
      choice.entry = e;
      choice.provenance = e.has_provenance() ? e.provenance() : t.provenance();
      return choice;
    }
  }
  choice.entry = HeuristicSchedule(key);
  choice.provenance.set_source(Provenance::HEURISTIC);
  choice.provenance.set_note(HasTarget(target) ? "no table entry matches: built-in defaults"
                                               : "no table for this target: built-in defaults");
  choice.fallback = true;
  return choice;
}

absl::StatusOr<ScheduleChoice> LookupSchedule(std::string_view family, std::string_view weight_dtype,
                                              int64_t rows, int64_t cols, std::string_view target) {
  absl::StatusOr<ScheduleLibrary> lib = ScheduleLibrary::Builtin();
  if (!lib.ok()) return lib.status();
  return lib->Lookup({std::string(family), std::string(weight_dtype), rows, cols}, target);
}

}  // namespace kiln::schedules
