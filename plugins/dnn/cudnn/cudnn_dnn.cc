// CuDnn: creation, registration, the handle plumbing, and the element-wise
// family (bias add, activations, softmax, LRN). Convolutions are in
// cudnn_conv.cc, pooling and batch normalization in cudnn_pool_norm.cc.

#include "rill/plugins/dnn/cudnn/cudnn_dnn.h"

#include <cudnn.h>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/cuda/cuda_platform.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/platform/cuda/cuda_status.h"
#include "rill/platform/platform.h"
#include "rill/plugins/dnn/cudnn/cudnn_context.h"
#include "rill/plugins/dnn/cudnn/cudnn_descriptors.h"
#include "rill/plugins/dnn/cudnn/cudnn_status.h"
#include "rill/plugins/plugin_registry.h"

namespace rill {

namespace {

absl::StatusOr<std::unique_ptr<PluginInterface>> CreateCuDnn(StreamExecutor* executor) {
  absl::StatusOr<std::unique_ptr<CuDnn>> dnn = CuDnn::Create(executor);
  if (!dnn.ok()) return dnn.status();
  return std::unique_ptr<PluginInterface>(std::move(*dnn));
}

// "cudnn softmax float NCHW [2, 7, 3, 4]": the prefix of an error.
std::string Describe(const std::string& op, const TensorDescriptor& t) {
  return absl::StrCat("cudnn ", op, " ", t.ToString());
}

}  // namespace

CuDnn::CuDnn(StreamExecutor* executor, int ordinal)
    : executor_(executor), context_(std::make_unique<cudnn::Context>(executor, ordinal)) {}

CuDnn::~CuDnn() = default;

absl::StatusOr<std::unique_ptr<CuDnn>> CuDnn::Create(StreamExecutor* executor) {
  if (executor == nullptr) return absl::InvalidArgumentError("cudnn: executor is null");
  if (executor->platform()->id() != kCudaPlatformId) {
    return absl::InvalidArgumentError(
        absl::StrCat("cudnn runs on the cuda platform, not on ", executor->DebugName()));
  }
  RILL_ASSIGN_OR_RETURN(int ordinal, CudaDeviceOrdinal(executor));
  return std::unique_ptr<CuDnn>(new CuDnn(executor, ordinal));
}

int64_t CuDnn::LibraryVersion() { return static_cast<int64_t>(cudnnGetVersion()); }

std::string CuDnn::Version() const {
  const int64_t v =
      LibraryVersion();  // 9.x: major * 10000 + minor * 100 + patch; 8.x: major * 1000 + ...
  const int64_t major = v >= 90000 ? v / 10000 : v / 1000;
  return absl::StrCat("cuDNN ", major, ".", v >= 90000 ? v / 100 % 100 : v / 100 % 10, ".",
                      v % 100);
}

uint64_t CuDnn::CachedWorkspaceBytes() const { return context_->WorkspaceBytes(); }

absl::Status CuDnn::RunOn(Stream* stream, absl::FunctionRef<std::string()> describe,
                          absl::FunctionRef<absl::Status(cudnn::Session&)> work) {
  absl::StatusOr<cudaStream_t> cuda_stream = CudaPluginStream(executor_, stream, kName, "AsDnn()");
  absl::Status status = cuda_stream.ok() ? context_->Run(*cuda_stream, work) : cuda_stream.status();
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(describe(), ": ", status.message()));
}

absl::Status CuDnn::BiasAdd(Stream* stream, const BiasAddArgs& a) {
  return RunOn(
      stream, [&] { return Describe("bias add", a.desc); },
      [&](cudnn::Session& s) -> absl::Status {
        RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc t, cudnn::MakeTensor(a.desc));
        RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc bias, cudnn::MakeChannelVector(a.desc));
        void* y = CudaAddress(a.output);
        const void* x = CudaAddress(a.input);
        if (y != x) {
          RILL_CUDA_RETURN_IF_ERROR(
              cudaMemcpyAsync(y, x, a.desc.Bytes(), cudaMemcpyDeviceToDevice, s.stream()));
        }
        // y = 1 * bias + 1 * y, bias broadcast over n, h, w.
        RILL_CUDNN_RETURN_IF_ERROR(cudnnAddTensor(s.handle(), cudnn::One(a.desc.type), bias.get(),
                                                  CudaAddress(a.bias), cudnn::One(a.desc.type),
                                                  t.get(), y));
        return absl::OkStatus();
      });
}

