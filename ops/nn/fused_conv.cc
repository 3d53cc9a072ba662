#include "rill/ops/nn/fused_conv.h"

#include <atomic>
#include <optional>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"
#include "rill/plugins/dnn/dnn.h"
#include "rill/stream/stream.h"

namespace rill::ops {
namespace {

absl::StatusOr<std::optional<ActivationDescriptor>> ActivationOf(const FusedConvParams& p) {
  if (p.act.empty() || p.act == "none") return std::nullopt;
  if (p.act == "clipped_relu") {
    if (!(p.clip > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("fused_conv2d clip must be > 0 for clipped_relu, got ", p.clip));
    }
    return ActivationDescriptor{ActivationMode::kClippedRelu, p.clip};
  }
  absl::StatusOr<ActivationMode> mode = ParseActType(p.act);
  if (!mode.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fused_conv2d act must be '', 'relu', 'clipped_relu', 'sigmoid' or 'tanh', got '", p.act,
        "'"));
  }
  return ActivationDescriptor{*mode};
}

absl::StatusOr<bool> IsNhwc(const FusedConvParams& p) {
  if (p.layout == "NCHW") return false;
  if (p.layout == "NHWC") return true;
  return absl::InvalidArgumentError(
      absl::StrCat("fused_conv2d layout must be 'NCHW' or 'NHWC', got '", p.layout, "'"));
}

// The geometry of a call: descriptors in the op's layout; `data` and
// `weight` are the inputs' shapes.
absl::StatusOr<ConvGeometry> Geometry(const FusedConvParams& p, const Shape& data,
                                      const Shape& weight) {
  RILL_ASSIGN_OR_RETURN(bool nhwc, IsNhwc(p));
  if (!nhwc) return ConvGeom(p.conv(), data, weight);
  if (data.rank() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("fused_conv2d NHWC data ", data.ToString(), " is not 4-D"));
  }
  RILL_ASSIGN_OR_RETURN(ConvGeometry g,
                        ConvGeom(p.conv(), Shape{data[0], data[3], data[1], data[2]}, weight));
  g.x.layout = g.y.layout = DataLayout::kNHWC;
  return g;
}

Shape OutputShape(const ConvGeometry& g) {
  return g.y.layout == DataLayout::kNHWC ? Shape{g.y.n, g.y.h, g.y.w, g.y.c}
                                         : Shape{g.y.n, g.y.c, g.y.h, g.y.w};
}

absl::Status FusedConvShape(const InferContext& c, std::vector<Shape>* out) {
  const auto& p = c.p<FusedConvParams>();
  const size_t want = p.residual ? 4 : 3;
  if (c.in_shapes.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fused_conv2d takes ", want, " inputs (data, weight, bias", p.residual ? ", residual" : "",
        ") with residual=", p.residual ? "true" : "false", ", got ", c.in_shapes.size()));
  }
  RILL_RETURN_IF_ERROR(ActivationOf(p).status());
  RILL_ASSIGN_OR_RETURN(ConvGeometry g, Geometry(p, c.in_shapes[0], c.in_shapes[1]));
  const Shape y = OutputShape(g);
  if (c.in_shapes[2] != Shape{g.y.c}) {
    return absl::InvalidArgumentError(absl::StrCat("fused_conv2d bias ", c.in_shapes[2].ToString(),
                                                   " is not (", g.y.c, ") for output ",
                                                   y.ToString()));
  }
  if (p.residual && c.in_shapes[3] != y) {
    return absl::InvalidArgumentError(absl::StrCat("fused_conv2d residual ",
                                                   c.in_shapes[3].ToString(),
                                                   " is not the output shape ", y.ToString()));
  }
  (*out)[0] = y;
  return absl::OkStatus();
}

absl::Status FusedConvKernel(OpContext& ctx) {
  const auto& p = ctx.params<FusedConvParams>();
  RILL_ASSIGN_OR_RETURN(ConvGeometry g, Geometry(p, ctx.in(0).shape, ctx.in(1).shape));
  RILL_ASSIGN_OR_RETURN(std::optional<ActivationDescriptor> act, ActivationOf(p));
  RILL_ASSIGN_OR_RETURN(Stream * s, ctx.stream());
  ConvolutionArgs args{
      {g.x, g.w, g.conv, g.y}, ctx.in(0).view(), ctx.in(1).view(), ctx.out(0).view()};
  args.bias = ctx.in(2).view();
  args.activation = act;
  if (p.residual) args.side_input = ctx.in(3).view();
  args.filter_id = static_cast<uint64_t>(p.filter_id);
  s->ThenConvolve(args);
  return s->ok() ? absl::OkStatus() : s->status();
}

}  // namespace

int64_t NewConstantFilterId() {
  static std::atomic<int64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

void RegisterFusedConv(OpRegistry& r) {
  r.Check(r.Register(
      OpDef(op_names::kFusedConv2d)
          .set_variadic_inputs()
          .set_params(
              ParamSchema::For<FusedConvParams>()
                  .Field("stride", &FusedConvParams::stride, "(h, w) or one value; default (1, 1)")
                  .Field("pad", &FusedConvParams::pad, "zero padding (h, w); default (0, 0)")
                  .Field("dilation", &FusedConvParams::dilation, "(h, w); default (1, 1)")
                  .Field("num_group", &FusedConvParams::num_group, "groups of channels")
                  .Field("act", &FusedConvParams::act,
                         "'', 'relu', 'clipped_relu', 'sigmoid' or 'tanh'")
                  .Field("clip", &FusedConvParams::clip, "clipped_relu's ceiling")
                  .Field("residual", &FusedConvParams::residual,
                         "a fourth input added before the activation")
                  .Field("filter_id", &FusedConvParams::filter_id,
                         "not 0: the weight is a constant (NewConstantFilterId)")
                  .Field("layout", &FusedConvParams::layout,
                         "'NCHW' or 'NHWC' (data, residual and output)"))
          .set_dtypes(DTypeBit(DType::kF32))
          .set_infer_shape(FusedConvShape)));
  // DNN calls overwrite their outputs: the framework adds for kAddTo.
  r.Check(r.RegisterKernel(op_names::kFusedConv2d, KernelNeeds::Libraries({PluginKind::kDnn}),
                           {FusedConvKernel, kWriteReqs}));
}

}  // namespace rill::ops
