// The elementwise ops' device kernels, one source for OpenCL C and CUDA.
// The host defines T (the element type), UT (its unsigned type; T for
// floats), IS_FLOAT, KERNEL(name) (the entry
// name: `name` in OpenCL, `name_<suffix>` in CUDA), RILL_FN (a helper's
// qualifiers) and the op codes BIN_* / UN_* (elementwise_codes.h), then
// includes this text: elementwise_device.cc prepends them for OpenCL, and
// elementwise.cu includes it once per element type through
// ops/device_code_cuda.h. Keep to what both languages share: OpenCL C 1.2
// scalar code, get_global_id(0), __kernel and __global, casts as (T)x.

#ifndef RILL_ELEMENTWISE_PLAN
#define RILL_ELEMENTWISE_PLAN
typedef struct {
  long rank;
  long dims[6];
  long a_strides[6];
  long b_strides[6];
} BroadcastPlan;
typedef struct {
  long rank;
  long dims[6];
  long c_strides[6];
  long x_strides[6];
  long y_strides[6];
} WherePlan;
#endif

// Integer arithmetic without undefined behaviour or traps
// (elementwise_math.h, docs/integer-semantics.md): +, -, * wrap modulo
// 2^bits, computed in UT (T's unsigned type; T itself for floats); / and
// mod give 0 for a divisor of 0, INT_MIN / -1 wraps to INT_MIN.
#if IS_FLOAT
RILL_FN T wrap_add(T a, T b) { return a + b; }
RILL_FN T wrap_sub(T a, T b) { return a - b; }
RILL_FN T wrap_mul(T a, T b) { return a * b; }
#else
RILL_FN T wrap_add(T a, T b) { return (T)((UT)a + (UT)b); }
RILL_FN T wrap_sub(T a, T b) { return (T)((UT)a - (UT)b); }
RILL_FN T wrap_mul(T a, T b) { return (T)((UT)a * (UT)b); }
RILL_FN T int_div(T a, T b) {
  if (b == (T)0) return (T)0;
  if ((T)(-1) < (T)0 && b == (T)(-1)) return wrap_sub((T)0, a);
  return (T)(a / b);
}
// a mod b: truncated (C's %) or floored (Python's %, the divisor's sign);
// 0 when b is 0 or -1.
RILL_FN T int_mod(T a, T b, int floored) {
  if (b == (T)0 || ((T)(-1) < (T)0 && b == (T)(-1))) return (T)0;
  T r = (T)(a % b);
  if (floored && r != (T)0 && (r ^ b) < 0) r = (T)(r + b);  // Signs differ (never for uchar).
  return r;
}
#endif

RILL_FN T apply_binary(int op, T a, T b) {
  switch (op) {
    case BIN_ADD: return wrap_add(a, b);
    case BIN_SUB: return wrap_sub(a, b);
    case BIN_MUL: return wrap_mul(a, b);
#if IS_FLOAT
    case BIN_DIV: return a / b;
    case BIN_POW: return pow(a, b);
    case BIN_RDIV: return b / a;
    case BIN_RPOW: return pow(b, a);
    case BIN_FMOD: return fmod(a, b);
#else
    case BIN_DIV: return int_div(a, b);
    case BIN_RDIV: return int_div(b, a);
    case BIN_MOD: return int_mod(a, b, 1);
    case BIN_FMOD: return int_mod(a, b, 0);
#endif
    case BIN_MAX: return a > b ? a : b;
    case BIN_MIN: return a < b ? a : b;
    case BIN_EQUAL: return a == b ? (T)1 : (T)0;
    case BIN_GREATER: return a > b ? (T)1 : (T)0;
    case BIN_RSUB: return wrap_sub(b, a);
  }
  return (T)0;
}

__kernel void KERNEL(binary)(int op, __global const T* a, ulong a_off, __global const T* b,
                             ulong b_off, __global T* out, ulong out_off, ulong n,
                             BroadcastPlan p, int add) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  long rem = (long)i, ia = 0, ib = 0;
  for (int d = (int)p.rank - 1; d >= 0; --d) {
    long k = rem % p.dims[d];
    rem /= p.dims[d];
    ia += k * p.a_strides[d];
    ib += k * p.b_strides[d];
  }
  T v = apply_binary(op, a[a_off + ia], b[b_off + ib]);
  out[out_off + i] = add ? wrap_add(out[out_off + i], v) : v;
}

__kernel void KERNEL(scalar)(int op, __global const T* x, ulong x_off, T s, __global T* out,
                             ulong out_off, ulong n, int add) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  T v = apply_binary(op, x[x_off + i], s);
  out[out_off + i] = add ? wrap_add(out[out_off + i], v) : v;
}

RILL_FN T apply_unary(int op, T x) {
  switch (op) {
    case UN_NEG: return wrap_sub((T)0, x);
#if IS_FLOAT
    case UN_ABS: return fabs(x);
    case UN_EXP: return exp(x);
    case UN_LOG: return log(x);
    case UN_SQRT: return sqrt(x);
    case UN_SIGMOID: return (T)1 / ((T)1 + exp(-x));
    case UN_TANH: return tanh(x);
    case UN_GELU: return (T)0.5 * x * ((T)1 + erf(x * (T)0.70710678118654752440));
    case UN_ERF: return erf(x);
    case UN_FLOOR: return floor(x);
    case UN_CEIL: return ceil(x);
    case UN_ROUND: return rint(x);  // Half to even (round() goes away from zero).
    case UN_SIN: return sin(x);
    case UN_COS: return cos(x);
    case UN_TAN: return tan(x);
    case UN_ASIN: return asin(x);
    case UN_ACOS: return acos(x);
    case UN_ATAN: return atan(x);
    case UN_SINH: return sinh(x);
    case UN_COSH: return cosh(x);
    case UN_ASINH: return asinh(x);
    case UN_ACOSH: return acosh(x);
    case UN_ATANH: return atanh(x);
#else
    case UN_ABS: return x < 0 ? wrap_sub((T)0, x) : x;  // abs(INT_MIN) is INT_MIN.
#endif
    case UN_RELU: return x > 0 ? x : (T)0;
    case UN_SQUARE: return wrap_mul(x, x);
  }
  return x;  // UN_COPY.
}