absl::Status CuDnn::Activate(Stream* stream, const ActivationArgs& a) {
  return RunOn(
      stream, [&] { return Describe(a.activation.ToString(), a.desc); },
      [&](cudnn::Session& s) -> absl::Status {
        RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc t, cudnn::MakeTensor(a.desc));
        RILL_ASSIGN_OR_RETURN(cudnn::ActivationDesc f, cudnn::MakeActivation(a.activation));
        const DataType type = a.desc.type;
        RILL_CUDNN_RETURN_IF_ERROR(
            cudnnActivationForward(s.handle(), f.get(), cudnn::One(type), t.get(), CudaAddress(a.x),
                                   cudnn::Zero(type), t.get(), CudaAddress(a.y)));
        return absl::OkStatus();
      });
}

absl::Status CuDnn::ActivateBackward(Stream* stream, const ActivationBackwardArgs& a) {
  return RunOn(
      stream, [&] { return Describe(a.activation.ToString() + " backward", a.desc); },
      [&](cudnn::Session& s) -> absl::Status {
        RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc t, cudnn::MakeTensor(a.desc));
        RILL_ASSIGN_OR_RETURN(cudnn::ActivationDesc f, cudnn::MakeActivation(a.activation));
        const DataType type = a.desc.type;
        RILL_CUDNN_RETURN_IF_ERROR(cudnnActivationBackward(
            s.handle(), f.get(), cudnn::One(type), t.get(), CudaAddress(a.y), t.get(),
            CudaAddress(a.dy), t.get(), CudaAddress(a.x), cudnn::Zero(type), t.get(),
            CudaAddress(a.dx)));
        return absl::OkStatus();
      });
}

absl::Status CuDnn::Softmax(Stream* stream, const SoftmaxArgs& a) {
  return RunOn(
      stream, [&] { return Describe(a.log ? "log-softmax" : "softmax", a.desc); },
      [&](cudnn::Session& s) -> absl::Status {
        RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc t, cudnn::MakeTensor(a.desc));
        const DataType type = a.desc.type;
        RILL_CUDNN_RETURN_IF_ERROR(
            cudnnSoftmaxForward(s.handle(), a.log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                                CUDNN_SOFTMAX_MODE_CHANNEL, cudnn::One(type), t.get(),
                                CudaAddress(a.x), cudnn::Zero(type), t.get(), CudaAddress(a.y)));
        return absl::OkStatus();
      });
}

absl::Status CuDnn::SoftmaxBackward(Stream* stream, const SoftmaxBackwardArgs& a) {
  const char* op = a.log ? "log-softmax backward" : "softmax backward";
  return RunOn(
      stream, [&] { return Describe(op, a.desc); },
      [&](cudnn::Session& s) -> absl::Status {
        RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc t, cudnn::MakeTensor(a.desc));
        const DataType type = a.desc.type;
        RILL_CUDNN_RETURN_IF_ERROR(cudnnSoftmaxBackward(
            s.handle(), a.log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
            CUDNN_SOFTMAX_MODE_CHANNEL, cudnn::One(type), t.get(), CudaAddress(a.y), t.get(),
            CudaAddress(a.dy), cudnn::Zero(type), t.get(), CudaAddress(a.dx)));
        return absl::OkStatus();
      });
}

absl::Status CuDnn::Lrn(Stream* stream, const LrnArgs& a) {
  return RunOn(
      stream, [&] { return Describe(a.lrn.ToString(), a.desc); },
      [&](cudnn::Session& s) -> absl::Status {
        RILL_ASSIGN_OR_RETURN(cudnn::TensorDesc t, cudnn::MakeTensor(a.desc));
        RILL_ASSIGN_OR_RETURN(cudnn::LrnDesc lrn, cudnn::MakeLrn(a.lrn));
        const DataType type = a.desc.type;
        RILL_CUDNN_RETURN_IF_ERROR(cudnnLRNCrossChannelForward(
            s.handle(), lrn.get(), CUDNN_LRN_CROSS_CHANNEL_DIM1, cudnn::One(type), t.get(),
            CudaAddress(a.x), cudnn::Zero(type), t.get(), CudaAddress(a.y)));
        return absl::OkStatus();
      });
}

RILL_REGISTER_PLUGIN(cudnn, kCudaPlatformId, PluginKind::kDnn, CuDnn::kName, CreateCuDnn,
                     /*make_default=*/true);

}  // namespace rill
