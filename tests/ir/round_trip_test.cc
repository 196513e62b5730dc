// The IR text form round-trips: the hand-written module using every op
// prints back byte for byte, and built modules satisfy
// print(parse(print(m))) == print(m).
#include <fstream>
#include <sstream>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"
#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace kiln::ir {
namespace {

std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(KILN_IR_TESTDATA) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string RoundTrip(const std::string& text) {
  auto m = ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return "";
  return PrintModule(**m);
}

TEST(RoundTrip, AllOpsModulePrintsBackExactly) {
  const std::string text = ReadTestdata("all_ops.kir");
  ASSERT_FALSE(text.empty());
  auto m = ParseModule(text);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(Verify(**m).ok()) << Verify(**m);
  EXPECT_EQ(PrintModule(**m), text);
}

TEST(RoundTrip, AllOpsModuleUsesEveryOpAndDType) {
  auto m = ParseModule(ReadTestdata("all_ops.kir"));
  ASSERT_TRUE(m.ok()) << m.status();
  absl::flat_hash_set<OpKind> ops;
  absl::flat_hash_set<DType> dtypes;
  absl::flat_hash_set<Attribute::Kind> attr_kinds;
  std::function<void(const Attribute&)> note = [&](const Attribute& a) {
    attr_kinds.insert(a.kind());
    if (a.kind() == Attribute::Kind::kDict)
      for (const auto& e : a.dict().entries()) note(e.value);
  };
  for (const auto& g : (*m)->weights()) dtypes.insert(g->type().dtype);
  for (const auto& g : (*m)->states()) dtypes.insert(g->type().dtype);
  for (const auto& f : (*m)->functions()) {
    WalkOps(f->body(), [&](Op* op) {
      ops.insert(op->kind());
      for (const auto& e : op->attrs().entries()) note(e.value);
    });
  }
  for (const OpInfo& info : AllOps())
    EXPECT_TRUE(ops.contains(info.kind)) << info.mnemonic << " is not exercised";
  for (const DTypeInfo& d : AllDTypes())
    EXPECT_TRUE(dtypes.contains(d.dtype)) << d.name << " is not exercised";
  EXPECT_EQ(attr_kinds.size(), 6u);
}

TEST(RoundTrip, ReprintingIsStable) {
  const std::string once = RoundTrip(ReadTestdata("all_ops.kir"));
  EXPECT_EQ(RoundTrip(once), once);
}

TEST(OpTable, EntriesAreWellFormed) {
  absl::flat_hash_set<std::string_view> mnemonics;
  for (const OpInfo& info : AllOps()) {
    EXPECT_TRUE(info.attr_spec_ok) << info.mnemonic;
    EXPECT_TRUE(mnemonics.insert(info.mnemonic).second) << info.mnemonic;
    EXPECT_EQ(LookupOp(info.mnemonic), &info);
    EXPECT_EQ(&GetOpInfo(info.kind), &info);
    EXPECT_FALSE(info.semantics.empty());
  }
  EXPECT_EQ(LookupOp("no_such_op"), nullptr);
  EXPECT_TRUE(GetOpInfo(OpKind::kKvStore).writes_operand(2));
  EXPECT_FALSE(GetOpInfo(OpKind::kKvStore).writes_operand(0));
}

// A module built with the builder, with colliding and missing name hints.
std::unique_ptr<Module> BuildSample() {
  auto m = std::make_unique<Module>();
  Value* w = m->AddWeight("w", {DType::kQ8_0, {64, 32}}, "w.weight");
  Value* norm = m->AddWeight("norm", {DType::kF32, {64}}, "norm.weight");
  Function* f = m->AddFunction("decode");
  Builder b(f);
  Value* x = b.AddArg({DType::kF32, {Dim::T(), 32}}, "x");
  Value* y = b.MatMul(x, w, "x");        // collides with the argument
  Value* z = b.RmsNorm(y, norm, 1e-6f);  // no hint
  Value* s = b.Silu(z, "x");             // collides again
  Value* t = b.Add(s, z, "bad name!");   // sanitized
  Value* u = b.Mul(t, t);
  b.Return({u, b.Argmax(u, "x.1")});
  EXPECT_TRUE(b.status().ok()) << b.status();
  return m;
}

TEST(RoundTrip, BuiltModule) {
  auto m = BuildSample();
  ASSERT_TRUE(Verify(*m).ok()) << Verify(*m);
  const std::string text = PrintModule(*m);
  EXPECT_EQ(RoundTrip(text), text);
  EXPECT_NE(text.find("%x.1 = matmul(%x, @w) : f32[T, 64]"), std::string::npos) << text;
  EXPECT_NE(text.find("%0 = rms_norm(%x.1, @norm) {eps = 1e-06} : f32[T, 64]"), std::string::npos) << text;
  EXPECT_NE(text.find("%bad_name_ = add("), std::string::npos) << text;
  EXPECT_NE(text.find("%x.1.1 = argmax("), std::string::npos) << text;
  EXPECT_NE(text.find("func @decode(%x: f32[T, 32]) -> (f32[T, 64], i32[T, 1]) {"), std::string::npos)
      << text;
}

TEST(RoundTrip, PrintingIsDeterministic) {
  EXPECT_EQ(PrintModule(*BuildSample()), PrintModule(*BuildSample()));
}

TEST(RoundTrip, FloatAttributesKeepTheirBits) {
  const float values[] = {1e-6f,
                          0.1f,
                          1.0f,
                          -2.0f,
                          1e6f,
                          3.4028235e38f,
                          1e-45f,
                          -0.0f,
                          0.0883883f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()};
  for (float v : values) {
    const std::string text = Attribute::Float(v).ToString();
    const std::string module = "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = rms_norm(%x, %x) {eps = " + text +
                               "} : f32[4]\n  return(%y)\n}\n";
    auto m = ParseModule(module);
    ASSERT_TRUE(m.ok()) << text << ": " << m.status();
    const Op& op = *(*m)->functions()[0]->body().ops()[0];
    ASSERT_NE(op.attr("eps"), nullptr);
    EXPECT_EQ(*op.attr("eps"), Attribute::Float(v)) << text;
    EXPECT_EQ(PrintModule(**m), module);
  }
  EXPECT_EQ(Attribute::Float(2.0f).ToString(), "2.0");
  EXPECT_EQ(Attribute::Float(1e-6f).ToString(), "1e-06");
  const std::string nan = Attribute::Float(std::numeric_limits<float>::quiet_NaN()).ToString();
  EXPECT_EQ(nan, "nan");
}

TEST(RoundTrip, AttributeDictsAreSorted) {
  Module m;
  Function* f = m.AddFunction("f");
  Builder b(f);
  Value* x = b.AddArg({DType::kF32, {4}}, "x");
  AttrDict attrs;
  attrs.Set("zeta", Attribute::Int(1));
  attrs.Set("alpha", Attribute::String("a"));
  attrs.Set("mid", Attribute::Ints({}));
  Op* k = b.Kernel({x}, {{DType::kF32, {4}}}, attrs);
  Builder kb(k->region());
  kb.Yield({kb.Silu(k->region()->arg(0))});
  b.Return({k->result()});
  ASSERT_TRUE(Verify(m).ok()) << Verify(m);
  const std::string text = PrintModule(m);
  EXPECT_NE(text.find("{alpha = \"a\", mid = [], zeta = 1}"), std::string::npos) << text;
  EXPECT_EQ(RoundTrip(text), text);
}

}  // namespace
}  // namespace kiln::ir
