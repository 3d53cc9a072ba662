// The nn ops: definitions, shape inference and gradients (see nn.h).

#include "rill/ops/nn/nn.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/checked_math.h"
#include "rill/base/status_macros.h"
#include "rill/ops/invoke.h"
#include "rill/ops/nn/fused_conv.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"

namespace rill::ops {
namespace {

std::string TupleString(const std::vector<int64_t>& v) {
  return absl::StrCat("(", absl::StrJoin(v, ", "), ")");
}

// A 1- or 2-value tuple parameter as (h, w); `def` when empty.
absl::StatusOr<std::pair<int64_t, int64_t>> Pair(const char* name, const std::vector<int64_t>& v,
                                                 int64_t def, int64_t min) {
  std::pair<int64_t, int64_t> out{def, def};
  if (v.size() == 1)
    out = {v[0], v[0]};
  else if (v.size() == 2)
    out = {v[0], v[1]};
  else if (!v.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must hold 1 or 2 values (h, w), got ", TupleString(v)));
  }
  if (out.first < min || out.second < min) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be >= ", min, ", got ", TupleString(v)));
  }
  return out;
}

absl::Status NeedRank(const char* what, const Shape& s, int rank) {
  if (s.rank() == rank) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, " must have rank ", rank, ", got ", s.ToString()));
}

Shape DescShape(const TensorDescriptor& d) { return Shape{d.n, d.c, d.h, d.w}; }

}  // namespace

absl::StatusOr<MatmulGeometry> MatmulGeom(const MatmulParams& p, const Shape& a, const Shape& b) {
  if (a.rank() < 2 || b.rank() < 2) {
    return absl::InvalidArgumentError(absl::StrCat("matmul needs inputs of rank >= 2, got a ",
                                                   a.ToString(), " and b ", b.ToString()));
  }
  if (a.rank() != b.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("matmul inputs differ in rank: a ", a.ToString(),
                                                   " and b ", b.ToString(),
                                                   " (batch dimensions must be equal)"));
  }
  const int r = a.rank();
  MatmulGeometry g;
  Shape out;
  for (int i = 0; i < r - 2; ++i) {
    if (a[i] != b[i]) {
      return absl::InvalidArgumentError(absl::StrCat("matmul batch dimensions differ: a ",
                                                     a.ToString(), " and b ", b.ToString(),
                                                     " at axis ", i));
    }
    g.batch *= a[i];
    out.mutable_dims().push_back(a[i]);
  }
  g.m = p.transpose_a ? a[r - 1] : a[r - 2];
  const int64_t ka = p.transpose_a ? a[r - 2] : a[r - 1];
  const int64_t kb = p.transpose_b ? b[r - 1] : b[r - 2];
  g.n = p.transpose_b ? b[r - 2] : b[r - 1];
  if (ka != kb) {
    return absl::InvalidArgumentError(absl::StrCat(
        "matmul inner dimensions differ: a ", a.ToString(), p.transpose_a ? " (transposed)" : "",
        " has ", ka, ", b ", b.ToString(), p.transpose_b ? " (transposed)" : "", " has ", kb));
  }
  g.k = ka;
  out.mutable_dims().push_back(g.m);
  out.mutable_dims().push_back(g.n);
  g.out = out;
  return g;
}

