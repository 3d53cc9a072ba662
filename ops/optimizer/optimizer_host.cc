// Host kernels of the optimizer ops: one vectorizable loop over the whole
// tensors (in place or not: each element is read before it is written).

#include <algorithm>
#include <cmath>

#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/optimizer/optimizer.h"

namespace rill::ops {
namespace {

// f32 or f64 (the ops take only those).
template <typename Fn>
void DispatchFloat(DType dtype, Fn&& fn) {
  if (dtype == DType::kF64)
    fn(double{});
  else
    fn(float{});
}

template <typename T>
inline T Grad(T g, T w, T rescale, T clip, T wd) {
  g *= rescale;
  if (clip >= 0) g = std::min(std::max(g, -clip), clip);
  return g + wd * w;
}

absl::Status HostSgd(OpContext& ctx) {
  const TensorArg w = ctx.in(0), g = ctx.in(1), out = ctx.out(0);
  const SgdParams p = ctx.params<SgdParams>();
  if (out.size() == 0) return absl::OkStatus();
  return ctx.RunOnHost([w, g, out, p]() -> absl::Status {
    DispatchFloat(w.dtype, [&](auto t) {
      using T = decltype(t);
      const T* wi = w.data<T>();
      const T* gi = g.data<T>();
      T* o = out.data<T>();
      const T lr = T(p.lr), wd = T(p.wd), rs = T(p.rescale_grad), clip = T(p.clip_gradient);
      const int64_t n = w.size();
      for (int64_t i = 0; i < n; ++i) o[i] = wi[i] - lr * Grad<T>(gi[i], wi[i], rs, clip, wd);
    });
    return absl::OkStatus();
  });
}

absl::Status HostSgdMom(OpContext& ctx) {
  const TensorArg w = ctx.in(0), g = ctx.in(1), m = ctx.in(2), wo = ctx.out(0), mo = ctx.out(1);
  const SgdParams p = ctx.params<SgdParams>();
  if (wo.size() == 0) return absl::OkStatus();
  return ctx.RunOnHost([w, g, m, wo, mo, p]() -> absl::Status {
    DispatchFloat(w.dtype, [&](auto t) {
      using T = decltype(t);
      const T* wi = w.data<T>();
      const T* gi = g.data<T>();
      const T* mi = m.data<T>();
      T* wop = wo.data<T>();
      T* mop = mo.data<T>();
      const T lr = T(p.lr), mom = T(p.momentum), wd = T(p.wd), rs = T(p.rescale_grad),
              clip = T(p.clip_gradient);
      const int64_t n = w.size();
      for (int64_t i = 0; i < n; ++i) {
        const T wv = wi[i];
        const T mv = mom * mi[i] - lr * Grad<T>(gi[i], wv, rs, clip, wd);
        mop[i] = mv;
        wop[i] = wv + mv;
      }
    });
    return absl::OkStatus();
  });
}

absl::Status HostAdam(OpContext& ctx) {
  const TensorArg w = ctx.in(0), g = ctx.in(1), m = ctx.in(2), v = ctx.in(3);
  const TensorArg wo = ctx.out(0), mo = ctx.out(1), vo = ctx.out(2);
  const AdamParams p = ctx.params<AdamParams>();
  const double lr_t = p.EffectiveLr();
  if (wo.size() == 0) return absl::OkStatus();
  return ctx.RunOnHost([w, g, m, v, wo, mo, vo, p, lr_t]() -> absl::Status {
    DispatchFloat(w.dtype, [&](auto t) {
      using T = decltype(t);
      const T* wi = w.data<T>();
      const T* gi = g.data<T>();
      const T* mi = m.data<T>();
      const T* vi = v.data<T>();
      T* wop = wo.data<T>();
      T* mop = mo.data<T>();
      T* vop = vo.data<T>();
      const T lr = T(lr_t), b1 = T(p.beta1), b2 = T(p.beta2), eps = T(p.epsilon), wd = T(p.wd),
              rs = T(p.rescale_grad), clip = T(p.clip_gradient);
      const int64_t n = w.size();
      for (int64_t i = 0; i < n; ++i) {
        const T wv = wi[i];
        const T gv = Grad<T>(gi[i], wv, rs, clip, wd);
        const T mv = b1 * mi[i] + (T(1) - b1) * gv;
        const T vv = b2 * vi[i] + (T(1) - b2) * gv * gv;
        mop[i] = mv;
        vop[i] = vv;
        wop[i] = wv - lr * mv / (std::sqrt(vv) + eps);
      }
    });
    return absl::OkStatus();
  });
}

}  // namespace

void RegisterOptimizerHostKernels(OpRegistry& r) {
  r.Check(r.RegisterKernel(op_names::kSgdUpdate, KernelNeeds::HostMemory(), {HostSgd, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kSgdMomUpdate, KernelNeeds::HostMemory(),
                           {HostSgdMom, kWriteReqs}));
  r.Check(
      r.RegisterKernel(op_names::kAdamUpdate, KernelNeeds::HostMemory(), {HostAdam, kWriteReqs}));
}

}  // namespace rill::ops
