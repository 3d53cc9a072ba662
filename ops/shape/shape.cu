// CUDA kernels of the shape ops (shape_device.cc launches them; its OpenCL
// source spells the same): strided_copy_b{8,16,32,64}, cast_<from>_<to>,
// gather_b{8,16,32,64}_i{32,64}, gather_backward_<type>_i{32,64},
// gather_elements_b{8,16,32,64}_i{32,64}, gather_elements_backward_<type>_i{32,64},
// check_indices_i{32,64}.
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "float_to_int.h"

namespace {

struct CopyPlan {
  int64_t rank;
  int64_t dims[6];
  int64_t src[6];
  int64_t dst[6];
};

__device__ uint64_t GlobalId() { return uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; }

template <typename B>
__device__ void StridedCopy(const B* src, uint64_t src_off, B* dst, uint64_t dst_off, uint64_t n,
                            const CopyPlan& p) {
  uint64_t i = GlobalId();
  if (i >= n) return;
  int64_t rem = int64_t(i), is = 0, id = 0;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    int64_t k = rem % p.dims[d];
    rem /= p.dims[d];
    is += k * p.src[d];
    id += k * p.dst[d];
  }
  dst[dst_off + id] = src[src_off + is];
}

struct Bool {
  uint8_t v;
};

template <typename S>
__device__ auto Load(S v) {
  return v;
}
template <>
__device__ auto Load<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ auto Load<Bool>(Bool v) {
  return v.v;
}

template <typename D>
struct StoreAs {
  template <typename V>
  __device__ static D Do(V v) {
    if constexpr (std::is_integral_v<D> && std::is_floating_point_v<V>)
      return rill::ops::FloatToInt<D>(v);  // NaN 0, saturated, truncated.
    else
      return static_cast<D>(v);  // Integers narrow modulo 2^bits.
  }
};
template <>
struct StoreAs<__half> {
  template <typename V>
  __device__ static __half Do(V v) {
    return __float2half_rn(static_cast<float>(v));
  }
};
template <>
struct StoreAs<Bool> {
  template <typename V>
  __device__ static Bool Do(V v) {
    return Bool{uint8_t(v != V(0) ? 1 : 0)};
  }
};

template <typename S, typename D>
__device__ void Cast(const S* x, uint64_t x_off, D* y, uint64_t y_off, uint64_t n) {
  uint64_t i = GlobalId();
  if (i < n) y[y_off + i] = StoreAs<D>::Do(Load<S>(x[x_off + i]));
}

struct GatherPlan {
  int64_t outer;
  int64_t axis_dim;
  int64_t inner;
  int64_t count;
};

// One thread: bad[0] = the position of the first index out of [-dim, dim)
// (-1: none), bad[1] = that index (shape_device.cc's check_indices, which
// runs before every gather kernel).
template <typename I>
__device__ void CheckIndices(const I* idx, uint64_t idx_off, int64_t count, int64_t dim,
                             int64_t* bad, uint64_t bad_off) {
  if (GlobalId() != 0) return;
  bad += bad_off;
  bad[0] = -1;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t v = int64_t(idx[idx_off + k]);
    if (v < -dim || v >= dim) {
      bad[0] = k;
      bad[1] = v;
      return;
    }
  }
}

// Index v as a position along an axis of n (> 0): negative from the end,
// then clamped into [0, n), so that no access is out of bounds before
// CheckIndices' failure arrives.
__device__ int64_t GatherPos(int64_t v, int64_t n) {
  if (v < 0) v += n;
  return v < 0 ? 0 : (v >= n ? n - 1 : v);
}

// One thread per output element.
template <typename B, typename I>
__device__ void Gather(const B* data, uint64_t data_off, const I* idx, uint64_t idx_off, B* out,
                       uint64_t out_off, uint64_t n, const GatherPlan& p) {
  uint64_t t = GlobalId();
  if (t >= n) return;
  int64_t i = int64_t(t) % p.inner, r = int64_t(t) / p.inner;
  int64_t k = r % p.count, o = r / p.count;
  int64_t j = GatherPos(int64_t(idx[idx_off + k]), p.axis_dim);
  out[out_off + t] = data[data_off + (o * p.axis_dim + j) * p.inner + i];
}

