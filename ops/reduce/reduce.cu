// CUDA kernels of the reduce ops (reduce_device.cc launches them; the OpenCL
// source there spells the same loops). One extern "C" entry per type
// suffix: reduce_f32, cumsum_i64, softmax_f64, cross_entropy_f32_i64, ...
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace {

struct ReducePlan {
  int64_t out_rank;
  int64_t out_dims[6];
  int64_t out_strides[6];
  int64_t red_rank;
  int64_t red_dims[6];
  int64_t red_strides[6];
  int64_t red_size;
  int64_t inner_reduced;
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
__device__ T Lowest() {
  if constexpr (IsFloat<T>::value)
    return T(-INFINITY);
  else
    return T(0);
}

template <typename T>
__device__ T MaxNan(T a, T v) {  // NaN propagates.
  return ((v > a || v != v) && a == a) ? v : a;
}

// Integers wrap modulo 2^bits (docs/integer-semantics.md), computed in the
// unsigned type.
template <typename T>
__device__ T WrapAdd(T a, T b) {
  if constexpr (IsFloat<T>::value)
    return a + b;
  else
    return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
}
template <typename T>
__device__ T WrapMul(T a, T b) {
  if constexpr (IsFloat<T>::value)
    return a * b;
  else
    return T(std::make_unsigned_t<T>(a) * std::make_unsigned_t<T>(b));
}

__device__ uint64_t GlobalId() { return uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; }

__device__ int64_t BaseOf(const ReducePlan& p, int64_t i) {
  int64_t rem = i, base = 0;
  for (int d = int(p.out_rank) - 1; d >= 0; --d) {
    const int64_t k = rem % p.out_dims[d];
    rem /= p.out_dims[d];
    base += k * p.out_strides[d];
  }
  return base;
}

// op (ReduceCode): 0 sum, 1 mean, 2 max, 3 prod.
template <typename T>
__device__ void Reduce(int op, const T* x, uint64_t x_off, T* out, uint64_t out_off, uint64_t n,
                       const ReducePlan& p, int add) {
  const uint64_t i = GlobalId();
  if (i >= n) return;
  const T* px = x + x_off + BaseOf(p, int64_t(i));
  T acc = op == 2 ? Lowest<T>() : op == 3 ? T(1) : T(0);
  int64_t idx[6] = {0, 0, 0, 0, 0, 0};
  for (int64_t r = 0; r < p.red_size; ++r) {
    int64_t off = 0;
    for (int d = 0; d < int(p.red_rank); ++d) off += idx[d] * p.red_strides[d];
    const T v = px[off];
    acc = op == 2 ? MaxNan(acc, v) : op == 3 ? WrapMul(acc, v) : WrapAdd(acc, v);
    for (int d = int(p.red_rank) - 1; d >= 0; --d) {
      if (++idx[d] < p.red_dims[d]) break;
      idx[d] = 0;
    }
  }
  if (op == 1) acc = T(acc / T(p.red_size));
  out[out_off + i] = add ? WrapAdd(out[out_off + i], acc) : acc;
}

template <typename T>
__device__ void Argmax(const T* x, uint64_t x_off, int64_t* out, uint64_t out_off, uint64_t n,
                       const ReducePlan& p, int add) {
  const uint64_t i = GlobalId();
  if (i >= n) return;
  const T* px = x + x_off + BaseOf(p, int64_t(i));
  const int64_t stride = p.red_rank > 0 ? p.red_strides[0] : 0;
  T best = px[0];
  int64_t bi = 0;
  for (int64_t r = 1; r < p.red_size; ++r) {
    const T v = px[r * stride];
    if (best == best && (v > best || v != v)) {
      best = v;
      bi = r;
    }
  }
  out[out_off + i] = add ? WrapAdd(out[out_off + i], bi) : bi;
}

template <typename T>
__device__ void Softmax(int is_log, const T* x, uint64_t x_off, T* out, uint64_t out_off,
                        uint64_t lines, int64_t n, int64_t inner, int add) {
  const uint64_t i = GlobalId();
  if (i >= lines) return;
  const int64_t start = (int64_t(i) / inner) * n * inner + int64_t(i) % inner;
  const T* px = x + x_off + start;
  T* po = out + out_off + start;
  T m = Lowest<T>();
  for (int64_t k = 0; k < n; ++k) m = MaxNan(m, px[k * inner]);
  T s = 0;
  for (int64_t k = 0; k < n; ++k) s += exp(px[k * inner] - m);
  const T lse = m + log(s), inv = T(1) / s;
  for (int64_t k = 0; k < n; ++k) {
    const T v = is_log ? px[k * inner] - lse : exp(px[k * inner] - m) * inv;
    po[k * inner] = add ? po[k * inner] + v : v;
  }
}

template <typename T>
__device__ void SoftmaxBackward(int is_log, const T* dy, uint64_t dy_off, const T* y,
                                uint64_t y_off, T* out, uint64_t out_off, uint64_t lines, int64_t n,
                                int64_t inner, int add) {
  const uint64_t i = GlobalId();
  if (i >= lines) return;
  const int64_t start = (int64_t(i) / inner) * n * inner + int64_t(i) % inner;
  const T* pg = dy + dy_off + start;
  const T* py = y + y_off + start;
  T* po = out + out_off + start;
  T dot = 0;
  for (int64_t k = 0; k < n; ++k) dot += is_log ? pg[k * inner] : pg[k * inner] * py[k * inner];
  for (int64_t k = 0; k < n; ++k) {
    const T g = pg[k * inner], yy = py[k * inner];
    const T v = is_log ? g - exp(yy) * dot : yy * (g - dot);
    po[k * inner] = add ? po[k * inner] + v : v;
  }
}

// Line i of [outer, n, inner], summed from either end; each element read
// before its output is written.
template <typename T>
__device__ void Cumsum(const T* x, uint64_t x_off, T* out, uint64_t out_off, uint64_t lines,
                       int64_t n, int64_t inner, int exclusive, int reverse, int add) {
  const uint64_t i = GlobalId();
  if (i >= lines) return;
  const int64_t start = (int64_t(i) / inner) * n * inner + int64_t(i) % inner;
  const T* px = x + x_off + start;
  T* po = out + out_off + start;
  T acc = 0;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t k = (reverse ? n - 1 - r : r) * inner;
    const T v = px[k];
    const T s = exclusive ? acc : WrapAdd(acc, v);
    acc = WrapAdd(acc, v);
    po[k] = add ? WrapAdd(po[k], s) : s;
  }
}

// The class of a label, or -1 when it is not an index in [0, classes)
// (range checked before the conversion).
template <typename L>
__device__ int64_t ClassOf(L v, int64_t classes) {
  if constexpr (IsFloat<L>::value) {
    if (!(v >= L(0) && v < L(classes))) return -1;
  } else {
    if (v < L(0) || int64_t(v) >= classes) return -1;
  }
  const int64_t c = int64_t(v);
  return L(c) == v ? c : -1;
}

// One thread: bad[0] = the first row whose label is not a class index (-1:
// none), and that label (as L) at bad + 1 (reduce_device.cc's check_labels).
template <typename L>
__device__ void CheckLabels(const L* labels, uint64_t l_off, int64_t rows, int64_t classes,
                            int64_t* bad, uint64_t bad_off) {
  if (GlobalId() != 0) return;
  bad += bad_off;
  bad[0] = -1;
  for (int64_t i = 0; i < rows; ++i) {
    const L v = labels[l_off + i];
    if (ClassOf(v, classes) < 0) {
      bad[0] = i;
      *reinterpret_cast<L*>(bad + 1) = v;
      return;
    }
  }
}

template <typename T, typename L>
__device__ void CrossEntropy(const T* x, uint64_t x_off, const L* labels, uint64_t l_off, T* out,
                             uint64_t out_off, int64_t rows, int64_t classes, int add) {
  if (GlobalId() != 0) return;
  T loss = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t c = ClassOf(labels[l_off + i], classes);
    const T* row = x + x_off + i * classes;
    T m = Lowest<T>();
    for (int64_t k = 0; k < classes; ++k) m = MaxNan(m, row[k]);
    T s = 0;
    for (int64_t k = 0; k < classes; ++k) s += exp(row[k] - m);
    loss += c < 0 ? T(NAN) : m + log(s) - row[c];
  }
  const T v = loss / T(rows);
  out[out_off] = add ? out[out_off] + v : v;
}