absl::StatusOr<ConvGeometry> ConvGeom(const ConvParams& p, const Shape& x, const Shape& w) {
  RILL_RETURN_IF_ERROR(NeedRank("conv2d data (NCHW)", x, 4));
  RILL_RETURN_IF_ERROR(NeedRank("conv2d weight (OIHW)", w, 4));
  RILL_ASSIGN_OR_RETURN(auto stride, Pair("stride", p.stride, 1, 1));
  RILL_ASSIGN_OR_RETURN(auto pad, Pair("pad", p.pad, 0, 0));
  RILL_ASSIGN_OR_RETURN(auto dil, Pair("dilation", p.dilation, 1, 1));
  if (p.num_group < 1)
    return absl::InvalidArgumentError(absl::StrCat("num_group must be >= 1, got ", p.num_group));
  const CheckedInt<int64_t> takes = CheckedInt<int64_t>(w[1]) * p.num_group;
  if (!takes.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("conv2d num_group ", p.num_group, " times the ",
                                                   w[1], " input channels of weight ", w.ToString(),
                                                   " overflows a 64-bit size"));
  }
  if (x[1] != takes.value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("conv2d data ", x.ToString(), " has ", x[1], " channels but weight ",
                     w.ToString(), " with num_group ", p.num_group, " takes ", takes.value()));
  }
  if (w[0] % p.num_group != 0) {
    return absl::InvalidArgumentError(absl::StrCat("conv2d weight ", w.ToString(), " has ", w[0],
                                                   " output channels, not divisible by num_group ",
                                                   p.num_group));
  }
  ConvGeometry g;
  g.x = TensorDescriptor{.n = x[0], .c = x[1], .h = x[2], .w = x[3]};
  g.w = FilterDescriptor{
      .output_channels = w[0], .input_channels = w[1], .height = w[2], .width = w[3]};
  g.conv = ConvolutionDescriptor{.pad_h = pad.first,
                                 .pad_w = pad.second,
                                 .stride_h = stride.first,
                                 .stride_w = stride.second,
                                 .dilation_h = dil.first,
                                 .dilation_w = dil.second,
                                 .group_count = p.num_group};
  absl::StatusOr<TensorDescriptor> y = ConvolutionOutput(g.x, g.w, g.conv);
  if (!y.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("conv2d of data ", x.ToString(), " with weight ",
                                                   w.ToString(), " (", g.conv.ToString(),
                                                   "): ", y.status().message()));
  }
  g.y = *y;
  return g;
}

absl::StatusOr<PoolGeometry> PoolGeom(const PoolParams& p, const Shape& x) {
  RILL_RETURN_IF_ERROR(NeedRank("pooling data (NCHW)", x, 4));
  if (p.kernel.empty()) return absl::InvalidArgumentError("pooling needs a kernel, e.g. (2, 2)");
  RILL_ASSIGN_OR_RETURN(auto kernel, Pair("kernel", p.kernel, 1, 1));
  RILL_ASSIGN_OR_RETURN(auto stride, Pair("stride", p.stride, 1, 1));
  RILL_ASSIGN_OR_RETURN(auto pad, Pair("pad", p.pad, 0, 0));
  PoolGeometry g;
  if (p.pool_type == "max")
    g.pool.mode = PoolingMode::kMax;
  else if (p.pool_type == "avg") {
    g.pool.mode = p.count_include_pad ? PoolingMode::kAverageIncludePadding
                                      : PoolingMode::kAverageExcludePadding;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("pool_type must be 'max' or 'avg', got '", p.pool_type, "'"));
  }
  if (pad.first >= kernel.first || pad.second >= kernel.second) {
    return absl::InvalidArgumentError(absl::StrCat("pooling pad ", TupleString(p.pad),
                                                   " must be smaller than the kernel ",
                                                   TupleString(p.kernel)));
  }
  g.pool.window_h = kernel.first;
  g.pool.window_w = kernel.second;
  g.pool.pad_h = pad.first;
  g.pool.pad_w = pad.second;
  g.pool.stride_h = stride.first;
  g.pool.stride_w = stride.second;
  g.x = TensorDescriptor{.n = x[0], .c = x[1], .h = x[2], .w = x[3]};
  // The padded extents, checked: pad and kernel are the user's numbers.
  const CheckedInt<int64_t> padded_h =
      CheckedInt<int64_t>(x[2]) + CheckedInt<int64_t>(pad.first) * 2;
  const CheckedInt<int64_t> padded_w =
      CheckedInt<int64_t>(x[3]) + CheckedInt<int64_t>(pad.second) * 2;
  if (!padded_h.ok() || !padded_w.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pooling pad ", TupleString(p.pad), ": the padded ", padded_h.ok() ? "width" : "height",
        " of data ", x.ToString(), " overflows a 64-bit size"));
  }
  if (padded_h.value() < kernel.first || padded_w.value() < kernel.second) {
    return absl::InvalidArgumentError(absl::StrCat("pooling kernel ", TupleString(p.kernel),
                                                   " is larger than the padded data ",
                                                   x.ToString()));
  }
  absl::StatusOr<TensorDescriptor> y = PoolingOutput(g.x, g.pool);
  if (!y.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("pooling of data ", x.ToString(), " (",
                                                   g.pool.ToString(), "): ", y.status().message()));
  }
  g.y = *y;
  return g;
}

