// Writes the bundle fuzzer's seed corpus into argv[1]: valid bundles in a few
// shapes, and their bare manifests (the fuzzer also reads inputs as those).
#include <cstdio>
#include <string>
#include <vector>

#include "compiler/bundle_writer.h"
#include "runtime/bundle/bundle_reader.h"
#include "runtime/bundle/expr.h"
#include "tests/runtime/test_manifest.h"

namespace {

using kiln::compiler::SectionInput;
using kiln::runtime::Manifest;

bool WriteFile(const std::string& path, const std::string& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  struct Seed {
    const char* name;
    Manifest manifest;
    std::vector<SectionInput> sections;
  };
  std::vector<Seed> seeds;
  seeds.push_back(
      {"valid", kiln::testing::MakeValidManifest(), kiln::testing::MakeSectionInputs()});
  {
    Seed s{"ptx_only", kiln::testing::MakeValidManifest(), kiln::testing::MakeSectionInputs()};
    s.sections.pop_back();
    seeds.push_back(s);
  }
  {
    Seed s{"no_load", kiln::testing::MakeValidManifest(), kiln::testing::MakeSectionInputs()};
    s.manifest.mutable_load()->clear_launches();
    seeds.push_back(s);
  }
  {
    Seed s{"two_prefill_launches", kiln::testing::MakeValidManifest(),
           kiln::testing::MakeSectionInputs()};
    *s.manifest.mutable_prefill()->add_launches() = s.manifest.prefill().launches(0);
    *s.manifest.mutable_prefill()->mutable_launches(1)->mutable_grid_y() =
        kiln::runtime::MakeExpr(0, 0, 1, 0, 128);
    s.manifest.mutable_prefill()->mutable_launches(1)->mutable_grid_y()->set_constant(1);
    s.sections.push_back({kiln::runtime::Section::PTX, "sm_80", "// sm_80\n.version 8.4\n"});
    seeds.push_back(s);
  }
  for (const Seed& s : seeds) {
    absl::StatusOr<std::string> bytes = kiln::compiler::SerializeBundle(s.manifest, s.sections);
    if (!bytes.ok()) {
      std::fprintf(stderr, "%s: %s\n", s.name, std::string(bytes.status().message()).c_str());
      return 1;
    }
    absl::StatusOr<std::unique_ptr<kiln::runtime::Bundle>> parsed = kiln::runtime::Bundle::Parse(
        absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()),
        s.name);
    if (!parsed.ok()) {
      std::fprintf(stderr, "%s\n", std::string(parsed.status().message()).c_str());
      return 1;
    }
    if (!WriteFile(dir + "/" + s.name + ".kiln", *bytes) ||
        !WriteFile(dir + "/" + s.name + ".manifest", s.manifest.SerializeAsString())) {
      std::perror(dir.c_str());
      return 1;
    }
  }
  std::printf("wrote %zu seeds to %s\n", seeds.size() * 2, dir.c_str());
  return 0;
}