RILL_FN T apply_unary_backward(int op, T dy, T x) {
  switch (op) {
    case UN_NEG: return wrap_sub((T)0, dy);
    case UN_ABS: return x > 0 ? dy : (x < 0 ? wrap_sub((T)0, dy) : (T)0);
#if IS_FLOAT
    case UN_EXP: return dy * exp(x);
    case UN_LOG: return dy / x;
    case UN_SQRT: return dy / ((T)2 * sqrt(x));
    case UN_SIGMOID: { T s = (T)1 / ((T)1 + exp(-x)); return dy * s * ((T)1 - s); }
    case UN_TANH: { T t = tanh(x); return dy * ((T)1 - t * t); }
    case UN_GELU: {
      T cdf = (T)0.5 * ((T)1 + erf(x * (T)0.70710678118654752440));
      T pdf = exp((T)(-0.5) * x * x) * (T)0.39894228040143267794;
      return dy * (cdf + x * pdf);
    }
    case UN_ERF: return dy * (T)1.12837916709551257390 * exp(-x * x);
    case UN_SIN: return dy * cos(x);
    case UN_COS: return -dy * sin(x);
    case UN_TAN: { T c = cos(x); return dy / (c * c); }
    case UN_ASIN: return dy / sqrt((T)1 - x * x);
    case UN_ACOS: return -dy / sqrt((T)1 - x * x);
    case UN_ATAN: return dy / ((T)1 + x * x);
    case UN_SINH: return dy * cosh(x);
    case UN_COSH: return dy * sinh(x);
    case UN_ASINH: return dy / sqrt(x * x + (T)1);
    case UN_ACOSH: return dy / (sqrt(x - (T)1) * sqrt(x + (T)1));
    case UN_ATANH: return dy / ((T)1 - x * x);
#endif
    case UN_RELU: return x > 0 ? dy : (T)0;
    case UN_SQUARE: return wrap_mul(wrap_mul(dy, (T)2), x);
  }
  return dy;  // UN_COPY.
}

__kernel void KERNEL(unary)(int op, __global const T* x, ulong x_off, __global T* out,
                            ulong out_off, ulong n, int add) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  T v = apply_unary(op, x[x_off + i]);
  out[out_off + i] = add ? wrap_add(out[out_off + i], v) : v;
}

__kernel void KERNEL(unary_backward)(int op, __global const T* dy, ulong dy_off,
                                     __global const T* x, ulong x_off, __global T* out,
                                     ulong out_off, ulong n, int add) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  T v = apply_unary_backward(op, dy[dy_off + i], x[x_off + i]);
  out[out_off + i] = add ? wrap_add(out[out_off + i], v) : v;
}

#if IS_FLOAT
// out = whether x is NaN (when nan), +inf (when pos) or -inf (when neg), as
// bool bytes. By comparisons (x - x is NaN for infinities), which both
// languages spell alike.
__kernel void KERNEL(is_nan_inf)(int nan, int pos, int neg, __global const T* x, ulong x_off,
                                 __global unsigned char* out, ulong out_off, ulong n) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  T v = x[x_off + i];
  int inf = v == v && v - v != v - v;
  int r = (nan && v != v) || (pos && inf && v > (T)0) || (neg && inf && v < (T)0);
  out[out_off + i] = r ? (unsigned char)1 : (unsigned char)0;
}
#endif

#ifndef RILL_ELEMENTWISE_WHERE_TRUE  // Not per T: once per translation unit.
#define RILL_ELEMENTWISE_WHERE_TRUE
// Whether element k of the condition is nonzero: `size` is its element
// size (1, 4 or 8 bytes) and `mask` the bits that count (the sign bit left
// out for floats, so that -0.0 is false; NaN is true).
RILL_FN int where_true(__global const unsigned char* c, long k, int size, ulong mask) {
  if (size == 1) return (c[k] & (unsigned char)mask) != 0;
  if (size == 4) return (((__global const unsigned int*)c)[k] & (unsigned int)mask) != 0;
  return (((__global const ulong*)c)[k] & mask) != 0;
}
#endif

// out = c ? x : y, each input broadcast to the output (WherePlan); c of
// any type, read through where_true (c_off in c's elements).
__kernel void KERNEL(where)(__global const unsigned char* c, ulong c_off, int c_size, ulong c_mask,
                            __global const T* x, ulong x_off, __global const T* y, ulong y_off,
                            __global T* out, ulong out_off, ulong n, WherePlan p, int add) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  long rem = (long)i, ic = 0, ix = 0, iy = 0;
  for (int d = (int)p.rank - 1; d >= 0; --d) {
    long k = rem % p.dims[d];
    rem /= p.dims[d];
    ic += k * p.c_strides[d];
    ix += k * p.x_strides[d];
    iy += k * p.y_strides[d];
  }
  T v = where_true(c, (long)c_off + ic, c_size, c_mask) ? x[x_off + ix] : y[y_off + iy];
  out[out_off + i] = add ? wrap_add(out[out_off + i], v) : v;
}