absl::StatusOr<TensorDescriptor> BatchNormDesc(const Shape& x) {
  for (int i = 0; i < x.rank(); ++i) {
    if (x[i] <= 0)
      return absl::InvalidArgumentError(
          absl::StrCat("batch_norm data ", x.ToString(), " is empty"));
  }
  if (x.rank() == 2) return TensorDescriptor{.n = x[0], .c = x[1], .h = 1, .w = 1};
  if (x.rank() == 4) return TensorDescriptor{.n = x[0], .c = x[1], .h = x[2], .w = x[3]};
  return absl::InvalidArgumentError(
      absl::StrCat("batch_norm data must be [N, C] or NCHW, got ", x.ToString()));
}

absl::StatusOr<ActivationMode> ParseActType(const std::string& t) {
  if (t == "relu") return ActivationMode::kRelu;
  if (t == "sigmoid") return ActivationMode::kSigmoid;
  if (t == "tanh") return ActivationMode::kTanh;
  return absl::InvalidArgumentError(
      absl::StrCat("act_type must be 'relu', 'sigmoid' or 'tanh', got '", t, "'"));
}

namespace {

// --- Shape inference.

absl::Status MatmulShape(const InferContext& c, std::vector<Shape>* out) {
  RILL_ASSIGN_OR_RETURN(MatmulGeometry g,
                        MatmulGeom(c.p<MatmulParams>(), c.in_shapes[0], c.in_shapes[1]));
  (*out)[0] = g.out;
  return absl::OkStatus();
}

absl::Status FullyConnectedShape(const InferContext& c, std::vector<Shape>* out) {
  const auto& p = c.p<FullyConnectedParams>();
  const size_t want = p.no_bias ? 2 : 3;
  if (c.in_shapes.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fully_connected with no_bias=", p.no_bias ? "true" : "false", " takes ", want,
        " inputs (x, weight", p.no_bias ? "" : ", bias", "), got ", c.in_shapes.size()));
  }
  const Shape &x = c.in_shapes[0], &w = c.in_shapes[1];
  RILL_RETURN_IF_ERROR(NeedRank("fully_connected x ([N, K])", x, 2));
  RILL_RETURN_IF_ERROR(NeedRank("fully_connected weight ([H, K])", w, 2));
  if (x[1] != w[1]) {
    return absl::InvalidArgumentError(absl::StrCat("fully_connected x ", x.ToString(), " has ",
                                                   x[1], " features but weight ", w.ToString(),
                                                   " takes ", w[1]));
  }
  if (p.num_hidden != 0 && p.num_hidden != w[0]) {
    return absl::InvalidArgumentError(absl::StrCat("fully_connected num_hidden ", p.num_hidden,
                                                   " but weight ", w.ToString(), " has ", w[0],
                                                   " rows"));
  }
  if (!p.no_bias && c.in_shapes[2] != Shape{w[0]}) {
    return absl::InvalidArgumentError(
        absl::StrCat("fully_connected bias must be [", w[0], "], got ", c.in_shapes[2].ToString()));
  }
  (*out)[0] = Shape{x[0], w[0]};
  return absl::OkStatus();
}

