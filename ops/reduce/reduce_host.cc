// Host kernels of the reduce ops: loops over whole tensors (contiguous,
// vectorizable inner loops), run inline on the CPU context or as one host
// callback on a host device's stream.

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/ops/elementwise/elementwise_math.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/reduce/reduce.h"

namespace rill::ops {
namespace {

// f32 or f64 (the only types these ops take).
template <typename Fn>
decltype(auto) DispatchFloat(DType dtype, Fn&& fn) {
  if (dtype == DType::kF64) return fn(double{});
  return fn(float{});
}

// Accumulator type: double for float sums and products, the element type
// otherwise.
template <ReduceCode C, typename T>
using Acc = std::conditional_t<std::is_same_v<T, float> && C != ReduceCode::kMax, double, T>;

template <ReduceCode C, typename A, typename T>
inline A Combine(A a, T v) {
  if constexpr (C == ReduceCode::kMax) {
    return (v > a || v != v) && a == a ? static_cast<A>(v) : a;  // NaN propagates.
  } else if constexpr (C == ReduceCode::kProd) {
    return WrapMul(a, static_cast<A>(v));  // Integers wrap (docs/integer-semantics.md).
  } else {
    return WrapAdd(a, static_cast<A>(v));
  }
}

template <ReduceCode C, typename A>
inline A Init() {
  if constexpr (C == ReduceCode::kMax) {
    return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                : std::numeric_limits<A>::lowest();
  } else if constexpr (C == ReduceCode::kProd) {
    return A(1);
  } else {
    return A(0);
  }
}

template <ReduceCode C, typename T, typename A>
inline T Finish(A a, int64_t count) {
  if constexpr (C == ReduceCode::kMean) {
    return static_cast<T>(a / static_cast<A>(count));
  } else {
    return static_cast<T>(a);
  }
}

// Offset of the odometer position `idx` over `rank` axes.
inline int64_t OffsetOf(const int64_t* idx, const int64_t* strides, int rank) {
  int64_t off = 0;
  for (int d = 0; d < rank; ++d) off += idx[d] * strides[d];
  return off;
}
inline void Advance(int64_t* idx, const int64_t* dims, int rank) {
  for (int d = rank - 1; d >= 0; --d) {
    if (++idx[d] < dims[d]) return;
    idx[d] = 0;
  }
}

template <ReduceCode C, typename T>
void ReduceLoop(const T* x, T* out, const ReducePlan& p, int64_t n_out, bool add) {
  using A = Acc<C, T>;
  auto store = [&](int64_t o, A a) {
    const T v = Finish<C, T>(a, p.red_size);
    out[o] = add ? WrapAdd(out[o], v) : v;
  };
  if (p.red_size == 0) {
    for (int64_t o = 0; o < n_out; ++o) store(o, Init<C, A>());
    return;
  }
  if (p.out_rank + p.red_rank == 0) {  // One element.
    store(0, Combine<C, A, T>(Init<C, A>(), x[0]));
    return;
  }
  const int orank = static_cast<int>(p.out_rank), rrank = static_cast<int>(p.red_rank);
  int64_t oidx[kMaxReduceRank] = {}, ridx[kMaxReduceRank] = {};
  if (p.inner_reduced) {
    // Each output reduces contiguous runs of n.
    const int64_t n = p.red_dims[rrank - 1];
    const int64_t runs = p.red_size / n;
    for (int64_t o = 0; o < n_out; ++o) {
      const T* base = x + OffsetOf(oidx, p.out_strides, orank);
      A acc = Init<C, A>();
      for (int d = 0; d < rrank; ++d) ridx[d] = 0;
      for (int64_t r = 0; r < runs; ++r) {
        const T* px = base + OffsetOf(ridx, p.red_strides, rrank - 1);
        for (int64_t j = 0; j < n; ++j) acc = Combine<C, A, T>(acc, px[j]);
        Advance(ridx, p.red_dims, rrank - 1);
      }
      store(o, acc);
      Advance(oidx, p.out_dims, orank);
    }
  } else {
    // Each block of n contiguous outputs accumulates contiguous input rows.
    const int64_t n = p.out_dims[orank - 1];
    const int64_t blocks = n_out / n;
    std::vector<A> acc(n);
    for (int64_t b = 0; b < blocks; ++b) {
      const T* base = x + OffsetOf(oidx, p.out_strides, orank - 1);
      for (int64_t j = 0; j < n; ++j) acc[j] = Init<C, A>();
      A* a = acc.data();
      for (int d = 0; d < rrank; ++d) ridx[d] = 0;
      for (int64_t r = 0; r < p.red_size; ++r) {
        const T* px = base + OffsetOf(ridx, p.red_strides, rrank);
        for (int64_t j = 0; j < n; ++j) a[j] = Combine<C, A, T>(a[j], px[j]);
        Advance(ridx, p.red_dims, rrank);
      }
      for (int64_t j = 0; j < n; ++j) store(b * n + j, a[j]);
      Advance(oidx, p.out_dims, orank - 1);
    }
  }
}

template <ReduceCode C>
absl::Status HostReduce(OpContext& ctx) {
  const TensorArg x = ctx.in(0), out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(ReducePlan plan, PlanFor(ctx));
  const bool add = ctx.req(0) == OpReqType::kAddTo;
  return ctx.RunOnHost([x, out, plan, add]() -> absl::Status {
    DispatchDType(x.dtype, [&](auto t) {
      using T = decltype(t);
      ReduceLoop<C, T>(x.data<T>(), out.data<T>(), plan, out.size(), add);
    });
    return absl::OkStatus();
  });
}

absl::Status HostArgmax(OpContext& ctx) {
  const TensorArg x = ctx.in(0), out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.params<ArgmaxParams>().axis, x.shape.rank()));
  const AxisSplit s = SplitAt(x.shape, axis);
  const bool add = ctx.req(0) == OpReqType::kAddTo;
  return ctx.RunOnHost([x, out, s, add]() -> absl::Status {
    DispatchFloat(x.dtype, [&](auto t) {
      using T = decltype(t);
      const T* in = x.data<T>();
      int64_t* o = out.data<int64_t>();
      std::vector<T> best(s.inner);
      std::vector<int64_t> idx(s.inner);
      for (int64_t b = 0; b < s.outer; ++b) {
        const T* px = in + b * s.n * s.inner;
        for (int64_t j = 0; j < s.inner; ++j) {
          best[j] = px[j];
          idx[j] = 0;
        }
        for (int64_t k = 1; k < s.n; ++k) {
          const T* row = px + k * s.inner;
          for (int64_t j = 0; j < s.inner; ++j) {
            // The first maximum; the first NaN wins and stays.
            const bool take = best[j] == best[j] && (row[j] > best[j] || row[j] != row[j]);
            best[j] = take ? row[j] : best[j];
            idx[j] = take ? k : idx[j];
          }
        }
        int64_t* po = o + b * s.inner;
        for (int64_t j = 0; j < s.inner; ++j) po[j] = add ? WrapAdd(po[j], idx[j]) : idx[j];
      }
    });
    return absl::OkStatus();
  });
}

