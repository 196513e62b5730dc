#include "schedules/tuning.h"

#include <unistd.h>

#include <algorithm>
#include <functional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/text_format.h"
#include "support/read_file.h"
#include "support/status_macros.h"

namespace kiln::schedules {
namespace {

namespace pb = ::google::protobuf;

pb::Message* MutableSchedule(ScheduleEntry* e) {
  switch (e->schedule_case()) {
    case ScheduleEntry::kMatvec: return e->mutable_matvec();
    case ScheduleEntry::kGemm: return e->mutable_gemm();
    case ScheduleEntry::kAttention: return e->mutable_attention();
    case ScheduleEntry::kElementwise: return e->mutable_elementwise();
    case ScheduleEntry::SCHEDULE_NOT_SET: break;
  }
  return nullptr;
}

const pb::FieldDescriptor* AxisField(const pb::Descriptor* d, const std::string& name) {
  const pb::FieldDescriptor* f = d->FindFieldByName(name);
  if (f == nullptr || f->is_repeated()) return nullptr;
  if (f->cpp_type() != pb::FieldDescriptor::CPPTYPE_INT32 && f->cpp_type() != pb::FieldDescriptor::CPPTYPE_BOOL)
    return nullptr;
  return f;
}

void SetField(pb::Message* m, const pb::FieldDescriptor* f, int64_t v) {
  if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_BOOL)
    m->GetReflection()->SetBool(m, f, v != 0);
  else
    m->GetReflection()->SetInt32(m, f, static_cast<int32_t>(v));
}

// The descriptor of a family's schedule message.
absl::StatusOr<const pb::Descriptor*> ScheduleDescriptor(const std::string& family) {
  ScheduleEntry e;
  e.set_family(family);
  ASSIGN_OR_RETURN(pb::Message * m, MutableScheduleOf(&e));
  return m->GetDescriptor();
}

std::string Clean(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

constexpr char kCacheHeader[] =
    "# kiln tune cache v2: gpu sm_count driver target family dtype rows cols schedule variant code status us "
    "gbps rel_err date detail";

}  // namespace

absl::StatusOr<pb::Message*> MutableScheduleOf(ScheduleEntry* e) {
  ASSIGN_OR_RETURN(ScheduleEntry::ScheduleCase kind, ScheduleCaseOf(e->family()));
  switch (kind) {
    case ScheduleEntry::kMatvec: return static_cast<pb::Message*>(e->mutable_matvec());
    case ScheduleEntry::kGemm: return static_cast<pb::Message*>(e->mutable_gemm());
    case ScheduleEntry::kAttention: return static_cast<pb::Message*>(e->mutable_attention());
    case ScheduleEntry::kElementwise: return static_cast<pb::Message*>(e->mutable_elementwise());
    case ScheduleEntry::SCHEDULE_NOT_SET: break;
  }
  return absl::InternalError("no schedule kind");
}

// ---- search spaces ----

absl::Status CheckSpaces(const SearchSpaces& spaces, std::string_view origin) {
  for (int i = 0; i < spaces.spaces_size(); ++i) {
    const SearchSpace& s = spaces.spaces(i);
    auto bad = [&](const std::string& what) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(origin), ": space ", i, " (family \"", s.family(), "\"): ", what));
    };
    absl::StatusOr<const pb::Descriptor*> d = ScheduleDescriptor(s.family());
    if (!d.ok()) return bad(std::string(d.status().message()));
    for (const SearchAxis& a : s.axes()) {
      if (AxisField(*d, a.field()) == nullptr)
        return bad(absl::StrCat("axis '", a.field(), "' is not an int or bool field of ", (*d)->name()));
      if (a.values().empty()) return bad(absl::StrCat("axis '", a.field(), "' has no values"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SearchSpaces> BuiltinSpaces() {
  SearchSpaces all;
  for (const EmbeddedTable& t : EmbeddedSpaces()) {
    SearchSpaces one;
    RETURN_IF_ERROR(ParseTextProto(t.text, t.file, &one));
    RETURN_IF_ERROR(CheckSpaces(one, t.file));
    all.MergeFrom(one);
  }
  return all;
}

const SearchSpace* FindSpace(const SearchSpaces& spaces, const ScheduleKey& key) {
  for (const SearchSpace& s : spaces.spaces())
    if (s.family() == key.family && (s.weight_dtype().empty() || s.weight_dtype() == key.weight_dtype)) return &s;
  return nullptr;
}

absl::StatusOr<std::vector<ScheduleEntry>> EnumerateSchedules(const SearchSpace& space, const ScheduleEntry& base) {
  if (base.family() != space.family())
    return absl::InvalidArgumentError(
        absl::StrCat("a \"", base.family(), "\" schedule cannot use the \"", space.family(), "\" space"));
  ASSIGN_OR_RETURN(ScheduleEntry::ScheduleCase kind, ScheduleCaseOf(base.family()));
  if (base.schedule_case() != kind)
    return absl::InvalidArgumentError(absl::StrCat("the base \"", base.family(), "\" entry has no schedule of its kind"));
  SearchSpaces one;
  *one.add_spaces() = space;
  RETURN_IF_ERROR(CheckSpaces(one, "search space"));

  std::vector<ScheduleEntry> out = {base};
  std::set<std::string> seen = {CanonicalSchedule(base)};
  ScheduleEntry current = base;
  pb::Message* m = MutableSchedule(&current);
  std::vector<const pb::FieldDescriptor*> fields;
  for (const SearchAxis& a : space.axes()) fields.push_back(AxisField(m->GetDescriptor(), a.field()));
  // Odometer over the axes, the last one fastest.
  std::function<void(int)> walk = [&](int axis) {
    if (axis == space.axes_size()) {
      std::string c = CanonicalSchedule(current);
      if (seen.insert(c).second) out.push_back(current);
      return;
    }
    for (int64_t v : space.axes(axis).values()) {
      SetField(m, fields[size_t(axis)], v);
      walk(axis + 1);
    }
  };
  walk(0);
  return out;
}

std::string CanonicalSchedule(const ScheduleEntry& entry) {
  ScheduleEntry copy = entry;
  pb::Message* m = MutableSchedule(&copy);
  if (m == nullptr) return "";
  const pb::Descriptor* d = m->GetDescriptor();
  const pb::Reflection* r = m->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* f = d->field(i);
    if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_INT32) r->SetInt32(m, f, r->GetInt32(*m, f));
    if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_BOOL) r->SetBool(m, f, r->GetBool(*m, f));
  }
  pb::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  std::string text;
  printer.PrintToString(*m, &text);
  return std::string(absl::StripAsciiWhitespace(text));
}

