// XnnpackDnn: creation, registration, Supports() and the calls XNNPACK has
// no operator for. The element-wise family and pooling are in
// xnnpack_ops.cc, convolutions in xnnpack_conv.cc.

#include "rill/plugins/dnn/xnnpack/xnnpack_dnn.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/plugins/dnn/xnnpack/xnnpack_common.h"
#include "rill/plugins/host_library.h"

namespace rill {

namespace {

// The Debian package this plugin is built against (xnnpack.h has no
// version macro).
constexpr char kLibraryVersion[] = "XNNPACK 0.0~git20220216 (Debian)";

absl::Status No(absl::string_view why) {
  return absl::UnimplementedError(absl::StrCat("xnnpack: ", why));
}

absl::Status RequireFloat(const TensorDescriptor& t) {
  if (t.type == DataType::kFloat) return absl::OkStatus();
  return No(absl::StrCat(DataTypeName(t.type), " tensors (its operators here are float only)"));
}

// `role` is "" for the call's input, else "output " and the like.
absl::Status RequireNhwc(const TensorDescriptor& t, const char* role = "") {
  if (t.layout == DataLayout::kNHWC) return absl::OkStatus();
  return No(absl::StrCat(DataLayoutName(t.layout), " ", role, "tensors (it computes NHWC)"));
}

// XNNPACK takes sizes and window parameters as uint32_t.
absl::Status Fits32(const char* what, int64_t value) {
  if (value >= 0 && value <= std::numeric_limits<uint32_t>::max()) return absl::OkStatus();
  return No(absl::StrCat(what, "=", value, " (XNNPACK takes 32-bit window parameters)"));
}

absl::Status SupportsActivation(const ActivationDescriptor& a) {
  const float coef = static_cast<float>(a.coefficient);
  switch (a.mode) {
    case ActivationMode::kRelu:
    case ActivationMode::kSigmoid:
      return absl::OkStatus();
    case ActivationMode::kClippedRelu:
      if (coef > 0) return absl::OkStatus();
      return No(absl::StrCat(a.ToString(), ": the ceiling is 0 as a float"));
    case ActivationMode::kElu:
      // alpha 0 is relu (computed as a clamp); XNNPACK wants a normal alpha.
      if (coef == 0 || std::isnormal(coef)) return absl::OkStatus();
      return No(absl::StrCat(a.ToString(), ": XNNPACK needs a normal float alpha"));
    case ActivationMode::kTanh:
      return No("tanh activations (this XNNPACK snapshot has no f32 tanh)");
  }
  return No(absl::StrCat("activation ", a.ToString()));
}

// A convolution's fused activation: relu and clipped relu are an output
// clamp; the others run unfused (DnnSupport runs DoActivate after).
absl::Status SupportsFused(const ActivationDescriptor& a) {
  if (a.mode == ActivationMode::kRelu) return absl::OkStatus();
  if (a.mode == ActivationMode::kClippedRelu) return SupportsActivation(a);
  return No(absl::StrCat("fused ", ActivationModeName(a.mode),
                         " activation (it fuses relu and clipped relu, as an output clamp)"));
}

absl::Status SupportsConvolution(const DnnOperation& op) {
  if (op.op != DnnOp::kConvolveForward) {
    return No(absl::StrCat(DnnOpName(op.op),
                           " (XNNPACK is an inference library: forward convolutions only)"));
  }
  RILL_RETURN_IF_ERROR(RequireFloat(op.input));
  RILL_RETURN_IF_ERROR(RequireFloat(op.output));
  if (op.filter.type != DataType::kFloat)
    return No(absl::StrCat(DataTypeName(op.filter.type), " filters"));
  RILL_RETURN_IF_ERROR(RequireNhwc(op.input));
  RILL_RETURN_IF_ERROR(RequireNhwc(op.output, "output "));
  if (op.filter.layout != FilterLayout::kOHWI) {
    return No(absl::StrCat(FilterLayoutName(op.filter.layout), " filters (it reads OHWI)"));
  }
  const ConvolutionDescriptor& c = op.conv;
  RILL_RETURN_IF_ERROR(Fits32("pad_h", c.pad_h));
  RILL_RETURN_IF_ERROR(Fits32("pad_w", c.pad_w));
  RILL_RETURN_IF_ERROR(Fits32("stride_h", c.stride_h));
  RILL_RETURN_IF_ERROR(Fits32("stride_w", c.stride_w));
  RILL_RETURN_IF_ERROR(Fits32("dilation_h", c.dilation_h));
  RILL_RETURN_IF_ERROR(Fits32("dilation_w", c.dilation_w));
  RILL_RETURN_IF_ERROR(Fits32("group_count", c.group_count));
  RILL_RETURN_IF_ERROR(Fits32("filter height", op.filter.height));
  RILL_RETURN_IF_ERROR(Fits32("filter width", op.filter.width));
  if (op.fused_activation.has_value()) RILL_RETURN_IF_ERROR(SupportsFused(*op.fused_activation));
  if (op.fused_side_input) return No("a fused side input (DnnSupport adds it after)");
  return absl::OkStatus();
}

absl::Status SupportsPooling(const DnnOperation& op) {
  RILL_RETURN_IF_ERROR(RequireFloat(op.input));
  RILL_RETURN_IF_ERROR(RequireNhwc(op.input));
  RILL_RETURN_IF_ERROR(RequireNhwc(op.output, "output "));
  const PoolingDescriptor& p = op.pool;
  if (p.window_h == 1 && p.window_w == 1)
    return No("1x1 pooling windows (XNNPACK rejects them as meaningless)");
  if (p.mode == PoolingMode::kAverageIncludePadding && (p.pad_h > 0 || p.pad_w > 0)) {
    return No(absl::StrCat("average pooling that counts the padding (", p.ToString(),
                           "): XNNPACK divides by the window's valid pixels (avg_exclude_pad)"));
  }
  RILL_RETURN_IF_ERROR(Fits32("window_h", p.window_h));
  RILL_RETURN_IF_ERROR(Fits32("window_w", p.window_w));
  RILL_RETURN_IF_ERROR(Fits32("pad_h", p.pad_h));
  RILL_RETURN_IF_ERROR(Fits32("pad_w", p.pad_w));
  RILL_RETURN_IF_ERROR(Fits32("stride_h", p.stride_h));
  return Fits32("stride_w", p.stride_w);
}

absl::StatusOr<std::unique_ptr<PluginInterface>> CreateXnnpack(StreamExecutor* executor) {
  absl::StatusOr<std::unique_ptr<XnnpackDnn>> dnn = XnnpackDnn::Create(executor);
  if (!dnn.ok()) return dnn.status();
  return std::unique_ptr<PluginInterface>(std::move(*dnn));
}

}  // namespace

XnnpackDnn::XnnpackDnn(StreamExecutor* executor)
    : executor_(executor),
      cache_(std::make_unique<xnnpack::OperatorCache>()),
      packs_(std::make_shared<std::atomic<int64_t>>(0)) {}

XnnpackDnn::~XnnpackDnn() = default;

absl::StatusOr<std::unique_ptr<XnnpackDnn>> XnnpackDnn::Create(StreamExecutor* executor) {
  RILL_RETURN_IF_ERROR(CheckHostLibraryPlatform(executor, kName));
  RILL_RETURN_IF_ERROR(xnnpack::Initialize());
  return std::unique_ptr<XnnpackDnn>(new XnnpackDnn(executor));
}

std::string XnnpackDnn::LibraryVersion() {
  const int threads = xnnpack::PoolThreads();
  return absl::StrCat(kLibraryVersion, ", ", threads, threads == 1 ? " thread" : " threads");
}

size_t XnnpackDnn::CachedOperators() const { return cache_->size(); }

int64_t XnnpackDnn::WeightPacks() const { return packs_->load(std::memory_order_relaxed); }

absl::Status XnnpackDnn::Supports(const DnnOperation& op) const {
  switch (op.op) {
    case DnnOp::kConvolveForward:
    case DnnOp::kConvolveBackwardData:
    case DnnOp::kConvolveBackwardFilter:
      return SupportsConvolution(op);
    case DnnOp::kBiasAdd:
      return RequireFloat(op.input);  // Either layout: a broadcasting add.
    case DnnOp::kActivate:
      RILL_RETURN_IF_ERROR(RequireFloat(op.input));  // Either layout: element-wise.
      return SupportsActivation(op.activation);
    case DnnOp::kPoolForward:
      return SupportsPooling(op);
    case DnnOp::kSoftmax:
      RILL_RETURN_IF_ERROR(RequireFloat(op.input));
      RILL_RETURN_IF_ERROR(RequireNhwc(op.input));
      if (op.log)
        return No(
            "log-softmax (XNNPACK's softmax has no log form, and log(softmax) loses accuracy)");
      return absl::OkStatus();
    case DnnOp::kActivateBackward:
    case DnnOp::kPoolBackward:
    case DnnOp::kSoftmaxBackward:
      return No(absl::StrCat(DnnOpName(op.op),
                             " (XNNPACK is an inference library: no backward operations)"));
    case DnnOp::kBatchNormInference:
    case DnnOp::kBatchNormTraining:
    case DnnOp::kBatchNormBackward:
      return No(absl::StrCat(DnnOpName(op.op), " (XNNPACK has no batch normalization operator)"));
    case DnnOp::kLrn:
      return No("lrn (XNNPACK has no LRN operator)");
  }
  return No(absl::StrCat("operation ", DnnOpName(op.op)));
}

// XNNPACK has no operator for these: Supports() says so, and DnnSupport
// hands them to the next plugin of the chain. Reached directly, they fail
// with the same reason.
absl::Status XnnpackDnn::ActivateBackward(Stream*, const ActivationBackwardArgs& a) {
  return Supports(DnnOperation::Of(a));
}
absl::Status XnnpackDnn::PoolBackward(Stream*, const PoolBackwardArgs& a) {
  return Supports(DnnOperation::Of(a));
}
absl::Status XnnpackDnn::SoftmaxBackward(Stream*, const SoftmaxBackwardArgs& a) {
  return Supports(DnnOperation::Of(a));
}
absl::Status XnnpackDnn::BatchNormInference(Stream*, const BatchNormInferenceArgs& a) {
  return Supports(DnnOperation::Of(a));
}
absl::Status XnnpackDnn::BatchNormTraining(Stream*, const BatchNormTrainingArgs& a) {
  return Supports(DnnOperation::Of(a));
}
absl::Status XnnpackDnn::BatchNormBackward(Stream*, const BatchNormBackwardArgs& a) {
  return Supports(DnnOperation::Of(a));
}
absl::Status XnnpackDnn::Lrn(Stream*, const LrnArgs& a) { return Supports(DnnOperation::Of(a)); }

RILL_REGISTER_HOST_LIBRARY_PLUGIN(xnnpack, PluginKind::kDnn, XnnpackDnn::kName, CreateXnnpack,
                                  /*make_default=*/false);

}  // namespace rill
