#ifndef RILL_OPS_SHAPE_FLOAT_TO_INT_H_
#define RILL_OPS_SHAPE_FLOAT_TO_INT_H_

// Float to integer conversion with a defined result for every input
// (docs/integer-semantics.md): NaN gives 0, a value beyond the integer
// type's range saturates to its minimum or maximum, any other value is
// truncated toward zero. A plain C conversion of NaN, an infinity or an
// out-of-range value is undefined behaviour.
//
// One spelling for the host kernels (cast, fill, arange) and the CUDA
// kernels (shape.cu and init.cu include this header; nvcc only, so no Rill
// includes). The OpenCL kernels use the built-in convert_<type>_sat_rtz,
// which the OpenCL C specification defines with the same rule.

#include <cstdint>

#ifdef __CUDACC__
#define RILL_FLOAT_TO_INT_FN __host__ __device__ inline
#else
#define RILL_FLOAT_TO_INT_FN inline
#endif

namespace rill::ops {

// `v` (a float or double) as the integer type D (int32_t, int64_t, uint8_t,
// ...). Only comparisons run before the conversion, and the bounds are
// powers of two, exact in every float type.
template <typename D, typename S>
RILL_FLOAT_TO_INT_FN D FloatToInt(S v) {
  constexpr bool kSigned = D(-1) < D(0);
  constexpr D kMax = kSigned ? D(~(static_cast<uint64_t>(-1) << (sizeof(D) * 8 - 1)))
                             : D(static_cast<uint64_t>(-1));
  constexpr D kMin = kSigned ? D(-kMax - 1) : D(0);
  // 2^(bits-1) for signed types, 2^bits for unsigned ones: kMax + 1 as S.
  const S hi = S(kMax / 2 + 1) * S(2);
  if (v != v) return D(0);
  if (v >= hi) return kMax;
  if (v < S(kMin)) return kMin;  // From here trunc(v) is in [kMin, kMax].
  return D(v);
}

}  // namespace rill::ops

#endif  // RILL_OPS_SHAPE_FLOAT_TO_INT_H_