absl::Status ParseSchedule(std::string_view text, ScheduleEntry* entry) {
  ASSIGN_OR_RETURN(pb::Message * m, MutableScheduleOf(entry));
  m->Clear();
  return ParseTextProto(text, absl::StrCat(entry->family(), " schedule"), m);
}

// ---- results ----

std::string_view TuneStatusName(TuneStatus status) {
  switch (status) {
    case TuneStatus::kOk: return "ok";
    case TuneStatus::kWrong: return "wrong";
    case TuneStatus::kFault: return "fault";
    case TuneStatus::kTimeout: return "timeout";
    case TuneStatus::kRejected: return "rejected";
    case TuneStatus::kError: return "error";
  }
  return "error";
}

absl::StatusOr<TuneStatus> ParseTuneStatus(std::string_view name) {
  for (TuneStatus s : {TuneStatus::kOk, TuneStatus::kWrong, TuneStatus::kFault, TuneStatus::kTimeout,
                       TuneStatus::kRejected, TuneStatus::kError})
    if (TuneStatusName(s) == name) return s;
  return absl::InvalidArgumentError(absl::StrCat("unknown status '", std::string(name), "'"));
}

namespace {

// RecordKey less the code: one schedule of one shape, however compiled.
std::string CandidateKey(const TuneRecord& r) {
  return absl::StrCat(r.device.gpu, "|", NormalizeTarget(r.target), "|", ShapeKey(r.key), "|", r.schedule, "|",
                      r.variant);
}

}  // namespace

std::string ShapeKey(const ScheduleKey& key) {
  return absl::StrCat(key.family, "|", key.weight_dtype, "|", key.rows, "|", key.cols);
}

std::string RecordKey(const TuneRecord& r) { return absl::StrCat(CandidateKey(r), "|", r.code); }

