// Device kernels of the optimizer ops: one source, optimizer.cl, compiled
// as OpenCL C (one program per element type, embedded at build time) and
// as CUDA (optimizer.cu: entries sgd_f32, adam_f64, ...).

#include <string>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/ops/device_kernel.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/optimizer/optimizer.h"
#include "rill/ops/optimizer/optimizer_cl.h"  // Generated: kOptimizerClSource.
#include "rill/platform/platform.h"

RILL_OPS_DECLARE_FATBIN(optimizer);

namespace rill::ops {
namespace {

absl::StatusOr<const Kernel*> Get(OpContext& ctx, DType dtype, const char* entry) {
  const std::string key = absl::StrCat("optimizer.", entry, ".", DTypeSuffix(dtype));
  return DeviceKernel(
      ctx, key, RILL_OPS_FATBIN(optimizer), absl::StrCat(entry, "_", DTypeSuffix(dtype)), entry,
      [&] {
        return absl::StrCat(
            dtype == DType::kF64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "",
            "#define T ", OpenClTypeName(dtype), "\n#define KERNEL(name) name\n#define RILL_FN\n",
            kOptimizerClSource);
      });
}

// Appends the doubles as the kernel's element type.
void Scalars(LaunchArgs& args, DType dtype, std::initializer_list<double> values) {
  for (double v : values) {
    if (dtype == DType::kF64)
      args.Value<double>(v);
    else
      args.Value<float>(static_cast<float>(v));
  }
}

absl::Status DevSgd(OpContext& ctx) {
  const TensorArg &w = ctx.in(0), &g = ctx.in(1), &out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  const SgdParams& p = ctx.params<SgdParams>();
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, w.dtype, "sgd"));
  LaunchArgs args;
  args.Tensor(w).Tensor(g).Tensor(out).Value<uint64_t>(out.size());
  Scalars(args, w.dtype, {p.lr, p.wd, p.rescale_grad, p.clip_gradient});
  return Launch1D(ctx, *k, out.size(), args.Take());
}

absl::Status DevSgdMom(OpContext& ctx) {
  const TensorArg &w = ctx.in(0), &out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  const SgdParams& p = ctx.params<SgdParams>();
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, w.dtype, "sgd_mom"));
  LaunchArgs args;
  args.Tensor(w)
      .Tensor(ctx.in(1))
      .Tensor(ctx.in(2))
      .Tensor(out)
      .Tensor(ctx.out(1))
      .Value<uint64_t>(out.size());
  Scalars(args, w.dtype, {p.lr, p.momentum, p.wd, p.rescale_grad, p.clip_gradient});
  return Launch1D(ctx, *k, out.size(), args.Take());
}

absl::Status DevAdam(OpContext& ctx) {
  const TensorArg &w = ctx.in(0), &out = ctx.out(0);
  if (out.size() == 0) return absl::OkStatus();
  const AdamParams& p = ctx.params<AdamParams>();
  RILL_ASSIGN_OR_RETURN(const Kernel* k, Get(ctx, w.dtype, "adam"));
  LaunchArgs args;
  args.Tensor(w)
      .Tensor(ctx.in(1))
      .Tensor(ctx.in(2))
      .Tensor(ctx.in(3))
      .Tensor(out)
      .Tensor(ctx.out(1))
      .Tensor(ctx.out(2))
      .Value<uint64_t>(out.size());
  Scalars(args, w.dtype,
          {p.EffectiveLr(), p.beta1, p.beta2, p.epsilon, p.wd, p.rescale_grad, p.clip_gradient});
  return Launch1D(ctx, *k, out.size(), args.Take());
}

void Register(OpRegistry& r, const KernelNeeds& platform) {
  r.Check(r.RegisterKernel(op_names::kSgdUpdate, platform, {DevSgd, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kSgdMomUpdate, platform, {DevSgdMom, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kAdamUpdate, platform, {DevAdam, kWriteReqs}));
}

}  // namespace

void RegisterOptimizerDeviceKernels(OpRegistry& r) {
  Register(r, KernelNeeds::DeviceCode(DeviceCodeForms("optimizer", RILL_OPS_FATBIN(optimizer))));
}

}  // namespace rill::ops
