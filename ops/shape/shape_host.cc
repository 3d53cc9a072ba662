// Host kernels of the shape ops: strided copies with an odometer over the
// outer axes and a vectorizable inner loop; cast as one loop per type pair;
// gather as one copy of `inner` elements per (outer, index), gather_elements
// as one element per output, after checking every index.

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "rill/ops/shape/float_to_int.h"
#include "rill/ops/shape/half.h"
#include "rill/ops/shape/shape_kernels.h"

namespace rill::ops {
namespace {

template <typename Fn>
void DispatchBits(int size, Fn&& fn) {
  switch (size) {
    case 1:
      fn(uint8_t{});
      break;
    case 2:
      fn(uint16_t{});
      break;
    case 4:
      fn(uint32_t{});
      break;
    default:
      fn(uint64_t{});
      break;
  }
}

template <typename U>
void CopyLoop(const U* src, U* dst, const CopyPlan& p) {
  if (p.rank == 0) {
    dst[0] = src[0];
    return;
  }
  const int inner = static_cast<int>(p.rank) - 1;
  const int64_t n = p.dims[inner], ss = p.src_strides[inner], ds = p.dst_strides[inner];
  int64_t outer = 1;
  for (int i = 0; i < inner; ++i) outer *= p.dims[i];
  int64_t idx[kCopyMaxRank] = {};
  for (int64_t o = 0; o < outer; ++o) {
    int64_t is = 0, id = 0;
    for (int d = 0; d < inner; ++d) {
      is += idx[d] * p.src_strides[d];
      id += idx[d] * p.dst_strides[d];
    }
    const U* s = src + is;
    U* t = dst + id;
    if (ss == 1 && ds == 1) {
      for (int64_t i = 0; i < n; ++i) t[i] = s[i];
    } else if (ds == 1) {
      for (int64_t i = 0; i < n; ++i) t[i] = s[i * ss];
    } else {
      for (int64_t i = 0; i < n; ++i) t[i * ds] = s[i * ss];
    }
    for (int d = inner - 1; d >= 0; --d) {
      if (++idx[d] < p.dims[d]) break;
      idx[d] = 0;
    }
  }
}

// Element types of cast, with float16 and bool as distinct tags.
struct Half {
  uint16_t bits;
};
struct Bool {
  uint8_t v;
};

template <typename Fn>
void DispatchAll(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kF16:
      fn(Half{});
      break;
    case DType::kBool:
      fn(Bool{});
      break;
    default:
      DispatchDType(dtype, fn);
      break;
  }
}

template <typename S>
inline auto Load(S v) {
  if constexpr (std::is_same_v<S, Half>)
    return HalfToFloat(v.bits);
  else if constexpr (std::is_same_v<S, Bool>)
    return v.v;
  else
    return v;
}
template <typename D, typename V>
inline D StoreAs(V v) {
  if constexpr (std::is_same_v<D, Half>)
    return Half{FloatToHalf(static_cast<float>(v))};
  else if constexpr (std::is_same_v<D, Bool>)
    return Bool{static_cast<uint8_t>(v != 0 ? 1 : 0)};
  else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<V>)
    return FloatToInt<D>(v);  // NaN 0, saturated, truncated.
  else
    return static_cast<D>(v);  // Integers narrow modulo 2^bits.
}

template <typename Fn>
void DispatchIndex(DType dtype, Fn&& fn) {
  if (dtype == DType::kI64)
    fn(int64_t{});
  else
    fn(int32_t{});
}

// Each index as a position along the axis (negative ones from the end), or
// BadIndexError for the first out of range.
template <typename I>
absl::StatusOr<std::vector<int64_t>> Positions(const I* indices, const GatherPlan& p) {
  std::vector<int64_t> pos(p.count);
  for (int64_t k = 0; k < p.count; ++k) {
    const int64_t v = static_cast<int64_t>(indices[k]);
    const int64_t j = v < 0 ? v + p.axis_dim : v;
    if (j < 0 || j >= p.axis_dim) {
      return BadIndexError(v, k, p.axis_dim);
    }
    pos[k] = j;
  }
  return pos;
}

absl::StatusOr<std::vector<int64_t>> PositionsOf(const TensorArg& indices, const GatherPlan& p) {
  absl::StatusOr<std::vector<int64_t>> pos;
  DispatchIndex(indices.dtype, [&](auto i) {
    using I = decltype(i);
    pos = Positions<I>(indices.data<I>(), p);
  });
  return pos;
}

// The element of data that output element t of gather_elements reads
// (whose index is at position `pos` along the axis).
inline int64_t ElementOffset(const GatherElementsPlan& p, int64_t t, int64_t pos) {
  int64_t rem = t, off = 0, stride = 1, axis_stride = 0;
  for (int d = static_cast<int>(p.rank) - 1; d >= 0; --d) {
    const int64_t k = rem % p.index_dims[d];
    rem /= p.index_dims[d];
    if (d == p.axis)
      axis_stride = stride;
    else
      off += k * stride;
    stride *= p.data_dims[d];
  }
  return off + pos * axis_stride;
}

// Every index of gather_elements checked (as gather's: InvalidArgument
// naming the first out of range and the axis' size).
absl::StatusOr<std::vector<int64_t>> ElementPositions(const TensorArg& indices,
                                                      const GatherElementsPlan& p) {
  GatherPlan g;
  g.axis_dim = p.data_dims[p.axis];
  g.count = indices.size();
  return PositionsOf(indices, g);
}

