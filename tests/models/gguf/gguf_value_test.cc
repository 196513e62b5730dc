#include "models/gguf/gguf_value.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kiln::gguf {
namespace {

TEST(ValueTypeNameTest, NamesEveryType) {
  const std::vector<std::pair<ValueType, std::string>> kNames = {
      {ValueType::kUint8, "UINT8"},     {ValueType::kInt8, "INT8"},
      {ValueType::kUint16, "UINT16"},   {ValueType::kInt16, "INT16"},
      {ValueType::kUint32, "UINT32"},   {ValueType::kInt32, "INT32"},
      {ValueType::kFloat32, "FLOAT32"}, {ValueType::kBool, "BOOL"},
      {ValueType::kString, "STRING"},   {ValueType::kArray, "ARRAY"},
      {ValueType::kUint64, "UINT64"},   {ValueType::kInt64, "INT64"},
      {ValueType::kFloat64, "FLOAT64"},
  };
  for (const auto& [t, name] : kNames) EXPECT_EQ(ValueTypeName(t), name);
  EXPECT_EQ(ValueTypeName(static_cast<ValueType>(13)), "INVALID");
}

TEST(ValueTest, AsIntAcceptsEveryIntegerWidth) {
  EXPECT_EQ(Value::U8(200).AsInt(), 200);
  EXPECT_EQ(Value::I8(-5).AsInt(), -5);
  EXPECT_EQ(Value::U16(65535).AsInt(), 65535);
  EXPECT_EQ(Value::I16(-300).AsInt(), -300);
  EXPECT_EQ(Value::U32(4000000000u).AsInt(), 4000000000);
  EXPECT_EQ(Value::I32(-7).AsInt(), -7);
  EXPECT_EQ(Value::I64(std::numeric_limits<int64_t>::min()).AsInt(),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(Value::U64(uint64_t{1} << 62).AsInt(), int64_t{1} << 62);
}

TEST(ValueTest, AsIntRejectsOutOfRangeAndNonIntegers) {
  EXPECT_FALSE(Value::U64(uint64_t{1} << 63).AsInt().has_value());
  EXPECT_FALSE(Value::F32(1.0f).AsInt().has_value());
  EXPECT_FALSE(Value::Bool(true).AsInt().has_value());
  EXPECT_FALSE(Value::Str("1").AsInt().has_value());
  EXPECT_FALSE(Value::I32Array({1}).AsInt().has_value());
}

TEST(ValueTest, AsUint) {
  EXPECT_EQ(Value::U64(~uint64_t{0}).AsUint(), ~uint64_t{0});
  EXPECT_EQ(Value::I32(28).AsUint(), 28u);
  EXPECT_EQ(Value::I8(0).AsUint(), 0u);
  EXPECT_FALSE(Value::I32(-1).AsUint().has_value());
  EXPECT_FALSE(Value::I64(-1).AsUint().has_value());
  EXPECT_FALSE(Value::F64(3.0).AsUint().has_value());
}

TEST(ValueTest, AsFloatAsBoolAsStringAsArray) {
  EXPECT_EQ(Value::F32(0.5f).AsFloat(), 0.5);
  EXPECT_EQ(Value::F64(1e6).AsFloat(), 1e6);
  EXPECT_FALSE(Value::U32(1).AsFloat().has_value());
  EXPECT_EQ(Value::Bool(true).AsBool(), true);
  EXPECT_EQ(Value::Bool(false).AsBool(), false);
  EXPECT_FALSE(Value::U8(1).AsBool().has_value());
  ASSERT_NE(Value::Str("qwen3").AsString(), nullptr);
  EXPECT_EQ(*Value::Str("qwen3").AsString(), "qwen3");
  EXPECT_EQ(Value::U8(1).AsString(), nullptr);
  Value a = Value::StrArray({"a", "b"});
  ASSERT_NE(a.AsArray(), nullptr);
  EXPECT_EQ(a.type(), ValueType::kArray);
  EXPECT_EQ(a.AsArray()->element_type, ValueType::kString);
  EXPECT_EQ(a.AsArray()->elements.size(), 2u);
  EXPECT_EQ(Value::Str("a").AsArray(), nullptr);
}

TEST(ValueTest, I32ArrayKeepsValuesAndType) {
  Value a = Value::I32Array({1, -2, 3});
  const Array* arr = a.AsArray();
  ASSERT_NE(arr, nullptr);
  EXPECT_EQ(arr->element_type, ValueType::kInt32);
  ASSERT_EQ(arr->elements.size(), 3u);
  EXPECT_EQ(arr->elements[1].type(), ValueType::kInt32);
  EXPECT_EQ(arr->elements[1].AsInt(), -2);
}

TEST(DebugStringTest, Scalars) {
  EXPECT_EQ(Value::Str("qwen3").DebugString(), "\"qwen3\"");
  EXPECT_EQ(Value::U32(28).DebugString(), "28");
  EXPECT_EQ(Value::I8(-3).DebugString(), "-3");
  EXPECT_EQ(Value::U8(65).DebugString(), "65");  // a number, not 'A'
  EXPECT_EQ(Value::U64(~uint64_t{0}).DebugString(), "18446744073709551615");
  EXPECT_EQ(Value::Bool(true).DebugString(), "true");
  EXPECT_EQ(Value::F32(1e-6f).DebugString(), "1e-06");
  EXPECT_EQ(Value::F32(0.5f).DebugString(), "0.5");
  EXPECT_EQ(Value::F64(0.1).DebugString(), "0.1");
}

TEST(DebugStringTest, EscapesQuotesAndControlsButKeepsUtf8) {
  EXPECT_EQ(Value::Str("a\"b\\c\n\x01").DebugString(), "\"a\\\"b\\\\c\\n\\x01\"");
  EXPECT_EQ(Value::Str("\xC4\xA0the").DebugString(), "\"\xC4\xA0the\"");
}

TEST(DebugStringTest, ElidesLongStrings) {
  std::string s = Value::Str(std::string(5000, 'x')).DebugString();
  EXPECT_LT(s.size(), 300u);
  EXPECT_NE(s.find("(5000 bytes)"), std::string::npos);
}

TEST(DebugStringTest, ArraysShowTypeCountAndElideTail) {
  std::vector<std::string> toks = {"!", "\"", "#", "$", "%"};
  EXPECT_EQ(Value::StrArray(toks).DebugString(2), "[STRING x5: \"!\", \"\\\"\", ...]");
  EXPECT_EQ(Value::StrArray(toks).DebugString(5),
            "[STRING x5: \"!\", \"\\\"\", \"#\", \"$\", \"%\"]");
  EXPECT_EQ(Value::I32Array({1, 2, 3}).DebugString(), "[INT32 x3: 1, 2, 3]");
  EXPECT_EQ(Value::Arr(Array{ValueType::kFloat32, {}}).DebugString(), "[FLOAT32 x0]");
  Array nested{ValueType::kArray, {Value::I32Array({7}), Value::Arr(Array{ValueType::kUint8, {}})}};
  EXPECT_EQ(Value::Arr(nested).DebugString(), "[ARRAY x2: [INT32 x1: 7], [UINT8 x0]]");
}

}  // namespace
}  // namespace kiln::gguf
