// Shared fixtures for tests of models/: temporary paths and synthetic files.
#ifndef KILN_TESTS_MODELS_TEST_MODELS_H_
#define KILN_TESTS_MODELS_TEST_MODELS_H_

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "models/gguf/gguf_file.h"
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

}  // namespace kiln::models

#endif  // KILN_TESTS_MODELS_TEST_MODELS_H_