struct HostImpl {
  static absl::Status Copy(OpContext& ctx, const StridedCopy& c) {
    const int size = DTypeSize(c.src.dtype);
    const char* src = c.src.data<char>() + c.src_base * size;
    char* dst = c.dst.data<char>() + c.dst_base * size;
    const CopyPlan plan = c.plan;
    return ctx.RunOnHost([src, dst, plan, size]() -> absl::Status {
      DispatchBits(size, [&](auto u) {
        using U = decltype(u);
        CopyLoop<U>(reinterpret_cast<const U*>(src), reinterpret_cast<U*>(dst), plan);
      });
      return absl::OkStatus();
    });
  }
  static absl::Status Contiguous(OpContext& ctx, const TensorArg& src, const TensorArg& dst) {
    const char* s = src.data<char>();
    char* d = dst.data<char>();
    const uint64_t n = dst.bytes();
    return ctx.RunOnHost([s, d, n]() -> absl::Status {
      std::memmove(d, s, n);
      return absl::OkStatus();
    });
  }
  static absl::Status Zero(OpContext& ctx, const TensorArg& t) {
    char* d = t.data<char>();
    const uint64_t n = t.bytes();
    return ctx.RunOnHost([d, n]() -> absl::Status {
      std::memset(d, 0, n);
      return absl::OkStatus();
    });
  }
  static absl::Status Cast(OpContext& ctx, const TensorArg& x, const TensorArg& y) {
    return ctx.RunOnHost([x, y]() -> absl::Status {
      DispatchAll(x.dtype, [&](auto s) {
        using S = decltype(s);
        DispatchAll(y.dtype, [&](auto d) {
          using D = decltype(d);
          const S* in = x.data<S>();
          D* out = y.data<D>();
          const int64_t n = y.size();
          for (int64_t i = 0; i < n; ++i) out[i] = StoreAs<D>(Load<S>(in[i]));
        });
      });
      return absl::OkStatus();
    });
  }
  static absl::Status Gather(OpContext& ctx, const TensorArg& data, const TensorArg& indices,
                             const TensorArg& out, const GatherPlan& p) {
    return ctx.RunOnHost([data, indices, out, p]() -> absl::Status {
      RILL_ASSIGN_OR_RETURN(std::vector<int64_t> pos, PositionsOf(indices, p));
      const uint64_t row = static_cast<uint64_t>(p.inner) * DTypeSize(data.dtype);
      const char* src = data.data<char>();
      char* dst = out.data<char>();
      for (int64_t o = 0; o < p.outer; ++o) {
        for (int64_t k = 0; k < p.count; ++k, dst += row) {
          std::memcpy(dst, src + (o * p.axis_dim + pos[k]) * row, row);
        }
      }
      return absl::OkStatus();
    });
  }
  static absl::Status GatherBackward(OpContext& ctx, const TensorArg& dy, const TensorArg& indices,
                                     const TensorArg& dx, const GatherPlan& p) {
    return ctx.RunOnHost([dy, indices, dx, p]() -> absl::Status {
      RILL_ASSIGN_OR_RETURN(std::vector<int64_t> pos, PositionsOf(indices, p));
      DispatchDType(dx.dtype, [&](auto t) {
        using T = decltype(t);
        const T* g = dy.data<T>();
        T* d = dx.data<T>();
        std::fill(d, d + dx.size(), T(0));
        for (int64_t o = 0; o < p.outer; ++o) {
          for (int64_t k = 0; k < p.count; ++k, g += p.inner) {
            T* slice = d + (o * p.axis_dim + pos[k]) * p.inner;
            for (int64_t i = 0; i < p.inner; ++i) slice[i] += g[i];
          }
        }
      });
      return absl::OkStatus();
    });
  }
  static absl::Status GatherElements(OpContext& ctx, const TensorArg& data,
                                     const TensorArg& indices, const TensorArg& out,
                                     const GatherElementsPlan& p) {
    return ctx.RunOnHost([data, indices, out, p]() -> absl::Status {
      RILL_ASSIGN_OR_RETURN(std::vector<int64_t> pos, ElementPositions(indices, p));
      DispatchBits(DTypeSize(data.dtype), [&](auto u) {
        using U = decltype(u);
        const U* src = data.data<U>();
        U* dst = out.data<U>();
        for (int64_t t = 0; t < out.size(); ++t) dst[t] = src[ElementOffset(p, t, pos[t])];
      });
      return absl::OkStatus();
    });
  }
  static absl::Status GatherElementsBackward(OpContext& ctx, const TensorArg& dy,
                                             const TensorArg& indices, const TensorArg& dx,
                                             const GatherElementsPlan& p) {
    return ctx.RunOnHost([dy, indices, dx, p]() -> absl::Status {
      RILL_ASSIGN_OR_RETURN(std::vector<int64_t> pos, ElementPositions(indices, p));
      DispatchDType(dx.dtype, [&](auto t) {
        using T = decltype(t);
        const T* g = dy.data<T>();
        T* d = dx.data<T>();
        std::fill(d, d + dx.size(), T(0));
        for (int64_t i = 0; i < dy.size(); ++i) d[ElementOffset(p, i, pos[i])] += g[i];
      });
      return absl::OkStatus();
    });
  }
};

}  // namespace

void RegisterShapeHostKernels(OpRegistry& r) {
  shape_internal::RegisterShapeKernels<HostImpl>(r, KernelNeeds::HostMemory());
}

}  // namespace rill::ops
