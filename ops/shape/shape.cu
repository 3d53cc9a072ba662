// CUDA kernels of the shape ops (shape_device.cc launches them; its OpenCL
// source spells the same): strided_copy_b{8,16,32,64}, cast_<from>_<to>.
#include <cuda_fp16.h>

#include <cstdint>

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
    return static_cast<D>(v);
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
