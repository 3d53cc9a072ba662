#include "base/status_macros.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace rill {

absl::Status Annotate(const absl::Status& status, std::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(AsAbsl(context), ": ", status.message()));
}

}  // namespace rill