absl::Status ConvShape(const InferContext& c, std::vector<Shape>* out) {
  RILL_ASSIGN_OR_RETURN(ConvGeometry g,
                        ConvGeom(c.p<ConvParams>(), c.in_shapes[0], c.in_shapes[1]));
  (*out)[0] = DescShape(g.y);
  return absl::OkStatus();
}

// Backward conv inputs (dy, x, w): dy must be the forward's output shape.
absl::Status CheckConvBackward(const InferContext& c) {
  RILL_ASSIGN_OR_RETURN(ConvGeometry g,
                        ConvGeom(c.p<ConvParams>(), c.in_shapes[1], c.in_shapes[2]));
  if (c.in_shapes[0] != DescShape(g.y)) {
    return absl::InvalidArgumentError(absl::StrCat("output gradient ", c.in_shapes[0].ToString(),
                                                   " is not the conv2d output shape ",
                                                   DescShape(g.y).ToString()));
  }
  return absl::OkStatus();
}
absl::Status ConvDataShape(const InferContext& c, std::vector<Shape>* out) {
  RILL_RETURN_IF_ERROR(CheckConvBackward(c));
  (*out)[0] = c.in_shapes[1];
  return absl::OkStatus();
}
absl::Status ConvFilterShape(const InferContext& c, std::vector<Shape>* out) {
  RILL_RETURN_IF_ERROR(CheckConvBackward(c));
  (*out)[0] = c.in_shapes[2];
  return absl::OkStatus();
}

absl::Status PoolShape(const InferContext& c, std::vector<Shape>* out) {
  RILL_ASSIGN_OR_RETURN(PoolGeometry g, PoolGeom(c.p<PoolParams>(), c.in_shapes[0]));
  (*out)[0] = DescShape(g.y);
  return absl::OkStatus();
}

// (dy, x, y).
absl::Status PoolBackwardShape(const InferContext& c, std::vector<Shape>* out) {
  RILL_ASSIGN_OR_RETURN(PoolGeometry g, PoolGeom(c.p<PoolParams>(), c.in_shapes[1]));
  if (c.in_shapes[0] != DescShape(g.y) || c.in_shapes[2] != DescShape(g.y)) {
    return absl::InvalidArgumentError(
        absl::StrCat("pooling output gradient ", c.in_shapes[0].ToString(), " and output ",
                     c.in_shapes[2].ToString(), " must both be ", DescShape(g.y).ToString()));
  }
  (*out)[0] = c.in_shapes[1];
  return absl::OkStatus();
}

absl::Status CheckChannelVector(const char* what, const Shape& s, int64_t c) {
  if (s == Shape{c}) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("batch_norm ", what, " must be [", c, "], got ", s.ToString()));
}

// (x, gamma, beta) -> (y, saved_mean, saved_inv_std).
absl::Status BatchNormShape(const InferContext& c, std::vector<Shape>* out) {
  RILL_ASSIGN_OR_RETURN(TensorDescriptor d, BatchNormDesc(c.in_shapes[0]));
  RILL_RETURN_IF_ERROR(CheckChannelVector("gamma", c.in_shapes[1], d.c));
  RILL_RETURN_IF_ERROR(CheckChannelVector("beta", c.in_shapes[2], d.c));
  (*out)[0] = c.in_shapes[0];
  (*out)[1] = Shape{d.c};
  (*out)[2] = Shape{d.c};
  return absl::OkStatus();
}

