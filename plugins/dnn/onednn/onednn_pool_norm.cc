// OneDnn's pooling and batch normalization.

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/plugins/dnn/onednn/onednn_common.h"
#include "rill/plugins/dnn/onednn/onednn_dnn.h"

namespace rill {

using dnnl::memory;
using onednn::CachedPrimitive;

namespace {

constexpr int64_t kOpPool = 5, kOpPoolBackward = 6, kOpBatchNormInference = 9,
                  kOpBatchNormTraining = 10, kOpBatchNormBackward = 11;

int64_t Bits(double value) {
  int64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

template <typename Pd>
void Fill(CachedPrimitive& c, const Pd& pd, dnnl::primitive primitive,
          std::vector<memory::desc> mds) {
  c.primitive = std::move(primitive);
  c.scratchpad_md = pd.scratchpad_desc();
  c.scratchpad_bytes = c.scratchpad_md.get_size();
  c.implementation = pd.impl_info_str();
  c.mds = std::move(mds);
}

// --- Pooling.

dnnl::algorithm ToDnnl(PoolingMode mode) {
  switch (mode) {
    case PoolingMode::kMax:
      return dnnl::algorithm::pooling_max;
    case PoolingMode::kAverageIncludePadding:
      return dnnl::algorithm::pooling_avg_include_padding;
    case PoolingMode::kAverageExcludePadding:
      return dnnl::algorithm::pooling_avg_exclude_padding;
  }
  return dnnl::algorithm::pooling_max;
}

std::vector<int64_t> PoolKey(int64_t op, const PoolingDescriptor& p, const TensorDescriptor& x,
                             const TensorDescriptor& y) {
  std::vector<int64_t> key = {
      op,        static_cast<int64_t>(p.mode), p.window_h, p.window_w, p.pad_h, p.pad_w, p.stride_h,
      p.stride_w};
  onednn::AppendKey(key, x);
  onednn::AppendKey(key, y);
  return key;
}

dnnl::pooling_forward::desc PoolDesc(dnnl::prop_kind prop, const PoolingDescriptor& p,
                                     const memory::desc& x, const memory::desc& y) {
  return dnnl::pooling_forward::desc(prop, ToDnnl(p.mode), x, y, {p.stride_h, p.stride_w},
                                     {p.window_h, p.window_w}, {p.pad_h, p.pad_w},
                                     {p.pad_h, p.pad_w});
}

// --- Batch normalization.

const dnnl::normalization_flags kScaleShift =
    dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;

std::vector<int64_t> NormKey(int64_t op, const TensorDescriptor& t, double epsilon) {
  std::vector<int64_t> key = {op, Bits(epsilon)};
  onednn::AppendKey(key, t);
  return key;
}

dnnl::batch_normalization_forward::primitive_desc NormForwardPd(dnnl::prop_kind prop,
                                                                const memory::desc& md,
                                                                double epsilon,
                                                                dnnl::normalization_flags flags) {
  dnnl::batch_normalization_forward::desc d(prop, md, static_cast<float>(epsilon), flags);
  return dnnl::batch_normalization_forward::primitive_desc(d, onednn::UserScratchpad(),
                                                           **onednn::Engine());
}

float* F(const DeviceMemoryBase& m) { return static_cast<float*>(HostPointer(m)); }

}  // namespace

absl::Status OneDnn::PoolForward(Stream* stream, const PoolArgs& a) {
  RILL_RETURN_IF_ERROR(onednn::RequireFloat("pooling", a.x_desc.type));
  RILL_ASSIGN_OR_RETURN(
      auto p,
      cache_->GetOrCreate(PoolKey(kOpPool, a.pool, a.x_desc, a.y_desc), "onednn pooling", [&] {
        CachedPrimitive c;
        const memory::desc x = onednn::TensorMd(a.x_desc), y = onednn::TensorMd(a.y_desc);
        dnnl::pooling_forward::primitive_desc pd(
            PoolDesc(dnnl::prop_kind::forward_inference, a.pool, x, y), onednn::UserScratchpad(),
            **onednn::Engine());
        Fill(c, pd, dnnl::pooling_forward(pd), {x, y});
        return c;
      }));
  return onednn::EnqueueDnn(
      executor_, stream, "onednn pooling", [p, x = HostPointer(a.x), y = HostPointer(a.y)] {
        onednn::Execute(p->primitive,
                        {{DNNL_ARG_SRC, onednn::Wrap(p->mds[0], x)},
                         {DNNL_ARG_DST, onednn::Wrap(p->mds[1], y)}},
                        p->scratchpad_md, onednn::ThreadScratch(0, p->scratchpad_bytes));
      });
}

// oneDNN's max-pooling backward reads the argmax workspace of a training
// forward, which the cuDNN-style interface does not carry: the forward is
// re-run into per-thread scratch first (average pooling needs none).
absl::Status OneDnn::PoolBackward(Stream* stream, const PoolBackwardArgs& a) {
  RILL_RETURN_IF_ERROR(onednn::RequireFloat("pooling backward", a.x_desc.type));
  RILL_ASSIGN_OR_RETURN(
      auto p,
      cache_->GetOrCreate(
          PoolKey(kOpPoolBackward, a.pool, a.x_desc, a.y_desc), "onednn pooling backward", [&] {
            CachedPrimitive c;
            const memory::desc x = onednn::TensorMd(a.x_desc), y = onednn::TensorMd(a.y_desc);
            dnnl::pooling_forward::primitive_desc fwd(
                PoolDesc(dnnl::prop_kind::forward_training, a.pool, x, y), onednn::UserScratchpad(),
                **onednn::Engine());
            const PoolingDescriptor& q = a.pool;
            dnnl::pooling_backward::desc d(ToDnnl(q.mode), x, y, {q.stride_h, q.stride_w},
                                           {q.window_h, q.window_w}, {q.pad_h, q.pad_w},
                                           {q.pad_h, q.pad_w});
            dnnl::pooling_backward::primitive_desc pd(d, onednn::UserScratchpad(),
                                                      **onednn::Engine(), fwd);
            Fill(c, pd, dnnl::pooling_backward(pd), {x, y});
            c.workspace_md = fwd.workspace_desc();
            if (c.workspace_md.get_size() > 0) {
              c.forward = dnnl::pooling_forward(fwd);
              c.forward_scratchpad_md = fwd.scratchpad_desc();
            }
            return c;
          }));
  return onednn::EnqueueDnn(
      executor_, stream, "onednn pooling backward",
      [p, x = HostPointer(a.x), dy = HostPointer(a.dy), dx = HostPointer(a.dx),
       y_bytes = a.y_desc.Bytes()] {
        std::unordered_map<int, memory> args = {{DNNL_ARG_DIFF_DST, onednn::Wrap(p->mds[1], dy)},
                                                {DNNL_ARG_DIFF_SRC, onednn::Wrap(p->mds[0], dx)}};
        if (p->workspace_md.get_size() > 0) {
          memory workspace =
              onednn::Wrap(p->workspace_md, onednn::ThreadScratch(2, p->workspace_md.get_size()));
          onednn::Execute(
              p->forward,
              {{DNNL_ARG_SRC, onednn::Wrap(p->mds[0], x)},
               {DNNL_ARG_DST, onednn::Wrap(p->mds[1], onednn::ThreadScratch(1, y_bytes))},
               {DNNL_ARG_WORKSPACE, workspace}},
              p->forward_scratchpad_md,
              onednn::ThreadScratch(0, p->forward_scratchpad_md.get_size()));
          args.emplace(DNNL_ARG_WORKSPACE, workspace);
        }
        onednn::Execute(p->primitive, std::move(args), p->scratchpad_md,
                        onednn::ThreadScratch(0, p->scratchpad_bytes));
      });
}

absl::Status OneDnn::BatchNormInference(Stream* stream, const BatchNormInferenceArgs& a) {
  RILL_RETURN_IF_ERROR(onednn::RequireFloat("batch norm", a.desc.type));
  RILL_ASSIGN_OR_RETURN(
      auto p,
      cache_->GetOrCreate(
          NormKey(kOpBatchNormInference, a.desc, a.epsilon), "onednn batch norm inference", [&] {
            CachedPrimitive c;
            const memory::desc md = onednn::TensorMd(a.desc);
            auto pd = NormForwardPd(dnnl::prop_kind::forward_inference, md, a.epsilon,
                                    kScaleShift | dnnl::normalization_flags::use_global_stats);
            Fill(c, pd, dnnl::batch_normalization_forward(pd), {md, onednn::VectorMd(a.desc.c)});
            return c;
          }));
  return onednn::EnqueueDnn(executor_, stream, "onednn batch norm inference", [p, a] {
    const memory::desc& v = p->mds[1];
    onednn::Execute(p->primitive,
                    {{DNNL_ARG_SRC, onednn::Wrap(p->mds[0], a.x)},
                     {DNNL_ARG_MEAN, onednn::Wrap(v, a.estimated_mean)},
                     {DNNL_ARG_VARIANCE, onednn::Wrap(v, a.estimated_variance)},
                     {DNNL_ARG_SCALE, onednn::Wrap(v, a.scale)},
                     {DNNL_ARG_SHIFT, onednn::Wrap(v, a.offset)},
                     {DNNL_ARG_DST, onednn::Wrap(p->mds[0], a.y)}},
                    p->scratchpad_md, onednn::ThreadScratch(0, p->scratchpad_bytes));
  });
}

absl::Status OneDnn::BatchNormTraining(Stream* stream, const BatchNormTrainingArgs& a) {
  RILL_RETURN_IF_ERROR(onednn::RequireFloat("batch norm", a.desc.type));
  RILL_ASSIGN_OR_RETURN(
      auto p,
      cache_->GetOrCreate(
          NormKey(kOpBatchNormTraining, a.desc, a.epsilon), "onednn batch norm training", [&] {
            CachedPrimitive c;
            const memory::desc md = onednn::TensorMd(a.desc);
            auto pd = NormForwardPd(dnnl::prop_kind::forward_training, md, a.epsilon, kScaleShift);
            Fill(c, pd, dnnl::batch_normalization_forward(pd), {md, onednn::VectorMd(a.desc.c)});
            return c;
          }));
  return onednn::EnqueueDnn(executor_, stream, "onednn batch norm training", [p, a] {
    const int64_t c = a.desc.c;
    float* variance = static_cast<float*>(onednn::ThreadScratch(1, c * sizeof(float)));
    const memory::desc& v = p->mds[1];
    onednn::Execute(p->primitive,
                    {{DNNL_ARG_SRC, onednn::Wrap(p->mds[0], a.x)},
                     {DNNL_ARG_SCALE, onednn::Wrap(v, a.scale)},
                     {DNNL_ARG_SHIFT, onednn::Wrap(v, a.offset)},
                     {DNNL_ARG_MEAN, onednn::Wrap(v, a.saved_mean)},
                     {DNNL_ARG_VARIANCE, onednn::Wrap(v, variance)},
                     {DNNL_ARG_DST, onednn::Wrap(p->mds[0], a.y)}},
                    p->scratchpad_md, onednn::ThreadScratch(0, p->scratchpad_bytes));
    // cuDNN's saved statistics and running averages (see BatchNormTrainingArgs).
    const double m = static_cast<double>(a.desc.n) * a.desc.h * a.desc.w;
    const double unbias = m > 1 ? m / (m - 1) : 1, f = a.exponential_average_factor;
    const float* mean = F(a.saved_mean);
    float* inv_std = F(a.saved_inv_std);
    const bool running = !a.running_mean.is_null();
    float* running_mean = running ? F(a.running_mean) : nullptr;
    float* running_variance = running ? F(a.running_variance) : nullptr;
    for (int64_t i = 0; i < c; ++i) {
      inv_std[i] = static_cast<float>(1 / std::sqrt(static_cast<double>(variance[i]) + a.epsilon));
      if (!running) continue;
      running_mean[i] = static_cast<float>((1 - f) * running_mean[i] + f * mean[i]);
      running_variance[i] =
          static_cast<float>((1 - f) * running_variance[i] + f * variance[i] * unbias);
    }
  });
}

absl::Status OneDnn::BatchNormBackward(Stream* stream, const BatchNormBackwardArgs& a) {
  RILL_RETURN_IF_ERROR(onednn::RequireFloat("batch norm backward", a.desc.type));
  RILL_ASSIGN_OR_RETURN(
      auto p,
      cache_->GetOrCreate(
          NormKey(kOpBatchNormBackward, a.desc, a.epsilon), "onednn batch norm backward", [&] {
            CachedPrimitive c;
            const memory::desc md = onednn::TensorMd(a.desc);
            auto hint =
                NormForwardPd(dnnl::prop_kind::forward_training, md, a.epsilon, kScaleShift);
            dnnl::batch_normalization_backward::desc d(dnnl::prop_kind::backward, md, md,
                                                       static_cast<float>(a.epsilon), kScaleShift);
            dnnl::batch_normalization_backward::primitive_desc pd(d, onednn::UserScratchpad(),
                                                                  **onednn::Engine(), hint);
            Fill(c, pd, dnnl::batch_normalization_backward(pd), {md, onednn::VectorMd(a.desc.c)});
            return c;
          }));
  return onednn::EnqueueDnn(executor_, stream, "onednn batch norm backward", [p, a] {
    // oneDNN reads the variance; the interface carries 1 / sqrt(variance + epsilon).
    const int64_t c = a.desc.c;
    float* variance = static_cast<float*>(onednn::ThreadScratch(1, c * sizeof(float)));
    const float* inv_std = F(a.saved_inv_std);
    for (int64_t i = 0; i < c; ++i) {
      const double s = inv_std[i];
      variance[i] = static_cast<float>(1 / (s * s) - a.epsilon);
    }
    const memory::desc& v = p->mds[1];
    onednn::Execute(p->primitive,
                    {{DNNL_ARG_SRC, onednn::Wrap(p->mds[0], a.x)},
                     {DNNL_ARG_MEAN, onednn::Wrap(v, a.saved_mean)},
                     {DNNL_ARG_VARIANCE, onednn::Wrap(v, variance)},
                     {DNNL_ARG_DIFF_DST, onednn::Wrap(p->mds[0], a.dy)},
                     {DNNL_ARG_SCALE, onednn::Wrap(v, a.scale)},
                     // oneDNN 2.6 lists SHIFT as an input of the backward
                     // pass with use_shift but does not need its values
                     // for the gradients; cuDNN's backward takes no offset.
                     {DNNL_ARG_SHIFT, onednn::Wrap(v, a.scale)},
                     {DNNL_ARG_DIFF_SRC, onednn::Wrap(p->mds[0], a.dx)},
                     {DNNL_ARG_DIFF_SCALE, onednn::Wrap(v, a.dscale)},
                     {DNNL_ARG_DIFF_SHIFT, onednn::Wrap(v, a.doffset)}},
                    p->scratchpad_md, onednn::ThreadScratch(0, p->scratchpad_bytes));
  });
}

}  // namespace rill
