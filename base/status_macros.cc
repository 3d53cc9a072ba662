#include "rill/base/status_macros.h"

#include <exception>
#include <string>

#include "absl/strings/str_cat.h"

namespace rill {

absl::Status Annotate(const absl::Status& status, std::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(AsAbsl(context), ": ", status.message()));
}

absl::Status CurrentExceptionStatus(std::string_view who) {
  const std::string threw = who.empty() ? "threw" : absl::StrCat(AsAbsl(who), " threw");
  try {
    throw;
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(threw, ": ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat(threw, " a non-standard exception"));
  }
}

}  // namespace rill
