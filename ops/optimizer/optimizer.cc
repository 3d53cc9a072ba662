// The optimizer ops (see optimizer.h for the formulas).
#include "rill/ops/optimizer/optimizer.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"

namespace rill::ops {

double AdamParams::EffectiveLr() const {
  if (t <= 0) return lr;
  const double td = static_cast<double>(t);
  return lr * std::sqrt(1 - std::pow(beta2, td)) / (1 - std::pow(beta1, td));
}

namespace {

absl::Status SameShapes(const InferContext& ctx) {
  for (size_t i = 1; i < ctx.in_shapes.size(); ++i) {
    if (ctx.in_shapes[i] != ctx.in_shapes[0]) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", i, " has shape ", ctx.in_shapes[i].ToString(),
                       " but the weight has ", ctx.in_shapes[0].ToString()));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckFinite(const char* name, double v) {
  if (!std::isfinite(v))
    return absl::InvalidArgumentError(absl::StrCat(name, "=", v, " is not finite"));
  return absl::OkStatus();
}

absl::Status CheckSgd(const SgdParams& p) {
  for (auto [n, v] : {std::pair<const char*, double>{"lr", p.lr},
                      {"momentum", p.momentum},
                      {"wd", p.wd},
                      {"rescale_grad", p.rescale_grad},
                      {"clip_gradient", p.clip_gradient}}) {
    if (absl::Status s = CheckFinite(n, v); !s.ok()) return s;
  }
  if (p.lr < 0) return absl::InvalidArgumentError(absl::StrCat("lr=", p.lr, " is negative"));
  return absl::OkStatus();
}

absl::Status SgdShape(const InferContext& ctx, std::vector<Shape>* out) {
  const SgdParams& p = ctx.p<SgdParams>();
  if (absl::Status s = CheckSgd(p); !s.ok()) return s;
  if (p.momentum != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sgd_update with momentum=", p.momentum,
                     ": use sgd_mom_update, which keeps the momentum state"));
  }
  if (absl::Status s = SameShapes(ctx); !s.ok()) return s;
  for (Shape& s : *out) s = ctx.in_shapes[0];
  return absl::OkStatus();
}

absl::Status SgdMomShape(const InferContext& ctx, std::vector<Shape>* out) {
  const SgdParams& p = ctx.p<SgdParams>();
  if (absl::Status s = CheckSgd(p); !s.ok()) return s;
  if (p.momentum < 0 || p.momentum >= 1) {
    return absl::InvalidArgumentError(absl::StrCat("momentum=", p.momentum, " is outside [0, 1)"));
  }
  if (absl::Status s = SameShapes(ctx); !s.ok()) return s;
  for (Shape& s : *out) s = ctx.in_shapes[0];
  return absl::OkStatus();
}

absl::Status AdamShape(const InferContext& ctx, std::vector<Shape>* out) {
  const AdamParams& p = ctx.p<AdamParams>();
  for (auto [n, v] : {std::pair<const char*, double>{"lr", p.lr},
                      {"beta1", p.beta1},
                      {"beta2", p.beta2},
                      {"epsilon", p.epsilon},
                      {"wd", p.wd},
                      {"rescale_grad", p.rescale_grad},
                      {"clip_gradient", p.clip_gradient}}) {
    if (absl::Status s = CheckFinite(n, v); !s.ok()) return s;
  }
  if (p.lr < 0) return absl::InvalidArgumentError(absl::StrCat("lr=", p.lr, " is negative"));
  if (p.beta1 < 0 || p.beta1 >= 1)
    return absl::InvalidArgumentError(absl::StrCat("beta1=", p.beta1, " is outside [0, 1)"));
  if (p.beta2 < 0 || p.beta2 >= 1)
    return absl::InvalidArgumentError(absl::StrCat("beta2=", p.beta2, " is outside [0, 1)"));
  if (p.epsilon <= 0)
    return absl::InvalidArgumentError(absl::StrCat("epsilon=", p.epsilon, " is not positive"));
  if (p.t < 0) return absl::InvalidArgumentError(absl::StrCat("t=", p.t, " is negative"));
  if (absl::Status s = SameShapes(ctx); !s.ok()) return s;
  for (Shape& s : *out) s = ctx.in_shapes[0];
  return absl::OkStatus();
}

ParamSchema SgdSchema(bool with_momentum) {
  ParamSchema s = ParamSchema::For<SgdParams>();
  s.Required("lr", &SgdParams::lr, "learning rate")
      .Field("momentum", &SgdParams::momentum,
             with_momentum ? "momentum in [0, 1)" : "must be 0 (use sgd_mom_update)")
      .Field("wd", &SgdParams::wd, "weight decay")
      .Field("rescale_grad", &SgdParams::rescale_grad, "gradient scale")
      .Field("clip_gradient", &SgdParams::clip_gradient,
             "clip the scaled gradient to +-this; < 0: no clip");
  return s;
}

}  // namespace

void RegisterOptimizerOps(OpRegistry& r) {
  r.Check(r.Register(OpDef(op_names::kSgdUpdate)
                         .set_inputs({"weight", "grad"})
                         .set_params(SgdSchema(false))
                         .set_infer_shape(SgdShape)
                         .set_inplace({{0, 0}})));
  r.Check(r.Register(OpDef(op_names::kSgdMomUpdate)
                         .set_inputs({"weight", "grad", "mom"})
                         .set_num_outputs(2)
                         .set_params(SgdSchema(true))
                         .set_infer_shape(SgdMomShape)
                         .set_inplace({{0, 0}, {2, 1}})));
  r.Check(r.Register(
      OpDef(op_names::kAdamUpdate)
          .set_inputs({"weight", "grad", "mean", "var"})
          .set_num_outputs(3)
          .set_params(ParamSchema::For<AdamParams>()
                          .Required("lr", &AdamParams::lr, "learning rate")
                          .Field("beta1", &AdamParams::beta1, "first moment decay")
                          .Field("beta2", &AdamParams::beta2, "second moment decay")
                          .Field("epsilon", &AdamParams::epsilon, "denominator term")
                          .Field("wd", &AdamParams::wd, "weight decay")
                          .Field("rescale_grad", &AdamParams::rescale_grad, "gradient scale")
                          .Field("clip_gradient", &AdamParams::clip_gradient, "< 0: no clip")
                          .Field("t", &AdamParams::t, "step (from 1) for bias correction; 0: none"))
          .set_infer_shape(AdamShape)
          .set_inplace({{0, 0}, {2, 1}, {3, 2}})));
  RegisterOptimizerHostKernels(r);
  RegisterOptimizerDeviceKernels(r);
}

}  // namespace rill::ops
