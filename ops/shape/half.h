#ifndef RILL_OPS_SHAPE_HALF_H_
#define RILL_OPS_SHAPE_HALF_H_

// IEEE 754 binary16 <-> binary32 conversion on the host (round to nearest
// even; NaN, infinities and subnormals kept), branch-light so that loops of
// it vectorize. Used by cast and fill for float16 tensors.

#include <cstdint>
#include <cstring>

namespace rill::ops {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return BitsFloat(sign | 0x7f800000u | (man << 13));  // Inf / NaN.
  if (exp == 0) {  // Zero or subnormal: man * 2^-24.
    const float v = static_cast<float>(man) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return BitsFloat(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t FloatToHalf(float f) {
  const uint32_t u = FloatBits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // Inf or NaN (quiet NaN kept NaN).
    return static_cast<uint16_t>(sign | 0x7c00u |
                                 (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // Rounds to >= 65520: Inf.
  if (abs < 0x38800000u) {  // Below 2^-14: subnormal half (or zero), round to nearest even.
    // Value in units of 2^-24.
    const float v = BitsFloat(abs) * 16777216.0f;
    const float r = __builtin_nearbyintf(v);  // Default rounding: to nearest even.
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(r));
  }
  const uint32_t rounded = abs + 0x0fffu + ((abs >> 13) & 1u);  // Nearest even at bit 13.
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

}  // namespace rill::ops

#endif  // RILL_OPS_SHAPE_HALF_H_