// softmax / log_softmax of each [n] line (stride inner) of [outer, n, inner].
template <bool kLog>
absl::Status HostSoftmax(OpContext& ctx) {
  const TensorArg x = ctx.in(0), out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.params<SoftmaxParams>().axis, x.shape.rank()));
  const AxisSplit s = SplitAt(x.shape, axis);
  const bool add = ctx.req(0) == OpReqType::kAddTo;
  return ctx.RunOnHost([x, out, s, add]() -> absl::Status {
    DispatchFloat(x.dtype, [&](auto t) {
      using T = decltype(t);
      std::vector<T> m(s.inner), sum(s.inner);
      for (int64_t b = 0; b < s.outer; ++b) {
        const T* px = x.data<T>() + b * s.n * s.inner;
        T* po = out.data<T>() + b * s.n * s.inner;
        for (int64_t j = 0; j < s.inner; ++j) {
          m[j] = -std::numeric_limits<T>::infinity();
          sum[j] = 0;
        }
        for (int64_t k = 0; k < s.n; ++k) {
          const T* row = px + k * s.inner;
          for (int64_t j = 0; j < s.inner; ++j)
            m[j] = (row[j] > m[j] || row[j] != row[j]) && m[j] == m[j] ? row[j] : m[j];
        }
        for (int64_t k = 0; k < s.n; ++k) {
          const T* row = px + k * s.inner;
          for (int64_t j = 0; j < s.inner; ++j) sum[j] += std::exp(row[j] - m[j]);
        }
        if constexpr (kLog) {
          for (int64_t j = 0; j < s.inner; ++j) sum[j] = m[j] + std::log(sum[j]);  // log-sum-exp
        } else {
          for (int64_t j = 0; j < s.inner; ++j) sum[j] = T(1) / sum[j];
        }
        for (int64_t k = 0; k < s.n; ++k) {
          const T* row = px + k * s.inner;
          T* orow = po + k * s.inner;
          for (int64_t j = 0; j < s.inner; ++j) {
            const T v = kLog ? row[j] - sum[j] : std::exp(row[j] - m[j]) * sum[j];
            orow[j] = add ? orow[j] + v : v;
          }
        }
      }
    });
    return absl::OkStatus();
  });
}

