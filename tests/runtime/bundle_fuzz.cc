// libFuzzer target for the bundle reader and validator
// (tools/build_bundle_fuzzer.sh builds and runs it). Each input is tried
//   1. as a bundle file (Bundle::Parse);
//   2. as a bundle whose header is patched to match (file size, manifest
//      checksum), so mutated manifests get past the checksum into the parser
//      and the validator;
//   3. as a bare serialized Manifest (ValidateManifest).
// Beyond "no crash", it checks the validator's promise: whatever it accepts
// evaluates inside the limits at every bound, and every accepted bundle
// survives a write -> read round trip.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/bundle_writer.h"
#include "google/protobuf/stubs/logging.h"
#include "runtime/bundle/bundle_format.h"
#include "runtime/bundle/bundle_reader.h"
#include "runtime/bundle/expr.h"
#include "runtime/bundle/validator.h"

namespace kiln::runtime {
namespace {

void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "bundle_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

void CheckBelow(const Expr& e, const ExprEnv& env, int64_t limit, const char* what) {
  absl::StatusOr<int64_t> v = Evaluate(e, env);
  if (!v.ok()) Fail(what, std::string(v.status().message()));
  if (*v < 0 || *v >= limit) Fail(what, ExprToString(e));
}

// What ValidateManifest guarantees about a manifest it accepted.
void CheckAccepted(const Manifest& m) {
  const int64_t ctx = m.config().context_length();
  for (const Buffer& b : m.buffers()) {
    CheckBelow(b.bytes(), BufferEnv(m, ctx), kMaxSizeExclusive, "buffer bytes");
    absl::StatusOr<int64_t> smallest = Evaluate(b.bytes(), BufferEnv(m, 1));
    if (!smallest.ok() || *smallest < 1) Fail("buffer bytes at C=1", b.name());
  }
  const Plan* plans[] = {&m.load(), &m.prefill(), &m.decode()};
  for (const Plan* plan : plans) {
    const int64_t min_t = plan == &m.load() ? 0 : 1;
    for (const Launch& l : plan->launches()) {
      if (l.kernel() >= static_cast<uint32_t>(m.kernels_size())) Fail("kernel index", "");
      const Kernel& k = m.kernels(l.kernel());
      if (l.args_size() != k.params_size()) Fail("arg count", k.name());
      for (int64_t t : {min_t, plan->max_tokens()}) {
        for (int64_t p : {int64_t{0}, ctx}) {
          const ExprEnv env{t, p, ctx};
          for (const Expr* e : {&l.grid_x(), &l.grid_y(), &l.grid_z()}) {
            CheckBelow(*e, env, kMaxI32Exclusive, "grid");
            if (*Evaluate(*e, env) < 1) Fail("grid of 0", k.name());
          }
          for (const Arg& a : l.args()) {
            if (a.has_i32()) CheckBelow(a.i32(), env, kMaxI32Exclusive, "i32 arg");
            if (a.has_buffer()) {
              if (a.buffer().buffer() >= static_cast<uint32_t>(m.buffers_size()))
                Fail("buffer index", k.name());
              CheckBelow(a.buffer().offset(), env, kMaxSizeExclusive, "offset");
            }
          }
        }
      }
    }
  }
}

void CheckBundle(absl::Span<const uint8_t> bytes) {
  absl::StatusOr<std::unique_ptr<Bundle>> bundle = Bundle::Parse(bytes, "fuzz");
  if (!bundle.ok()) return;
  const Manifest& m = (*bundle)->manifest();
  if (absl::Status s = ValidateManifest(m, bytes.size()); !s.ok())
    Fail("Parse accepted what ValidateManifest rejects", std::string(s.message()));
  CheckAccepted(m);
  std::vector<compiler::SectionInput> sections;
  for (int i = 0; i < m.sections_size(); ++i) {
    absl::StatusOr<absl::Span<const uint8_t>> s = (*bundle)->SectionBytes(i);
    if (!s.ok()) Fail("SectionBytes", std::string(s.status().message()));
    sections.push_back(
        {m.sections(i).kind(), m.sections(i).target(), std::string(s->begin(), s->end())});
  }
  absl::StatusOr<std::string> rewritten = compiler::SerializeBundle(m, sections);
  if (!rewritten.ok()) Fail("SerializeBundle", std::string(rewritten.status().message()));
  absl::StatusOr<std::unique_ptr<Bundle>> again =
      Bundle::Parse(absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(rewritten->data()),
                                              rewritten->size()),
                    "rewritten");
  if (!again.ok()) Fail("re-reading a rewritten bundle", std::string(again.status().message()));
  (void)compiler::ManifestToText(m);
}

void PatchAndCheck(const uint8_t* data, size_t size) {
  if (size < kBundleHeaderSize || std::memcmp(data, kBundleMagic, kBundleMagicSize) != 0) return;
  std::vector<uint8_t> copy(data, data + size);
  BundleHeader h = DecodeBundleHeader(copy.data());
  if (h.manifest_offset != kBundleHeaderSize || h.manifest_size > size - kBundleHeaderSize) return;
  h.file_size = size;
  h.manifest_fnv1a64 =
      Fnv1a64(absl::Span<const uint8_t>(copy).subspan(h.manifest_offset, h.manifest_size));
  EncodeBundleHeader(h, copy.data());
  CheckBundle(copy);
}

void CheckBareManifest(const uint8_t* data, size_t size) {
  Manifest m;
  if (!m.ParseFromArray(data, static_cast<int>(size))) return;
  for (uint64_t file_size : {uint64_t{0}, uint64_t{1} << 20, UINT64_MAX}) {
    if (ValidateManifest(m, file_size).ok()) CheckAccepted(m);
  }
  (void)compiler::ManifestToText(m);
}

}  // namespace
}  // namespace kiln::runtime

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Invalid UTF-8 in a string field makes protobuf log as it rejects the
  // message; the rejection is what matters, the log only slows fuzzing.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1 << 20)) return 0;
  kiln::runtime::CheckBundle(absl::Span<const uint8_t>(data, size));
  kiln::runtime::PatchAndCheck(data, size);
  kiln::runtime::CheckBareManifest(data, size);
  return 0;
}
