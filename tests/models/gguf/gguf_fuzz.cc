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
  for (const auto& t : f.tensors()) {
    Check(f.FindTensor(t.name) == &t);
    absl::Span<const uint8_t> d = f.TensorData(t);
    Check(d.size() == t.nbytes);
    Check(d.empty() || (d.data() >= data && d.data() + d.size() <= data + size));
    for (uint8_t b : d) sum += b;  // touch every byte: ASan checks the span
    w.AddTensorBytes(t.name, t.dims, t.type, std::vector<uint8_t>(d.begin(), d.end()));
  }
  // Whatever the reader accepts, the writer must write and the reader re-read.
  auto bytes = w.WriteToMemory();
  Check(bytes.ok());
  auto again = GgufFile::Parse(absl::MakeConstSpan(*bytes), "fuzz-roundtrip");
  Check(again.ok());
  // The writer adds general.alignment when the file relied on it implicitly.
  bool added_key = f.Find("general.alignment") == nullptr && f.alignment() != 32;
  Check((*again)->metadata().size() == f.metadata().size() + (added_key ? 1 : 0));
  Check((*again)->alignment() == f.alignment());
  Check((*again)->tensors().size() == f.tensors().size());
  uint8_t sum2 = 0;
  for (const auto& t : (*again)->tensors()) {
    for (uint8_t b : (*again)->TensorData(t)) sum2 += b;
  }
  Check(sum == sum2);
  return 0;
}
