// CUDA kernels of the init ops (init_device.cc launches them; its OpenCL
// source spells the same formulas).
#include <cstdint>
#include <type_traits>

#include "../shape/float_to_int.h"

namespace {

__device__ uint64_t GlobalId() { return uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; }

template <typename T>
__device__ void Arange(T* out, uint64_t out_off, uint64_t n, double start, double step) {
  uint64_t i = GlobalId();
  if (i >= n) return;
  if constexpr (sizeof(T) == 4 && T(0.5) != T(0)) {  // float: computed in float, as the host.
    out[out_off + i] = float(start) + float(i) * float(step);
  } else if constexpr (std::is_integral_v<T>) {  // NaN 0, saturated, truncated.
    out[out_off + i] = rill::ops::FloatToInt<T>(start + double(i) * step);
  } else {
    out[out_off + i] = T(start + double(i) * step);
  }
}

template <typename T>
__device__ void Dropout(const T* x, uint64_t x_off, const T* u, uint64_t u_off, T* y,
                        uint64_t y_off, T* mask, uint64_t mask_off, uint64_t n, T p, T scale,
                        int train) {
  uint64_t i = GlobalId();
  if (i >= n) return;
  T xv = x[x_off + i];
  if (!train) {
    y[y_off + i] = xv;
    mask[mask_off + i] = T(1);
    return;
  }
  T m = u[u_off + i] > p ? T(1) : T(0);
  mask[mask_off + i] = m;
  y[y_off + i] = xv * m * scale;
}

}  // namespace

#define RILL_INIT_FILL(B, S)                                                       \
  extern "C" __global__ void fill_##S(B* out, uint64_t out_off, uint64_t n, B v) { \
    uint64_t i = GlobalId();                                                       \
    if (i < n) out[out_off + i] = v;                                               \
  }
RILL_INIT_FILL(uint8_t, b8)
RILL_INIT_FILL(uint16_t, b16)
RILL_INIT_FILL(uint32_t, b32)
RILL_INIT_FILL(uint64_t, b64)

#define RILL_INIT_ARANGE(T, S)                                                              \
  extern "C" __global__ void arange_##S(T* out, uint64_t out_off, uint64_t n, double start, \
                                        double step) {                                      \
    Arange<T>(out, out_off, n, start, step);                                                \
  }
RILL_INIT_ARANGE(float, f32)
RILL_INIT_ARANGE(double, f64)
RILL_INIT_ARANGE(int32_t, i32)
RILL_INIT_ARANGE(int64_t, i64)
RILL_INIT_ARANGE(uint8_t, u8)

#define RILL_INIT_FLOAT(T, S)                                                                     \
  extern "C" __global__ void uniform_affine_##S(T* out, uint64_t out_off, uint64_t n, T a, T b) { \
    uint64_t i = GlobalId();                                                                      \
    if (i < n) out[out_off + i] = a + b * out[out_off + i];                                       \
  }                                                                                               \
  extern "C" __global__ void dropout_##S(const T* x, uint64_t x_off, const T* u, uint64_t u_off,  \
                                         T* y, uint64_t y_off, T* mask, uint64_t mask_off,        \
                                         uint64_t n, T p, T scale, int train) {                   \
    Dropout<T>(x, x_off, u, u_off, y, y_off, mask, mask_off, n, p, scale, train);                 \
  }                                                                                               \
  extern "C" __global__ void dropout_backward_##S(const T* dy, uint64_t dy_off, const T* mask,    \
                                                  uint64_t mask_off, T* dx, uint64_t dx_off,      \
                                                  uint64_t n, T scale, int add) {                 \
    uint64_t i = GlobalId();                                                                      \
    if (i >= n) return;                                                                           \
    T v = dy[dy_off + i] * mask[mask_off + i] * scale;                                            \
    dx[dx_off + i] = add ? dx[dx_off + i] + v : v;                                                \
  }
RILL_INIT_FLOAT(float, f32)
RILL_INIT_FLOAT(double, f64)
