// The init ops (see init.h).
#include "rill/ops/init/init.h"

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/ops/invoke.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/shape/float_to_int.h"
#include "rill/ops/shape/half.h"

namespace rill::ops {

uint64_t FillBits(double value, DType dtype) {
  uint64_t bits = 0;
  auto put = [&](auto v) { std::memcpy(&bits, &v, sizeof(v)); };
  switch (dtype) {
    case DType::kF32:
      put(static_cast<float>(value));
      break;
    case DType::kF64:
      put(value);
      break;
    case DType::kF16:
      put(FloatToHalf(static_cast<float>(value)));
      break;
    case DType::kI32:
      put(FloatToInt<int32_t>(value));
      break;
    case DType::kI64:
      put(FloatToInt<int64_t>(value));
      break;
    case DType::kU8:
      put(FloatToInt<uint8_t>(value));
      break;
    case DType::kBool:
      put(static_cast<uint8_t>(value != 0 ? 1 : 0));
      break;
  }
  return bits;
}

absl::StatusOr<int64_t> ArangeCount(const ArangeParams& p) {
  for (auto [n, v] :
       {std::pair<const char*, double>{"start", p.start}, {"stop", p.stop}, {"step", p.step}}) {
    if (!std::isfinite(v))
      return absl::InvalidArgumentError(absl::StrCat(n, "=", v, " is not finite"));
  }
  if (p.step == 0) return absl::InvalidArgumentError("step=0: arange needs a nonzero step");
  const double n = std::ceil((p.stop - p.start) / p.step);
  if (!(n > 0)) return 0;
  if (n >= 9.2e18) {
    return absl::InvalidArgumentError(absl::StrCat("arange(start=", p.start, ", stop=", p.stop,
                                                   ", step=", p.step, ") has ", n,
                                                   " elements: too many"));
  }
  return static_cast<int64_t>(n);
}

namespace {

absl::Status ShapeFrom(const std::vector<int64_t>& dims, DType dtype, Shape* out) {
  *out = Shape(absl::MakeConstSpan(dims));
  return out->Validate(DTypeSize(dtype));
}

template <typename P>
absl::Status ParamShape(const InferContext& ctx, std::vector<Shape>* out) {
  const P& p = ctx.p<P>();
  return ShapeFrom(p.shape, p.dtype, &(*out)[0]);
}
template <typename P>
absl::Status ParamType(const InferContext& ctx, std::vector<DType>* out) {
  (*out)[0] = ctx.p<P>().dtype;
  return absl::OkStatus();
}
template <typename P>
absl::Status FloatParamType(const InferContext& ctx, std::vector<DType>* out) {
  const DType t = ctx.p<P>().dtype;
  if (t != DType::kF32 && t != DType::kF64) {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype=", DTypeName(t), ": random numbers are float32 or float64"));
  }
  (*out)[0] = t;
  return absl::OkStatus();
}

absl::Status FillValueCheck(const InferContext& ctx, std::vector<Shape>* out) {
  const FillParams& p = ctx.p<FillParams>();
  if (std::isnan(p.value) && !IsFloat(p.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("value=nan cannot be stored as ", DTypeName(p.dtype)));
  }
  return ParamShape<FillParams>(ctx, out);
}

absl::Status ArangeShape(const InferContext& ctx, std::vector<Shape>* out) {
  RILL_ASSIGN_OR_RETURN(int64_t n, ArangeCount(ctx.p<ArangeParams>()));
  (*out)[0] = Shape{n};
  return (*out)[0].Validate(DTypeSize(ctx.p<ArangeParams>().dtype));
}
absl::Status ArangeType(const InferContext& ctx, std::vector<DType>* out) {
  const DType t = ctx.p<ArangeParams>().dtype;
  if ((kNumericTypes & DTypeBit(t)) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype=", DTypeName(t), ": arange makes numeric types"));
  }
  (*out)[0] = t;
  return absl::OkStatus();
}

absl::Status UniformShape(const InferContext& ctx, std::vector<Shape>* out) {
  const RandomUniformParams& p = ctx.p<RandomUniformParams>();
  if (!std::isfinite(p.low) || !std::isfinite(p.high) || p.low > p.high) {
    return absl::InvalidArgumentError(
        absl::StrCat("low=", p.low, ", high=", p.high, ": need finite low <= high"));
  }
  return ParamShape<RandomUniformParams>(ctx, out);
}
absl::Status NormalShape(const InferContext& ctx, std::vector<Shape>* out) {
  const RandomNormalParams& p = ctx.p<RandomNormalParams>();
  if (!std::isfinite(p.loc))
    return absl::InvalidArgumentError(absl::StrCat("loc=", p.loc, " is not finite"));
  if (!(p.scale > 0) || !std::isfinite(p.scale)) {
    return absl::InvalidArgumentError(
        absl::StrCat("scale=", p.scale, " is not a positive finite number"));
  }
  return ParamShape<RandomNormalParams>(ctx, out);
}

absl::Status CheckP(double p) {
  if (!(p >= 0 && p < 1))
    return absl::InvalidArgumentError(absl::StrCat("p=", p, " is outside [0, 1)"));
  return absl::OkStatus();
}
absl::Status DropoutShape(const InferContext& ctx, std::vector<Shape>* out) {
  RILL_RETURN_IF_ERROR(CheckP(ctx.p<DropoutParams>().p));
  (*out)[0] = (*out)[1] = ctx.in_shapes[0];
  return absl::OkStatus();
}
absl::Status DropoutBackwardShape(const InferContext& ctx, std::vector<Shape>* out) {
  RILL_RETURN_IF_ERROR(CheckP(ctx.p<DropoutParams>().p));
  if (ctx.in_shapes[0] != ctx.in_shapes[1]) {
    return absl::InvalidArgumentError(absl::StrCat("dy is ", ctx.in_shapes[0].ToString(),
                                                   " but mask is ", ctx.in_shapes[1].ToString()));
  }
  (*out)[0] = ctx.in_shapes[0];
  return absl::OkStatus();
}

// dx = dy * mask / (1 - p) (the mask of a training-mode forward).
absl::StatusOr<std::vector<Tensor>> DropoutGrad(const GradientContext& c) {
  static const OpDef& back = BuiltinOp(op_names::kBackwardDropout);
  RILL_ASSIGN_OR_RETURN(
      auto r, Invoke(back, {c.out_grads[0], c.outputs[1]}, MakeParams(c.p<DropoutParams>())));
  return std::vector<Tensor>{r[0]};
}

}  // namespace

void RegisterInitOps(OpRegistry& r) {
  r.Check(r.Register(
      OpDef(op_names::kFill)
          .set_no_inputs()
          .set_params(ParamSchema::For<FillParams>()
                          .Required("shape", &FillParams::shape, "output shape")
                          .Required("value", &FillParams::value, "the value")
                          .Field("dtype", &FillParams::dtype, "element type (default float32)"))
          .set_infer_shape(FillValueCheck)
          .set_infer_type(ParamType<FillParams>)));
  r.Check(r.Register(OpDef(op_names::kZeros)
                         .set_no_inputs()
                         .set_params(ParamSchema::For<ZerosParams>()
                                         .Required("shape", &ZerosParams::shape, "output shape")
                                         .Field("dtype", &ZerosParams::dtype, "element type"))
                         .set_infer_shape(ParamShape<ZerosParams>)
                         .set_infer_type(ParamType<ZerosParams>)));
  r.Check(r.Register(OpDef(op_names::kOnes)
                         .set_no_inputs()
                         .set_params(ParamSchema::For<OnesParams>()
                                         .Required("shape", &OnesParams::shape, "output shape")
                                         .Field("dtype", &OnesParams::dtype, "element type"))
                         .set_infer_shape(ParamShape<OnesParams>)
                         .set_infer_type(ParamType<OnesParams>)));
  r.Check(r.Register(
      OpDef(op_names::kArange)
          .set_no_inputs()
          .set_params(ParamSchema::For<ArangeParams>()
                          .Field("start", &ArangeParams::start, "first value (default 0)")
                          .Required("stop", &ArangeParams::stop, "end, excluded")
                          .Field("step", &ArangeParams::step, "nonzero step (default 1)")
                          .Field("dtype", &ArangeParams::dtype, "numeric element type"))
          .set_infer_shape(ArangeShape)
          .set_infer_type(ArangeType)));
  r.Check(r.Register(
      OpDef(op_names::kRandomUniform)
          .set_no_inputs()
          .set_params(ParamSchema::For<RandomUniformParams>()
                          .Field("low", &RandomUniformParams::low, "lower bound (excluded)")
                          .Field("high", &RandomUniformParams::high, "upper bound (included)")
                          .Required("shape", &RandomUniformParams::shape, "output shape")
                          .Field("dtype", &RandomUniformParams::dtype, "float32 or float64"))
          .set_infer_shape(UniformShape)
          .set_infer_type(FloatParamType<RandomUniformParams>)
          .set_resources({ResourceKind::kRandom})));
  r.Check(r.Register(
      OpDef(op_names::kRandomNormal)
          .set_no_inputs()
          .set_params(ParamSchema::For<RandomNormalParams>()
                          .Field("loc", &RandomNormalParams::loc, "mean")
                          .Field("scale", &RandomNormalParams::scale, "standard deviation (> 0)")
                          .Required("shape", &RandomNormalParams::shape, "output shape")
                          .Field("dtype", &RandomNormalParams::dtype, "float32 or float64"))
          .set_infer_shape(NormalShape)
          .set_infer_type(FloatParamType<RandomNormalParams>)
          .set_resources({ResourceKind::kRandom, ResourceKind::kTempSpace})));
  r.Check(r.Register(OpDef(op_names::kDropout)
                         .set_num_outputs(2)
                         .set_params(ParamSchema::For<DropoutParams>().Field(
                             "p", &DropoutParams::p, "drop probability in [0, 1)"))
                         .set_infer_shape(DropoutShape)
                         .set_inplace({{0, 0}})
                         .set_resources({ResourceKind::kRandom, ResourceKind::kTempSpace})
                         .set_gradient(DropoutGrad)));
  r.Check(r.Register(
      OpDef(op_names::kBackwardDropout)
          .set_inputs({"dy", "mask"})
          .set_params(ParamSchema::For<DropoutParams>().Field("p", &DropoutParams::p, "as forward"))
          .set_infer_shape(DropoutBackwardShape)
          .set_inplace({{0, 0}})));
  RegisterInitHostKernels(r);
  RegisterInitDeviceKernels(r);
}

}  // namespace rill::ops
