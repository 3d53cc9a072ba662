// The reduce ops: sum, prod, mean, max, argmax, sum_to (the inverse of NumPy
// broadcasting), softmax and log_softmax with their backward ops, softmax
// cross-entropy, and cumsum (ONNX CumSum). Definitions and gradients here;
// kernels in reduce_host.cc, reduce_device.cc and reduce.cu.

#include "rill/ops/reduce/reduce.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/status_macros.h"
#include "rill/ops/invoke.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"

namespace rill::ops {

absl::StatusOr<ReducePlan> MakeReducePlan(const Shape& in, const std::vector<bool>& reduced) {
  // Input strides; drop size-1 axes; merge neighbours of the same kind.
  const int r = in.rank();
  std::vector<int64_t> strides(r);
  int64_t s = 1;
  for (int i = r - 1; i >= 0; --i) {
    strides[i] = s;
    s *= in[i];
  }
  struct Axis {
    int64_t dim, stride;
    bool red;
  };
  std::vector<Axis> axes;
  ReducePlan p;
  for (int i = 0; i < r; ++i) {
    if (reduced[i]) p.red_size *= in[i];
    if (in[i] == 1) continue;
    if (!axes.empty() && axes.back().red == reduced[i]) {
      axes.back().dim *= in[i];
      axes.back().stride = strides[i];
      continue;
    }
    axes.push_back({in[i], strides[i], static_cast<bool>(reduced[i])});
  }
  for (const Axis& a : axes) {
    int64_t& rank = a.red ? p.red_rank : p.out_rank;
    if (rank == kMaxReduceRank) {
      return absl::UnimplementedError(
          absl::StrCat("reduction of ", in.ToString(), " needs more than ", kMaxReduceRank,
                       " collapsed ", a.red ? "reduced" : "kept", " axes"));
    }
    (a.red ? p.red_dims : p.out_dims)[rank] = a.dim;
    (a.red ? p.red_strides : p.out_strides)[rank] = a.stride;
    ++rank;
  }
  p.inner_reduced = !axes.empty() && axes.back().red;
  return p;
}

AxisSplit SplitAt(const Shape& shape, int axis) {
  AxisSplit s;
  for (int i = 0; i < shape.rank(); ++i) {
    if (i < axis)
      s.outer *= shape[i];
    else if (i == axis)
      s.n = shape[i];
    else
      s.inner *= shape[i];
  }
  return s;
}

absl::StatusOr<std::vector<bool>> ReduceMask(const Shape& in, const ReduceParams& p) {
  std::vector<bool> mask(in.rank(), p.axes.empty());
  for (int64_t a : p.axes) {
    RILL_ASSIGN_OR_RETURN(int axis, NormalizeAxis(a, in.rank()));
    if (mask[axis]) {
      return absl::InvalidArgumentError(absl::StrCat("axis ", a, " is given twice (axes (",
                                                     absl::StrJoin(p.axes, ", "), ") of ",
                                                     in.ToString(), ")"));
    }
    mask[axis] = true;
  }
  return mask;
}

absl::StatusOr<std::vector<bool>> SumToMask(const Shape& in, const std::vector<int64_t>& target) {
  const Shape t{absl::MakeConstSpan(target)};
  RILL_RETURN_IF_ERROR(t.Validate());
  const int r = in.rank(), tr = t.rank();
  if (tr > r) {
    return absl::InvalidArgumentError(absl::StrCat("cannot sum ", in.ToString(), " to shape ",
                                                   FormatIntTuple(target), " of higher rank"));
  }
  std::vector<bool> mask(r, false);
  for (int i = 0; i < r; ++i) {
    const int ti = i - (r - tr);
    if (ti < 0) {
      mask[i] = true;
    } else if (t[ti] == 1) {
      mask[i] = in[i] != 1;
    } else if (t[ti] != in[i]) {
      return absl::InvalidArgumentError(absl::StrCat("cannot sum ", in.ToString(), " to shape ",
                                                     FormatIntTuple(target), ": dimension ", t[ti],
                                                     " is neither 1 nor ", in[i]));
    }
  }
  return mask;
}

absl::StatusOr<std::vector<bool>> ArgmaxMask(const Shape& in, int64_t axis) {
  if (in.rank() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("argmax axis ", axis, " of a scalar"));
  }
  RILL_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, in.rank()));
  std::vector<bool> mask(in.rank(), false);
  mask[a] = true;
  return mask;
}