template <typename T, typename L>
__device__ void CrossEntropyBackward(const T* x, uint64_t x_off, const L* labels, uint64_t l_off,
                                     T* out, uint64_t out_off, int64_t rows, int64_t classes,
                                     int add) {
  const int64_t i = int64_t(GlobalId());
  if (i >= rows) return;
  const int64_t c = ClassOf(labels[l_off + i], classes);
  const T* row = x + x_off + i * classes;
  T* po = out + out_off + i * classes;
  T m = Lowest<T>();
  for (int64_t k = 0; k < classes; ++k) m = MaxNan(m, row[k]);
  T s = 0;
  for (int64_t k = 0; k < classes; ++k) s += exp(row[k] - m);
  const T inv_n = T(1) / T(rows), inv = inv_n / s;
  for (int64_t k = 0; k < classes; ++k) {
    const T v = c < 0 ? T(NAN) : exp(row[k] - m) * inv - (k == c ? inv_n : T(0));
    po[k] = add ? po[k] + v : v;
  }
}

}  // namespace

#define RILL_REDUCE_ENTRIES(T, S)                                                                \
  extern "C" __global__ void reduce_##S(int op, const T* x, uint64_t x_off, T* out,              \
                                        uint64_t out_off, uint64_t n, ReducePlan p, int add) {   \
    Reduce<T>(op, x, x_off, out, out_off, n, p, add);                                            \
  }                                                                                              \
  extern "C" __global__ void cumsum_##S(const T* x, uint64_t x_off, T* out, uint64_t out_off,    \
                                        uint64_t lines, int64_t n, int64_t inner, int exclusive, \
                                        int reverse, int add) {                                  \
    Cumsum<T>(x, x_off, out, out_off, lines, n, inner, exclusive, reverse, add);                 \
  }

