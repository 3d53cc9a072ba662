// nn kernels that call the platform's libraries through the stream: BLAS
// (matmul, fully_connected) on host, OpenCL and CUDA; DNN (conv2d, pooling,
// batch_norm, activation and their backward ops) on host (oneDNN) and CUDA
// (cuDNN). The same functions serve every platform: only the plugin behind
// the stream differs. Exception: host pooling runs plain loops (pool_host.cc).

#include <array>

#include "rill/base/status_macros.h"
#include "rill/ops/nn/nn.h"
#include "rill/ops/nn/pool_host.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"
#include "rill/plugins/blas/blas.h"
#include "rill/plugins/dnn/dnn.h"
#include "rill/stream/stream.h"

namespace rill::ops {
namespace {

// Whether the calls enqueued on `s` were accepted. (On the CPU context the
// framework waits for the stream before its kAddTo / in-place fix-ups.)
absl::Status Done(Stream* s) { return s->ok() ? absl::OkStatus() : s->status(); }

DataType BlasType(DType t) { return t == DType::kF64 ? DataType::kDouble : DataType::kFloat; }

absl::Status Zero(Stream* s, const TensorArg& t) {
  DeviceMemoryBase d = t.view();
  s->ThenMemZero(&d, t.bytes());
  return Done(s);
}

absl::Status MatmulKernel(OpContext& ctx) {
  const auto& p = ctx.params<MatmulParams>();
  const TensorArg &a = ctx.in(0), &b = ctx.in(1), &out = ctx.out(0);
  RILL_ASSIGN_OR_RETURN(MatmulGeometry g, MatmulGeom(p, a.shape, b.shape));
  if (out.size() == 0) return absl::OkStatus();
  const bool add = ctx.req(0) == OpReqType::kAddTo;
  RILL_ASSIGN_OR_RETURN(Stream * s, ctx.stream());
  if (g.k == 0) {
    if (!add) RILL_RETURN_IF_ERROR(Zero(s, out));
    return Done(s);
  }
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  GemmArgs args;
  args.type = BlasType(a.dtype);
  args.trans_a = p.transpose_b ? Transpose::kTranspose : Transpose::kNoTranspose;
  args.trans_b = p.transpose_a ? Transpose::kTranspose : Transpose::kNoTranspose;
  args.m = g.n;
  args.n = g.m;
  args.k = g.k;
  args.a = b.view();
  args.lda = p.transpose_b ? g.k : g.n;
  args.b = a.view();
  args.ldb = p.transpose_a ? g.m : g.k;
  args.beta = add ? 1 : 0;
  args.c = out.view();
  args.ldc = g.n;
  args.batch_count = g.batch;
  args.stride_a = g.k * g.n;
  args.stride_b = g.m * g.k;
  args.stride_c = g.m * g.n;
  s->ThenBlasGemm(args);
  return Done(s);
}

// A device vector of n ones of `dtype` in temp space: copied from static
// host memory (valid whenever the copy runs), then doubled on the device.
absl::StatusOr<TensorArg> Ones(OpContext& ctx, Stream* s, int64_t n, DType dtype) {
  constexpr int64_t kChunk = 1024;
  static const auto* f32 = [] {
    auto* v = new std::array<float, kChunk>;
    v->fill(1.0f);
    return v;
  }();
  static const auto* f64 = [] {
    auto* v = new std::array<double, kChunk>;
    v->fill(1.0);
    return v;
  }();
  RILL_ASSIGN_OR_RETURN(TensorArg ones, ctx.Temp(Shape{n}, dtype));
  const uint64_t es = DTypeSize(dtype);
  const int64_t first = n < kChunk ? n : kChunk;
  DeviceMemoryBase all = ones.view();
  s->ThenMemcpy(&all, dtype == DType::kF64 ? static_cast<const void*>(f64->data()) : f32->data(),
                first * es);
  for (int64_t have = first; have < n;) {
    const int64_t len = have < n - have ? have : n - have;
    DeviceMemoryBase dst(all.opaque(), len * es, all.offset() + have * es);
    DeviceMemoryBase src(all.opaque(), len * es, all.offset());
    s->ThenMemcpy(&dst, src, len * es);
    have += len;
  }
  RILL_RETURN_IF_ERROR(Done(s));
  return ones;
}

absl::Status FullyConnectedKernel(OpContext& ctx) {
  const auto& p = ctx.params<FullyConnectedParams>();
  const TensorArg &x = ctx.in(0), &w = ctx.in(1), &out = ctx.out(0);
  const int64_t n = x.shape[0], k = x.shape[1], h = w.shape[0];
  if (out.size() == 0) return absl::OkStatus();
  const bool add = ctx.req(0) == OpReqType::kAddTo;
  RILL_ASSIGN_OR_RETURN(Stream * s, ctx.stream());
  bool written = add;
  if (k > 0) {
    // out^T [H, N] (column-major) = W^T^T x^T: W viewed column-major is K x H.
    GemmArgs args;
    args.type = BlasType(x.dtype);
    args.trans_a = Transpose::kTranspose;
    args.trans_b = Transpose::kNoTranspose;
    args.m = h;
    args.n = n;
    args.k = k;
    args.a = w.view();
    args.lda = k;
    args.b = x.view();
    args.ldb = k;
    args.beta = add ? 1 : 0;
    args.c = out.view();
    args.ldc = h;
    s->ThenBlasGemm(args);
    written = true;
  }
  if (!p.no_bias) {
    // out^T += bias [H, 1] x ones [1, N].
    RILL_ASSIGN_OR_RETURN(TensorArg ones, Ones(ctx, s, n, x.dtype));
    GemmArgs args;
    args.type = BlasType(x.dtype);
    args.m = h;
    args.n = n;
    args.k = 1;
    args.a = ctx.in(2).view();
    args.lda = h;
    args.b = ones.view();
    args.ldb = 1;
    args.beta = written ? 1 : 0;
    args.c = out.view();
    args.ldc = h;
    s->ThenBlasGemm(args);
  } else if (!written) {
    RILL_RETURN_IF_ERROR(Zero(s, out));
  }
  return Done(s);
}

// --- DNN.

absl::Status ConvForwardKernel(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(ConvGeometry g,
                        ConvGeom(ctx.params<ConvParams>(), ctx.in(0).shape, ctx.in(1).shape));
  RILL_ASSIGN_OR_RETURN(Stream * s, ctx.stream());
  s->ThenConvolve(ConvolutionArgs{
      {g.x, g.w, g.conv, g.y}, ctx.in(0).view(), ctx.in(1).view(), ctx.out(0).view()});
  return Done(s);
}

// Inputs (dy, x, w).
absl::Status ConvBackwardDataKernel(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(ConvGeometry g,
                        ConvGeom(ctx.params<ConvParams>(), ctx.in(1).shape, ctx.in(2).shape));
  RILL_ASSIGN_OR_RETURN(Stream * s, ctx.stream());
  s->ThenConvolveBackwardData(ConvolutionArgs{
      {g.x, g.w, g.conv, g.y}, ctx.out(0).view(), ctx.in(2).view(), ctx.in(0).view()});
  return Done(s);
}

absl::Status ConvBackwardFilterKernel(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(ConvGeometry g,
                        ConvGeom(ctx.params<ConvParams>(), ctx.in(1).shape, ctx.in(2).shape));
  RILL_ASSIGN_OR_RETURN(Stream * s, ctx.stream());
  s->ThenConvolveBackwardFilter(ConvolutionArgs{
      {g.x, g.w, g.conv, g.y}, ctx.in(1).view(), ctx.out(0).view(), ctx.in(0).view()});
  return Done(s);
}

absl::Status PoolForwardKernel(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(PoolGeometry g, PoolGeom(ctx.params<PoolParams>(), ctx.in(0).shape));
  RILL_ASSIGN_OR_RETURN(Stream * s, ctx.stream());
  s->ThenPoolForward(PoolArgs{g.pool, g.x, g.y, ctx.in(0).view(), ctx.out(0).view()});
  return Done(s);
}

// Inputs (dy, x, y).
absl::Status PoolBackwardKernel(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(PoolGeometry g, PoolGeom(ctx.params<PoolParams>(), ctx.in(1).shape));
  RILL_ASSIGN_OR_RETURN(Stream * s, ctx.stream());
  s->ThenPoolBackward(PoolBackwardArgs{g.pool, g.x, g.y, ctx.in(1).view(), ctx.in(2).view(),
                                       ctx.in(0).view(), ctx.out(0).view()});
  return Done(s);
}

absl::Status BatchNormKernel(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(TensorDescriptor d, BatchNormDesc(ctx.in(0).shape));
  RILL_ASSIGN_OR_RETURN(Stream * s, ctx.stream());
  BatchNormTrainingArgs args;
  args.desc = d;
  args.x = ctx.in(0).view();
  args.scale = ctx.in(1).view();
  args.offset = ctx.in(2).view();
  args.y = ctx.out(0).view();
  args.saved_mean = ctx.out(1).view();
  args.saved_inv_std = ctx.out(2).view();
  args.epsilon = ctx.params<BatchNormParams>().eps;
  s->ThenBatchNormForwardTraining(args);
  return Done(s);
}

// Inputs (dy, x, gamma, saved_mean, saved_inv_std); outputs (dx, dgamma, dbeta).
absl::Status BatchNormBackwardKernel(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(TensorDescriptor d, BatchNormDesc(ctx.in(1).shape));
  RILL_ASSIGN_OR_RETURN(Stream * s, ctx.stream());
  BatchNormBackwardArgs args;
  args.desc = d;
  args.dy = ctx.in(0).view();
  args.x = ctx.in(1).view();
  args.scale = ctx.in(2).view();
  args.saved_mean = ctx.in(3).view();
  args.saved_inv_std = ctx.in(4).view();
  args.dx = ctx.out(0).view();
  args.dscale = ctx.out(1).view();
  args.doffset = ctx.out(2).view();
  args.epsilon = ctx.params<BatchNormParams>().eps;
  s->ThenBatchNormBackward(args);
  return Done(s);
}

TensorDescriptor FlatDesc(int64_t n) { return TensorDescriptor{.n = n, .c = 1, .h = 1, .w = 1}; }

absl::Status ActivationKernel(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(ActivationMode mode, ParseActType(ctx.params<ActivationParams>().act_type));
  const TensorArg &x = ctx.in(0), &y = ctx.out(0);
  if (x.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(Stream * s, ctx.stream());
  s->ThenActivate(
      ActivationArgs{ActivationDescriptor{mode}, FlatDesc(x.size()), x.view(), y.view()});
  return Done(s);
}

// Inputs (dy, x, y).
absl::Status ActivationBackwardKernel(OpContext& ctx) {
  RILL_ASSIGN_OR_RETURN(ActivationMode mode, ParseActType(ctx.params<ActivationParams>().act_type));
  const TensorArg& dx = ctx.out(0);
  if (dx.size() == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(Stream * s, ctx.stream());
  s->ThenActivateBackward(ActivationBackwardArgs{ActivationDescriptor{mode}, FlatDesc(dx.size()),
                                                 ctx.in(1).view(), ctx.in(2).view(),
                                                 ctx.in(0).view(), dx.view()});
  return Done(s);
}

}  // namespace

// BLAS and DNN calls only: every device with those plugins (host and
// host-memory devices through OpenBLAS/oneDNN, CUDA through cuBLAS/cuDNN,
// OpenCL's matmul through CLBlast).
void RegisterNnLibraryKernels(OpRegistry& r) {
  const KernelNeeds blas = KernelNeeds::Libraries({PluginKind::kBlas});
  constexpr uint32_t kBlasReqs = kWriteReqs | ReqBit(OpReqType::kAddTo);
  r.Check(r.RegisterKernel(op_names::kMatmul, blas, {MatmulKernel, kBlasReqs}));
  r.Check(r.RegisterKernel(op_names::kFullyConnected, blas, {FullyConnectedKernel, kBlasReqs}));

  // DNN calls overwrite their outputs: the framework adds for kAddTo.
  const KernelNeeds dnn = KernelNeeds::Libraries({PluginKind::kDnn});
  r.Check(r.RegisterKernel(op_names::kConv2d, dnn, {ConvForwardKernel, kWriteReqs}));
  r.Check(
      r.RegisterKernel(op_names::kBackwardConv2dData, dnn, {ConvBackwardDataKernel, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardConv2dFilter, dnn,
                           {ConvBackwardFilterKernel, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kPooling, dnn, {PoolForwardKernel, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardPooling, dnn, {PoolBackwardKernel, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kBatchNorm, dnn, {BatchNormKernel, kWriteReqs}));
  r.Check(
      r.RegisterKernel(op_names::kBackwardBatchNorm, dnn, {BatchNormBackwardKernel, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kActivation, dnn, {ActivationKernel, kWriteReqs}));
  r.Check(
      r.RegisterKernel(op_names::kBackwardActivation, dnn, {ActivationBackwardKernel, kWriteReqs}));

  // Pooling in host memory is a plain loop (pool_host.h): several times
  // faster than oneDNN's reference pooling for NCHW, and no second forward
  // pass for the max-pooling gradient. Host-memory kernels come before
  // library ones, so it is the host's choice.
  r.Check(r.RegisterKernel(op_names::kPooling, KernelNeeds::HostMemory(),
                           {HostPoolForwardKernel, kWriteReqs}));
  r.Check(r.RegisterKernel(op_names::kBackwardPooling, KernelNeeds::HostMemory(),
                           {HostPoolBackwardKernel, kWriteReqs}));
}

}  // namespace rill::ops
