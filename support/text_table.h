// Aligned plain-text tables for terminal output (`kiln bench`, `kiln
// profile`): a header, a rule, and rows; the first `left_columns` columns
// are left-aligned (names), the rest right-aligned (numbers).
#ifndef KILN_SUPPORT_TEXT_TABLE_H_
#define KILN_SUPPORT_TEXT_TABLE_H_

#include <string>
#include <utility>
#include <vector>

namespace kiln {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header, int left_columns = 1)
      : header_(std::move(header)), left_columns_(left_columns) {}
  // Missing cells are blank; extra cells are dropped.
  void AddRow(std::vector<std::string> cells);
  // Columns two spaces apart, no trailing spaces, a newline after each line.
  // A header of empty cells prints neither itself nor the rule.
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  int left_columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace kiln

#endif  // KILN_SUPPORT_TEXT_TABLE_H_
