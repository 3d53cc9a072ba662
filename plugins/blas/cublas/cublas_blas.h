#ifndef RILL_PLUGINS_BLAS_CUBLAS_CUBLAS_BLAS_H_
#define RILL_PLUGINS_BLAS_CUBLAS_CUBLAS_BLAS_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rill/base/mutex.h"
#include "rill/executor/device_memory.h"
#include "rill/plugins/blas/blas.h"

namespace rill {

class StreamExecutor;

// BlasSupport for the CUDA platform through cuBLAS (CUDA 13: cuBLAS 13),
// registered as "cublas", the CUDA default. Every operation of BlasSupport
// in float and double, through cuBLAS's 64-bit-size API (cublasSgemm_64,
// ...): gemm, gemm strided-batched (cublas<t>gemmStridedBatched_64),
// gemm-batched over arrays (cublas<t>gemmBatched_64), gemv, axpy, scal,
// copy, dot, nrm2, asum.
//
// One cublasHandle_t per plugin instance (so per executor), created on
// first use on the executor's device (CudaDeviceScope) and destroyed with
// the plugin. Each call locks the plugin's mutex, binds the handle to the
// stream's cudaStream_t (cublasSetStream) and enqueues asynchronously in
// stream order; scalars (alpha, beta) are read from the host
// (CUBLAS_POINTER_MODE_HOST), results of dot/nrm2/asum are written to the
// device element `result` (CUBLAS_POINTER_MODE_DEVICE), so no call waits
// for the device.
//
// Gemm-batched needs the matrices' addresses as arrays in device memory:
// the plugin keeps one buffer for them, allocated through the executor
// (StreamExecutor::Allocate, so it counts in the memory stats) and grown
// when a call needs more; each batched call copies its arrays into it on
// the stream after waiting (cudaStreamWaitEvent, no host wait) for the
// previous batched call, whatever its stream, to have finished with it.
//
// Errors carry cuBLAS's names: "cublasSgemm_64(m=..., n=..., k=...):
// CUBLAS_STATUS_INVALID_VALUE (7): an invalid numeric value was used as an
// argument" (cublas_status.h). Without a driver the handle cannot be made
// and calls fail with Unavailable; but then the platform has no devices and
// no executor to call from.
//
//   StreamExecutor* gpu = PlatformManager::Default().PlatformWithName("cuda")
//                             .value()->ExecutorForDevice(0).value();
//   stream->ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, m, n, k,
//                        1.0f, a, m, b, k, 0.0f, &c, m);   // a stream of `gpu`
//
// Thread-safe.
class CuBlas : public BlasSupport {
 public:
  static constexpr char kName[] = "cublas";

  // InvalidArgument for an executor of another platform. Makes no CUDA
  // call: the handle is made on first use.
  static absl::StatusOr<std::unique_ptr<CuBlas>> Create(StreamExecutor* executor);
  ~CuBlas() override;
  CuBlas(const CuBlas&) = delete;
  CuBlas& operator=(const CuBlas&) = delete;

  std::string Name() const override { return kName; }
  std::string Version() const override;  // "cuBLAS 13.1.0"

  // The plugin's cuBLAS handle (made on first call), for code that calls
  // cuBLAS directly, e.g. a benchmark comparing with raw cuBLAS. Valid until
  // the plugin is destroyed (with its executor, or by SetPlugin). The handle
  // is the plugin's: calls through it must not run while another thread
  // uses the plugin, and must set their own stream and pointer mode (the
  // plugin sets both before each of its calls). Prefer WithHandle.
  absl::StatusOr<cublasHandle_t> Handle();

  // Runs `fn(handle)` under the plugin's lock, on the executor's device,
  // with the handle bound to `stream` (a stream of this plugin's executor)
  // and CUBLAS_POINTER_MODE_HOST. `fn` enqueues asynchronously on that
  // stream; its cuBLAS status is returned as CuBlasStatus(status, what).
  absl::Status WithHandle(Stream* stream, absl::string_view what,
                          absl::FunctionRef<cublasStatus_t(cublasHandle_t)> fn);

  // cuBLAS's version, e.g. 130100 for 13.1.0 (cublasGetProperty).
  static int LibraryVersion();

 protected:
  absl::Status Gemm(Stream* stream, const GemmArgs& args) override;
  absl::Status GemmBatched(Stream* stream, const GemmBatchedArgs& args) override;
  absl::Status Gemv(Stream* stream, const GemvArgs& args) override;
  absl::Status Axpy(Stream* stream, const VectorArgs& args) override;
  absl::Status Scal(Stream* stream, const VectorArgs& args) override;
  absl::Status Copy(Stream* stream, const VectorArgs& args) override;
  absl::Status Dot(Stream* stream, const VectorArgs& args) override;
  absl::Status Nrm2(Stream* stream, const VectorArgs& args) override;
  absl::Status Asum(Stream* stream, const VectorArgs& args) override;

 private:
  // The handle, bound to the cudaStream_t a call enqueues on.
  struct Bound {
    cublasHandle_t handle;
    cudaStream_t stream;
  };

  CuBlas(StreamExecutor* executor, int ordinal) : executor_(executor), ordinal_(ordinal) {}

  // `stream`'s cudaStream_t if it is this executor's and not in an error
  // state (else that error: the call is skipped, as Stream::Then* would).
  absl::StatusOr<cudaStream_t> CheckedStream(Stream* stream);
  // Checks `stream`, makes the device current, locks, binds the handle to
  // the stream with `mode`, and returns CuBlasStatus(call(bound), what).
  absl::Status Run(Stream* stream, absl::string_view what, cublasPointerMode_t mode,
                   absl::FunctionRef<cublasStatus_t(const Bound&)> call);
  // The handle (made on first use; the device must be current), bound to
  // `stream` with `mode`.
  absl::StatusOr<Bound> BindLocked(cudaStream_t stream, cublasPointerMode_t mode)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<cublasHandle_t> HandleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The gemm-batched pointer buffer, at least `bytes`, free for `stream` to
  // overwrite: `stream` waits for the previous batched call's event.
  absl::StatusOr<void*> PointerBufferLocked(cudaStream_t stream, size_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  template <typename T>
  absl::Status GemmBatchedT(Stream* stream, const GemmBatchedArgs& args);

  StreamExecutor* const executor_;  // Owns the plugin.
  const int ordinal_;               // The executor's CUDA device.
  Mutex mu_;
  cublasHandle_t handle_ ABSL_GUARDED_BY(mu_) = nullptr;
  DeviceMemoryBase pointers_ ABSL_GUARDED_BY(mu_);            // Gemm-batched arrays.
  cudaEvent_t pointers_done_ ABSL_GUARDED_BY(mu_) = nullptr;  // After their last use.
  bool pointers_used_ ABSL_GUARDED_BY(mu_) = false;           // pointers_done_ recorded.
};

}  // namespace rill

#endif  // RILL_PLUGINS_BLAS_CUBLAS_CUBLAS_BLAS_H_
