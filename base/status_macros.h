#ifndef RILL_BASE_STATUS_MACROS_H_
#define RILL_BASE_STATUS_MACROS_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// RILL_RETURN_IF_ERROR(expr): returns the status of `expr` from the enclosing
// function when it is not OK.
#define RILL_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::absl::Status rill_status_ = (expr);        \
    if (!rill_status_.ok()) return rill_status_; \
  } while (false)

// RILL_ASSIGN_OR_RETURN(lhs, expr): evaluates the StatusOr `expr`; on error
// returns its status, otherwise moves the value into `lhs` (which may be a
// declaration, e.g. `auto x`).
#define RILL_ASSIGN_OR_RETURN(lhs, expr) \
  RILL_ASSIGN_OR_RETURN_IMPL_(RILL_CONCAT_(rill_statusor_, __LINE__), lhs, expr)
#define RILL_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return std::move(tmp).status();    \
  lhs = std::move(tmp).value()
#define RILL_CONCAT_(a, b) RILL_CONCAT_IMPL_(a, b)
#define RILL_CONCAT_IMPL_(a, b) a##b

namespace rill {

// Returns `status` with `context + ": "` prepended to its message; the code
// is kept. OK stays OK.
absl::Status Annotate(const absl::Status& status, std::string_view context);

// The Internal error for the exception being handled: "<who> threw: <what()>"
// for a std::exception, "<who> threw a non-standard exception" otherwise
// (without "<who> " when `who` is empty). Call only from a catch block:
//   try { fn(); } catch (...) { status = CurrentExceptionStatus("host kernel"); }
absl::Status CurrentExceptionStatus(std::string_view who);

// Converts a std::string_view to the absl::string_view of Debian's Abseil
// build, where the two are distinct types.
inline absl::string_view AsAbsl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

}  // namespace rill

#endif  // RILL_BASE_STATUS_MACROS_H_
