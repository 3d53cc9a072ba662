#ifndef RILL_OPS_ELEMENTWISE_ELEMENTWISE_MATH_H_
#define RILL_OPS_ELEMENTWISE_ELEMENTWISE_MATH_H_

// The scalar functions behind the elementwise op codes, for host kernels
// and tests. (The OpenCL and CUDA kernels spell the same formulas.)

#include <cmath>
#include <type_traits>

#include "rill/ops/elementwise/elementwise.h"

namespace rill::ops {

// Integer arithmetic without undefined behaviour or traps
// (docs/integer-semantics.md): +, -, * and negation wrap modulo 2^bits
// (two's complement), computed in the unsigned type; other types as usual.
template <typename T, bool = std::is_integral_v<T>>
struct WrapTypeOf {
  using type = T;
};
template <typename T>
struct WrapTypeOf<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using WrapType = typename WrapTypeOf<T>::type;
template <typename T>
inline T WrapAdd(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
}
template <typename T>
inline T WrapSub(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) - static_cast<WrapType<T>>(b));
}
template <typename T>
inline T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T> && sizeof(T) < sizeof(unsigned)) {
    return static_cast<T>(static_cast<unsigned>(a) *
                          static_cast<unsigned>(b));  // No int promotion.
  } else {
    return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
  }
}
template <typename T>
inline T WrapNeg(T a) {
  if constexpr (std::is_integral_v<T>)
    return WrapSub(T(0), a);
  else
    return -a;
}

// a / b for integers, truncated toward zero: 0 when b is 0 (as NumPy),
// and INT_MIN / -1 wraps to INT_MIN (x / -1 is -x), where C's / traps.
template <typename T>
inline T IntDiv(T a, T b) {
  if (b == 0) return T(0);
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return WrapNeg(a);
  }
  return static_cast<T>(a / b);
}

// a mod b for integers: truncated (C's %, the dividend's sign) or floored
// (Python's %, the divisor's sign). 0 when b is 0, where % is undefined
// (and traps on x86), and when b is -1, where INT_MIN % -1 traps.
template <typename T>
inline T IntMod(T a, T b, bool floored) {
  if (b == 0) return T(0);
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);
  }
  T r = static_cast<T>(a % b);
  if constexpr (std::is_signed_v<T>) {
    if (floored && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
  }
  return r;
}

template <BinaryCode C, typename T>
inline T ApplyBinary(T a, T b) {
  if constexpr (C == BinaryCode::kAdd) return WrapAdd(a, b);
  if constexpr (C == BinaryCode::kSub) return WrapSub(a, b);
  if constexpr (C == BinaryCode::kRsub) return WrapSub(b, a);
  if constexpr (C == BinaryCode::kMul) return WrapMul(a, b);
  if constexpr (C == BinaryCode::kDiv) {
    if constexpr (std::is_integral_v<T>)
      return IntDiv(a, b);
    else
      return a / b;
  }
  if constexpr (C == BinaryCode::kRdiv) {
    if constexpr (std::is_integral_v<T>)
      return IntDiv(b, a);
    else
      return b / a;
  }
  if constexpr (C == BinaryCode::kPow) return static_cast<T>(std::pow(a, b));
  if constexpr (C == BinaryCode::kRpow) return static_cast<T>(std::pow(b, a));
  if constexpr (C == BinaryCode::kMax) return a > b ? a : b;
  if constexpr (C == BinaryCode::kMin) return a < b ? a : b;
  if constexpr (C == BinaryCode::kEqual) return a == b ? T(1) : T(0);
  if constexpr (C == BinaryCode::kGreater) return a > b ? T(1) : T(0);
  if constexpr (C == BinaryCode::kMod || C == BinaryCode::kFmod) {
    if constexpr (std::is_integral_v<T>)
      return IntMod(a, b, C == BinaryCode::kMod);
    else
      return std::fmod(a, b);  // kMod takes integers only (mod's type check).
  }
  return T(0);
}

template <typename T>
inline T Sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}
template <typename T>
inline T Gelu(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)));
}