absl::Status BadLabelError(double label, int64_t row, int64_t classes) {
  return absl::InvalidArgumentError(absl::StrCat("label ", label, " of row ", row,
                                                 " is not a class index in [0, ", classes, ")"));
}

absl::StatusOr<ReducePlan> PlanFor(const OpContext& ctx) {
  const Shape& in = ctx.in(0).shape;
  std::vector<bool> mask;
  const std::string& name = ctx.op().name();
  if (name == op_names::kSumTo) {
    RILL_ASSIGN_OR_RETURN(mask, SumToMask(in, ctx.params<SumToParams>().shape));
  } else if (name == op_names::kArgmax) {
    RILL_ASSIGN_OR_RETURN(mask, ArgmaxMask(in, ctx.params<ArgmaxParams>().axis));
  } else {
    RILL_ASSIGN_OR_RETURN(mask, ReduceMask(in, ctx.params<ReduceParams>()));
  }
  return MakeReducePlan(in, mask);
}

namespace {

Shape ReducedShape(const Shape& in, const std::vector<bool>& mask, bool keepdims) {
  Shape out;
  for (int i = 0; i < in.rank(); ++i) {
    if (!mask[i])
      out.mutable_dims().push_back(in[i]);
    else if (keepdims)
      out.mutable_dims().push_back(1);
  }
  return out;
}

absl::Status ReduceShape(const InferContext& ctx, std::vector<Shape>* out) {
  const auto& p = ctx.p<ReduceParams>();
  RILL_ASSIGN_OR_RETURN(auto mask, ReduceMask(ctx.in_shapes[0], p));
  (*out)[0] = ReducedShape(ctx.in_shapes[0], mask, p.keepdims);
  return absl::OkStatus();
}

// max has no identity: an empty reduction into a non-empty output is an error.
absl::Status MaxShape(const InferContext& ctx, std::vector<Shape>* out) {
  RILL_RETURN_IF_ERROR(ReduceShape(ctx, out));
  if (ctx.in_shapes[0].NumElements() == 0 && (*out)[0].NumElements() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max over an empty extent of ", ctx.in_shapes[0].ToString()));
  }
  return absl::OkStatus();
}

absl::Status ArgmaxShape(const InferContext& ctx, std::vector<Shape>* out) {
  const auto& p = ctx.p<ArgmaxParams>();
  RILL_ASSIGN_OR_RETURN(auto mask, ArgmaxMask(ctx.in_shapes[0], p.axis));
  (*out)[0] = ReducedShape(ctx.in_shapes[0], mask, p.keepdims);
  if (ctx.in_shapes[0].NumElements() == 0 && (*out)[0].NumElements() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("argmax over an empty axis ", p.axis, " of ", ctx.in_shapes[0].ToString()));
  }
  return absl::OkStatus();
}

absl::Status Int64Type(const InferContext& ctx, std::vector<DType>* out) {
  (*out)[0] = DType::kI64;
  return absl::OkStatus();
}

absl::Status SumToShape(const InferContext& ctx, std::vector<Shape>* out) {
  const auto& target = ctx.p<SumToParams>().shape;
  RILL_RETURN_IF_ERROR(SumToMask(ctx.in_shapes[0], target).status());
  (*out)[0] = Shape(absl::MakeConstSpan(target));
  return absl::OkStatus();
}

absl::Status SoftmaxShape(const InferContext& ctx, std::vector<Shape>* out) {
  const Shape& s = ctx.in_shapes[0];
  const int64_t axis = ctx.p<SoftmaxParams>().axis;
  if (s.rank() == 0)
    return absl::InvalidArgumentError(absl::StrCat("softmax axis ", axis, " of a scalar"));
  RILL_RETURN_IF_ERROR(NormalizeAxis(axis, s.rank()).status());
  for (size_t i = 1; i < ctx.in_shapes.size(); ++i) {
    if (ctx.in_shapes[i] != s) {
      return absl::InvalidArgumentError(
          absl::StrCat("shapes ", s.ToString(), " and ", ctx.in_shapes[i].ToString(), " differ"));
    }
  }
  (*out)[0] = s;
  return absl::OkStatus();
}

constexpr uint32_t kLabelTypes = kFloatTypes | DTypeBit(DType::kI32) | DTypeBit(DType::kI64);

absl::Status CrossEntropyType(const InferContext& ctx, std::vector<DType>* out) {
  if (!IsFloat(ctx.in_types[0])) {
    return absl::InvalidArgumentError(
        absl::StrCat("logits must be float32 or float64, got ", DTypeName(ctx.in_types[0])));
  }
  (*out)[0] = ctx.in_types[0];
  return absl::OkStatus();
}