// (dy, x, gamma, saved_mean, saved_inv_std) -> (dx, dgamma, dbeta).
absl::Status BatchNormBackwardShape(const InferContext& c, std::vector<Shape>* out) {
  RILL_ASSIGN_OR_RETURN(TensorDescriptor d, BatchNormDesc(c.in_shapes[1]));
  if (c.in_shapes[0] != c.in_shapes[1]) {
    return absl::InvalidArgumentError(absl::StrCat("batch_norm output gradient ",
                                                   c.in_shapes[0].ToString(), " differs from data ",
                                                   c.in_shapes[1].ToString()));
  }
  RILL_RETURN_IF_ERROR(CheckChannelVector("gamma", c.in_shapes[2], d.c));
  RILL_RETURN_IF_ERROR(CheckChannelVector("saved_mean", c.in_shapes[3], d.c));
  RILL_RETURN_IF_ERROR(CheckChannelVector("saved_inv_std", c.in_shapes[4], d.c));
  (*out)[0] = c.in_shapes[1];
  (*out)[1] = Shape{d.c};
  (*out)[2] = Shape{d.c};
  return absl::OkStatus();
}

absl::Status ActivationShape(const InferContext& c, std::vector<Shape>* out) {
  RILL_RETURN_IF_ERROR(ParseActType(c.p<ActivationParams>().act_type).status());
  for (size_t i = 1; i < c.in_shapes.size(); ++i) {
    if (c.in_shapes[i] != c.in_shapes[0]) {
      return absl::InvalidArgumentError(absl::StrCat("activation shapes ",
                                                     c.in_shapes[0].ToString(), " and ",
                                                     c.in_shapes[i].ToString(), " differ"));
    }
  }
  (*out)[0] = c.in_shapes[0];
  return absl::OkStatus();
}

// --- Gradients.

absl::StatusOr<Tensor> Matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  RILL_ASSIGN_OR_RETURN(
      auto r, Invoke(BuiltinOp(op_names::kMatmul), {a, b}, MakeParams(MatmulParams{ta, tb})));
  return r[0];
}

absl::StatusOr<std::vector<Tensor>> MatmulGrad(const GradientContext& c) {
  const auto& p = c.p<MatmulParams>();
  const Tensor &a = c.inputs[0], &b = c.inputs[1], &g = c.out_grads[0];
  Tensor ga, gb;
  if (!p.transpose_a && !p.transpose_b) {
    RILL_ASSIGN_OR_RETURN(ga, Matmul(g, b, false, true));
    RILL_ASSIGN_OR_RETURN(gb, Matmul(a, g, true, false));
  } else if (p.transpose_a && !p.transpose_b) {
    RILL_ASSIGN_OR_RETURN(ga, Matmul(b, g, false, true));
    RILL_ASSIGN_OR_RETURN(gb, Matmul(a, g, false, false));
  } else if (!p.transpose_a && p.transpose_b) {
    RILL_ASSIGN_OR_RETURN(ga, Matmul(g, b, false, false));
    RILL_ASSIGN_OR_RETURN(gb, Matmul(g, a, true, false));
  } else {
    RILL_ASSIGN_OR_RETURN(ga, Matmul(b, g, true, true));
    RILL_ASSIGN_OR_RETURN(gb, Matmul(g, a, true, true));
  }
  return std::vector<Tensor>{ga, gb};
}

// Sum of g [N, H] over rows: the reduce family's 'sum' where registered,
// else ones[1, N] x g.
absl::StatusOr<Tensor> SumRows(const Tensor& g) {
  if (OpRegistry::Global().Find(op_names::kSum).ok()) {
    RILL_ASSIGN_OR_RETURN(auto r, Invoke(op_names::kSum, {g}, {{"axes", "(0)"}}));
    return r[0];
  }
  const int64_t n = g.shape()[0], h = g.shape()[1];
  Tensor ones;
  if (g.dtype() == DType::kF64) {
    RILL_ASSIGN_OR_RETURN(ones, Tensor::FromHost<double>(std::vector<double>(n, 1.0), {1, n},
                                                         g.context(), g.engine()));
  } else {
    RILL_ASSIGN_OR_RETURN(ones, Tensor::FromHost<float>(std::vector<float>(n, 1.0f), {1, n},
                                                        g.context(), g.engine()));
  }
  RILL_ASSIGN_OR_RETURN(Tensor s, Matmul(ones, g, false, false));
  return s.Reshape(Shape{h});
}

