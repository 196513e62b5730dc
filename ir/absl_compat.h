// Debian's Abseil is built with its own absl::string_view (not an alias of
// std::string_view), so StrCat/StrSplit take std::string_view only through
// this conversion. The IR's API uses std::string_view.
#ifndef KILN_IR_ABSL_COMPAT_H_
#define KILN_IR_ABSL_COMPAT_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace kiln::ir {

inline absl::string_view ToAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace kiln::ir

#endif  // KILN_IR_ABSL_COMPAT_H_
