#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/codegen.h"
#include "gtest/gtest.h"
#include "tests/compiler/codegen/test_specs.h"

namespace kiln::codegen {
namespace {

using testing::MatVecMatrix;

Target Sm(int sm) { return *Target::FromName(absl::StrCat("sm_", sm)); }

void CheckPtxas(const std::vector<KernelSpec>& specs, const Target& target) {
  absl::StatusOr<CompiledModule> m = EmitPtx(specs, target);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->ptx.find("__local_depot"), std::string::npos);
  EXPECT_EQ(m->ptx.find("ld.local"), std::string::npos);
  EXPECT_EQ(m->ptx.find("st.local"), std::string::npos);
  PtxasReport report;
  absl::StatusOr<std::string> cubin = RunPtxas(m->ptx, target, &report);
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  for (const KernelSpec& s : specs) {
    const PtxasKernelInfo* k = report.Find(s.name);
    ASSERT_NE(k, nullptr) << s.name;
    EXPECT_EQ(k->stack_frame, 0) << s.name;
    EXPECT_EQ(k->spill_stores, 0) << s.name;
    EXPECT_EQ(k->spill_loads, 0) << s.name;
    std::printf("%-48s %-6s regs %3d smem %6ld\n", s.name.c_str(), target.Name().c_str(), k->registers,
                static_cast<long>(k->shared));
  }
}

TEST(CodegenPtxas, MatVecSm90) { CheckPtxas(MatVecMatrix(), Sm(90)); }
TEST(CodegenPtxas, GemmSm90) { CheckPtxas(testing::GemmMatrix(), Sm(90)); }
TEST(CodegenPtxas, OtherSm90) { CheckPtxas(testing::OtherKernels(), Sm(90)); }

}  // namespace
}  // namespace kiln::codegen

namespace kiln::codegen {
namespace {
// Dev helper: KILN_CODEGEN_DUMP=dir dumps the matvec matrix.
TEST(CodegenDev, Dump) {
  const char* dir = std::getenv("KILN_CODEGEN_DUMP");
  if (dir == nullptr) GTEST_SKIP();
  EmitOptions o;
  o.dump_dir = dir;
  auto specs = testing::MatVecMatrix();
  for (auto& k : testing::GemmMatrix()) specs.push_back(k);
  for (auto& k : testing::OtherKernels()) specs.push_back(k);
  auto m = EmitPtx(specs, Sm(90), o);
  ASSERT_TRUE(m.ok()) << m.status();
}
}  // namespace
}  // namespace kiln::codegen