absl::StatusOr<std::vector<Tensor>> FullyConnectedGrad(const GradientContext& c) {
  const auto& p = c.p<FullyConnectedParams>();
  const Tensor &x = c.inputs[0], &w = c.inputs[1], &g = c.out_grads[0];
  std::vector<Tensor> out(c.inputs.size());
  RILL_ASSIGN_OR_RETURN(out[0], Matmul(g, w, false, false));  // [N, H] x [H, K].
  RILL_ASSIGN_OR_RETURN(out[1], Matmul(g, x, true, false));   // [H, N] x [N, K].
  if (!p.no_bias) {
    RILL_ASSIGN_OR_RETURN(out[2], SumRows(g));
  }
  return out;
}

absl::StatusOr<std::vector<Tensor>> ConvGrad(const GradientContext& c) {
  auto params = MakeParams(c.p<ConvParams>());
  const std::vector<Tensor> in{c.out_grads[0], c.inputs[0], c.inputs[1]};
  RILL_ASSIGN_OR_RETURN(auto dx, Invoke(BuiltinOp(op_names::kBackwardConv2dData), in, params));
  RILL_ASSIGN_OR_RETURN(auto dw, Invoke(BuiltinOp(op_names::kBackwardConv2dFilter), in, params));
  return std::vector<Tensor>{dx[0], dw[0]};
}

absl::StatusOr<std::vector<Tensor>> PoolGrad(const GradientContext& c) {
  RILL_ASSIGN_OR_RETURN(
      auto dx, Invoke(BuiltinOp(op_names::kBackwardPooling),
                      {c.out_grads[0], c.inputs[0], c.outputs[0]}, MakeParams(c.p<PoolParams>())));
  return dx;
}

absl::StatusOr<std::vector<Tensor>> BatchNormGrad(const GradientContext& c) {
  return Invoke(BuiltinOp(op_names::kBackwardBatchNorm),
                {c.out_grads[0], c.inputs[0], c.inputs[1], c.outputs[1], c.outputs[2]},
                MakeParams(c.p<BatchNormParams>()));
}

absl::StatusOr<std::vector<Tensor>> ActivationGrad(const GradientContext& c) {
  return Invoke(BuiltinOp(op_names::kBackwardActivation),
                {c.out_grads[0], c.inputs[0], c.outputs[0]}, MakeParams(c.p<ActivationParams>()));
}

ParamSchema ConvSchema() {
  return ParamSchema::For<ConvParams>()
      .Field("stride", &ConvParams::stride, "(h, w) or one value; default (1, 1)")
      .Field("pad", &ConvParams::pad, "zero padding (h, w) or one value; default (0, 0)")
      .Field("dilation", &ConvParams::dilation, "(h, w) or one value; default (1, 1)")
      .Field("num_group", &ConvParams::num_group, "groups of channels");
}

ParamSchema PoolSchema() {
  return ParamSchema::For<PoolParams>()
      .Required("kernel", &PoolParams::kernel, "window (h, w) or one value")
      .Field("stride", &PoolParams::stride, "(h, w) or one value; default (1, 1)")
      .Field("pad", &PoolParams::pad, "(h, w) or one value; default (0, 0)")
      .Field("pool_type", &PoolParams::pool_type, "'max' or 'avg'")
      .Field("count_include_pad", &PoolParams::count_include_pad,
             "avg: count padding in the divisor");
}

constexpr uint32_t kF32 = DTypeBit(DType::kF32);

}  // namespace

