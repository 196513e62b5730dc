// libFuzzer target for the GGUF reader (built by tools/build_fuzzers.sh).
// Any input must give InvalidArgument/DataLoss or a file whose every tensor
// span lies inside the input; a parsed file must survive a writer round trip.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "absl/status/status.h"
#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();  // a fuzz target reports failures by crashing
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kiln::gguf::GgufFile;
  using kiln::gguf::GgufWriter;
  auto r = GgufFile::Parse(absl::MakeConstSpan(data, size), "fuzz");
  if (!r.ok()) {
    Check(r.status().code() == absl::StatusCode::kInvalidArgument ||
          r.status().code() == absl::StatusCode::kDataLoss);
    return 0;
  }
  const GgufFile& f = **r;
  Check(f.data_offset() <= size);
  GgufWriter w(f.alignment());
  for (const auto& [key, value] : f.metadata()) {
    Check(f.Find(key) == &value);
    (void)value.DebugString();
    w.AddKey(key, value);
  }
  uint8_t sum = 0;
  bool long_name = false;  // the reader accepts names llama.cpp (and our writer) refuse
  for (const auto& t : f.tensors()) {
    long_name |= t.name.size() > 63;
    Check(f.FindTensor(t.name) == &t);
    absl::Span<const uint8_t> d = f.TensorData(t);
    Check(d.size() == t.nbytes);
    Check(d.empty() || (d.data() >= data && d.data() + d.size() <= data + size));
    for (uint8_t b : d) sum += b;  // touch every byte: ASan checks the span
    w.AddTensorBytes(t.name, t.dims, t.type, std::vector<uint8_t>(d.begin(), d.end()));
  }
  // Whatever the reader accepts, the writer must write and the reader re-read.
  auto bytes = w.WriteToMemory();
  Check(bytes.ok() || long_name);
  if (!bytes.ok()) return 0;
  auto again = GgufFile::Parse(absl::MakeConstSpan(*bytes), "fuzz-roundtrip");
  Check(again.ok());
  // Same keys in the same order with the same values (the debug text shows
  // every element and keeps float bits such as -0 and NaN signs).
  Check((*again)->metadata().size() == f.metadata().size());
  for (size_t i = 0; i < f.metadata().size(); ++i) {
    const auto& [k1, v1] = f.metadata()[i];
    const auto& [k2, v2] = (*again)->metadata()[i];
    Check(k1 == k2 && v1.type() == v2.type());
    Check(v1.DebugString(size) == v2.DebugString(size));
  }
  Check((*again)->alignment() == f.alignment());
  Check((*again)->tensors().size() == f.tensors().size());
  uint8_t sum2 = 0;
  for (const auto& t : (*again)->tensors()) {
    for (uint8_t b : (*again)->TensorData(t)) sum2 += b;
  }
  Check(sum == sum2);
  return 0;
}
