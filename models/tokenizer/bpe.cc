#include "models/tokenizer/bpe.h"

#include <algorithm>
#include <functional>
#include <queue>

#include "absl/strings/str_cat.h"

namespace kiln::tokenizer {
namespace {

// Length of the UTF-8 character whose lead byte is `b`; 1 for anything
// unexpected, so a malformed string still splits into whole bytes.
size_t CharLength(uint8_t b) {
  if (b >= 0xF0 && b <= 0xF4) return 4;
  if (b >= 0xE0) return b <= 0xEF ? 3 : 1;
  if (b >= 0xC2) return 2;
  return 1;
}

struct Symbol {
  uint32_t start;  // byte offset in the mapped piece
  uint32_t size;   // bytes; 0 once merged into its left neighbour
  int32_t prev;    // index of the left neighbour, -1 at the start
  int32_t next;    // index of the right neighbour, -1 at the end
};

// A candidate merge of symbols[left] with its right neighbour, as they were
// when queued; stale once either side has changed size.
struct Candidate {
  int32_t rank;
  int32_t left;
  uint32_t left_size;
  uint32_t right_size;
  // Lowest rank first, then leftmost (symbol indices grow left to right).
  bool operator>(const Candidate& o) const {
    return rank != o.rank ? rank > o.rank : left > o.left;
  }
};

}  // namespace

absl::StatusOr<BpeMerges> BpeMerges::Create(const std::vector<std::string>& merges) {
  BpeMerges out;
  out.ranks_.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& m = merges[i];
    const size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (space == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tokenizer merge ", i, " \"", m, "\" has no space separating its two parts"));
    }
    out.ranks_.try_emplace(Key(m.substr(0, space), m.substr(space + 1)),
                           static_cast<int32_t>(i));
  }
  return out;
}

int32_t BpeMerges::Rank(std::string_view left, std::string_view right) const {
  auto it = ranks_.find(KeyView(left, right));
  return it == ranks_.end() ? -1 : it->second;
}

void BpeMerges::Apply(std::string_view mapped, std::vector<std::string_view>& symbols) const {
  std::vector<Symbol> syms;
  for (size_t pos = 0; pos < mapped.size();) {
    const size_t len = std::min(CharLength(static_cast<uint8_t>(mapped[pos])), mapped.size() - pos);
    const int32_t index = static_cast<int32_t>(syms.size());
    syms.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(len), index - 1, -1});
    if (index > 0) syms[index - 1].next = index;
    pos += len;
  }
  auto text = [&](const Symbol& s) { return mapped.substr(s.start, s.size); };

  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto push_pair = [&](int32_t left) {
    if (left < 0 || syms[left].next < 0) return;
    const Symbol& l = syms[left];
    const Symbol& r = syms[l.next];
    const int32_t rank = Rank(text(l), text(r));
    if (rank >= 0) queue.push({rank, left, l.size, r.size});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) push_pair(i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = syms[c.left];
    if (l.size != c.left_size || l.next < 0 || syms[l.next].size != c.right_size) continue;
    Symbol& r = syms[l.next];
    l.size += r.size;
    r.size = 0;
    l.next = r.next;
    if (l.next >= 0) syms[l.next].prev = c.left;
    push_pair(l.prev);
    push_pair(c.left);
  }

  for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) {
    symbols.push_back(text(syms[i]));
  }
}

}  // namespace kiln::tokenizer
