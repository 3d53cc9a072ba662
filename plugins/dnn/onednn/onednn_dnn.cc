// OneDnn: creation, registration, and the element-wise family (bias add,
// activations, softmax, LRN). Convolutions are in onednn_conv.cc, pooling
// and batch normalization in onednn_pool_norm.cc.

#include "rill/plugins/dnn/onednn/onednn_dnn.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/plugins/dnn/onednn/onednn_common.h"
#include "rill/plugins/host_library.h"

namespace rill {

using dnnl::memory;
using onednn::CachedPrimitive;

namespace {

constexpr int64_t kOpBiasAdd = 2, kOpActivation = 3, kOpActivationBackward = 4, kOpSoftmax = 7,
                  kOpSoftmaxBackward = 8, kOpLrn = 12;

int64_t Bits(double value) {
  int64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

std::vector<int64_t> Key(int64_t op, const TensorDescriptor& t,
                         std::initializer_list<int64_t> extra = {}) {
  std::vector<int64_t> key = {op};
  onednn::AppendKey(key, t);
  key.insert(key.end(), extra);
  return key;
}

template <typename Pd>
CachedPrimitive Cached(const Pd& pd, dnnl::primitive primitive, std::vector<memory::desc> mds) {
  CachedPrimitive c;
  c.primitive = std::move(primitive);
  c.scratchpad_md = pd.scratchpad_desc();
  c.scratchpad_bytes = c.scratchpad_md.get_size();
  c.implementation = pd.impl_info_str();
  c.mds = std::move(mds);
  return c;
}

dnnl::eltwise_forward::primitive_desc EltwiseForwardPd(const onednn::Eltwise& e,
                                                       const memory::desc& md) {
  dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_training, e.algorithm, md, e.alpha,
                                e.beta);
  return dnnl::eltwise_forward::primitive_desc(d, onednn::UserScratchpad(), **onednn::Engine());
}

// Softmax and log-softmax share everything but the primitive types.
template <typename Fwd, typename Bwd>
CachedPrimitive MakeSoftmax(const memory::desc& md, bool backward) {
  typename Fwd::desc fd(dnnl::prop_kind::forward_training, md, 1);
  typename Fwd::primitive_desc fwd(fd, onednn::UserScratchpad(), **onednn::Engine());
  if (!backward) return Cached(fwd, Fwd(fwd), {md});
  typename Bwd::desc bd(md, md, 1);
  typename Bwd::primitive_desc bwd(bd, onednn::UserScratchpad(), **onednn::Engine(), fwd);
  return Cached(bwd, Bwd(bwd), {md});
}

absl::StatusOr<std::unique_ptr<PluginInterface>> CreateOneDnn(StreamExecutor* executor) {
  absl::StatusOr<std::unique_ptr<OneDnn>> dnn = OneDnn::Create(executor);
  if (!dnn.ok()) return dnn.status();
  return std::unique_ptr<PluginInterface>(std::move(*dnn));
}

}  // namespace

OneDnn::OneDnn(StreamExecutor* executor)
    : executor_(executor), cache_(std::make_unique<onednn::PrimitiveCache>()) {}

OneDnn::~OneDnn() = default;

absl::StatusOr<std::unique_ptr<OneDnn>> OneDnn::Create(StreamExecutor* executor) {
  RILL_RETURN_IF_ERROR(CheckHostLibraryPlatform(executor, kName));
  RILL_RETURN_IF_ERROR(onednn::Engine().status());
  return std::unique_ptr<OneDnn>(new OneDnn(executor));
}

std::string OneDnn::LibraryVersion() {
  const dnnl_version_t* v = dnnl::version();
  const char* runtime = v->cpu_runtime == DNNL_RUNTIME_OMP   ? "OpenMP"
                        : v->cpu_runtime == DNNL_RUNTIME_TBB ? "TBB"
                        : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential"
                                                             : "other";
  return absl::StrCat("oneDNN ", v->major, ".", v->minor, ".", v->patch, " (cpu runtime ", runtime,
                      ")");
}

absl::Status OneDnn::Supports(const DnnOperation& op) const {
  if (op.type() != DataType::kFloat) {
    return absl::UnimplementedError(absl::StrCat("onednn: ", DataTypeName(op.type()),
                                                 " tensors (this plugin runs float only)"));
  }
  if (op.op == DnnOp::kLrn && op.lrn.size % 2 == 0) {
    return absl::UnimplementedError(absl::StrCat("onednn: lrn of even size ", op.lrn.size));
  }
  if (op.op == DnnOp::kConvolveForward) {
    // A bias, a side input (sum post-op) and every activation mode
    // (eltwise post-op) fuse into the convolution primitive.
    DnnOperation plain = op;
    plain.fused_bias = plain.fused_side_input = false;
    plain.fused_activation.reset();
    return DnnSupport::Supports(plain);
  }
  return DnnSupport::Supports(op);
}

size_t OneDnn::CachedPrimitives() const { return cache_->size(); }

absl::Status OneDnn::BiasAdd(Stream* stream, const BiasAddArgs& a) {
  RILL_RETURN_IF_ERROR(onednn::RequireFloat("bias add", a.desc.type));
  const TensorDescriptor t = a.desc;
  RILL_ASSIGN_OR_RETURN(auto p, cache_->GetOrCreate(Key(kOpBiasAdd, t), "onednn bias add", [&] {
    const memory::desc md = onednn::TensorMd(t),
                       bias({1, t.c, 1, 1}, memory::data_type::f32, memory::dims{t.c, 1, 1, 1});
    dnnl::binary::desc d(dnnl::algorithm::binary_add, md, bias, md);
    dnnl::binary::primitive_desc pd(d, onednn::UserScratchpad(), **onednn::Engine());
    return Cached(pd, dnnl::binary(pd), {md, bias});
  }));
  return onednn::EnqueueDnn(
      executor_, stream, "onednn bias add",
      [p, x = HostPointer(a.input), b = HostPointer(a.bias), y = HostPointer(a.output)] {
        onednn::Execute(p->primitive,
                        {{DNNL_ARG_SRC_0, onednn::Wrap(p->mds[0], x)},
                         {DNNL_ARG_SRC_1, onednn::Wrap(p->mds[1], b)},
                         {DNNL_ARG_DST, onednn::Wrap(p->mds[0], y)}},
                        p->scratchpad_md, onednn::ThreadScratch(0, p->scratchpad_bytes));
      });
}

absl::Status OneDnn::Activate(Stream* stream, const ActivationArgs& a) {
  RILL_RETURN_IF_ERROR(onednn::RequireFloat("activation", a.desc.type));
  const onednn::Eltwise e = onednn::ToEltwise(a.activation);
  const std::vector<int64_t> key =
      Key(kOpActivation, a.desc,
          {static_cast<int64_t>(a.activation.mode), Bits(a.activation.coefficient)});
  RILL_ASSIGN_OR_RETURN(auto p, cache_->GetOrCreate(key, "onednn activation", [&] {
    const memory::desc md = onednn::TensorMd(a.desc);
    auto pd = EltwiseForwardPd(e, md);
    return Cached(pd, dnnl::eltwise_forward(pd), {md});
  }));
  return onednn::EnqueueDnn(
      executor_, stream, "onednn activation", [p, x = HostPointer(a.x), y = HostPointer(a.y)] {
        onednn::Execute(p->primitive,
                        {{DNNL_ARG_SRC, onednn::Wrap(p->mds[0], x)},
                         {DNNL_ARG_DST, onednn::Wrap(p->mds[0], y)}},
                        p->scratchpad_md, onednn::ThreadScratch(0, p->scratchpad_bytes));
      });
}

absl::Status OneDnn::ActivateBackward(Stream* stream, const ActivationBackwardArgs& a) {
  RILL_RETURN_IF_ERROR(onednn::RequireFloat("activation backward", a.desc.type));
  const onednn::Eltwise e = onednn::ToEltwise(a.activation);
  const std::vector<int64_t> key =
      Key(kOpActivationBackward, a.desc,
          {static_cast<int64_t>(a.activation.mode), Bits(a.activation.coefficient)});
  RILL_ASSIGN_OR_RETURN(auto p, cache_->GetOrCreate(key, "onednn activation backward", [&] {
    const memory::desc md = onednn::TensorMd(a.desc);
    auto hint = EltwiseForwardPd(e, md);
    dnnl::eltwise_backward::desc d(e.algorithm, md, md, e.alpha, e.beta);
    dnnl::eltwise_backward::primitive_desc pd(d, onednn::UserScratchpad(), **onednn::Engine(),
                                              hint);
    return Cached(pd, dnnl::eltwise_backward(pd), {md});
  }));
  return onednn::EnqueueDnn(
      executor_, stream, "onednn activation backward",
      [p, x = HostPointer(a.x), dy = HostPointer(a.dy), dx = HostPointer(a.dx)] {
        onednn::Execute(p->primitive,
                        {{DNNL_ARG_SRC, onednn::Wrap(p->mds[0], x)},
                         {DNNL_ARG_DIFF_DST, onednn::Wrap(p->mds[0], dy)},
                         {DNNL_ARG_DIFF_SRC, onednn::Wrap(p->mds[0], dx)}},
                        p->scratchpad_md, onednn::ThreadScratch(0, p->scratchpad_bytes));
      });
}

absl::Status OneDnn::Softmax(Stream* stream, const SoftmaxArgs& a) {
  RILL_RETURN_IF_ERROR(onednn::RequireFloat("softmax", a.desc.type));
  RILL_ASSIGN_OR_RETURN(
      auto p, cache_->GetOrCreate(Key(kOpSoftmax, a.desc, {a.log}), "onednn softmax", [&] {
        const memory::desc md = onednn::TensorMd(a.desc);
        return a.log ? MakeSoftmax<dnnl::logsoftmax_forward, dnnl::logsoftmax_backward>(md, false)
                     : MakeSoftmax<dnnl::softmax_forward, dnnl::softmax_backward>(md, false);
      }));
  return onednn::EnqueueDnn(
      executor_, stream, "onednn softmax", [p, x = HostPointer(a.x), y = HostPointer(a.y)] {
        onednn::Execute(p->primitive,
                        {{DNNL_ARG_SRC, onednn::Wrap(p->mds[0], x)},
                         {DNNL_ARG_DST, onednn::Wrap(p->mds[0], y)}},
                        p->scratchpad_md, onednn::ThreadScratch(0, p->scratchpad_bytes));
      });
}

absl::Status OneDnn::SoftmaxBackward(Stream* stream, const SoftmaxBackwardArgs& a) {
  RILL_RETURN_IF_ERROR(onednn::RequireFloat("softmax backward", a.desc.type));
  RILL_ASSIGN_OR_RETURN(
      auto p,
      cache_->GetOrCreate(Key(kOpSoftmaxBackward, a.desc, {a.log}), "onednn softmax backward", [&] {
        const memory::desc md = onednn::TensorMd(a.desc);
        return a.log ? MakeSoftmax<dnnl::logsoftmax_forward, dnnl::logsoftmax_backward>(md, true)
                     : MakeSoftmax<dnnl::softmax_forward, dnnl::softmax_backward>(md, true);
      }));
  return onednn::EnqueueDnn(
      executor_, stream, "onednn softmax backward",
      [p, y = HostPointer(a.y), dy = HostPointer(a.dy), dx = HostPointer(a.dx)] {
        onednn::Execute(p->primitive,
                        {{DNNL_ARG_DST, onednn::Wrap(p->mds[0], y)},
                         {DNNL_ARG_DIFF_DST, onednn::Wrap(p->mds[0], dy)},
                         {DNNL_ARG_DIFF_SRC, onednn::Wrap(p->mds[0], dx)}},
                        p->scratchpad_md, onednn::ThreadScratch(0, p->scratchpad_bytes));
      });
}

absl::Status OneDnn::Lrn(Stream* stream, const LrnArgs& a) {
  RILL_RETURN_IF_ERROR(onednn::RequireFloat("lrn", a.desc.type));
  const LrnDescriptor& l = a.lrn;
  if (l.size % 2 == 0) {
    return absl::UnimplementedError(
        absl::StrCat("onednn lrn: even size ", l.size,
                     " is not supported (oneDNN sums a symmetric window of size - 1 "
                     "channels but divides by size; use an odd size)"));
  }
  RILL_ASSIGN_OR_RETURN(
      auto p,
      cache_->GetOrCreate(
          Key(kOpLrn, a.desc, {l.size, Bits(l.alpha), Bits(l.beta), Bits(l.k)}), "onednn lrn", [&] {
            const memory::desc md = onednn::TensorMd(a.desc);
            dnnl::lrn_forward::desc d(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::lrn_across_channels, md, l.size,
                                      static_cast<float>(l.alpha), static_cast<float>(l.beta),
                                      static_cast<float>(l.k));
            dnnl::lrn_forward::primitive_desc pd(d, onednn::UserScratchpad(), **onednn::Engine());
            return Cached(pd, dnnl::lrn_forward(pd), {md});
          }));
  return onednn::EnqueueDnn(
      executor_, stream, "onednn lrn", [p, x = HostPointer(a.x), y = HostPointer(a.y)] {
        onednn::Execute(p->primitive,
                        {{DNNL_ARG_SRC, onednn::Wrap(p->mds[0], x)},
                         {DNNL_ARG_DST, onednn::Wrap(p->mds[0], y)}},
                        p->scratchpad_md, onednn::ThreadScratch(0, p->scratchpad_bytes));
      });
}

RILL_REGISTER_HOST_LIBRARY_PLUGIN(onednn, PluginKind::kDnn, OneDnn::kName, CreateOneDnn,
                                  /*make_default=*/true);

}  // namespace rill