#define RILL_FLOAT_ENTRIES(T, S)                                                               \
  extern "C" __global__ void argmax_##S(const T* x, uint64_t x_off, int64_t* out,              \
                                        uint64_t out_off, uint64_t n, ReducePlan p, int add) { \
    Argmax<T>(x, x_off, out, out_off, n, p, add);                                              \
  }                                                                                            \
  extern "C" __global__ void softmax_##S(int is_log, const T* x, uint64_t x_off, T* out,       \
                                         uint64_t out_off, uint64_t lines, int64_t n,          \
                                         int64_t inner, int add) {                             \
    Softmax<T>(is_log, x, x_off, out, out_off, lines, n, inner, add);                          \
  }                                                                                            \
  extern "C" __global__ void softmax_backward_##S(                                             \
      int is_log, const T* dy, uint64_t dy_off, const T* y, uint64_t y_off, T* out,            \
      uint64_t out_off, uint64_t lines, int64_t n, int64_t inner, int add) {                   \
    SoftmaxBackward<T>(is_log, dy, dy_off, y, y_off, out, out_off, lines, n, inner, add);      \
  }

#define RILL_CROSS_ENTROPY_ENTRIES(T, S, L, LS)                                                    \
  extern "C" __global__ void cross_entropy_##S##_##LS(const T* x, uint64_t x_off, const L* labels, \
                                                      uint64_t l_off, T* out, uint64_t out_off,    \
                                                      int64_t rows, int64_t classes, int add) {    \
    CrossEntropy<T, L>(x, x_off, labels, l_off, out, out_off, rows, classes, add);                 \
  }                                                                                                \
  extern "C" __global__ void cross_entropy_backward_##S##_##LS(                                    \
      const T* x, uint64_t x_off, const L* labels, uint64_t l_off, T* out, uint64_t out_off,       \
      int64_t rows, int64_t classes, int add) {                                                    \
    CrossEntropyBackward<T, L>(x, x_off, labels, l_off, out, out_off, rows, classes, add);         \
  }                                                                                                \
  extern "C" __global__ void check_labels_##S##_##LS(const L* labels, uint64_t l_off,              \
                                                     int64_t rows, int64_t classes, int64_t* bad,  \
                                                     uint64_t bad_off) {                           \
    CheckLabels<L>(labels, l_off, rows, classes, bad, bad_off);                                    \
  }

RILL_REDUCE_ENTRIES(float, f32)
RILL_REDUCE_ENTRIES(double, f64)
RILL_REDUCE_ENTRIES(int32_t, i32)
RILL_REDUCE_ENTRIES(int64_t, i64)
RILL_FLOAT_ENTRIES(float, f32)
RILL_FLOAT_ENTRIES(double, f64)
RILL_CROSS_ENTROPY_ENTRIES(float, f32, int32_t, i32)
RILL_CROSS_ENTROPY_ENTRIES(float, f32, int64_t, i64)
RILL_CROSS_ENTROPY_ENTRIES(float, f32, float, f32)
RILL_CROSS_ENTROPY_ENTRIES(float, f32, double, f64)
RILL_CROSS_ENTROPY_ENTRIES(double, f64, int32_t, i32)
RILL_CROSS_ENTROPY_ENTRIES(double, f64, int64_t, i64)
RILL_CROSS_ENTROPY_ENTRIES(double, f64, float, f32)
RILL_CROSS_ENTROPY_ENTRIES(double, f64, double, f64)
