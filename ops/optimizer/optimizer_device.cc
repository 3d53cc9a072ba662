// Device kernels of the optimizer ops: OpenCL C below (one program per
// element type), CUDA in optimizer.cu (entries sgd_f32, adam_f64, ...).

#include <string>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/ops/device_kernel.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/optimizer/optimizer.h"
#include "rill/platform/platform.h"

RILL_OPS_DECLARE_FATBIN(optimizer);

namespace rill::ops {
namespace {

constexpr char kSource[] = R"CLC(
T grad_of(T g, T w, T rs, T clip, T wd) {
  g *= rs;
  if (clip >= (T)0) g = fmin(fmax(g, -clip), clip);
  return g + wd * w;
}

__kernel void sgd(__global const T* w, ulong w_off, __global const T* g, ulong g_off,
                  __global T* out, ulong out_off, ulong n, T lr, T wd, T rs, T clip) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  T wv = w[w_off + i];
  out[out_off + i] = wv - lr * grad_of(g[g_off + i], wv, rs, clip, wd);
}

__kernel void sgd_mom(__global const T* w, ulong w_off, __global const T* g, ulong g_off,
                      __global const T* m, ulong m_off, __global T* wo, ulong wo_off,
                      __global T* mo, ulong mo_off, ulong n, T lr, T mom, T wd, T rs, T clip) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  T wv = w[w_off + i];
  T mv = mom * m[m_off + i] - lr * grad_of(g[g_off + i], wv, rs, clip, wd);
  mo[mo_off + i] = mv;
  wo[wo_off + i] = wv + mv;
}

__kernel void adam(__global const T* w, ulong w_off, __global const T* g, ulong g_off,
                   __global const T* m, ulong m_off, __global const T* v, ulong v_off,
                   __global T* wo, ulong wo_off, __global T* mo, ulong mo_off,
                   __global T* vo, ulong vo_off, ulong n, T lr, T b1, T b2, T eps, T wd, T rs,
                   T clip) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  T wv = w[w_off + i];
  T gv = grad_of(g[g_off + i], wv, rs, clip, wd);
  T mv = b1 * m[m_off + i] + ((T)1 - b1) * gv;
  T vv = b2 * v[v_off + i] + ((T)1 - b2) * gv * gv;
  mo[mo_off + i] = mv;
  vo[vo_off + i] = vv;
  wo[wo_off + i] = wv - lr * mv / (sqrt(vv) + eps);
}
)CLC";

absl::StatusOr<const Kernel*> Get(OpContext& ctx, DType dtype, const char* entry) {
  const std::string key = absl::StrCat("optimizer.", entry, ".", DTypeSuffix(dtype));
  return DeviceKernel(ctx, key, RILL_OPS_FATBIN(optimizer),
                      absl::StrCat(entry, "_", DTypeSuffix(dtype)), entry, [&] {
                        return absl::StrCat(dtype == DType::kF64
                                                ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
                                                : "",
                                            "#define T ", OpenClTypeName(dtype), "\n", kSource);
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