std::string FormatRecord(const TuneRecord& r) {
  return absl::StrJoin(
      {Clean(r.device.gpu), absl::StrCat(r.device.sm_count), Clean(r.device.driver), Clean(r.target),
       Clean(r.key.family), Clean(r.key.weight_dtype), absl::StrCat(r.key.rows), absl::StrCat(r.key.cols),
       Clean(r.schedule), Clean(r.variant), Clean(r.code), std::string(TuneStatusName(r.status)),
       absl::StrFormat("%.3f", r.us),
       absl::StrFormat("%.1f", r.gbps), absl::StrFormat("%.3g", r.rel_err), Clean(r.date), Clean(r.detail)},
      "\t");
}

absl::StatusOr<TuneRecord> ParseRecord(std::string_view line) {
  std::vector<std::string> f = absl::StrSplit(absl::string_view(line.data(), line.size()), '\t');
  if (f.size() != 16 && f.size() != 17)
    return absl::DataLossError(absl::StrCat("expected 17 tab-separated fields (16 in a v1 cache), found ", f.size()));
  TuneRecord r;
  // v1 lines have no code: the fields after the variant move up by one.
  if (f.size() == 17) {
    r.code = f[10];
    f.erase(f.begin() + 10);
  }
  r.device.gpu = f[0];
  r.device.driver = f[2];
  r.target = f[3];
  r.key.family = f[4];
  r.key.weight_dtype = f[5];
  r.schedule = f[8];
  r.variant = f[9];
  r.date = f[14];
  r.detail = f[15];
  auto bad = [&](const char* what) {
    return absl::DataLossError(absl::StrCat("bad ", what, " field"));
  };
  if (!absl::SimpleAtoi(f[1], &r.device.sm_count)) return bad("sm_count");
  if (!absl::SimpleAtoi(f[6], &r.key.rows)) return bad("rows");
  if (!absl::SimpleAtoi(f[7], &r.key.cols)) return bad("cols");
  absl::StatusOr<TuneStatus> st = ParseTuneStatus(f[10]);
  if (!st.ok()) return absl::DataLossError(st.status().message());
  r.status = *st;
  if (!absl::SimpleAtod(f[11], &r.us)) return bad("us");
  if (!absl::SimpleAtod(f[12], &r.gbps)) return bad("gbps");
  if (!absl::SimpleAtod(f[13], &r.rel_err)) return bad("rel_err");
  if (r.key.family.empty() || r.schedule.empty()) return bad("family/schedule");
  // Old caches leave out fields at their default: every record keys its
  // schedule in full, so one schedule is one candidate however it was
  // written. A schedule that no longer parses keeps its text (an export
  // names it).
  ScheduleEntry e;
  e.set_family(r.key.family);
  if (ParseSchedule(r.schedule, &e).ok()) r.schedule = CanonicalSchedule(e);
  return r;
}

absl::StatusOr<TuneCache> TuneCache::Open(const std::string& path, std::vector<std::string>* warnings) {
  TuneCache cache;
  cache.path_ = path;
  absl::StatusOr<std::string> read = ReadTextFile(path);
  if (absl::IsNotFound(read.status())) return cache;  // a new cache
  if (!read.ok()) return read.status();
  if (absl::StartsWith(*read, "\x1f\x8b"))
    return absl::DataLossError(absl::StrCat(path, " is gzip-compressed: decompress it first (gunzip -k)"));
  const std::string text = *std::move(read);
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    ++line_no;
    if (nl == std::string::npos) {
      // An interrupted append: the candidate runs again.
      if (warnings != nullptr)
        warnings->push_back(absl::StrCat(path, ":", line_no,
                                         ": the last line is incomplete (an interrupted write); dropping it"));
      cache.good_bytes_ = static_cast<int64_t>(pos);
      break;
    }
    std::string_view line(text.data() + pos, nl - pos);
    pos = nl + 1;
    if (line.empty() || line[0] == '#') continue;
    absl::StatusOr<TuneRecord> r = ParseRecord(line);
    if (!r.ok()) return absl::DataLossError(absl::StrCat(path, ":", line_no, ": ", r.status().message()));
    r->seq = cache.next_seq_++;
    const std::string key = RecordKey(*r);
    if (auto it = cache.index_.find(key); it != cache.index_.end()) {
      cache.records_[it->second] = *std::move(r);
    } else {
      cache.index_[key] = cache.records_.size();
      cache.records_.push_back(*std::move(r));
    }
  }
  return cache;
}

TuneCache::TuneCache(TuneCache&& o) noexcept { *this = std::move(o); }

