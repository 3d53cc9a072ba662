// CUDA kernels of the elementwise ops (elementwise_device.cc launches them;
// the OpenCL source there spells the same formulas). One extern "C" entry
// per element type: binary_f32, unary_f64, ...
#include <cstdint>

namespace {

struct BroadcastPlan {
  int64_t rank;
  int64_t dims[6];
  int64_t a_strides[6];
  int64_t b_strides[6];
};

template <typename T>
struct IsFloat {
  static constexpr bool value = false;
};
template <>
struct IsFloat<float> {
  static constexpr bool value = true;
};
template <>
struct IsFloat<double> {
  static constexpr bool value = true;
};

template <typename T>
__device__ T ApplyBinary(int op, T a, T b) {
  switch (op) {
    case 0:
      return a + b;
    case 1:
      return a - b;
    case 2:
      return a * b;
    case 3:
      if constexpr (IsFloat<T>::value)
        return a / b;
      else
        return b == 0 ? T(0) : T(a / b);
    case 4:
      if constexpr (IsFloat<T>::value)
        return pow(a, b);
      else
        return T(0);
    case 5:
      return a > b ? a : b;
    case 6:
      return a < b ? a : b;
    case 7:
      return a == b ? T(1) : T(0);
    case 8:
      return a > b ? T(1) : T(0);
    case 9:
      return b - a;
    case 10:
      if constexpr (IsFloat<T>::value)
        return b / a;
      else
        return a == 0 ? T(0) : T(b / a);
    case 11:
      if constexpr (IsFloat<T>::value)
        return pow(b, a);
      else
        return T(0);
  }
  return T(0);
}

template <typename T>
__device__ T ApplyUnary(int op, T x) {
  switch (op) {
    case 0:
      return T(-x);
    case 1:
      return x < T(0) ? T(-x) : x;
    case 5:
      return x > T(0) ? x : T(0);
    case 9:
      return T(x * x);
  }
  if constexpr (IsFloat<T>::value) {
    switch (op) {
      case 2:
        return exp(x);
      case 3:
        return log(x);
      case 4:
        return sqrt(x);
      case 6:
        return T(1) / (T(1) + exp(-x));
      case 7:
        return tanh(x);
      case 8:
        return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440)));
    }
  }
  return x;
}

template <typename T>
__device__ T ApplyUnaryBackward(int op, T dy, T x) {
  switch (op) {
    case 0:
      return T(-dy);
    case 1:
      return x > T(0) ? dy : (x < T(0) ? T(-dy) : T(0));
    case 5:
      return x > T(0) ? dy : T(0);
    case 9:
      return T(dy * T(2) * x);
  }
  if constexpr (IsFloat<T>::value) {
    switch (op) {
      case 2:
        return dy * exp(x);
      case 3:
        return dy / x;
      case 4:
        return dy / (T(2) * sqrt(x));
      case 6: {
        T s = T(1) / (T(1) + exp(-x));
        return dy * s * (T(1) - s);
      }
      case 7: {
        T t = tanh(x);
        return dy * (T(1) - t * t);
      }
      case 8: {
        T cdf = T(0.5) * (T(1) + erf(x * T(0.70710678118654752440)));
        T pdf = exp(T(-0.5) * x * x) * T(0.39894228040143267794);
        return dy * (cdf + x * pdf);
      }
    }
  }
  return dy;
}

__device__ uint64_t GlobalId() { return uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; }

template <typename T>
__device__ void Binary(int op, const T* a, uint64_t a_off, const T* b, uint64_t b_off, T* out,
                       uint64_t out_off, uint64_t n, BroadcastPlan p, int add) {
  uint64_t i = GlobalId();
  if (i >= n) return;
  int64_t rem = int64_t(i), ia = 0, ib = 0;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    int64_t k = rem % p.dims[d];
    rem /= p.dims[d];
    ia += k * p.a_strides[d];
    ib += k * p.b_strides[d];
  }
  T v = ApplyBinary<T>(op, a[a_off + ia], b[b_off + ib]);
  out[out_off + i] = add ? T(out[out_off + i] + v) : v;
}

template <typename T>
__device__ void Scalar(int op, const T* x, uint64_t x_off, T s, T* out, uint64_t out_off,
                       uint64_t n, int add) {
  uint64_t i = GlobalId();
  if (i >= n) return;
  T v = ApplyBinary<T>(op, x[x_off + i], s);
  out[out_off + i] = add ? T(out[out_off + i] + v) : v;
}

template <typename T>
__device__ void Unary(int op, const T* x, uint64_t x_off, T* out, uint64_t out_off, uint64_t n,
                      int add) {
  uint64_t i = GlobalId();
  if (i >= n) return;
  T v = ApplyUnary<T>(op, x[x_off + i]);
  out[out_off + i] = add ? T(out[out_off + i] + v) : v;
}

template <typename T>
__device__ void UnaryBackward(int op, const T* dy, uint64_t dy_off, const T* x, uint64_t x_off,
                              T* out, uint64_t out_off, uint64_t n, int add) {
  uint64_t i = GlobalId();
  if (i >= n) return;
  T v = ApplyUnaryBackward<T>(op, dy[dy_off + i], x[x_off + i]);
  out[out_off + i] = add ? T(out[out_off + i] + v) : v;
}

}  // namespace

#define RILL_ELEMENTWISE_ENTRIES(T, S)                                                            \
  extern "C" __global__ void binary_##S(int op, const T* a, uint64_t a_off, const T* b,           \
                                        uint64_t b_off, T* out, uint64_t out_off, uint64_t n,     \
                                        BroadcastPlan p, int add) {                               \
    Binary<T>(op, a, a_off, b, b_off, out, out_off, n, p, add);                                   \
  }                                                                                               \
  extern "C" __global__ void scalar_##S(int op, const T* x, uint64_t x_off, T s, T* out,          \
                                        uint64_t out_off, uint64_t n, int add) {                  \
    Scalar<T>(op, x, x_off, s, out, out_off, n, add);                                             \
  }                                                                                               \
  extern "C" __global__ void unary_##S(int op, const T* x, uint64_t x_off, T* out,                \
                                       uint64_t out_off, uint64_t n, int add) {                   \
    Unary<T>(op, x, x_off, out, out_off, n, add);                                                 \
  }                                                                                               \
  extern "C" __global__ void unary_backward_##S(int op, const T* dy, uint64_t dy_off, const T* x, \
                                                uint64_t x_off, T* out, uint64_t out_off,         \
                                                uint64_t n, int add) {                            \
    UnaryBackward<T>(op, dy, dy_off, x, x_off, out, out_off, n, add);                             \
  }

RILL_ELEMENTWISE_ENTRIES(float, f32)
RILL_ELEMENTWISE_ENTRIES(double, f64)
RILL_ELEMENTWISE_ENTRIES(int32_t, i32)
RILL_ELEMENTWISE_ENTRIES(int64_t, i64)
RILL_ELEMENTWISE_ENTRIES(uint8_t, u8)
