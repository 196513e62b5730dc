// A small streaming JSON writer for the `--json` outputs: objects, arrays,
// strings (escaped per RFC 8259 §7), integers and doubles (non-finite
// numbers are written as null), indented two spaces.
#ifndef KILN_SUPPORT_JSON_WRITER_H_
#define KILN_SUPPORT_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace kiln {

// `s` as a quoted JSON string. Bytes that are not well-formed UTF-8 (a
// token holding part of a character) become U+FFFD, so the text is valid JSON.
std::string JsonQuote(absl::string_view s);

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  // The key of the next value in an object.
  JsonWriter& Key(absl::string_view key);
  JsonWriter& String(absl::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();

  // The document so far, with a final newline once every container is closed.
  std::string str() const;

 private:
  void BeforeValue();
  void NewLine();
  JsonWriter& Close(char bracket);
  std::string out_;
  std::vector<int> counts_;  // values so far in each open container
  bool after_key_ = false;
};

}  // namespace kiln

#endif  // KILN_SUPPORT_JSON_WRITER_H_
