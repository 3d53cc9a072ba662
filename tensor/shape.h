#ifndef RILL_TENSOR_SHAPE_H_
#define RILL_TENSOR_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace rill {

// The dimensions of a tensor: any rank (rank 0 is a scalar of one element),
// each dimension >= 0 (zero-size tensors are allowed). A value type;
// thread-compatible.
//
//   Shape s{2, 3};  s.rank() == 2;  s.NumElements() == 6;  s.ToString() == "[2, 3]"
class Shape {
 public:
  using Dims = absl::InlinedVector<int64_t, 6>;
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(absl::Span<const int64_t> dims) : dims_(dims.begin(), dims.end()) {}

  // Checks that every dimension is >= 0 and that the element count, and its
  // size in bytes for elements of `element_size`, fit in 63 bits.
  // InvalidArgument naming the shape otherwise.
  absl::Status Validate(int element_size = 1) const;

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[i]; }
  int64_t operator[](int i) const { return dims_[i]; }
  void set_dim(int i, int64_t v) { dims_[i] = v; }
  const Dims& dims() const { return dims_; }
  Dims& mutable_dims() { return dims_; }
  absl::Span<const int64_t> span() const { return dims_; }
  // The product of the dimensions (1 for a scalar). Call on validated shapes.
  int64_t NumElements() const;
  std::string ToString() const;  // "[2, 3]"; "[]" for a scalar.

  friend bool operator==(const Shape& a, const Shape& b) { return a.dims_ == b.dims_; }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  Dims dims_;
};

// The NumPy broadcast of `a` and `b` (dimensions aligned from the right; each
// pair equal or one of them 1). InvalidArgument showing both shapes.
absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);

// `axis` in [-rank, rank) as a non-negative axis; InvalidArgument naming the
// axis and the rank otherwise.
absl::StatusOr<int> NormalizeAxis(int64_t axis, int rank);

}  // namespace rill

#endif  // RILL_TENSOR_SHAPE_H_
