// layer_norm: the definition, shape inference, and the host, OpenCL and
// CUDA kernels (see norm.h).

#include "rill/ops/norm/norm.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/ops/device_kernel.h"
#include "rill/ops/norm/norm_cl.h"  // Generated: kNormClSource.
#include "rill/ops/op.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"

RILL_OPS_DECLARE_FATBIN(norm);

namespace rill::ops {
namespace {

// Rows and row length of data `x` normalized from `axis`.
struct Rows {
  int64_t rows = 0, cols = 0;
};

absl::StatusOr<Rows> RowsOf(const LayerNormParams& p, const Shape& x) {
  const int64_t r = x.rank();
  const int64_t axis = p.axis < 0 ? p.axis + r : p.axis;
  if (r == 0 || axis < 0 || axis >= r) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer_norm axis ", p.axis, " is out of range for data ", x.ToString()));
  }
  Rows s{1, 1};
  for (int64_t i = 0; i < r; ++i) (i < axis ? s.rows : s.cols) *= x[i];
  return s;
}

absl::Status LayerNormShape(const InferContext& c, std::vector<Shape>* out) {
  const auto& p = c.p<LayerNormParams>();
  const Shape& x = c.in_shapes[0];
  RILL_RETURN_IF_ERROR(RowsOf(p, x).status());
  if (!(p.eps > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("layer_norm eps must be > 0, got ", p.eps));
  }
  const int64_t axis = p.axis < 0 ? p.axis + x.rank() : p.axis;
  const Shape want(std::vector<int64_t>(x.span().begin() + axis, x.span().end()));
  for (int i : {1, 2}) {
    if (c.in_shapes[i] != want) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layer_norm ", i == 1 ? "gamma " : "beta ", c.in_shapes[i].ToString(), " is not ",
          want.ToString(), " (data ", x.ToString(), " from axis ", p.axis, ")"));
    }
  }
  (*out)[0] = x;
  return absl::OkStatus();
}

absl::Status HostLayerNorm(OpContext& ctx) {
  const TensorArg x = ctx.in(0), g = ctx.in(1), b = ctx.in(2), y = ctx.out(0);
  if (y.size() == 0) return absl::OkStatus();
  const auto& p = ctx.params<LayerNormParams>();
  RILL_ASSIGN_OR_RETURN(Rows s, RowsOf(p, x.shape));
  const double eps = p.eps;
  return ctx.RunOnHost([x, g, b, y, s, eps]() -> absl::Status {
    const float *px = x.data<float>(), *pg = g.data<float>(), *pb = b.data<float>();
    float* py = y.data<float>();
    for (int64_t r = 0; r < s.rows; ++r) {
      const float* row = px + r * s.cols;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < s.cols; ++i) mean += row[i];
      mean /= static_cast<double>(s.cols);
      for (int64_t i = 0; i < s.cols; ++i) var += (row[i] - mean) * (row[i] - mean);
      var /= static_cast<double>(s.cols);
      const float m = static_cast<float>(mean);
      const float inv = static_cast<float>(1 / std::sqrt(var + eps));
      float* out = py + r * s.cols;
      for (int64_t i = 0; i < s.cols; ++i) out[i] = (row[i] - m) * inv * pg[i] + pb[i];
    }
    return absl::OkStatus();
  });
}

absl::Status DeviceLayerNorm(OpContext& ctx) {
  const TensorArg &x = ctx.in(0), &g = ctx.in(1), &b = ctx.in(2), &y = ctx.out(0);
  if (y.size() == 0) return absl::OkStatus();
  const auto& p = ctx.params<LayerNormParams>();
  RILL_ASSIGN_OR_RETURN(Rows s, RowsOf(p, x.shape));
  RILL_ASSIGN_OR_RETURN(const Kernel* k,
                        DeviceKernel(ctx, "norm.layer_norm.f32", RILL_OPS_FATBIN(norm),
                                     "layer_norm_f32", "layer_norm", [] {
                                       return absl::StrCat(
                                           "#define T float\n#define KERNEL(name) name\n"
                                           "#define RILL_FN\n",
                                           kNormClSource);
                                     }));
  LaunchArgs args;
  args.Tensor(x)
      .Tensor(g)
      .Tensor(b)
      .Tensor(y)
      .Value<uint64_t>(s.rows)
      .Value<uint64_t>(s.cols)
      .Value<float>(static_cast<float>(p.eps));
  return Launch1D(ctx, *k, s.rows, args.Take());
}

}  // namespace

void RegisterNormOps(OpRegistry& r) {
  r.Check(r.Register(
      OpDef(op_names::kLayerNorm)
          .set_inputs({"data", "gamma", "beta"})
          .set_params(ParamSchema::For<LayerNormParams>()
                          .Field("axis", &LayerNormParams::axis,
                                 "first normalized axis (negative from the end)")
                          .Field("eps", &LayerNormParams::eps, "added to the variance (> 0)"))
          .set_dtypes(DTypeBit(DType::kF32))
          .set_infer_shape(LayerNormShape)));
  r.Check(r.RegisterKernel(op_names::kLayerNorm, KernelNeeds::HostMemory(),
                           {HostLayerNorm, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kLayerNorm,
                           KernelNeeds::DeviceCode(DeviceCodeForms("norm", RILL_OPS_FATBIN(norm))),
                           {DeviceLayerNorm, kWriteReqs}));
}

}  // namespace rill::ops