TuneCache& TuneCache::operator=(TuneCache&& o) noexcept {
  if (this == &o) return *this;
  if (out_ != nullptr) std::fclose(out_);
  path_ = std::move(o.path_);
  records_ = std::move(o.records_);
  index_ = std::move(o.index_);
  good_bytes_ = o.good_bytes_;
  next_seq_ = o.next_seq_;
  out_ = o.out_;
  o.out_ = nullptr;
  return *this;
}

TuneCache::~TuneCache() {
  if (out_ != nullptr) std::fclose(out_);
}

const TuneRecord* TuneCache::Find(const TuneRecord& key) const {
  auto it = index_.find(RecordKey(key));
  return it == index_.end() ? nullptr : &records_[it->second];
}

absl::Status TuneCache::Append(const TuneRecord& record) {
  if (out_ == nullptr) {
    if (good_bytes_ >= 0 && ::truncate(path_.c_str(), good_bytes_) != 0)
      return absl::InternalError(absl::StrCat("cannot cut the incomplete last line of ", path_));
    good_bytes_ = -1;
    out_ = std::fopen(path_.c_str(), "a");
    if (out_ == nullptr) return absl::InvalidArgumentError(absl::StrCat("cannot append to ", path_));
    if (std::ftell(out_) == 0) std::fprintf(out_, "%s\n", kCacheHeader);
  }
  const std::string line = FormatRecord(record);
  if (std::fprintf(out_, "%s\n", line.c_str()) < 0 || std::fflush(out_) != 0)
    return absl::InternalError(absl::StrCat("writing ", path_, " failed"));
  const std::string key = RecordKey(record);
  TuneRecord r = record;
  r.seq = next_seq_++;
  if (auto it = index_.find(key); it != index_.end()) {
    records_[it->second] = std::move(r);
  } else {
    index_[key] = records_.size();
    records_.push_back(std::move(r));
  }
  return absl::OkStatus();
}

// ---- export ----

absl::StatusOr<std::string> ChooseGpu(absl::Span<const TuneRecord> records, std::string_view target,
                                      const std::string& gpu) {
  const std::string t = NormalizeTarget(target);
  std::set<std::string> gpus;
  for (const TuneRecord& r : records)
    if (NormalizeTarget(r.target) == t && r.status == TuneStatus::kOk && r.variant.empty()) gpus.insert(r.device.gpu);
  if (!gpu.empty()) {
    if (!gpus.count(gpu)) return absl::InvalidArgumentError(absl::StrCat("no correct results for ", t, " on '", gpu, "'"));
    return gpu;
  }
  if (gpus.empty()) return absl::InvalidArgumentError(absl::StrCat("no correct results for ", t));
  if (gpus.size() > 1)
    return absl::InvalidArgumentError(absl::StrCat("results for ", t, " come from several GPUs (",
                                                   absl::StrJoin(gpus, ", "), "): choose one with --gpu"));
  return *gpus.begin();
}

NewestRecords NewestOfEachSchedule(absl::Span<const TuneRecord> records, std::string_view target,
                                   const std::string& gpu,
                                   const std::map<std::string, std::set<std::string>>& current_codes) {
  const std::string t = NormalizeTarget(target);
  NewestRecords out;
  std::map<std::string, size_t> slot;  // CandidateKey -> index in out.records
  for (const TuneRecord& r : records) {
    if (NormalizeTarget(r.target) != t || r.device.gpu != gpu || !r.variant.empty()) continue;
    auto codes = current_codes.find(ShapeKey(r.key));
    if (codes != current_codes.end() && !codes->second.count(r.code)) {
      ++out.not_current;
      continue;
    }
    auto [it, fresh] = slot.emplace(CandidateKey(r), out.records.size());
    if (fresh) {
      out.records.push_back(&r);
      continue;
    }
    ++out.superseded;
    if (r.seq >= out.records[it->second]->seq) out.records[it->second] = &r;
  }
  return out;
}

