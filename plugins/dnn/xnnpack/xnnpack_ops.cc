// XnnpackDnn's element-wise family (bias add, activations, softmax) and
// pooling. Each call gets its operator from the cache (created on the
// calling thread on a miss, so a parameter XNNPACK rejects fails the Then*
// call) and enqueues setup + run on the stream's worker.

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/plugins/dnn/xnnpack/xnnpack_common.h"
#include "rill/plugins/dnn/xnnpack/xnnpack_dnn.h"
#include "rill/plugins/host_library.h"
#include "rill/stream/stream_listener.h"

namespace rill {

using xnnpack::CachedOperator;
using xnnpack::KeyOf;
using xnnpack::MakeOperator;
using xnnpack::Operator;
using xnnpack::ReadableInput;

namespace {

constexpr int64_t kOpBiasAdd = 1, kOpActivation = 2, kOpSoftmax = 3, kOpPool = 4;

std::vector<int64_t> Key(int64_t op, const TensorDescriptor& t,
                         std::initializer_list<int64_t> extra = {}) {
  std::vector<int64_t> key = {op, t.n, t.c, t.h, t.w, static_cast<int64_t>(t.layout)};
  key.insert(key.end(), extra);
  return key;
}

void Note(const char* xnn_operator) {
  if (StreamListenersActive()) NoteAlgorithm(xnn_operator);
}

// How an activation runs: a clamp (relu, clipped relu, elu with alpha 0),
// sigmoid or elu.
struct Unary {
  enum Kind { kClamp, kSigmoid, kElu } kind;
  float a = 0, b = 0;  // Clamp bounds; elu's alpha.
  const char* name;
};

Unary ToUnary(const ActivationDescriptor& a) {
  const float coef = static_cast<float>(a.coefficient);
  switch (a.mode) {
    case ActivationMode::kClippedRelu:
      return {Unary::kClamp, 0, coef, "clamp_nc_f32"};
    case ActivationMode::kSigmoid:
      return {Unary::kSigmoid, 0, 0, "sigmoid_nc_f32"};
    case ActivationMode::kElu:
      if (coef != 0) return {Unary::kElu, coef, 0, "elu_nc_f32"};
      [[fallthrough]];  // alpha 0: max(0, x).
    default:
      return {Unary::kClamp, 0, INFINITY, "clamp_nc_f32"};
  }
}

// The nc-operator setups share one signature.
using NcSetup = xnn_status (*)(xnn_operator_t, size_t, const float*, float*, pthreadpool_t);

NcSetup SetupOf(const Unary& u) {
  switch (u.kind) {
    case Unary::kClamp:
      return xnn_setup_clamp_nc_f32;
    case Unary::kSigmoid:
      return xnn_setup_sigmoid_nc_f32;
    case Unary::kElu:
      return xnn_setup_elu_nc_f32;
  }
  return xnn_setup_clamp_nc_f32;
}

// Runs an nc operator over `rows` rows of its channels (x may be y).
absl::Status RunNc(CachedOperator& entry, const char* context, NcSetup setup, size_t rows,
                   const float* x, float* y, uint64_t count) {
  ReadableInput in(x, count);
  MutexLock lock(&entry.mu);
  return xnnpack::SetupAndRunLocked(entry, context, [&](xnn_operator_t op, pthreadpool_t pool) {
    return setup(op, rows, in.get(), y, pool);
  });
}

}  // namespace

absl::Status XnnpackDnn::BiasAdd(Stream* stream, const BiasAddArgs& a) {
  RILL_RETURN_IF_ERROR(Supports(DnnOperation::Of(a)));
  const TensorDescriptor t = a.desc;
  RILL_ASSIGN_OR_RETURN(auto entry, cache_->GetOrCreate(Key(kOpBiasAdd, t), [] {
    return MakeOperator("xnnpack bias add", [](xnn_operator_t* op) {
      return xnn_create_add_nd_f32(-INFINITY, INFINITY, 0, op);
    });
  }));
  Note("add_nd_f32");
  const auto* x = static_cast<const float*>(HostPointer(a.input));
  const auto* b = static_cast<const float*>(HostPointer(a.bias));
  auto* y = static_cast<float*>(HostPointer(a.output));
  return EnqueueHostWork(
      executor_, stream, kName, "AsDnn()", [entry, t, x, b, y]() -> absl::Status {
        // NHWC: [pixels, c] + [c]; NCHW: [n, c, h w] + [c, 1].
        const bool nhwc = t.layout == DataLayout::kNHWC;
        const size_t x_shape[3] = {static_cast<size_t>(nhwc ? t.n * t.h * t.w : t.n),
                                   static_cast<size_t>(t.c), static_cast<size_t>(t.h * t.w)};
        const size_t b_shape[2] = {static_cast<size_t>(t.c), 1};
        ReadableInput in(x, t.ElementCount()), bias(b, t.c);
        MutexLock lock(&entry->mu);
        return xnnpack::SetupAndRunLocked(
            *entry, "xnnpack bias add", [&](xnn_operator_t op, pthreadpool_t pool) {
              return xnn_setup_add_nd_f32(op, nhwc ? 2 : 3, x_shape, nhwc ? 1 : 2, b_shape,
                                          in.get(), bias.get(), y, pool);
            });
      });
}

absl::Status XnnpackDnn::Activate(Stream* stream, const ActivationArgs& a) {
  RILL_RETURN_IF_ERROR(Supports(DnnOperation::Of(a)));
  const Unary u = ToUnary(a.activation);
  const TensorDescriptor t = a.desc;
  const size_t c = static_cast<size_t>(t.c);
  RILL_ASSIGN_OR_RETURN(
      auto entry, cache_->GetOrCreate(Key(kOpActivation, t, {u.kind, KeyOf(u.a), KeyOf(u.b)}), [&] {
        return MakeOperator("xnnpack activation", [&](xnn_operator_t* op) {
          switch (u.kind) {
            case Unary::kClamp:
              return xnn_create_clamp_nc_f32(c, c, c, u.a, u.b, 0, op);
            case Unary::kSigmoid:
              return xnn_create_sigmoid_nc_f32(c, c, c, 0, op);
            case Unary::kElu:
              return xnn_create_elu_nc_f32(c, c, c, u.a, 0, op);
          }
          return xnn_status_invalid_parameter;
        });
      }));
  Note(u.name);
  // Element-wise: the layout does not matter; rows of c elements.
  return EnqueueHostWork(
      executor_, stream, kName, "AsDnn()",
      [entry, setup = SetupOf(u), t, x = static_cast<const float*>(HostPointer(a.x)),
       y = static_cast<float*>(HostPointer(a.y))] {
        return RunNc(*entry, "xnnpack activation", setup, t.n * t.h * t.w, x, y, t.ElementCount());
      });
}

absl::Status XnnpackDnn::Softmax(Stream* stream, const SoftmaxArgs& a) {
  RILL_RETURN_IF_ERROR(Supports(DnnOperation::Of(a)));
  const TensorDescriptor t = a.desc;
  const size_t c = static_cast<size_t>(t.c);
  RILL_ASSIGN_OR_RETURN(auto entry, cache_->GetOrCreate(Key(kOpSoftmax, t), [&] {
    return MakeOperator("xnnpack softmax", [&](xnn_operator_t* op) {
      return xnn_create_softmax_nc_f32(c, c, c, 0, op);
    });
  }));
  Note("softmax_nc_f32");
  // NHWC: one row of c channels per pixel.
  return EnqueueHostWork(executor_, stream, kName, "AsDnn()",
                         [entry, t, x = static_cast<const float*>(HostPointer(a.x)),
                          y = static_cast<float*>(HostPointer(a.y))] {
                           return RunNc(*entry, "xnnpack softmax", xnn_setup_softmax_nc_f32,
                                        t.n * t.h * t.w, x, y, t.ElementCount());
                         });
}

absl::Status XnnpackDnn::PoolForward(Stream* stream, const PoolArgs& a) {
  RILL_RETURN_IF_ERROR(Supports(DnnOperation::Of(a)));
  const PoolingDescriptor p = a.pool;
  const TensorDescriptor x = a.x_desc;
  const bool max = p.mode == PoolingMode::kMax;
  const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  const size_t c = static_cast<size_t>(x.c);
  const std::vector<int64_t> key = Key(kOpPool, x,
                                       {static_cast<int64_t>(p.mode), p.window_h, p.window_w,
                                        p.pad_h, p.pad_w, p.stride_h, p.stride_w});
  RILL_ASSIGN_OR_RETURN(auto entry, cache_->GetOrCreate(key, [&] {
    return MakeOperator(
        max ? "xnnpack max pooling" : "xnnpack average pooling", [&](xnn_operator_t* op) {
          // Symmetric padding: top, right, bottom, left. XNNPACK's max pooling
          // never takes a padded pixel (padding never wins), and its average
          // pooling divides by the window's valid pixels (avg_exclude_pad;
          // without padding the two averages agree).
          return max ? xnn_create_max_pooling2d_nhwc_f32(
                           u32(p.pad_h), u32(p.pad_w), u32(p.pad_h), u32(p.pad_w), u32(p.window_h),
                           u32(p.window_w), u32(p.stride_h), u32(p.stride_w), 1, 1, c, c, c,
                           -INFINITY, INFINITY, 0, op)
                     : xnn_create_average_pooling2d_nhwc_f32(
                           u32(p.pad_h), u32(p.pad_w), u32(p.pad_h), u32(p.pad_w), u32(p.window_h),
                           u32(p.window_w), u32(p.stride_h), u32(p.stride_w), c, c, c, -INFINITY,
                           INFINITY, 0, op);
        });
  }));
  Note(max ? "max_pooling2d_nhwc_f32" : "average_pooling2d_nhwc_f32");
  return EnqueueHostWork(executor_, stream, kName, "AsDnn()",
                         [entry, x, max, xp = static_cast<const float*>(HostPointer(a.x)),
                          y = static_cast<float*>(HostPointer(a.y))]() -> absl::Status {
                           ReadableInput in(xp, x.ElementCount());
                           const auto setup = max ? xnn_setup_max_pooling2d_nhwc_f32
                                                  : xnn_setup_average_pooling2d_nhwc_f32;
                           MutexLock lock(&entry->mu);
                           return xnnpack::SetupAndRunLocked(
                               *entry, max ? "xnnpack max pooling" : "xnnpack average pooling",
                               [&](xnn_operator_t op, pthreadpool_t pool) {
                                 return setup(op, x.n, x.h, x.w, in.get(), y, pool);
                               });
                         });
}

}  // namespace rill
