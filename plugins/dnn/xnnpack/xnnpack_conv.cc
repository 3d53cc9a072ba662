// XnnpackDnn's convolutions: the one algorithm, and forward convolution
// with fused bias and clamp, re-packing the weights whenever they change.

#include <cmath>
#include <cstring>
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
using xnnpack::ReadableInput;

namespace {

constexpr int64_t kOpConvolution = 10;
constexpr char kOperatorName[] = "convolution2d_nhwc_f32";

ConvolutionAlgorithm Algorithm(const absl::Status& supported) {
  ConvolutionAlgorithm a;
  a.id = XnnpackDnn::kAlgorithm;
  a.name = "xnnpack";
  a.available = supported.ok();
  a.reason = std::string(supported.message());
  a.implementation = kOperatorName;
  a.workspace_bytes = 0;
  // Each output sums its products in one kernel's fixed order, whatever the
  // thread count splits.
  a.deterministic = true;
  return a;
}

// The output clamp of a fused activation: relu [0, inf), clipped relu
// [0, coefficient]; none (-inf, inf).
std::pair<float, float> Clamp(const std::optional<ActivationDescriptor>& a) {
  if (!a.has_value()) return {-INFINITY, INFINITY};
  if (a->mode == ActivationMode::kClippedRelu) return {0.0f, static_cast<float>(a->coefficient)};
  return {0.0f, INFINITY};
}

// What a convolution run needs; the cache entry holds the operator.
struct ConvCall {
  ConvolutionShape shape;
  float min, max;
  const float* input;
  const float* filter;
  const float* bias;  // Null: none.
  float* output;
};

// Whether `entry`'s operator was packed from the weights and bias `call`
// reads now.
bool PackedFromLocked(const CachedOperator& entry, const ConvCall& call)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu) {
  if (entry.op == nullptr) return false;
  const size_t bias_count =
      call.bias == nullptr ? 0 : static_cast<size_t>(call.shape.filter.output_channels);
  return entry.weights.size() == static_cast<size_t>(call.shape.filter.ElementCount()) &&
         entry.bias.size() == bias_count &&
         std::memcmp(entry.weights.data(), call.filter, entry.weights.size() * sizeof(float)) ==
             0 &&
         (bias_count == 0 ||
          std::memcmp(entry.bias.data(), call.bias, bias_count * sizeof(float)) == 0);
}

// (Re)creates `entry`'s operator from the weights and bias of the moment and
// keeps copies of them.
absl::Status PackLocked(CachedOperator& entry, const ConvCall& call)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu) {
  const ConvolutionShape& s = call.shape;
  const ConvolutionDescriptor& c = s.conv;
  const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  const size_t groups = static_cast<size_t>(c.group_count);
  entry.op.reset();  // Frees the old packed weights first.
  RILL_ASSIGN_OR_RETURN(
      entry.op, xnnpack::MakeOperator("xnnpack convolution", [&](xnn_operator_t* op) {
        // Padding top, right, bottom, left; filters [K][KH][KW][C/G] = OHWI.
        return xnn_create_convolution2d_nhwc_f32(
            u32(c.pad_h), u32(c.pad_w), u32(c.pad_h), u32(c.pad_w), u32(s.filter.height),
            u32(s.filter.width), u32(c.stride_h), u32(c.stride_w), u32(c.dilation_h),
            u32(c.dilation_w), u32(c.group_count), static_cast<size_t>(s.filter.input_channels),
            static_cast<size_t>(s.filter.output_channels) / groups, static_cast<size_t>(s.input.c),
            static_cast<size_t>(s.output.c), call.filter, call.bias, call.min, call.max, 0, op);
      }));
  entry.weights.assign(call.filter, call.filter + s.filter.ElementCount());
  if (call.bias == nullptr) {
    entry.bias.clear();
  } else {
    entry.bias.assign(call.bias, call.bias + s.filter.output_channels);
  }
  return absl::OkStatus();
}