// One thread per (outer, inner) position, looping over the indices: no two
// threads write the same element.
template <typename T, typename I>
__device__ void GatherBackward(const T* dy, uint64_t dy_off, const I* idx, uint64_t idx_off, T* dx,
                               uint64_t dx_off, uint64_t n, const GatherPlan& p) {
  uint64_t t = GlobalId();
  if (t >= n) return;
  int64_t i = int64_t(t) % p.inner, o = int64_t(t) / p.inner;
  T* d = dx + dx_off + o * p.axis_dim * p.inner + i;
  const T* g = dy + dy_off + o * p.count * p.inner + i;
  for (int64_t j = 0; j < p.axis_dim; ++j) d[j * p.inner] = T(0);
  for (int64_t k = 0; k < p.count; ++k) {
    int64_t j = GatherPos(int64_t(idx[idx_off + k]), p.axis_dim);
    d[j * p.inner] += g[k * p.inner];
  }
}

struct GatherElementsPlan {
  int64_t rank;
  int64_t axis;
  int64_t data_dims[6];
  int64_t index_dims[6];
};

// One thread per output element: the element of data its index points at.
template <typename B, typename I>
__device__ void GatherElements(const B* data, uint64_t data_off, const I* idx, uint64_t idx_off,
                               B* out, uint64_t out_off, uint64_t n, const GatherElementsPlan& p) {
  uint64_t t = GlobalId();
  if (t >= n) return;
  int64_t rem = int64_t(t), off = 0, stride = 1, axis_stride = 0;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    const int64_t k = rem % p.index_dims[d];
    rem /= p.index_dims[d];
    if (d == int(p.axis))
      axis_stride = stride;
    else
      off += k * stride;
    stride *= p.data_dims[d];
  }
  const int64_t j = GatherPos(int64_t(idx[idx_off + t]), p.data_dims[p.axis]);
  out[out_off + t] = data[data_off + off + j * axis_stride];
}

// One thread per element of dx: the dy elements whose index points at it,
// summed in order (no atomics).
template <typename T, typename I>
__device__ void GatherElementsBackward(const T* dy, uint64_t dy_off, const I* idx, uint64_t idx_off,
                                       T* dx, uint64_t dx_off, uint64_t n,
                                       const GatherElementsPlan& p) {
  uint64_t e = GlobalId();
  if (e >= n) return;
  int64_t rem = int64_t(e), base = 0, stride = 1, axis_stride = 0, at = 0;
  bool inside = true;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    const int64_t k = rem % p.data_dims[d];
    rem /= p.data_dims[d];
    if (d == int(p.axis)) {
      at = k;
      axis_stride = stride;
    } else {
      inside = inside && k < p.index_dims[d];
      base += k * stride;
    }
    stride *= p.index_dims[d];
  }
  T acc = T(0);
  const int64_t count = inside ? p.index_dims[p.axis] : 0, dim = p.data_dims[p.axis];
  for (int64_t j = 0; j < count; ++j) {
    const int64_t t = base + j * axis_stride;
    if (GatherPos(int64_t(idx[idx_off + t]), dim) == at) acc += dy[dy_off + t];
  }
  dx[dx_off + e] = acc;
}

}  // namespace

#define RILL_SHAPE_COPY(B, S)                                                             \
  extern "C" __global__ void strided_copy_##S(const B* src, uint64_t src_off, B* dst,     \
                                              uint64_t dst_off, uint64_t n, CopyPlan p) { \
    StridedCopy<B>(src, src_off, dst, dst_off, n, p);                                     \
  }
RILL_SHAPE_COPY(uint8_t, b8)
RILL_SHAPE_COPY(uint16_t, b16)
RILL_SHAPE_COPY(uint32_t, b32)
RILL_SHAPE_COPY(uint64_t, b64)

#define RILL_SHAPE_CAST(S, SN, D, DN)                                                           \
  extern "C" __global__ void cast_##SN##_##DN(const S* x, uint64_t x_off, D* y, uint64_t y_off, \
                                              uint64_t n) {                                     \
    Cast<S, D>(x, x_off, y, y_off, n);                                                          \
  }
#define RILL_SHAPE_CAST_FROM(S, SN)    \
  RILL_SHAPE_CAST(S, SN, float, f32)   \
  RILL_SHAPE_CAST(S, SN, double, f64)  \
  RILL_SHAPE_CAST(S, SN, __half, f16)  \
  RILL_SHAPE_CAST(S, SN, int32_t, i32) \
  RILL_SHAPE_CAST(S, SN, int64_t, i64) \
  RILL_SHAPE_CAST(S, SN, uint8_t, u8)  \
  RILL_SHAPE_CAST(S, SN, Bool, b)
