#include "support/text_table.h"

#include <algorithm>

namespace kiln {

void TextTable::AddRow(std::vector<std::string> cells) {
  cells.resize(header_.size());
  rows_.push_back(std::move(cells));
}

std::string TextTable::Render() const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  };
  measure(header_);
  for (const auto& row : rows_) measure(row);
  auto line = [&](const std::vector<std::string>& row) {
    std::string out;
    for (size_t i = 0; i < row.size(); ++i) {
      if (i > 0) out += "  ";
      const std::string pad(width[i] - row[i].size(), ' ');
      out += static_cast<int>(i) < left_columns_ ? row[i] + pad : pad + row[i];
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out;
  if (std::any_of(header_.begin(), header_.end(), [](const std::string& h) { return !h.empty(); })) {
    out = line(header_);
    size_t total = 0;
    for (size_t w : width) total += w;
    out += std::string(total + 2 * (width.empty() ? 0 : width.size() - 1), '-') + "\n";
  }
  for (const auto& row : rows_) out += line(row);
  return out;
}

}  // namespace kiln