// On the stream's worker: packs when the weights changed (or on first use),
// then sets up and runs.
absl::Status RunConvolution(CachedOperator& entry, const ConvCall& call,
                            std::atomic<int64_t>& packs) {
  const TensorDescriptor& x = call.shape.input;
  ReadableInput input(call.input, x.ElementCount());
  MutexLock lock(&entry.mu);
  if (!PackedFromLocked(entry, call)) {
    RILL_RETURN_IF_ERROR(PackLocked(entry, call));
    packs.fetch_add(1, std::memory_order_relaxed);
  }
  return xnnpack::SetupAndRunLocked(
      entry, "xnnpack convolution", [&](xnn_operator_t op, pthreadpool_t pool) {
        return xnn_setup_convolution2d_nhwc_f32(op, x.n, x.h, x.w, input.get(), call.output, pool);
      });
}

}  // namespace

absl::StatusOr<std::vector<ConvolutionAlgorithm>> XnnpackDnn::ConvolutionAlgorithms(
    ConvolutionKind kind, const ConvolutionShape& shape) {
  return std::vector<ConvolutionAlgorithm>{Algorithm(Supports(DnnOperation::Of(shape, kind)))};
}

absl::StatusOr<ConvolutionAlgorithm> XnnpackDnn::BestConvolutionAlgorithm(
    ConvolutionKind kind, const ConvolutionShape& shape) {
  RILL_RETURN_IF_ERROR(Supports(DnnOperation::Of(shape, kind)));
  return Algorithm(absl::OkStatus());  // The only one: nothing to time.
}

absl::Status XnnpackDnn::Convolve(Stream* stream, ConvolutionKind kind, const ConvolutionArgs& a) {
  RILL_RETURN_IF_ERROR(Supports(DnnOperation::Of(kind, a)));
  if (a.algorithm != kDefaultAlgorithm && a.algorithm != kBestAlgorithm &&
      a.algorithm != kAlgorithm) {
    return absl::NotFoundError(absl::StrCat("convolution algorithm ", a.algorithm,
                                            " is not offered by xnnpack (it offers 0 xnnpack)"));
  }
  // No workspace: any given one is ignored.
  ConvCall call{a.shape,
                0,
                0,
                static_cast<const float*>(HostPointer(a.input)),
                static_cast<const float*>(HostPointer(a.filter)),
                a.bias.is_null() ? nullptr : static_cast<const float*>(HostPointer(a.bias)),
                static_cast<float*>(HostPointer(a.output))};
  std::tie(call.min, call.max) = Clamp(a.activation);
  const ConvolutionShape& s = a.shape;
  const ConvolutionDescriptor& c = s.conv;
  // Every shape parameter, the clamp, and the weights' addresses: the
  // operator packs what it finds there (compared again on every run).
  const std::vector<int64_t> key = {kOpConvolution,
                                    s.input.n,
                                    s.input.c,
                                    s.input.h,
                                    s.input.w,
                                    s.filter.output_channels,
                                    s.filter.input_channels,
                                    s.filter.height,
                                    s.filter.width,
                                    c.pad_h,
                                    c.pad_w,
                                    c.stride_h,
                                    c.stride_w,
                                    c.dilation_h,
                                    c.dilation_w,
                                    c.group_count,
                                    KeyOf(call.min),
                                    KeyOf(call.max),
                                    KeyOf(call.filter),
                                    KeyOf(call.bias)};
  RILL_ASSIGN_OR_RETURN(std::shared_ptr<CachedOperator> entry, cache_->GetOrCreate(key, nullptr));
  if (StreamListenersActive()) NoteAlgorithm(kOperatorName);
  return EnqueueHostWork(executor_, stream, kName, "AsDnn()", [entry, call, packs = packs_] {
    return RunConvolution(*entry, call, *packs);
  });
}

}  // namespace rill