absl::Status CheckCrossEntropyShapes(const InferContext& ctx) {
  const Shape &x = ctx.in_shapes[0], &l = ctx.in_shapes[1];
  if (x.rank() != 2) {
    return absl::InvalidArgumentError(absl::StrCat("logits must be [N, C], got ", x.ToString()));
  }
  if (l.rank() != 1 || l[0] != x[0]) {
    return absl::InvalidArgumentError(absl::StrCat("labels must be [", x[0], "] for logits ",
                                                   x.ToString(), ", got ", l.ToString()));
  }
  return absl::OkStatus();
}

absl::Status CrossEntropyShape(const InferContext& ctx, std::vector<Shape>* out) {
  RILL_RETURN_IF_ERROR(CheckCrossEntropyShapes(ctx));
  (*out)[0] = Shape{};
  return absl::OkStatus();
}

absl::Status CrossEntropyBackwardShape(const InferContext& ctx, std::vector<Shape>* out) {
  RILL_RETURN_IF_ERROR(CheckCrossEntropyShapes(ctx));
  (*out)[0] = ctx.in_shapes[0];
  return absl::OkStatus();
}

absl::Status CumsumShape(const InferContext& ctx, std::vector<Shape>* out) {
  const Shape& s = ctx.in_shapes[0];
  const CumsumParams& p = ctx.p<CumsumParams>();
  if (s.rank() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("cumsum axis ", p.axis, " of a scalar"));
  }
  RILL_RETURN_IF_ERROR(NormalizeAxis(p.axis, s.rank()).status());
  if ((p.exclusive != 0 && p.exclusive != 1) || (p.reverse != 0 && p.reverse != 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("exclusive and reverse are 0 or 1, got ", p.exclusive, " and ", p.reverse));
  }
  (*out)[0] = s;
  return absl::OkStatus();
}

// --- Gradients.

absl::StatusOr<Tensor> One(std::string_view op, absl::Span<const Tensor> in,
                           const Attrs& attrs = {}) {
  RILL_ASSIGN_OR_RETURN(auto r, Invoke(op, in, attrs));
  return r[0];
}

// g (reshaped to `keep`, the output with reduced axes kept as 1) broadcast
// to x's shape: zeros shaped like x (x > inf is 0 for every x, NaN
// included) plus g.
absl::StatusOr<Tensor> BroadcastLike(const Tensor& g, const Shape& keep, const Tensor& x) {
  RILL_ASSIGN_OR_RETURN(Tensor gk, g.Reshape(keep));
  if (keep == x.shape()) return gk;
  RILL_ASSIGN_OR_RETURN(Tensor zeros, One(op_names::kGreaterScalar, {x}, {{"scalar", "inf"}}));
  return One(op_names::kAdd, {zeros, gk});
}

absl::StatusOr<std::vector<Tensor>> SumGrad(const GradientContext& c) {
  const Tensor& x = c.inputs[0];
  RILL_ASSIGN_OR_RETURN(auto mask, ReduceMask(x.shape(), c.p<ReduceParams>()));
  RILL_ASSIGN_OR_RETURN(Tensor g,
                        BroadcastLike(c.out_grads[0], ReducedShape(x.shape(), mask, true), x));
  return std::vector<Tensor>{g};
}

// d prod / dx_i is the product of the group's other elements, exact with
// zeros: with nz = x where x != 0 else 1, P = prod(nz) and Z the group's
// count of zeros, it is P / nz_i where the others hold no zero (Z equals
// [x_i == 0]) and 0 elsewhere. Masked by where, so an overflowed P gives no
// NaN where the gradient is 0.
absl::StatusOr<std::vector<Tensor>> ProdGrad(const GradientContext& c) {
  const Tensor& x = c.inputs[0];
  ReduceParams kept = c.p<ReduceParams>();  // Reduced axes kept as size 1.
  RILL_ASSIGN_OR_RETURN(auto mask, ReduceMask(x.shape(), kept));
  kept.keepdims = true;
  static const OpDef& prod = BuiltinOp(op_names::kProd);
  static const OpDef& sum = BuiltinOp(op_names::kSum);
  RILL_ASSIGN_OR_RETURN(Tensor z, One(op_names::kEqualScalar, {x}, {{"scalar", "0"}}));
  RILL_ASSIGN_OR_RETURN(Tensor nz, One(op_names::kAdd, {x, z}));
  RILL_ASSIGN_OR_RETURN(auto p, Invoke(prod, {nz}, MakeParams(kept)));
  RILL_ASSIGN_OR_RETURN(auto zc, Invoke(sum, {z}, MakeParams(kept)));
  RILL_ASSIGN_OR_RETURN(Tensor others, One(op_names::kDiv, {p[0], nz}));
  RILL_ASSIGN_OR_RETURN(Tensor g, c.out_grads[0].Reshape(ReducedShape(x.shape(), mask, true)));
  RILL_ASSIGN_OR_RETURN(Tensor gx, One(op_names::kMul, {g, others}));
  RILL_ASSIGN_OR_RETURN(Tensor none_zero, One(op_names::kEqual, {zc[0], z}));
  RILL_ASSIGN_OR_RETURN(Tensor zeros, One(op_names::kGreaterScalar, {z}, {{"scalar", "1"}}));
  RILL_ASSIGN_OR_RETURN(Tensor dx, One(op_names::kWhere, {none_zero, gx, zeros}));
  return std::vector<Tensor>{dx};
}

