// Byte-pair merges (spec/tokenizer.md §3.4): the rank table and the merge
// loop that turns one byte-level-mapped piece into its final symbols.
// Algorithm: start from one symbol per character; repeatedly merge the
// adjacent pair with the lowest rank (ties: the leftmost) until no adjacent
// pair has a rank. Runs a priority queue keyed by (rank, position) with lazy
// invalidation, which gives the same result as the classic GPT-2 loop.
#ifndef KILN_MODELS_TOKENIZER_BPE_H_
#define KILN_MODELS_TOKENIZER_BPE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/status/statusor.h"

namespace kiln::tokenizer {

class BpeMerges {
 public:
  // `merges[i]` is "A B", split at the first space at or after byte 1; its
  // rank is i (a repeated pair keeps its lowest rank). A merge without such
  // a space is InvalidArgument naming its index.
  static absl::StatusOr<BpeMerges> Create(const std::vector<std::string>& merges);

  // Rank of merging `left` with `right`, or -1 if there is no such merge.
  int32_t Rank(std::string_view left, std::string_view right) const;

  // Appends the final symbols of `mapped` (a UTF-8 string in byte-level form)
  // to `symbols` as views into `mapped`, left to right.
  void Apply(std::string_view mapped, std::vector<std::string_view>& symbols) const;

  size_t size() const { return ranks_.size(); }

 private:
  using Key = std::pair<std::string, std::string>;
  using KeyView = std::pair<std::string_view, std::string_view>;
  // Transparent hash/equality so lookups by string_view pairs allocate nothing.
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(const KeyView& k) const { return absl::HashOf(k.first, k.second); }
    size_t operator()(const Key& k) const { return (*this)(KeyView(k.first, k.second)); }
  };
  struct KeyEq {
    using is_transparent = void;
    static KeyView View(const Key& k) { return KeyView(k.first, k.second); }
    static KeyView View(const KeyView& k) { return k; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const { return View(a) == View(b); }
  };

  absl::flat_hash_map<Key, int32_t, KeyHash, KeyEq> ranks_;
};

}  // namespace kiln::tokenizer

#endif  // KILN_MODELS_TOKENIZER_BPE_H_