RILL_SHAPE_CAST_FROM(float, f32)
RILL_SHAPE_CAST_FROM(double, f64)
RILL_SHAPE_CAST_FROM(__half, f16)
RILL_SHAPE_CAST_FROM(int32_t, i32)
RILL_SHAPE_CAST_FROM(int64_t, i64)
RILL_SHAPE_CAST_FROM(uint8_t, u8)
RILL_SHAPE_CAST_FROM(Bool, b)

#define RILL_SHAPE_GATHER(B, S, I, IS)                                                         \
  extern "C" __global__ void gather_##S##_##IS(const B* data, uint64_t data_off, const I* idx, \
                                               uint64_t idx_off, B* out, uint64_t out_off,     \
                                               uint64_t n, GatherPlan p) {                     \
    Gather<B, I>(data, data_off, idx, idx_off, out, out_off, n, p);                            \
  }
#define RILL_SHAPE_GATHER_BACKWARD(T, S, I, IS)                                             \
  extern "C" __global__ void gather_backward_##S##_##IS(                                    \
      const T* dy, uint64_t dy_off, const I* idx, uint64_t idx_off, T* dx, uint64_t dx_off, \
      uint64_t n, GatherPlan p) {                                                           \
    GatherBackward<T, I>(dy, dy_off, idx, idx_off, dx, dx_off, n, p);                       \
  }
#define RILL_SHAPE_GATHER_ELEMENTS(B, S, I, IS)                                                   \
  extern "C" __global__ void gather_elements_##S##_##IS(                                          \
      const B* data, uint64_t data_off, const I* idx, uint64_t idx_off, B* out, uint64_t out_off, \
      uint64_t n, GatherElementsPlan p) {                                                         \
    GatherElements<B, I>(data, data_off, idx, idx_off, out, out_off, n, p);                       \
  }
#define RILL_SHAPE_GATHER_ELEMENTS_BACKWARD(T, S, I, IS)                                    \
  extern "C" __global__ void gather_elements_backward_##S##_##IS(                           \
      const T* dy, uint64_t dy_off, const I* idx, uint64_t idx_off, T* dx, uint64_t dx_off, \
      uint64_t n, GatherElementsPlan p) {                                                   \
    GatherElementsBackward<T, I>(dy, dy_off, idx, idx_off, dx, dx_off, n, p);               \
  }
#define RILL_SHAPE_GATHER_KINDS(B, S, I, IS) \
  RILL_SHAPE_GATHER(B, S, I, IS)             \
  RILL_SHAPE_GATHER_ELEMENTS(B, S, I, IS)
#define RILL_SHAPE_GATHER_BACKWARDS(T, S, I, IS) \
  RILL_SHAPE_GATHER_BACKWARD(T, S, I, IS)        \
  RILL_SHAPE_GATHER_ELEMENTS_BACKWARD(T, S, I, IS)
#define RILL_SHAPE_CHECK_INDICES(I, IS)                                                        \
  extern "C" __global__ void check_indices_##IS(const I* idx, uint64_t idx_off, int64_t count, \
                                                int64_t dim, int64_t* bad, uint64_t bad_off) { \
    CheckIndices<I>(idx, idx_off, count, dim, bad, bad_off);                                   \
  }
#define RILL_SHAPE_GATHER_INDEX(I, IS)             \
  RILL_SHAPE_CHECK_INDICES(I, IS)                  \
  RILL_SHAPE_GATHER_KINDS(uint8_t, b8, I, IS)      \
  RILL_SHAPE_GATHER_KINDS(uint16_t, b16, I, IS)    \
  RILL_SHAPE_GATHER_KINDS(uint32_t, b32, I, IS)    \
  RILL_SHAPE_GATHER_KINDS(uint64_t, b64, I, IS)    \
  RILL_SHAPE_GATHER_BACKWARDS(float, f32, I, IS)   \
  RILL_SHAPE_GATHER_BACKWARDS(double, f64, I, IS)  \
  RILL_SHAPE_GATHER_BACKWARDS(int32_t, i32, I, IS) \
  RILL_SHAPE_GATHER_BACKWARDS(int64_t, i64, I, IS) \
  RILL_SHAPE_GATHER_BACKWARDS(uint8_t, u8, I, IS)
RILL_SHAPE_GATHER_INDEX(int32_t, i32)
RILL_SHAPE_GATHER_INDEX(int64_t, i64)
