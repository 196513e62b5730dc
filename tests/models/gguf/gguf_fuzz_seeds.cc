// Writes the seed corpus for gguf_fuzz: the spec §9 example and small
// writer-made files covering every value type, nested arrays, several
// tensor types, alignment 64 and a v2 header. Usage: gguf_fuzz_seeds DIR
#include <cstdio>
#include <string>
#include <vector>

#include "models/gguf/gguf_writer.h"
#include "tests/models/gguf/gguf_test_bytes.h"

namespace {

using kiln::gguf::Array;
using kiln::gguf::GgmlType;
using kiln::gguf::GgufWriter;
using kiln::gguf::Value;
using kiln::gguf::ValueType;

bool Save(const std::string& path, const std::vector<uint8_t>& b) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  bool ok = std::fwrite(b.data(), 1, b.size(), f) == b.size();
  return std::fclose(f) == 0 && ok;
}

std::vector<uint8_t> Build(const GgufWriter& w) {
  auto r = w.WriteToMemory();
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", std::string(r.status().message()).c_str());
    std::exit(1);
  }
  return *r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  std::vector<std::pair<std::string, std::vector<uint8_t>>> seeds;
  seeds.emplace_back("spec_example", kiln::gguf::testing::SpecExampleBytes());

  GgufWriter all;
  all.AddKey("general.architecture", Value::Str("qwen3"));
  all.AddKey("u8", Value::U8(1));
  all.AddKey("i8", Value::I8(-1));
  all.AddKey("u16", Value::U16(2));
  all.AddKey("i16", Value::I16(-2));
  all.AddKey("u32", Value::U32(3));
  all.AddKey("i32", Value::I32(-3));
  all.AddKey("f32", Value::F32(0.5f));
  all.AddKey("b", Value::Bool(true));
  all.AddKey("u64", Value::U64(4));
  all.AddKey("i64", Value::I64(-4));
  all.AddKey("f64", Value::F64(0.25));
  all.AddKey("tokens", Value::StrArray({"a", "bc", ""}));
  all.AddKey("types", Value::I32Array({1, 2}));
  all.AddKey("empty", Value::Arr(Array{ValueType::kFloat32, {}}));
  all.AddKey("nested",
             Value::Arr(Array{ValueType::kArray, {Value::I32Array({5}), Value::StrArray({"x"})}}));
  all.AddTensorBytes("f32", {4, 2}, GgmlType::kF32, std::vector<uint8_t>(32, 1));
  all.AddTensorBytes("q8", {32}, GgmlType::kQ8_0, std::vector<uint8_t>(34, 2));
  all.AddTensorBytes("f16", {3}, GgmlType::kF16, std::vector<uint8_t>(6, 3));
  seeds.emplace_back("all_types", Build(all));

  GgufWriter a64(64);
  a64.AddKey("general.name", Value::Str("tiny"));
  a64.AddTensorBytes("q4k", {256}, GgmlType::kQ4_K, std::vector<uint8_t>(144, 4));
  a64.AddTensorBytes("bf16", {2, 2, 1, 2}, GgmlType::kBF16, std::vector<uint8_t>(16, 5));
  seeds.emplace_back("align64", Build(a64));

  std::vector<uint8_t> v2 = seeds[0].second;
  v2[4] = 2;
  seeds.emplace_back("v2", v2);

  GgufWriter kv_only;
  kv_only.AddKey("general.architecture", Value::Str("qwen3"));
  kv_only.AddKey("qwen3.block_count", Value::U32(28));
  seeds.emplace_back("kv_only", Build(kv_only));

  for (const auto& [name, bytes] : seeds) {
    if (!Save(dir + "/" + name + ".gguf", bytes)) {
      std::fprintf(stderr, "cannot write %s/%s.gguf\n", dir.c_str(), name.c_str());
      return 1;
    }
  }
  return 0;
}