absl::StatusOr<std::vector<Tensor>> MeanGrad(const GradientContext& c) {
  const Tensor& x = c.inputs[0];
  RILL_ASSIGN_OR_RETURN(auto mask, ReduceMask(x.shape(), c.p<ReduceParams>()));
  int64_t count = 1;
  for (int i = 0; i < x.shape().rank(); ++i) {
    if (mask[i]) count *= x.shape()[i];
  }
  RILL_ASSIGN_OR_RETURN(Tensor scaled, One(op_names::kDivScalar, {c.out_grads[0]},
                                           {{"scalar", absl::StrCat(count)}}));
  RILL_ASSIGN_OR_RETURN(Tensor g, BroadcastLike(scaled, ReducedShape(x.shape(), mask, true), x));
  return std::vector<Tensor>{g};
}

absl::StatusOr<std::vector<Tensor>> SumToGrad(const GradientContext& c) {
  const Tensor& x = c.inputs[0];
  RILL_ASSIGN_OR_RETURN(auto mask, SumToMask(x.shape(), c.p<SumToParams>().shape));
  RILL_ASSIGN_OR_RETURN(Tensor g,
                        BroadcastLike(c.out_grads[0], ReducedShape(x.shape(), mask, true), x));
  return std::vector<Tensor>{g};
}

template <bool kLog>
absl::StatusOr<std::vector<Tensor>> SoftmaxGrad(const GradientContext& c) {
  static const OpDef& backward =
      BuiltinOp(kLog ? op_names::kBackwardLogSoftmax : op_names::kBackwardSoftmax);
  RILL_ASSIGN_OR_RETURN(
      auto r, Invoke(backward, {c.out_grads[0], c.outputs[0]}, MakeParams(c.p<SoftmaxParams>())));
  return r;
}

absl::StatusOr<std::vector<Tensor>> CrossEntropyGrad(const GradientContext& c) {
  RILL_ASSIGN_OR_RETURN(Tensor d,
                        One(op_names::kBackwardSoftmaxCrossEntropy, {c.inputs[0], c.inputs[1]}));
  RILL_ASSIGN_OR_RETURN(Tensor g, One(op_names::kMul, {d, c.out_grads[0]}));
  return std::vector<Tensor>{g, Tensor()};
}

// Each x_j reaches the sums after it (before it, reversed): dx is the
// cumsum of dy the other way, as exclusive as the forward.
absl::StatusOr<std::vector<Tensor>> CumsumGrad(const GradientContext& c) {
  CumsumParams p = c.p<CumsumParams>();
  p.reverse = 1 - p.reverse;
  static const OpDef& op = BuiltinOp(op_names::kCumsum);
  return Invoke(op, {c.out_grads[0]}, MakeParams(p));
}

ParamSchema ReduceSchema() {
  return ParamSchema::For<ReduceParams>()
      .Field("axes", &ReduceParams::axes, "axes to reduce (negative from the end); empty: all")
      .Field("keepdims", &ReduceParams::keepdims, "keep reduced axes as size 1");
}

ParamSchema SoftmaxSchema() {
  return ParamSchema::For<SoftmaxParams>().Field(
      "axis", &SoftmaxParams::axis, "the axis to normalize over (negative from the end)");
}

}  // namespace

