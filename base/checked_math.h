#ifndef RILL_BASE_CHECKED_MATH_H_
#define RILL_BASE_CHECKED_MATH_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"

// Overflow-checked integer arithmetic for every size, count, stride and byte
// offset computed from numbers a caller supplied. Built on the compiler's
// overflow builtins, so a wrapped result is impossible, not merely unlikely:
//
//   CheckedInt<int64_t> span = CheckedInt<int64_t>(n - 1) * inc + 1;
//   span *= element_size;
//   RILL_ASSIGN_OR_RETURN(int64_t bytes, span.Get("x's span (n=..., inc=...)"));
//
// Once a step overflows the value is poisoned: every later step keeps it so,
// and Get() reports InvalidArgument "<what> overflows a 64-bit size".

namespace rill {

// a + b, or nullopt when it does not fit in T.
template <typename T>
[[nodiscard]] constexpr std::optional<T> CheckedAdd(T a, T b) {
  T r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a - b, or nullopt when it does not fit in T.
template <typename T>
[[nodiscard]] constexpr std::optional<T> CheckedSub(T a, T b) {
  T r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a * b, or nullopt when it does not fit in T.
template <typename T>
[[nodiscard]] constexpr std::optional<T> CheckedMul(T a, T b) {
  T r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// `value` converted to To, or nullopt when it does not fit (a negative value
// to an unsigned type, a 64-bit value to 32 bits, ...).
template <typename To, typename From>
[[nodiscard]] constexpr std::optional<To> CheckedCast(From value) {
  static_assert(std::is_integral_v<To> && std::is_integral_v<From>);
  static_assert(!std::is_same_v<To, bool> && !std::is_same_v<From, bool>, "not for bool");
  To r;
  if (__builtin_add_overflow(value, From{0}, &r)) return std::nullopt;
  return r;
}

// The InvalidArgument error of an overflowing size: "<what> overflows a
// 64-bit size".
inline absl::Status OverflowError(std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(AsAbsl(what), " overflows a 64-bit size"));
}

// An integer expression that remembers whether any step overflowed.
// Thread-compatible.
template <typename T>
class CheckedInt {
 public:
  static_assert(std::is_integral_v<T>);

  // From any integer type; a value that does not fit in T poisons the
  // expression instead of wrapping.
  template <typename U, typename = std::enable_if_t<std::is_integral_v<U>>>
  constexpr CheckedInt(U value) {  // NOLINT: implicit by design.
    const std::optional<T> v = CheckedCast<T>(value);
    ok_ = v.has_value();
    value_ = v.value_or(T{0});
  }

  // False once any step overflowed.
  constexpr bool ok() const { return ok_; }
  // The value; meaningful only when ok().
  constexpr T value() const { return value_; }

  // The value, or OverflowError(what).
  absl::StatusOr<T> Get(std::string_view what) const {
    if (!ok_) return OverflowError(what);
    return value_;
  }

  constexpr CheckedInt& operator+=(CheckedInt other) { return Apply(other, CheckedAdd<T>); }
  constexpr CheckedInt& operator-=(CheckedInt other) { return Apply(other, CheckedSub<T>); }
  constexpr CheckedInt& operator*=(CheckedInt other) { return Apply(other, CheckedMul<T>); }
  friend constexpr CheckedInt operator+(CheckedInt a, CheckedInt b) { return a += b; }
  friend constexpr CheckedInt operator-(CheckedInt a, CheckedInt b) { return a -= b; }
  friend constexpr CheckedInt operator*(CheckedInt a, CheckedInt b) { return a *= b; }

 private:
  template <typename Op>
  constexpr CheckedInt& Apply(CheckedInt other, Op op) {
    if (!ok_ || !other.ok_) {
      ok_ = false;
      return *this;
    }
    std::optional<T> r = op(value_, other.value_);
    ok_ = r.has_value();
    if (ok_) value_ = *r;
    return *this;
  }

  T value_ = 0;
  bool ok_ = true;
};

// The product of `factors`, or InvalidArgument: OverflowError(what), or
// "<what> has a negative factor".
//   RILL_ASSIGN_OR_RETURN(int64_t elements, CheckedProduct("tensor {n,c,h,w}", {n, c, h, w}));
inline absl::StatusOr<int64_t> CheckedProduct(std::string_view what,
                                              std::initializer_list<int64_t> factors) {
  CheckedInt<int64_t> product = 1;
  for (int64_t f : factors) {
    if (f < 0)
      return absl::InvalidArgumentError(absl::StrCat(AsAbsl(what), " has a negative factor ", f));
    product *= f;
  }
  return product.Get(what);
}

}  // namespace rill

#endif  // RILL_BASE_CHECKED_MATH_H_
