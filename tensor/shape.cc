#include "rill/tensor/shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/checked_math.h"

namespace rill {

absl::Status Shape::Validate(int element_size) const {
  CheckedInt<int64_t> count = 1;
  for (int64_t d : dims_) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ToString(), " has a negative dimension"));
    }
    count *= d;
  }
  if (!count.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", ToString(), " has more elements than fit in 63 bits"));
  }
  if (element_size > 0 && !(count * element_size).ok()) {
    return absl::InvalidArgumentError(absl::StrCat("shape ", ToString(), " of ", element_size,
                                                   "-byte elements overflows a 63-bit size"));
  }
  return absl::OkStatus();
}

int64_t Shape::NumElements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

std::string Shape::ToString() const { return absl::StrCat("[", absl::StrJoin(dims_, ", "), "]"); }

absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  if (a == b) return a;
  const int rank = std::max(a.rank(), b.rank());
  Shape out;
  out.mutable_dims().resize(rank);
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(absl::StrCat("shapes ", a.ToString(), " and ", b.ToString(),
                                                     " do not broadcast (axis ", i, ": ", da,
                                                     " vs ", db, ")"));
    }
    out.set_dim(i, da == 1 ? db : da);
  }
  return out;
}

absl::StatusOr<int> NormalizeAxis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank || (rank == 0)) {
    return absl::InvalidArgumentError(absl::StrCat("axis ", axis, " is out of range for rank ",
                                                   rank, " (valid: [", -rank, ", ", rank, "))"));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

}  // namespace rill