template <UnaryCode C, typename T>
inline T ApplyUnary(T x) {
  if constexpr (C == UnaryCode::kNeg) return WrapNeg(x);
  if constexpr (C == UnaryCode::kAbs) {
    if constexpr (std::is_unsigned_v<T>)
      return x;
    else
      return x < 0 ? WrapNeg(x) : x;  // abs(INT_MIN) is INT_MIN.
  }
  if constexpr (C == UnaryCode::kExp) return std::exp(x);
  if constexpr (C == UnaryCode::kLog) return std::log(x);
  if constexpr (C == UnaryCode::kSqrt) return std::sqrt(x);
  if constexpr (C == UnaryCode::kRelu) return x > 0 ? x : T(0);
  if constexpr (C == UnaryCode::kSigmoid) return Sigmoid(x);
  if constexpr (C == UnaryCode::kTanh) return std::tanh(x);
  if constexpr (C == UnaryCode::kGelu) return Gelu(x);
  if constexpr (C == UnaryCode::kSquare) return WrapMul(x, x);
  if constexpr (C == UnaryCode::kErf) return std::erf(x);
  if constexpr (C == UnaryCode::kFloor) return std::floor(x);
  if constexpr (C == UnaryCode::kCeil) return std::ceil(x);
  if constexpr (C == UnaryCode::kRound) return std::nearbyint(x);  // Half to even.
  if constexpr (C == UnaryCode::kSin) return std::sin(x);
  if constexpr (C == UnaryCode::kCos) return std::cos(x);
  if constexpr (C == UnaryCode::kTan) return std::tan(x);
  if constexpr (C == UnaryCode::kAsin) return std::asin(x);
  if constexpr (C == UnaryCode::kAcos) return std::acos(x);
  if constexpr (C == UnaryCode::kAtan) return std::atan(x);
  if constexpr (C == UnaryCode::kSinh) return std::sinh(x);
  if constexpr (C == UnaryCode::kCosh) return std::cosh(x);
  if constexpr (C == UnaryCode::kAsinh) return std::asinh(x);
  if constexpr (C == UnaryCode::kAcosh) return std::acosh(x);
  if constexpr (C == UnaryCode::kAtanh) return std::atanh(x);
  return x;  // kCopy
}

// dy * f'(x).
template <UnaryCode C, typename T>
inline T ApplyUnaryBackward(T dy, T x) {
  if constexpr (C == UnaryCode::kNeg) return WrapNeg(dy);
  if constexpr (C == UnaryCode::kAbs) return x > 0 ? dy : (x < 0 ? WrapNeg(dy) : T(0));
  if constexpr (C == UnaryCode::kExp) return dy * std::exp(x);
  if constexpr (C == UnaryCode::kLog) return dy / x;
  if constexpr (C == UnaryCode::kSqrt) return dy / (T(2) * std::sqrt(x));
  if constexpr (C == UnaryCode::kRelu) return x > 0 ? dy : T(0);
  if constexpr (C == UnaryCode::kSigmoid) {
    const T s = Sigmoid(x);
    return dy * s * (T(1) - s);
  }
  if constexpr (C == UnaryCode::kTanh) {
    const T t = std::tanh(x);
    return dy * (T(1) - t * t);
  }
  if constexpr (C == UnaryCode::kGelu) {
    const T cdf = T(0.5) * (T(1) + std::erf(x * T(0.70710678118654752440)));
    const T pdf = std::exp(T(-0.5) * x * x) * T(0.39894228040143267794);
    return dy * (cdf + x * pdf);
  }
  if constexpr (C == UnaryCode::kSquare) return WrapMul(WrapMul(dy, T(2)), x);
  if constexpr (C == UnaryCode::kErf) {  // 2/sqrt(pi) exp(-x^2).
    return dy * T(1.12837916709551257390) * std::exp(-x * x);
  }
  if constexpr (C == UnaryCode::kSin) return dy * std::cos(x);
  if constexpr (C == UnaryCode::kCos) return -dy * std::sin(x);
  if constexpr (C == UnaryCode::kTan) {  // 1 / cos^2.
    const T c = std::cos(x);
    return dy / (c * c);
  }
  if constexpr (C == UnaryCode::kAsin) return dy / std::sqrt(T(1) - x * x);
  if constexpr (C == UnaryCode::kAcos) return -dy / std::sqrt(T(1) - x * x);
  if constexpr (C == UnaryCode::kAtan) return dy / (T(1) + x * x);
  if constexpr (C == UnaryCode::kSinh) return dy * std::cosh(x);
  if constexpr (C == UnaryCode::kCosh) return dy * std::sinh(x);
  if constexpr (C == UnaryCode::kAsinh) return dy / std::sqrt(x * x + T(1));
  if constexpr (C == UnaryCode::kAcosh) return dy / (std::sqrt(x - T(1)) * std::sqrt(x + T(1)));
  if constexpr (C == UnaryCode::kAtanh) return dy / (T(1) - x * x);
  return dy;  // kCopy
}

}  // namespace rill::ops

#endif  // RILL_OPS_ELEMENTWISE_ELEMENTWISE_MATH_H_
