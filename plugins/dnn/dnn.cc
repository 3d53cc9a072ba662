#include "rill/plugins/dnn/dnn.h"

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/plugins/blas/blas.h"
#include "rill/plugins/dnn/algorithm_selector.h"
#include "rill/plugins/plugin_chain.h"
#include "rill/plugins/plugin_check.h"
#include "rill/stream/stream.h"
#include "rill/stream/stream_listener.h"

namespace rill {

const char* ConvolutionKindName(ConvolutionKind kind) {
  switch (kind) {
    case ConvolutionKind::kForward:
      return "forward";
    case ConvolutionKind::kBackwardData:
      return "backward_data";
    case ConvolutionKind::kBackwardFilter:
      return "backward_filter";
  }
  return "?";
}

std::string ConvolutionShape::ToString() const {
  return absl::StrCat("input ", input.ToString(), ", filter ", filter.ToString(), ", ",
                      conv.ToString(), ", output ", output.ToString());
}

absl::Status CheckConvolutionShape(const ConvolutionShape& shape) {
  RILL_ASSIGN_OR_RETURN(TensorDescriptor expected,
                        ConvolutionOutput(shape.input, shape.filter, shape.conv));
  if (!SameShape(expected, shape.output)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "output descriptor ", shape.output.ToString(), " does not match the convolution's output ",
        expected.ToString(), " (", shape.input.ToString(), " * ", shape.filter.ToString(), ", ",
        shape.conv.ToString(), ")"));
  }
  return absl::OkStatus();
}

