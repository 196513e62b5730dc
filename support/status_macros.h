// Status propagation macros used on every path that input can reach, and
// the context an error gains on its way up (see docs/architecture.md
// "Errors"). Only main() and tests may abort.
#ifndef KILN_SUPPORT_STATUS_MACROS_H_
#define KILN_SUPPORT_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

#define KILN_CONCAT_INNER_(a, b) a##b
#define KILN_CONCAT_(a, b) KILN_CONCAT_INNER_(a, b)

// Returns the status of `expr` from the enclosing function if it is not OK.
#define RETURN_IF_ERROR(expr)                      \
  do {                                             \
    ::absl::Status kiln_status_ = (expr);          \
    if (!kiln_status_.ok()) return kiln_status_;   \
  } while (0)

// `ASSIGN_OR_RETURN(T x, StatusOr<T> expr)` declares/assigns x or returns the error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  KILN_ASSIGN_OR_RETURN_IMPL_(KILN_CONCAT_(kiln_statusor_, __LINE__), lhs, expr)
#define KILN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return std::move(tmp).status();    \
  lhs = std::move(tmp).value()

// Internal invariant check: a failure is a kiln bug, reported as Internal.
#define RET_CHECK(cond)                                                      \
  do {                                                                       \
    if (!(cond))                                                             \
      return ::absl::InternalError(                                          \
          ::absl::StrCat(__FILE__, ":", __LINE__, ": check failed: " #cond)); \
  } while (0)

namespace kiln {

// `s` with "<what>: " in front of its message and its code kept; OK as it is.
inline absl::Status WithContext(const absl::Status& s, absl::string_view what) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

}  // namespace kiln

#endif  // KILN_SUPPORT_STATUS_MACROS_H_