void RegisterNnOps(OpRegistry& r) {
  r.Check(r.Register(OpDef(op_names::kMatmul)
                         .set_inputs({"a", "b"})
                         .set_params(ParamSchema::For<MatmulParams>()
                                         .Field("transpose_a", &MatmulParams::transpose_a,
                                                "use a's last two axes swapped")
                                         .Field("transpose_b", &MatmulParams::transpose_b,
                                                "use b's last two axes swapped"))
                         .set_infer_shape(MatmulShape)
                         .set_gradient(MatmulGrad)));
  r.Check(r.Register(
      OpDef(op_names::kFullyConnected)
          .set_variadic_inputs()
          .set_params(
              ParamSchema::For<FullyConnectedParams>()
                  .Field("no_bias", &FullyConnectedParams::no_bias, "no bias input")
                  .Field("num_hidden", &FullyConnectedParams::num_hidden, "H; 0: the weight's"))
          .set_infer_shape(FullyConnectedShape)
          .set_gradient(FullyConnectedGrad)));
  r.Check(r.Register(OpDef(op_names::kConv2d)
                         .set_inputs({"data", "weight"})
                         .set_params(ConvSchema())
                         .set_dtypes(kF32)
                         .set_infer_shape(ConvShape)
                         .set_gradient(ConvGrad)));
  r.Check(r.Register(OpDef(op_names::kBackwardConv2dData)
                         .set_inputs({"dy", "data", "weight"})
                         .set_params(ConvSchema())
                         .set_dtypes(kF32)
                         .set_infer_shape(ConvDataShape)));
  r.Check(r.Register(OpDef(op_names::kBackwardConv2dFilter)
                         .set_inputs({"dy", "data", "weight"})
                         .set_params(ConvSchema())
                         .set_dtypes(kF32)
                         .set_infer_shape(ConvFilterShape)));
  r.Check(r.Register(OpDef(op_names::kPooling)
                         .set_params(PoolSchema())
                         .set_dtypes(kF32)
                         .set_infer_shape(PoolShape)
                         .set_gradient(PoolGrad)));
  r.Check(r.Register(OpDef(op_names::kBackwardPooling)
                         .set_inputs({"dy", "data", "out"})
                         .set_params(PoolSchema())
                         .set_dtypes(kF32)
                         .set_infer_shape(PoolBackwardShape)));
  r.Check(r.Register(OpDef(op_names::kBatchNorm)
                         .set_inputs({"data", "gamma", "beta"})
                         .set_num_outputs(3)
                         .set_params(ParamSchema::For<BatchNormParams>().Field(
                             "eps", &BatchNormParams::eps, "added to the variance"))
                         .set_dtypes(kF32)
                         .set_infer_shape(BatchNormShape)
                         .set_gradient(BatchNormGrad)));
  r.Check(r.Register(OpDef(op_names::kBackwardBatchNorm)
                         .set_inputs({"dy", "data", "gamma", "saved_mean", "saved_inv_std"})
                         .set_num_outputs(3)
                         .set_params(ParamSchema::For<BatchNormParams>().Field(
                             "eps", &BatchNormParams::eps, "added to the variance"))
                         .set_dtypes(kF32)
                         .set_infer_shape(BatchNormBackwardShape)));
  r.Check(r.Register(OpDef(op_names::kActivation)
                         .set_params(ParamSchema::For<ActivationParams>().Required(
                             "act_type", &ActivationParams::act_type, "relu, sigmoid or tanh"))
                         .set_dtypes(kF32)
                         .set_inplace({{0, 0}})
                         .set_infer_shape(ActivationShape)
                         .set_gradient(ActivationGrad)));
  r.Check(r.Register(OpDef(op_names::kBackwardActivation)
                         .set_inputs({"dy", "data", "out"})
                         .set_params(ParamSchema::For<ActivationParams>().Required(
                             "act_type", &ActivationParams::act_type, "relu, sigmoid or tanh"))
                         .set_dtypes(kF32)
                         .set_infer_shape(ActivationShape)));
  RegisterNnLibraryKernels(r);
  RegisterFusedConv(r);
  RegisterNnDeviceKernels(r);
}

}  // namespace rill::ops
