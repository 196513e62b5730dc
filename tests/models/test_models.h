// Shared fixtures for tests of models/: temporary paths and synthetic files.
#ifndef KILN_TESTS_MODELS_TEST_MODELS_H_
#define KILN_TESTS_MODELS_TEST_MODELS_H_

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"
#include "models/synth.h"

namespace kiln::models {

// A fresh path under the test's temporary directory.
inline std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string base = dir ? dir : "/tmp";
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string file = std::string("kiln_") + info->test_suite_name() + "_" + info->name() + "_" + name;
  for (char& c : file)
    if (c == '/') c = '_';  // parameterized test names contain '/'
  return base + "/" + file;
}

// ||a - b|| / ||b|| over all elements, in double.
inline double RelErr(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

// Writes a synthetic model and opens it. The file is unlinked once open
// (the mapping keeps it readable), so no test leaves models behind.
inline std::unique_ptr<gguf::GgufFile> SynthAndOpen(const SynthOptions& o, const std::string& name) {
  std::string path = TempPath(name);
  absl::Status s = WriteSyntheticModel(o, path);
  EXPECT_TRUE(s.ok()) << s;
  auto f = gguf::GgufFile::Open(path);
  std::remove(path.c_str());
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? std::move(*f) : nullptr;
}

// How Rewrite edits a file.
struct Edit {
  std::function<bool(const std::string& key, gguf::Value& v)> key;     // false drops the key
  std::function<bool(const std::string& name, std::vector<int64_t>& dims, gguf::GgmlType& t)> tensor;
  std::vector<std::pair<std::string, gguf::Value>> add = {};  // keys appended
};

// Copies `src` to `path` with edited metadata and tensors (an edited
// tensor is written as zeros) and opens the copy, unlinked as SynthAndOpen's.
inline std::unique_ptr<gguf::GgufFile> Rewrite(const gguf::GgufFile& src, const Edit& e, const std::string& path) {
  gguf::GgufWriter w;
  for (auto [k, v] : src.metadata())
    if (!e.key || e.key(k, v)) w.AddKey(k, v);
  for (const auto& [k, v] : e.add) w.AddKey(k, v);
  for (const gguf::TensorInfo& t : src.tensors()) {
    std::vector<int64_t> dims = t.dims;
    gguf::GgmlType type = t.type;
    if (e.tensor && !e.tensor(t.name, dims, type)) continue;
    if (dims == t.dims && type == t.type) {
      auto span = src.TensorData(t);
      w.AddTensor(t.name, dims, type, [span](absl::Span<uint8_t> out) {
        std::memcpy(out.data(), span.data(), out.size());
        return absl::OkStatus();
      });
    } else {
      w.AddTensor(t.name, dims, type, [](absl::Span<uint8_t> out) {
        std::memset(out.data(), 0, out.size());
        return absl::OkStatus();
      });
    }
  }
  absl::Status s = w.Write(path);
  EXPECT_TRUE(s.ok()) << s;
  auto f = gguf::GgufFile::Open(path);
  std::remove(path.c_str());
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? std::move(*f) : nullptr;
}

}  // namespace kiln::models

#endif  // KILN_TESTS_MODELS_TEST_MODELS_H_
