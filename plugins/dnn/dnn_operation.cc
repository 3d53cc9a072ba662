// DnnOperation: the capability query of the DNN interface (plugins/dnn/dnn.h).

#include "absl/strings/str_cat.h"
#include "rill/plugins/dnn/dnn.h"

namespace rill {

const char* DnnOpName(DnnOp op) {
  switch (op) {
    case DnnOp::kConvolveForward:
      return "convolve_forward";
    case DnnOp::kConvolveBackwardData:
      return "convolve_backward_data";
    case DnnOp::kConvolveBackwardFilter:
      return "convolve_backward_filter";
    case DnnOp::kBiasAdd:
      return "bias_add";
    case DnnOp::kActivate:
      return "activate";
    case DnnOp::kActivateBackward:
      return "activate_backward";
    case DnnOp::kPoolForward:
      return "pool_forward";
    case DnnOp::kPoolBackward:
      return "pool_backward";
    case DnnOp::kSoftmax:
      return "softmax";
    case DnnOp::kSoftmaxBackward:
      return "softmax_backward";
    case DnnOp::kBatchNormInference:
      return "batch_norm_inference";
    case DnnOp::kBatchNormTraining:
      return "batch_norm_training";
    case DnnOp::kBatchNormBackward:
      return "batch_norm_backward";
    case DnnOp::kLrn:
      return "lrn";
  }
  return "?";
}

std::string DnnOperation::ToString() const {
  std::string s = absl::StrCat(DnnOpName(op), " ", input.ToString());
  switch (op) {
    case DnnOp::kConvolveForward:
    case DnnOp::kConvolveBackwardData:
    case DnnOp::kConvolveBackwardFilter:
      absl::StrAppend(&s, " filter ", filter.ToString(), " ", conv.ToString(), " -> ",
                      output.ToString());
      if (fused_bias) absl::StrAppend(&s, " + bias");
      if (fused_side_input) absl::StrAppend(&s, " + side input");
      if (fused_activation.has_value()) absl::StrAppend(&s, " + ", fused_activation->ToString());
      break;
    case DnnOp::kPoolForward:
    case DnnOp::kPoolBackward:
      absl::StrAppend(&s, " ", pool.ToString(), " -> ", output.ToString());
      break;
    case DnnOp::kActivate:
    case DnnOp::kActivateBackward:
      absl::StrAppend(&s, " ", activation.ToString());
      break;
    case DnnOp::kSoftmax:
    case DnnOp::kSoftmaxBackward:
      if (log) absl::StrAppend(&s, " log");
      break;
    case DnnOp::kLrn:
      absl::StrAppend(&s, " ", lrn.ToString());
      break;
    default:
      break;
  }
  return s;
}

DnnOperation DnnOperation::Of(const ConvolutionShape& shape, ConvolutionKind kind) {
  DnnOperation o;
  o.op = kind == ConvolutionKind::kForward        ? DnnOp::kConvolveForward
         : kind == ConvolutionKind::kBackwardData ? DnnOp::kConvolveBackwardData
                                                  : DnnOp::kConvolveBackwardFilter;
  o.input = shape.input;
  o.output = shape.output;
  o.filter = shape.filter;
  o.conv = shape.conv;
  return o;
}

DnnOperation DnnOperation::Of(ConvolutionKind kind, const ConvolutionArgs& a) {
  DnnOperation o = Of(a.shape, kind);
  o.algorithm = a.algorithm;
  if (kind == ConvolutionKind::kForward) {
    o.fused_bias = !a.bias.is_null();
    o.fused_side_input = !a.side_input.is_null();
    o.fused_activation = a.activation;
  }
  return o;
}

namespace {
DnnOperation Simple(DnnOp op, const TensorDescriptor& desc) {
  DnnOperation o;
  o.op = op;
  o.input = o.output = desc;
  return o;
}
}  // namespace

DnnOperation DnnOperation::Of(const BiasAddArgs& a) { return Simple(DnnOp::kBiasAdd, a.desc); }

DnnOperation DnnOperation::Of(const ActivationArgs& a) {
  DnnOperation o = Simple(DnnOp::kActivate, a.desc);
  o.activation = a.activation;
  return o;
}

DnnOperation DnnOperation::Of(const ActivationBackwardArgs& a) {
  DnnOperation o = Simple(DnnOp::kActivateBackward, a.desc);
  o.activation = a.activation;
  return o;
}

DnnOperation DnnOperation::Of(const PoolArgs& a) {
  DnnOperation o = Simple(DnnOp::kPoolForward, a.x_desc);
  o.output = a.y_desc;
  o.pool = a.pool;
  return o;
}

DnnOperation DnnOperation::Of(const PoolBackwardArgs& a) {
  DnnOperation o = Simple(DnnOp::kPoolBackward, a.x_desc);
  o.output = a.y_desc;
  o.pool = a.pool;
  return o;
}

DnnOperation DnnOperation::Of(const SoftmaxArgs& a) {
  DnnOperation o = Simple(DnnOp::kSoftmax, a.desc);
  o.log = a.log;
  return o;
}

DnnOperation DnnOperation::Of(const SoftmaxBackwardArgs& a) {
  DnnOperation o = Simple(DnnOp::kSoftmaxBackward, a.desc);
  o.log = a.log;
  return o;
}

DnnOperation DnnOperation::Of(const BatchNormInferenceArgs& a) {
  return Simple(DnnOp::kBatchNormInference, a.desc);
}
DnnOperation DnnOperation::Of(const BatchNormTrainingArgs& a) {
  return Simple(DnnOp::kBatchNormTraining, a.desc);
}
DnnOperation DnnOperation::Of(const BatchNormBackwardArgs& a) {
  return Simple(DnnOp::kBatchNormBackward, a.desc);
}

DnnOperation DnnOperation::Of(const LrnArgs& a) {
  DnnOperation o = Simple(DnnOp::kLrn, a.desc);
  o.lrn = a.lrn;
  return o;
}

}  // namespace rill