void RegisterReduceOps(OpRegistry& r) {
  constexpr uint32_t kSumTypes = kFloatTypes | DTypeBit(DType::kI32) | DTypeBit(DType::kI64);
  r.Check(r.Register(OpDef(op_names::kSum)
                         .set_params(ReduceSchema())
                         .set_infer_shape(ReduceShape)
                         .set_dtypes(kSumTypes)
                         .set_gradient(SumGrad)));
  r.Check(r.Register(OpDef(op_names::kProd)
                         .set_params(ReduceSchema())
                         .set_infer_shape(ReduceShape)
                         .set_dtypes(kSumTypes)
                         .set_gradient(ProdGrad)));
  r.Check(r.Register(OpDef(op_names::kMean)
                         .set_params(ReduceSchema())
                         .set_infer_shape(ReduceShape)
                         .set_gradient(MeanGrad)));
  r.Check(r.Register(OpDef(op_names::kMax).set_params(ReduceSchema()).set_infer_shape(MaxShape)));
  r.Check(r.Register(
      OpDef(op_names::kArgmax)
          .set_params(ParamSchema::For<ArgmaxParams>()
                          .Field("axis", &ArgmaxParams::axis, "the axis (negative from the end)")
                          .Field("keepdims", &ArgmaxParams::keepdims, "keep the axis as size 1"))
          .set_infer_shape(ArgmaxShape)
          .set_infer_type(Int64Type)
          .set_gradient(NoGradient)));
  r.Check(r.Register(
      OpDef(op_names::kSumTo)
          .set_params(ParamSchema::For<SumToParams>().Required(
              "shape", &SumToParams::shape, "the target shape, broadcastable to the input's"))
          .set_infer_shape(SumToShape)
          .set_dtypes(kSumTypes)
          .set_gradient(SumToGrad)));
  r.Check(r.Register(OpDef(op_names::kSoftmax)
                         .set_params(SoftmaxSchema())
                         .set_infer_shape(SoftmaxShape)
                         .set_inplace({{0, 0}})
                         .set_gradient(SoftmaxGrad<false>)));
  r.Check(r.Register(OpDef(op_names::kLogSoftmax)
                         .set_params(SoftmaxSchema())
                         .set_infer_shape(SoftmaxShape)
                         .set_inplace({{0, 0}})
                         .set_gradient(SoftmaxGrad<true>)));
  // dx from (dy, y): y * (dy - sum(dy * y)); dy - exp(y) * sum(dy).
  r.Check(r.Register(OpDef(op_names::kBackwardSoftmax)
                         .set_inputs({"dy", "y"})
                         .set_params(SoftmaxSchema())
                         .set_infer_shape(SoftmaxShape)
                         .set_inplace({{0, 0}})));
  r.Check(r.Register(OpDef(op_names::kBackwardLogSoftmax)
                         .set_inputs({"dy", "y"})
                         .set_params(SoftmaxSchema())
                         .set_infer_shape(SoftmaxShape)
                         .set_inplace({{0, 0}})));
  // A label that is not a class index fails the op (BadLabelError) on every
  // platform; device kernels check the labels into temp space.
  r.Check(r.Register(OpDef(op_names::kSoftmaxCrossEntropy)
                         .set_inputs({"logits", "labels"})
                         .set_dtypes(kLabelTypes)
                         .set_infer_type(CrossEntropyType)
                         .set_infer_shape(CrossEntropyShape)
                         .set_resources({ResourceKind::kTempSpace})
                         .set_gradient(CrossEntropyGrad)));
  r.Check(r.Register(OpDef(op_names::kBackwardSoftmaxCrossEntropy)
                         .set_inputs({"logits", "labels"})
                         .set_dtypes(kLabelTypes)
                         .set_infer_type(CrossEntropyType)
                         .set_infer_shape(CrossEntropyBackwardShape)
                         .set_resources({ResourceKind::kTempSpace})));
  r.Check(r.Register(
      OpDef(op_names::kCumsum)
          .set_params(ParamSchema::For<CumsumParams>()
                          .Required("axis", &CumsumParams::axis, "the axis (negative from the end)")
                          .Field("exclusive", &CumsumParams::exclusive,
                                 "1: each element left out of its own sum (default 0)")
                          .Field("reverse", &CumsumParams::reverse,
                                 "1: sum from the end of the axis (default 0)"))
          .set_infer_shape(CumsumShape)
          .set_dtypes(kSumTypes)
          .set_inplace({{0, 0}})
          .set_gradient(CumsumGrad)));
  RegisterReduceHostKernels(r);
  RegisterReduceDeviceKernels(r);
}

}  // namespace rill::ops
