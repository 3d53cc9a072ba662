// Device kernels of the reduce ops, for OpenCL (the source below, one
// program per element type, and per label type for cross-entropy) and CUDA
// (reduce.cu, one entry per type suffix): one work item per output element
// (reductions) or per line (softmax, cross-entropy backward, cumsum),
// looping over the reduced extent; loaded once per executor (ops/device_kernel.h).

#include <string>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/ops/device_check.h"
#include "rill/ops/device_kernel.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/reduce/reduce.h"
#include "rill/platform/platform.h"
#include "rill/stream/stream.h"

RILL_OPS_DECLARE_FATBIN(reduce);

namespace rill::ops {
namespace {

constexpr char kSource[] = R"CLC(
typedef struct {
  long out_rank; long out_dims[6]; long out_strides[6];
  long red_rank; long red_dims[6]; long red_strides[6];
  long red_size; long inner_reduced;
} ReducePlan;

#if IS_FLOAT
#define LOWEST ((T)(-INFINITY))
T wrap_add(T a, T b) { return a + b; }
T wrap_mul(T a, T b) { return a * b; }
#else
#define LOWEST ((T)0)
// Integers wrap modulo 2^bits (docs/integer-semantics.md): computed in UT,
// T's unsigned type.
T wrap_add(T a, T b) { return (T)((UT)a + (UT)b); }
T wrap_mul(T a, T b) { return (T)((UT)a * (UT)b); }
#endif

long base_of(ReducePlan* p, long i) {
  long rem = i, base = 0;
  for (int d = (int)p->out_rank - 1; d >= 0; --d) {
    long k = rem % p->out_dims[d];
    rem /= p->out_dims[d];
    base += k * p->out_strides[d];
  }
  return base;
}

// op (ReduceCode): 0 sum, 1 mean, 2 max (NaN propagates), 3 prod.
__kernel void reduce(int op, __global const T* x, ulong x_off, __global T* out, ulong out_off, ulong n,
                     ReducePlan p, int add) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  __global const T* px = x + x_off + base_of(&p, (long)i);
  T acc = op == 2 ? LOWEST : op == 3 ? (T)1 : (T)0;
  long idx[6] = {0, 0, 0, 0, 0, 0};
  for (long r = 0; r < p.red_size; ++r) {
    long off = 0;
    for (int d = 0; d < (int)p.red_rank; ++d) off += idx[d] * p.red_strides[d];
    T v = px[off];
    if (op == 2) acc = ((v > acc || v != v) && acc == acc) ? v : acc;
    else if (op == 3) acc = wrap_mul(acc, v);
    else acc = wrap_add(acc, v);
    for (int d = (int)p.red_rank - 1; d >= 0; --d) {
      if (++idx[d] < p.red_dims[d]) break;
      idx[d] = 0;
    }
  }
  if (op == 1) acc = acc / (T)p.red_size;
  out[out_off + i] = add ? wrap_add(out[out_off + i], acc) : acc;
}

// One reduced axis: red_rank <= 1 and the linear index is the position.
__kernel void argmax(__global const T* x, ulong x_off, __global long* out, ulong out_off, ulong n,
                     ReducePlan p, int add) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  __global const T* px = x + x_off + base_of(&p, (long)i);
  long stride = p.red_rank > 0 ? p.red_strides[0] : 0;
  T best = px[0];
  long bi = 0;
  for (long r = 1; r < p.red_size; ++r) {
    T v = px[r * stride];
    if (best == best && (v > best || v != v)) { best = v; bi = r; }
  }
  out[out_off + i] = add ? (long)((ulong)out[out_off + i] + (ulong)bi) : bi;
}

// Line i of [outer, n, inner]: elements start + k * inner, summed from
// either end; each read before its output is written (in place is fine).
__kernel void cumsum(__global const T* x, ulong x_off, __global T* out, ulong out_off, ulong lines,
                     long n, long inner, int exclusive, int reverse, int add) {
  ulong i = get_global_id(0);
  if (i >= lines) return;
  long start = ((long)i / inner) * n * inner + (long)i % inner;
  __global const T* px = x + x_off + start;
  __global T* po = out + out_off + start;
  T acc = 0;
  for (long r = 0; r < n; ++r) {
    long k = (reverse ? n - 1 - r : r) * inner;
    T v = px[k];
    T s = exclusive ? acc : wrap_add(acc, v);
    acc = wrap_add(acc, v);
    po[k] = add ? wrap_add(po[k], s) : s;
  }
}

