// Test helper: bytes from the spec's space-separated hex dumps.
#ifndef KILN_TESTS_MODELS_QUANT_HEX_H_
#define KILN_TESTS_MODELS_QUANT_HEX_H_

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::quant::testing {

// "1F 25 CE" -> {0x1F, 0x25, 0xCE}; whitespace (including newlines) separates.
inline std::vector<uint8_t> Hex(std::string_view text) {
  std::vector<uint8_t> out;
  std::istringstream in{std::string(text)};
  std::string tok;
  while (in >> tok) out.push_back(static_cast<uint8_t>(std::stoul(tok, nullptr, 16)));
  return out;
}

}  // namespace kiln::quant::testing

#endif  // KILN_TESTS_MODELS_QUANT_HEX_H_
