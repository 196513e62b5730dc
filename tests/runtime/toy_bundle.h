// A toy bundle of hand-written PTX and its GGUF, small enough to check the
// executor and `kiln run`/`kiln chat` exactly against a CPU model of the same
// arithmetic (executor_test, kiln_run_test).
//
// Vocabulary V, one F32 tensor w [V, V]; load packs it as 2 * w. A step of T
// tokens at position P stores the token ids in a "KV cache"
// (kv[P + i] = tokens[i]) and gives row r the logits
//   2 * w[tokens[r]][v] + (v == (kv[0] + ... + kv[P + r]) % V ? 100 : 0),
// so the argmax is the running sum of every token fed so far mod V: a lost
// position, a stale token or an unwritten KV entry changes the answer.
#ifndef KILN_TESTS_RUNTIME_TOY_BUNDLE_H_
#define KILN_TESTS_RUNTIME_TOY_BUNDLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/gguf/ggml_type.h"
#include "models/gguf/gguf_file.h"
#include "runtime/executor.h"
#include "runtime/manifest.pb.h"

namespace kiln::runtime::toy {

// Buffer and kernel indices of the toy manifest.
enum ToyBuffer : uint32_t { kGgufW = 0, kPacked, kKv, kTokens, kPosition, kLogits, kSampled };
enum ToyKernel : uint32_t { kPack = 0, kStore, kLogitsKernel, kArgmax };

// A vocabulary of this size or more carries a real tokenizer: the 256
// byte-level symbols, then <|endoftext|>, <|im_start|>, <|im_end|>, <think>,
// </think> (ids 256..260), as Qwen3 spells them.
inline constexpr int kTokenizerVocab = 264;
inline constexpr int32_t kEndOfText = 256, kImEnd = 258;

// Manifest-building helpers: an Expr, a buffer (256-byte aligned), a buffer
// argument.
Expr E(int64_t constant, int64_t t = 0, int64_t p = 0, int64_t c = 0, int64_t div = 0);
void AddBuffer(Manifest& m, const char* name, Buffer::Kind kind, Expr bytes);
void AddBufferArg(Launch& l, uint32_t buffer, Expr offset = E(0));

// The toy PTX for "sm_80" (no PDL) or "sm_90" (the PDL kernels wait first).
std::string ToyPtx(const std::string& target);

struct ToyOptions {
  int vocab = 16;
  int64_t context = 64;
  int64_t max_tokens = 8;            // prefill
  bool last_only = false;            // logits_buffer holds one row
  int64_t kv_bytes_per_token = 4;    // KV_CACHE bytes = this * C
  bool decode_reads_p = false;       // a decode arg depends on P (not graphable)
  std::vector<std::pair<std::string, std::string>> ptx = {{"sm_80", ToyPtx("sm_80")}, {"sm_90", ToyPtx("sm_90")}};
  std::vector<std::pair<std::string, std::string>> cubins;  // target -> image
};

struct ToyImage {
  Section::Kind kind;
  std::string target;
  std::string bytes;
};

struct ToyBundle {
  Manifest manifest;
  std::vector<uint8_t> file;     // sections at their offsets, as in a .kiln
  std::vector<ToyImage> images;  // the same sections, for a bundle writer
  SectionBytesFn sections() const;
};

ToyBundle MakeToyBundle(const ToyOptions& options = {});

// Fixed pseudo-random weights in [0, 1), w[V * V].
std::vector<float> ToyWeights(int vocab);

// A GGUF holding `name` with `type` and `dims` (the toy weights when they
// fit, zeros otherwise), optionally after an F32 [32] "other.weight".
std::vector<uint8_t> ToyGgufBytes(int vocab = 16, const std::string& name = "toy.weight",
                                  gguf::GgmlType type = gguf::GgmlType::kF32, std::vector<int64_t> dims = {},
                                  bool extra_tensor = false);
std::unique_ptr<gguf::GgufFile> ParseGguf(const std::vector<uint8_t>& bytes);

// The toy model's arithmetic on the CPU, in the same float operations.
class ToyModel {
 public:
  explicit ToyModel(int vocab = 16) : vocab_(vocab), w_(ToyWeights(vocab)) {}
  std::vector<float> Feed(int32_t token);
  void Rewind(size_t n) { history_.resize(n); }
  size_t size() const { return history_.size(); }

 private:
  int vocab_;
  std::vector<float> w_;
  std::vector<int32_t> history_;
};

}  // namespace kiln::runtime::toy

#endif  // KILN_TESTS_RUNTIME_TOY_BUNDLE_H_