#if IS_FLOAT
// Line i of [outer, n, inner]: elements start + k * inner.
__kernel void softmax(int is_log, __global const T* x, ulong x_off, __global T* out, ulong out_off,
                      ulong lines, long n, long inner, int add) {
  ulong i = get_global_id(0);
  if (i >= lines) return;
  long start = ((long)i / inner) * n * inner + (long)i % inner;
  __global const T* px = x + x_off + start;
  __global T* po = out + out_off + start;
  T m = LOWEST;
  for (long k = 0; k < n; ++k) { T v = px[k * inner]; m = ((v > m || v != v) && m == m) ? v : m; }
  T s = 0;
  for (long k = 0; k < n; ++k) s += exp(px[k * inner] - m);
  T lse = m + log(s), inv = (T)1 / s;
  for (long k = 0; k < n; ++k) {
    T v = is_log ? px[k * inner] - lse : exp(px[k * inner] - m) * inv;
    po[k * inner] = add ? po[k * inner] + v : v;
  }
}

__kernel void softmax_backward(int is_log, __global const T* dy, ulong dy_off, __global const T* y,
                               ulong y_off, __global T* out, ulong out_off, ulong lines, long n,
                               long inner, int add) {
  ulong i = get_global_id(0);
  if (i >= lines) return;
  long start = ((long)i / inner) * n * inner + (long)i % inner;
  __global const T* pg = dy + dy_off + start;
  __global const T* py = y + y_off + start;
  __global T* po = out + out_off + start;
  T dot = 0;
  for (long k = 0; k < n; ++k) dot += is_log ? pg[k * inner] : pg[k * inner] * py[k * inner];
  for (long k = 0; k < n; ++k) {
    T g = pg[k * inner], yy = py[k * inner];
    T v = is_log ? g - exp(yy) * dot : yy * (g - dot);
    po[k * inner] = add ? po[k * inner] + v : v;
  }
}

// The class of a label, or -1 when it is not an index in [0, classes)
// (range checked before the conversion, which NaN or a huge float would
// make undefined).
long class_of(L v, long classes) {
#if L_FLOAT
  if (!(v >= (L)0 && v < (L)classes)) return -1;
#else
  if (v < (L)0 || (long)v >= classes) return -1;
#endif
  long c = (long)v;
  return (L)c == v ? c : -1;
}

// One work item: bad[0] = the first row whose label is not a class index
// (-1: none), and that label (as L) at bad + 1, for the op's error.
__kernel void check_labels(__global const L* labels, ulong l_off, long rows, long classes,
                           __global long* bad, ulong bad_off) {
  if (get_global_id(0) != 0) return;
  bad += bad_off;
  bad[0] = -1;
  for (long i = 0; i < rows; ++i) {
    L v = labels[l_off + i];
    if (class_of(v, classes) < 0) {
      bad[0] = i;
      *((__global L*)(bad + 1)) = v;
      return;
    }
  }
}

// One work item: the mean loss (NaN for a bad label).
__kernel void cross_entropy(__global const T* x, ulong x_off, __global const L* labels, ulong l_off,
                            __global T* out, ulong out_off, long rows, long classes, int add) {
  if (get_global_id(0) != 0) return;
  T loss = 0;
  for (long i = 0; i < rows; ++i) {
    long c = class_of(labels[l_off + i], classes);
    __global const T* row = x + x_off + i * classes;
    T m = LOWEST;
    for (long k = 0; k < classes; ++k) { T v = row[k]; m = ((v > m || v != v) && m == m) ? v : m; }
    T s = 0;
    for (long k = 0; k < classes; ++k) s += exp(row[k] - m);
    loss += c < 0 ? (T)NAN : m + log(s) - row[c];
  }
  T v = loss / (T)rows;
  out[out_off] = add ? out[out_off] + v : v;
}

// One work item per row: (softmax - onehot) / rows (NaN for a bad label).
__kernel void cross_entropy_backward(__global const T* x, ulong x_off, __global const L* labels,
                                     ulong l_off, __global T* out, ulong out_off, long rows,
                                     long classes, int add) {
  long i = (long)get_global_id(0);
  if (i >= rows) return;
  long c = class_of(labels[l_off + i], classes);
  __global const T* row = x + x_off + i * classes;
  __global T* po = out + out_off + i * classes;
  T m = LOWEST;
  for (long k = 0; k < classes; ++k) { T v = row[k]; m = ((v > m || v != v) && m == m) ? v : m; }
  T s = 0;
  for (long k = 0; k < classes; ++k) s += exp(row[k] - m);
  T inv_n = (T)1 / (T)rows, inv = inv_n / s;
  for (long k = 0; k < classes; ++k) {
    T v = c < 0 ? (T)NAN : exp(row[k] - m) * inv - (k == c ? inv_n : (T)0);
    po[k] = add ? po[k] + v : v;
  }
}
#endif
)CLC";