namespace {

// `role`'s buffer holds `desc` (or `elements` of desc.type).
absl::Status Buffer(Stream* stream, const char* role, const DeviceMemoryBase& memory,
                    const TensorDescriptor& desc) {
  RILL_RETURN_IF_ERROR(CheckTensor(role, desc));  // Also bounds desc.Bytes().
  return CheckBuffer(stream, role, memory, desc.Bytes());
}

absl::Status Vector(Stream* stream, const char* role, const DeviceMemoryBase& memory,
                    const TensorDescriptor& desc) {
  return CheckBuffer(stream, role, memory, static_cast<uint64_t>(desc.c) * SizeOf(desc.type));
}

absl::Status Start(Stream* stream, const TensorDescriptor& desc) {
  RILL_RETURN_IF_ERROR(CheckPluginStream(stream));
  return CheckTensor("tensor", desc);
}

absl::Status CheckActivation(const ActivationDescriptor& a) {
  if ((a.mode == ActivationMode::kClippedRelu && !(a.coefficient > 0)) ||
      (a.mode == ActivationMode::kElu && !(a.coefficient >= 0))) {
    return absl::InvalidArgumentError(
        absl::StrCat("activation ", a.ToString(), ": the coefficient must be ",
                     a.mode == ActivationMode::kElu ? ">= 0" : "> 0"));
  }
  return absl::OkStatus();
}

absl::Status CheckPoolShapes(const PoolingDescriptor& pool, const TensorDescriptor& x,
                             const TensorDescriptor& y) {
  RILL_ASSIGN_OR_RETURN(TensorDescriptor expected, PoolingOutput(x, pool));
  if (!SameShape(expected, y)) {
    return absl::InvalidArgumentError(
        absl::StrCat("output descriptor ", y.ToString(), " does not match the pooling output ",
                     expected.ToString(), " (", x.ToString(), ", ", pool.ToString(), ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckEpsilon(double epsilon) {
  if (epsilon > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("batch norm epsilon=", epsilon, " must be > 0"));
}

absl::Status CheckConvolutionArgs(Stream* stream, ConvolutionKind kind, const ConvolutionArgs& a) {
  RILL_RETURN_IF_ERROR(CheckPluginStream(stream));
  if (kind != ConvolutionKind::kForward &&
      (!a.bias.is_null() || a.activation.has_value() || !a.side_input.is_null())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a fused bias, side input or activation is for forward convolutions only, not ",
        ConvolutionKindName(kind)));
  }
  if (a.activation.has_value()) RILL_RETURN_IF_ERROR(CheckActivation(*a.activation));
  RILL_RETURN_IF_ERROR(CheckConvolutionShape(a.shape));
  if (!a.bias.is_null()) {  // After the shape check, which bounds output.c.
    RILL_RETURN_IF_ERROR(
        CheckBuffer(stream, "bias", a.bias,
                    static_cast<uint64_t>(a.shape.output.c) * SizeOf(a.shape.output.type)));
  }
  RILL_RETURN_IF_ERROR(Buffer(stream, "input", a.input, a.shape.input));
  RILL_RETURN_IF_ERROR(CheckBuffer(stream, "filter", a.filter, a.shape.filter.Bytes()));
  RILL_RETURN_IF_ERROR(Buffer(stream, "output", a.output, a.shape.output));
  if (!a.side_input.is_null())
    RILL_RETURN_IF_ERROR(Buffer(stream, "side input", a.side_input, a.shape.output));
  if (!a.workspace.is_null())
    RILL_RETURN_IF_ERROR(CheckBuffer(stream, "workspace", a.workspace, 0));
  if (a.algorithm < 0 && a.algorithm != kDefaultAlgorithm && a.algorithm != kBestAlgorithm) {
    return absl::NotFoundError(
        absl::StrCat("convolution algorithm ", a.algorithm,
                     " does not exist (ids are >= 0, kDefaultAlgorithm or kBestAlgorithm)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DnnSupport::Supports(const DnnOperation& op) const {
  if (op.fused_bias || op.fused_side_input || op.fused_activation.has_value()) {
    return absl::UnimplementedError(absl::StrCat(
        Name(), ": does not fuse a bias, side input or activation into a convolution"));
  }
  return absl::OkStatus();
}

absl::Status DnnSupport::DispatchConvolution(Stream* stream, ConvolutionKind kind,
                                             const ConvolutionArgs& args) {
  ConvolutionArgs run = args;
  DnnSupport* dnn = nullptr;
  if (args.algorithm == kBestAlgorithm) {
    absl::StatusOr<AlgorithmChoice> choice =
        AlgorithmSelector::Default().Select(stream->parent(), this, kind, args.shape);
    if (choice.ok()) {
      for (PluginInterface* p = this; p != nullptr && dnn == nullptr; p = p->fallback()) {
        if (p->Name() == choice->plugin) dnn = static_cast<DnnSupport*>(p);
      }
      if (dnn == nullptr)
        return absl::InternalError(
            absl::StrCat("selected plugin ", choice->plugin, " left the chain"));
      if (dnn != this && StreamListenersActive()) NotePlugin(dnn->Name());
      run.algorithm = choice->algorithm;
    } else if (absl::IsNotFound(choice.status()) || absl::IsUnimplemented(choice.status()) ||
               absl::IsInvalidArgument(choice.status())) {
      return choice
          .status();  // Nothing to choose from (deterministic mode included), or a bad pin.
    } else {
      // Timing failed (the selector warned once and remembers it): run the default.
      run.algorithm = kDefaultAlgorithm;
    }
  }
  // The plugin: the first of the chain that runs the convolution (or the
  // selector's), fused if it fuses the bias, side input and activation.
  DnnOperation op = DnnOperation::Of(kind, run);
  const bool fused = op.fused_bias || op.fused_side_input || op.fused_activation.has_value();
  op.fused_bias = op.fused_side_input = false;
  op.fused_activation.reset();
  if (dnn == nullptr) {
    RILL_ASSIGN_OR_RETURN(dnn, RouteCall(this, op));
  }
  if (!fused || dnn->Supports(DnnOperation::Of(kind, run)).ok())
    return dnn->Convolve(stream, kind, run);
  // It does not fuse them: convolve, then add the bias and the side input
  // and activate, each routed before anything runs, so that a missing step
  // changes nothing. The side input is read before the convolution writes
  // the output, which it may be: then it is copied aside first.
  const BiasAddArgs bias{args.shape.output, args.output, args.bias, args.output};
  const ActivationArgs activation{args.activation.value_or(ActivationDescriptor{}),
                                  args.shape.output, args.output, args.output};
  DnnSupport* adder = nullptr;
  DnnSupport* activator = nullptr;
  if (!args.bias.is_null()) {
    RILL_ASSIGN_OR_RETURN(adder, RouteCall(this, DnnOperation::Of(bias)));
  }
  if (args.activation.has_value()) {
    RILL_ASSIGN_OR_RETURN(activator, RouteCall(this, DnnOperation::Of(activation)));
  }
  run.bias = DeviceMemoryBase();
  run.activation.reset();
  run.side_input = DeviceMemoryBase();
  DeviceMemoryBase side = args.side_input;
  ScopedDeviceMemory<uint8_t> side_copy;
  if (!side.is_null() && side.opaque() == args.output.opaque()) {
    RILL_ASSIGN_OR_RETURN(side_copy,
                          stream->parent()->AllocateOwnedArray<uint8_t>(args.shape.output.Bytes()));
    DeviceMemoryBase to = *side_copy;
    stream->ThenMemcpy(&to, side, args.shape.output.Bytes());
    side = to;
  }
  RILL_RETURN_IF_ERROR(dnn->Convolve(stream, kind, run));
  if (adder != nullptr) RILL_RETURN_IF_ERROR(adder->BiasAdd(stream, bias));
  if (!side.is_null()) {
    VectorArgs axpy;
    axpy.type = args.shape.output.type;
    axpy.n = args.shape.output.ElementCount();
    axpy.alpha = 1;
    axpy.x = side;
    axpy.y = args.output;
    stream->ThenBlasAxpy(axpy);  // side_copy's free waits for it.
    if (!stream->ok()) return stream->status();
  }
  if (activator != nullptr) RILL_RETURN_IF_ERROR(activator->Activate(stream, activation));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ConvolutionAlgorithm>> DnnSupport::GetConvolutionAlgorithms(
    ConvolutionKind kind, const ConvolutionShape& shape) {
  RILL_RETURN_IF_ERROR(CheckConvolutionShape(shape));
  return ConvolutionAlgorithms(kind, shape);
}

absl::StatusOr<ConvolutionAlgorithm> DnnSupport::FindBestConvolutionAlgorithm(
    ConvolutionKind kind, const ConvolutionShape& shape) {
  RILL_RETURN_IF_ERROR(CheckConvolutionShape(shape));
  return BestConvolutionAlgorithm(kind, shape);
}

absl::Status DnnSupport::DoConvolve(Stream* stream, const ConvolutionArgs& args) {
  RILL_RETURN_IF_ERROR(CheckConvolutionArgs(stream, ConvolutionKind::kForward, args));
  return DispatchConvolution(stream, ConvolutionKind::kForward, args);
}

absl::Status DnnSupport::DoConvolveBackwardData(Stream* stream, const ConvolutionArgs& args) {
  RILL_RETURN_IF_ERROR(CheckConvolutionArgs(stream, ConvolutionKind::kBackwardData, args));
  return DispatchConvolution(stream, ConvolutionKind::kBackwardData, args);
}

absl::Status DnnSupport::DoConvolveBackwardFilter(Stream* stream, const ConvolutionArgs& args) {
  RILL_RETURN_IF_ERROR(CheckConvolutionArgs(stream, ConvolutionKind::kBackwardFilter, args));
  return DispatchConvolution(stream, ConvolutionKind::kBackwardFilter, args);
}

absl::Status DnnSupport::DoBiasAdd(Stream* stream, const BiasAddArgs& a) {
  RILL_RETURN_IF_ERROR(Start(stream, a.desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "input", a.input, a.desc));
  RILL_RETURN_IF_ERROR(Vector(stream, "bias", a.bias, a.desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "output", a.output, a.desc));
  RILL_ASSIGN_OR_RETURN(DnnSupport * dnn, RouteCall(this, DnnOperation::Of(a)));
  return dnn->BiasAdd(stream, a);
}

absl::Status DnnSupport::DoActivate(Stream* stream, const ActivationArgs& a) {
  RILL_RETURN_IF_ERROR(Start(stream, a.desc));
  RILL_RETURN_IF_ERROR(CheckActivation(a.activation));
  RILL_RETURN_IF_ERROR(Buffer(stream, "x", a.x, a.desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "y", a.y, a.desc));
  RILL_ASSIGN_OR_RETURN(DnnSupport * dnn, RouteCall(this, DnnOperation::Of(a)));
  return dnn->Activate(stream, a);
}

absl::Status DnnSupport::DoActivateBackward(Stream* stream, const ActivationBackwardArgs& a) {
  RILL_RETURN_IF_ERROR(Start(stream, a.desc));
  RILL_RETURN_IF_ERROR(CheckActivation(a.activation));
  RILL_RETURN_IF_ERROR(Buffer(stream, "x", a.x, a.desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "y", a.y, a.desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "dy", a.dy, a.desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "dx", a.dx, a.desc));
  RILL_ASSIGN_OR_RETURN(DnnSupport * dnn, RouteCall(this, DnnOperation::Of(a)));
  return dnn->ActivateBackward(stream, a);
}

absl::Status DnnSupport::DoPoolForward(Stream* stream, const PoolArgs& a) {
  RILL_RETURN_IF_ERROR(Start(stream, a.x_desc));
  RILL_RETURN_IF_ERROR(CheckPoolShapes(a.pool, a.x_desc, a.y_desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "x", a.x, a.x_desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "y", a.y, a.y_desc));
  RILL_ASSIGN_OR_RETURN(DnnSupport * dnn, RouteCall(this, DnnOperation::Of(a)));
  return dnn->PoolForward(stream, a);
}

absl::Status DnnSupport::DoPoolBackward(Stream* stream, const PoolBackwardArgs& a) {
  RILL_RETURN_IF_ERROR(Start(stream, a.x_desc));
  RILL_RETURN_IF_ERROR(CheckPoolShapes(a.pool, a.x_desc, a.y_desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "x", a.x, a.x_desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "y", a.y, a.y_desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "dy", a.dy, a.y_desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "dx", a.dx, a.x_desc));
  RILL_ASSIGN_OR_RETURN(DnnSupport * dnn, RouteCall(this, DnnOperation::Of(a)));
  return dnn->PoolBackward(stream, a);
}

absl::Status DnnSupport::DoSoftmax(Stream* stream, const SoftmaxArgs& a) {
  RILL_RETURN_IF_ERROR(Start(stream, a.desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "x", a.x, a.desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "y", a.y, a.desc));
  RILL_ASSIGN_OR_RETURN(DnnSupport * dnn, RouteCall(this, DnnOperation::Of(a)));
  return dnn->Softmax(stream, a);
}

absl::Status DnnSupport::DoSoftmaxBackward(Stream* stream, const SoftmaxBackwardArgs& a) {
  RILL_RETURN_IF_ERROR(Start(stream, a.desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "y", a.y, a.desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "dy", a.dy, a.desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "dx", a.dx, a.desc));
  RILL_ASSIGN_OR_RETURN(DnnSupport * dnn, RouteCall(this, DnnOperation::Of(a)));
  return dnn->SoftmaxBackward(stream, a);
}

absl::Status DnnSupport::DoBatchNormForwardInference(Stream* stream,
                                                     const BatchNormInferenceArgs& a) {
  RILL_RETURN_IF_ERROR(Start(stream, a.desc));
  RILL_RETURN_IF_ERROR(CheckEpsilon(a.epsilon));
  RILL_RETURN_IF_ERROR(Buffer(stream, "x", a.x, a.desc));
  RILL_RETURN_IF_ERROR(Vector(stream, "scale", a.scale, a.desc));
  RILL_RETURN_IF_ERROR(Vector(stream, "offset", a.offset, a.desc));
  RILL_RETURN_IF_ERROR(Vector(stream, "estimated_mean", a.estimated_mean, a.desc));
  RILL_RETURN_IF_ERROR(Vector(stream, "estimated_variance", a.estimated_variance, a.desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "y", a.y, a.desc));
  RILL_ASSIGN_OR_RETURN(DnnSupport * dnn, RouteCall(this, DnnOperation::Of(a)));
  return dnn->BatchNormInference(stream, a);
}

absl::Status DnnSupport::DoBatchNormForwardTraining(Stream* stream,
                                                    const BatchNormTrainingArgs& a) {
  RILL_RETURN_IF_ERROR(Start(stream, a.desc));
  RILL_RETURN_IF_ERROR(CheckEpsilon(a.epsilon));
  if (!(a.exponential_average_factor >= 0 && a.exponential_average_factor <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "exponential_average_factor=", a.exponential_average_factor, " must be in [0, 1]"));
  }
  RILL_RETURN_IF_ERROR(Buffer(stream, "x", a.x, a.desc));
  RILL_RETURN_IF_ERROR(Vector(stream, "scale", a.scale, a.desc));
  RILL_RETURN_IF_ERROR(Vector(stream, "offset", a.offset, a.desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "y", a.y, a.desc));
  RILL_RETURN_IF_ERROR(Vector(stream, "saved_mean", a.saved_mean, a.desc));
  RILL_RETURN_IF_ERROR(Vector(stream, "saved_inv_std", a.saved_inv_std, a.desc));
  if (!a.running_mean.is_null() || !a.running_variance.is_null()) {
    RILL_RETURN_IF_ERROR(Vector(stream, "running_mean", a.running_mean, a.desc));
    RILL_RETURN_IF_ERROR(Vector(stream, "running_variance", a.running_variance, a.desc));
  }
  RILL_ASSIGN_OR_RETURN(DnnSupport * dnn, RouteCall(this, DnnOperation::Of(a)));
  return dnn->BatchNormTraining(stream, a);
}

absl::Status DnnSupport::DoBatchNormBackward(Stream* stream, const BatchNormBackwardArgs& a) {
  RILL_RETURN_IF_ERROR(Start(stream, a.desc));
  RILL_RETURN_IF_ERROR(CheckEpsilon(a.epsilon));
  RILL_RETURN_IF_ERROR(Buffer(stream, "x", a.x, a.desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "dy", a.dy, a.desc));
  RILL_RETURN_IF_ERROR(Vector(stream, "scale", a.scale, a.desc));
  RILL_RETURN_IF_ERROR(Vector(stream, "saved_mean", a.saved_mean, a.desc));
  RILL_RETURN_IF_ERROR(Vector(stream, "saved_inv_std", a.saved_inv_std, a.desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "dx", a.dx, a.desc));
  RILL_RETURN_IF_ERROR(Vector(stream, "dscale", a.dscale, a.desc));
  RILL_RETURN_IF_ERROR(Vector(stream, "doffset", a.doffset, a.desc));
  RILL_ASSIGN_OR_RETURN(DnnSupport * dnn, RouteCall(this, DnnOperation::Of(a)));
  return dnn->BatchNormBackward(stream, a);
}

absl::Status DnnSupport::DoLrn(Stream* stream, const LrnArgs& a) {
  RILL_RETURN_IF_ERROR(Start(stream, a.desc));
  if (a.lrn.size < 1 || !(a.lrn.k > 0) || !(a.lrn.alpha >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(a.lrn.ToString(), ": needs size >= 1, k > 0, alpha >= 0"));
  }
  RILL_RETURN_IF_ERROR(Buffer(stream, "x", a.x, a.desc));
  RILL_RETURN_IF_ERROR(Buffer(stream, "y", a.y, a.desc));
  RILL_ASSIGN_OR_RETURN(DnnSupport * dnn, RouteCall(this, DnnOperation::Of(a)));
  return dnn->Lrn(stream, a);
}

}  // namespace rill