// dx from (dy, y): softmax y * (dy - sum(dy * y)); log_softmax dy - exp(y) * sum(dy).
template <bool kLog>
absl::Status HostSoftmaxBackward(OpContext& ctx) {
  const TensorArg dy = ctx.in(0), y = ctx.in(1), out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.params<SoftmaxParams>().axis, y.shape.rank()));
  const AxisSplit s = SplitAt(y.shape, axis);
  const bool add = ctx.req(0) == OpReqType::kAddTo;
  return ctx.RunOnHost([dy, y, out, s, add]() -> absl::Status {
    DispatchFloat(y.dtype, [&](auto t) {
      using T = decltype(t);
      std::vector<T> dot(s.inner);
      for (int64_t b = 0; b < s.outer; ++b) {
        const int64_t off = b * s.n * s.inner;
        const T* pg = dy.data<T>() + off;
        const T* py = y.data<T>() + off;
        T* po = out.data<T>() + off;
        for (int64_t j = 0; j < s.inner; ++j) dot[j] = 0;
        for (int64_t k = 0; k < s.n; ++k) {
          const T* g = pg + k * s.inner;
          const T* yy = py + k * s.inner;
          for (int64_t j = 0; j < s.inner; ++j) dot[j] += kLog ? g[j] : g[j] * yy[j];
        }
        for (int64_t k = 0; k < s.n; ++k) {
          const T* g = pg + k * s.inner;
          const T* yy = py + k * s.inner;
          T* o = po + k * s.inner;
          for (int64_t j = 0; j < s.inner; ++j) {
            const T v = kLog ? g[j] - std::exp(yy[j]) * dot[j] : yy[j] * (g[j] - dot[j]);
            o[j] = add ? o[j] + v : v;
          }
        }
      }
    });
    return absl::OkStatus();
  });
}

// The class index of row i, or an error naming the bad label.
template <typename L>
absl::StatusOr<int64_t> LabelAt(const L* labels, int64_t i, int64_t classes) {
  const L v = labels[i];
  const double d = static_cast<double>(v);
  if (!(d >= 0 && d < static_cast<double>(classes) && d == std::floor(d))) {
    return BadLabelError(d, i, classes);
  }
  return static_cast<int64_t>(d);
}

template <typename T, typename L>
absl::Status CrossEntropyLoop(const T* x, const L* labels, T* out, int64_t rows, int64_t classes,
                              bool backward, bool add) {
  double loss = 0;
  const T inv_n = T(1) / static_cast<T>(rows);
  for (int64_t i = 0; i < rows; ++i) {
    RILL_ASSIGN_OR_RETURN(int64_t label, LabelAt(labels, i, classes));
    const T* row = x + i * classes;
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t c = 0; c < classes; ++c)
      m = (row[c] > m || row[c] != row[c]) && m == m ? row[c] : m;
    T sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(row[c] - m);
    if (!backward) {
      loss += static_cast<double>(m + std::log(sum) - row[label]);
      continue;
    }
    T* o = out + i * classes;
    const T inv = inv_n / sum;
    for (int64_t c = 0; c < classes; ++c) {
      const T v = std::exp(row[c] - m) * inv;
      o[c] = add ? o[c] + v : v;
    }
    o[label] -= inv_n;
  }
  if (!backward) {
    const T v = static_cast<T>(loss / static_cast<double>(rows));
    out[0] = add ? out[0] + v : v;
  }
  return absl::OkStatus();
}