// `entry` for `dtype` (and `labels`' type for cross-entropy).
absl::StatusOr<const Kernel*> Get(OpContext& ctx, DType dtype, const char* entry,
                                  DType labels = DType::kI32, bool with_labels = false) {
  const std::string suffix = with_labels
                                 ? absl::StrCat(DTypeSuffix(dtype), "_", DTypeSuffix(labels))
                                 : std::string(DTypeSuffix(dtype));
  const std::string key = absl::StrCat("reduce.", entry, ".", suffix);
  return DeviceKernel(
      ctx, key, RILL_OPS_FATBIN(reduce), absl::StrCat(entry, "_", suffix), entry, [&] {
        const bool fl = dtype == DType::kF32 || dtype == DType::kF64;
        const bool f64 = dtype == DType::kF64 || (with_labels && labels == DType::kF64);
        return absl::StrCat(f64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "",
                            "#define T ", OpenClTypeName(dtype), "\n#define UT ",
                            dtype == DType::kI32   ? "uint"
                            : dtype == DType::kI64 ? "ulong"
                                                   : OpenClTypeName(dtype),
                            "\n#define L ", OpenClTypeName(labels), "\n#define L_FLOAT ",
                            labels == DType::kF32 || labels == DType::kF64 ? 1 : 0,
                            "\n#define IS_FLOAT ", fl ? 1 : 0, "\n", kSource);
      });
}

int AddFlag(OpContext& ctx) { return ctx.req(0) == OpReqType::kAddTo ? 1 : 0; }

template <ReduceCode C>
absl::Status DeviceReduce(OpContext& ctx) {
  const TensorArg &x = ctx.in(0), &out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(ReducePlan plan, PlanFor(ctx));
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, x.dtype, "reduce"));
  LaunchArgs args;
  // An empty input has no block; the kernel reads none of it (red_size 0).
  args.Value<int32_t>(static_cast<int32_t>(C))
      .Tensor(x.size() == 0 ? out : x)
      .Tensor(out)
      .Value<uint64_t>(out.size())
      .Value(plan)
      .Value<int32_t>(AddFlag(ctx));
  return Launch1D(ctx, *k, out.size(), args.Take());
}

absl::Status DeviceArgmax(OpContext& ctx) {
  const TensorArg &x = ctx.in(0), &out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(ReducePlan plan, PlanFor(ctx));
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, x.dtype, "argmax"));
  LaunchArgs args;
  args.Tensor(x).Tensor(out).Value<uint64_t>(out.size()).Value(plan).Value<int32_t>(AddFlag(ctx));
  return Launch1D(ctx, *k, out.size(), args.Take());
}

template <bool kLog>
absl::Status DeviceSoftmax(OpContext& ctx) {
  const TensorArg &x = ctx.in(0), &out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.params<SoftmaxParams>().axis, x.shape.rank()));
  const AxisSplit s = SplitAt(x.shape, axis);
  const uint64_t lines = static_cast<uint64_t>(s.outer * s.inner);
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, x.dtype, "softmax"));
  LaunchArgs args;
  args.Value<int32_t>(kLog ? 1 : 0)
      .Tensor(x)
      .Tensor(out)
      .Value<uint64_t>(lines)
      .Value<int64_t>(s.n)
      .Value<int64_t>(s.inner)
      .Value<int32_t>(AddFlag(ctx));
  return Launch1D(ctx, *k, lines, args.Take());
}

template <bool kLog>
absl::Status DeviceSoftmaxBackward(OpContext& ctx) {
  const TensorArg &dy = ctx.in(0), &y = ctx.in(1), &out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.params<SoftmaxParams>().axis, y.shape.rank()));
  const AxisSplit s = SplitAt(y.shape, axis);
  const uint64_t lines = static_cast<uint64_t>(s.outer * s.inner);
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, y.dtype, "softmax_backward"));
  LaunchArgs args;
  args.Value<int32_t>(kLog ? 1 : 0)
      .Tensor(dy)
      .Tensor(y)
      .Tensor(out)
      .Value<uint64_t>(lines)
      .Value<int64_t>(s.n)
      .Value<int64_t>(s.inner)
      .Value<int32_t>(AddFlag(ctx));
  return Launch1D(ctx, *k, lines, args.Take());
}

