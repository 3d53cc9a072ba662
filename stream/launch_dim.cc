#include "rill/stream/launch_dim.h"

#include "absl/strings/str_cat.h"

namespace rill {

std::string Dim3::ToString() const { return absl::StrCat("(", x, ", ", y, ", ", z, ")"); }

}  // namespace rill