template <bool kBackward>
absl::Status HostCrossEntropy(OpContext& ctx) {
  const TensorArg x = ctx.in(0), labels = ctx.in(1), out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  const bool add = ctx.req(0) == OpReqType::kAddTo;
  return ctx.RunOnHost([x, labels, out, add]() -> absl::Status {
    return DispatchFloat(x.dtype, [&](auto t) -> absl::Status {
      using T = decltype(t);
      return DispatchDType(labels.dtype, [&](auto l) -> absl::Status {
        using L = decltype(l);
        return CrossEntropyLoop<T, L>(x.data<T>(), labels.data<L>(), out.data<T>(), x.shape[0],
                                      x.shape[1], kBackward, add);
      });
    });
  });
}

// cumsum of each [n] line (stride inner) of [outer, n, inner], from either
// end: each element is read before its output is written (in place is
// fine).
absl::Status HostCumsum(OpContext& ctx) {
  const TensorArg x = ctx.in(0), out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  const CumsumParams& p = ctx.params<CumsumParams>();
  RILL_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p.axis, x.shape.rank()));
  const AxisSplit s = SplitAt(x.shape, axis);
  const bool exclusive = p.exclusive != 0, reverse = p.reverse != 0;
  const bool add = ctx.req(0) == OpReqType::kAddTo;
  return ctx.RunOnHost([x, out, s, exclusive, reverse, add]() -> absl::Status {
    DispatchDType(x.dtype, [&](auto t) {
      using T = decltype(t);
      std::vector<T> acc(s.inner);
      for (int64_t b = 0; b < s.outer; ++b) {
        const T* px = x.data<T>() + b * s.n * s.inner;
        T* po = out.data<T>() + b * s.n * s.inner;
        std::fill(acc.begin(), acc.end(), T(0));
        for (int64_t r = 0; r < s.n; ++r) {
          const int64_t k = (reverse ? s.n - 1 - r : r) * s.inner;
          for (int64_t j = 0; j < s.inner; ++j) {
            const T v = px[k + j];
            const T sum = exclusive ? acc[j] : WrapAdd(acc[j], v);
            acc[j] = WrapAdd(acc[j], v);
            po[k + j] = add ? WrapAdd(po[k + j], sum) : sum;
          }
        }
      }
    });
    return absl::OkStatus();
  });
}

constexpr uint32_t kReqs = ReqBit(OpReqType::kWriteTo) | ReqBit(OpReqType::kAddTo);

}  // namespace

void RegisterReduceHostKernels(OpRegistry& r) {
  r.Check(r.RegisterKernel(op_names::kSum, KernelNeeds::HostMemory(),
                           {HostReduce<ReduceCode::kSum>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kSumTo, KernelNeeds::HostMemory(),
                           {HostReduce<ReduceCode::kSum>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kMean, KernelNeeds::HostMemory(),
                           {HostReduce<ReduceCode::kMean>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kMax, KernelNeeds::HostMemory(),
                           {HostReduce<ReduceCode::kMax>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kProd, KernelNeeds::HostMemory(),
                           {HostReduce<ReduceCode::kProd>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kArgmax, KernelNeeds::HostMemory(), {HostArgmax, kReqs}));
  r.Check(
      r.RegisterKernel(op_names::kSoftmax, KernelNeeds::HostMemory(), {HostSoftmax<false>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kLogSoftmax, KernelNeeds::HostMemory(),
                           {HostSoftmax<true>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardSoftmax, KernelNeeds::HostMemory(),
                           {HostSoftmaxBackward<false>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardLogSoftmax, KernelNeeds::HostMemory(),
                           {HostSoftmaxBackward<true>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kSoftmaxCrossEntropy, KernelNeeds::HostMemory(),
                           {HostCrossEntropy<false>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardSoftmaxCrossEntropy, KernelNeeds::HostMemory(),
                           {HostCrossEntropy<true>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kCumsum, KernelNeeds::HostMemory(),
                           {HostCumsum, kReqs | ReqBit(OpReqType::kWriteInplace)}));
}

}  // namespace rill::ops