// Enqueues the label check (check_labels) and a host callback that fails
// with the host kernels' error (BadLabelError) when a label is bad, so that
// the op's outputs carry it on every platform.
absl::Status CheckLabelsOnDevice(OpContext& ctx, DType dtype, const TensorArg& labels,
                                 int64_t classes) {
  const int64_t rows = labels.size();
  if (rows == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, dtype, "check_labels", labels.dtype, true));
  RILL_ASSIGN_OR_RETURN(TensorArg bad, DeviceCheckSlot(ctx));
  LaunchArgs args;
  args.Tensor(labels).Value<int64_t>(rows).Value<int64_t>(classes).Tensor(bad);
  RILL_RETURN_IF_ERROR(Launch1D(ctx, *k, 1, args.Take()));
  const DType ltype = labels.dtype;
  return FailIfDeviceFound(ctx, bad, [ltype, classes](int64_t row, int64_t bits) {
    const double label = DispatchDType(
        ltype, [&](auto t) { return static_cast<double>(DeviceFoundValue<decltype(t)>(bits)); });
    return BadLabelError(label, row, classes);
  });
}

template <bool kBackward>
absl::Status DeviceCrossEntropy(OpContext& ctx) {
  const TensorArg &x = ctx.in(0), &labels = ctx.in(1), &out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  const int64_t rows = x.shape[0], classes = x.shape[1];
  RILL_RETURN_IF_ERROR(CheckLabelsOnDevice(ctx, x.dtype, labels, classes));
  RILL_ASSIGN_OR_RETURN(const Kernel* k,
                        Get(ctx, x.dtype, kBackward ? "cross_entropy_backward" : "cross_entropy",
                            labels.dtype, true));
  LaunchArgs args;
  // Empty inputs have no block; the kernels read none of them.
  args.Tensor(x.size() == 0 ? out : x)
      .Tensor(labels.size() == 0 ? out : labels)
      .Tensor(out)
      .Value<int64_t>(rows)
      .Value<int64_t>(classes)
      .Value<int32_t>(AddFlag(ctx));
  return Launch1D(ctx, *k, kBackward ? static_cast<uint64_t>(rows) : 1, args.Take());
}

absl::Status DeviceCumsum(OpContext& ctx) {
  const TensorArg &x = ctx.in(0), &out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  const CumsumParams& p = ctx.params<CumsumParams>();
  RILL_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p.axis, x.shape.rank()));
  const AxisSplit s = SplitAt(x.shape, axis);
  const uint64_t lines = static_cast<uint64_t>(s.outer * s.inner);
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, x.dtype, "cumsum"));
  LaunchArgs args;
  args.Tensor(x)
      .Tensor(out)
      .Value<uint64_t>(lines)
      .Value<int64_t>(s.n)
      .Value<int64_t>(s.inner)
      .Value<int32_t>(p.exclusive != 0 ? 1 : 0)
      .Value<int32_t>(p.reverse != 0 ? 1 : 0)
      .Value<int32_t>(AddFlag(ctx));
  return Launch1D(ctx, *k, lines, args.Take());
}

void RegisterDeviceKernels(OpRegistry& r, const KernelNeeds& p) {
  constexpr uint32_t kReqs = ReqBit(OpReqType::kWriteTo) | ReqBit(OpReqType::kAddTo);
  r.Check(r.RegisterKernel(op_names::kSum, p, {DeviceReduce<ReduceCode::kSum>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kSumTo, p, {DeviceReduce<ReduceCode::kSum>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kMean, p, {DeviceReduce<ReduceCode::kMean>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kMax, p, {DeviceReduce<ReduceCode::kMax>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kProd, p, {DeviceReduce<ReduceCode::kProd>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kArgmax, p, {DeviceArgmax, kReqs}));
  r.Check(r.RegisterKernel(op_names::kSoftmax, p, {DeviceSoftmax<false>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kLogSoftmax, p, {DeviceSoftmax<true>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardSoftmax, p, {DeviceSoftmaxBackward<false>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardLogSoftmax, p, {DeviceSoftmaxBackward<true>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kSoftmaxCrossEntropy, p, {DeviceCrossEntropy<false>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardSoftmaxCrossEntropy, p,
                           {DeviceCrossEntropy<true>, kReqs}));
  r.Check(r.RegisterKernel(op_names::kCumsum, p,
                           {DeviceCumsum, kReqs | ReqBit(OpReqType::kWriteInplace)}));
}

}  // namespace

void RegisterReduceDeviceKernels(OpRegistry& r) {
  RegisterDeviceKernels(
      r, KernelNeeds::DeviceCode(DeviceCodeForms("reduce", RILL_OPS_FATBIN(reduce))));
}

}  // namespace rill::ops
