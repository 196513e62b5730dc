// Reading the `--json` outputs of kiln bench/profile back in tests, through
// protobuf's JSON parser into a google.protobuf.Struct.
#ifndef KILN_TESTS_RUNTIME_JSON_TEST_UTIL_H_
#define KILN_TESTS_RUNTIME_JSON_TEST_UTIL_H_

#include <string>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace kiln::runtime {

// Fails the test (and returns an empty Struct) if `text` is not one JSON object.
inline google::protobuf::Struct ParseJson(const std::string& text) {
  google::protobuf::Struct s;
  auto status = google::protobuf::util::JsonStringToMessage(text, &s);
  EXPECT_TRUE(status.ok()) << status.message() << "\n" << text;
  return s;
}

// s[key]; fails the test when it is missing.
inline const google::protobuf::Value& Field(const google::protobuf::Struct& s, const std::string& key) {
  static const google::protobuf::Value kMissing;
  auto it = s.fields().find(key);
  EXPECT_NE(it, s.fields().end()) << "no field '" << key << "'";
  return it == s.fields().end() ? kMissing : it->second;
}

}  // namespace kiln::runtime

#endif  // KILN_TESTS_RUNTIME_JSON_TEST_UTIL_H_