absl::StatusOr<ExportedTable> ExportTable(absl::Span<const TuneRecord> records, const ScheduleTable& base,
                                          const ExportOptions& options) {
  const std::string target = NormalizeTarget(options.target);
  ASSIGN_OR_RETURN(const std::string gpu, ChooseGpu(records, target, options.gpu));

  const NewestRecords newest = NewestOfEachSchedule(records, target, gpu, options.current_codes);
  using Shape = std::tuple<std::string, std::string, int64_t, int64_t>;
  std::map<Shape, const TuneRecord*> best;
  std::map<Shape, int> counts;
  for (const TuneRecord* newest_record : newest.records) {
    const TuneRecord& r = *newest_record;
    const Shape s{r.key.family, r.key.weight_dtype, r.key.rows, r.key.cols};
    ++counts[s];
    if (r.status != TuneStatus::kOk) continue;
    auto [it, fresh] = best.emplace(s, &r);
    if (!fresh && r.us < it->second->us) it->second = &r;
  }

  if (best.empty())
    return absl::InvalidArgumentError(absl::StrCat("no correct results for ", target, " on '", gpu,
                                                   "' from the candidates as this kilnc compiles them"));
  ExportedTable out;
  out.superseded = newest.superseded;
  out.not_current = newest.not_current;
  ScheduleTable& t = out.table;
  t.set_target(target);
  const TuneRecord* latest = nullptr;
  for (const auto& [shape, r] : best)
    if (latest == nullptr || r->date > latest->date) latest = r;
  Provenance* p = t.mutable_provenance();
  p->set_source(Provenance::TUNED);
  p->set_gpu(gpu);
  p->set_sm_count(latest->device.sm_count);
  p->set_driver(latest->device.driver);
  p->set_date(latest->date);
  p->set_note(absl::StrCat("kilnc tune: the fastest correct schedule of ", best.size(),
                           " shapes; the entries after them come from the shipped table"));
  for (const auto& [shape, r] : best) {
    ScheduleEntry* e = t.add_entries();
    e->set_family(r->key.family);
    e->set_weight_dtype(r->key.weight_dtype);
    e->set_min_rows(r->key.rows);
    e->set_max_rows(r->key.rows);
    e->set_min_cols(r->key.cols);
    e->set_max_cols(r->key.cols);
    RETURN_IF_ERROR(ParseSchedule(r->schedule, e));
    out.comments.push_back(absl::StrFormat("%s %s %dx%d: %.2f us, %.0f GB/s, rel err %.1e (best of %d)",
                                           r->key.family, r->key.weight_dtype, r->key.rows, r->key.cols, r->us,
                                           r->gbps, r->rel_err, counts[shape]));
  }
  out.tuned_entries = t.entries_size();
  for (const ScheduleEntry& b : base.entries()) {
    const bool exact = b.min_rows() == b.max_rows() && b.min_cols() == b.max_cols() &&
                       best.count(Shape{b.family(), b.weight_dtype(), b.min_rows(), b.min_cols()});
    if (exact) continue;  // re-tuned now
    ScheduleEntry* e = t.add_entries();
    *e = b;
    if (!e->has_provenance()) *e->mutable_provenance() = base.provenance();
    out.comments.push_back("");
  }
  // The result must load like a shipped table.
  ScheduleLibrary check;
  RETURN_IF_ERROR(check.AddTable(t, "the exported table"));
  return out;
}

std::string FormatTable(const ExportedTable& exported) {
  const ScheduleTable& t = exported.table;
  const Provenance& p = t.provenance();
  std::string out = absl::StrFormat(
      "# Schedules for %s, measured by `kilnc tune` on %s (%d SMs, driver %s) on %s.\n"
      "# Lookup takes the FIRST matching entry: %d tuned shapes, then the shipped table's\n"
      "# entries (heuristic catch-alls for other shapes). Messages: schedules/schedule.proto.\n"
      "# Refresh: docs/tuning.md.\n",
      t.target(), p.gpu(), p.sm_count(), p.driver(), p.date(), exported.tuned_entries);
  pb::TextFormat::Printer multi;
  std::string head;
  ScheduleTable top;
  top.set_target(t.target());
  *top.mutable_provenance() = t.provenance();
  multi.PrintToString(top, &head);
  absl::StrAppend(&out, head);
  pb::TextFormat::Printer single;
  single.SetSingleLineMode(true);
  for (int i = 0; i < t.entries_size(); ++i) {
    if (i == 0) absl::StrAppend(&out, "\n# ---- tuned ----\n");
    if (i == exported.tuned_entries) absl::StrAppend(&out, "\n# ---- from the shipped table ----\n");
    const std::string& c = i < static_cast<int>(exported.comments.size()) ? exported.comments[size_t(i)] : "";
    if (!c.empty()) absl::StrAppend(&out, "# ", c, "\n");
    std::string e;
    single.PrintToString(t.entries(i), &e);
    absl::StrAppend(&out, "entries { ", absl::StripAsciiWhitespace(e), " }\n");
  }
  return out;
}

}  // namespace kiln::schedules
