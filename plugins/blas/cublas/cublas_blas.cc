#include "rill/plugins/blas/cublas/cublas_blas.h"

#include <library_types.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/cuda/cuda_platform.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/platform/cuda/cuda_status.h"
#include "rill/plugins/blas/cublas/cublas_status.h"
#include "rill/plugins/plugin_registry.h"
#include "rill/stream/stream.h"

namespace rill {
namespace {

// cuBLAS's float and double entry points (64-bit sizes), by element type.
template <typename T>
struct Api;

template <>
struct Api<float> {
  static constexpr char kPrefix[] = "cublasS";
  static constexpr auto gemm = cublasSgemm_v2_64;
  static constexpr auto gemm_strided = cublasSgemmStridedBatched_64;
  static constexpr auto gemm_batched = cublasSgemmBatched_64;
  static constexpr auto gemv = cublasSgemv_v2_64;
  static constexpr auto axpy = cublasSaxpy_v2_64;
  static constexpr auto scal = cublasSscal_v2_64;
  static constexpr auto copy = cublasScopy_v2_64;
  static constexpr auto dot = cublasSdot_v2_64;
  static constexpr auto nrm2 = cublasSnrm2_v2_64;
  static constexpr auto asum = cublasSasum_v2_64;
};

template <>
struct Api<double> {
  static constexpr char kPrefix[] = "cublasD";
  static constexpr auto gemm = cublasDgemm_v2_64;
  static constexpr auto gemm_strided = cublasDgemmStridedBatched_64;
  static constexpr auto gemm_batched = cublasDgemmBatched_64;
  static constexpr auto gemv = cublasDgemv_v2_64;
  static constexpr auto axpy = cublasDaxpy_v2_64;
  static constexpr auto scal = cublasDscal_v2_64;
  static constexpr auto copy = cublasDcopy_v2_64;
  static constexpr auto dot = cublasDdot_v2_64;
  static constexpr auto nrm2 = cublasDnrm2_v2_64;
  static constexpr auto asum = cublasDasum_v2_64;
};

cublasOperation_t Op(Transpose t) { return t == Transpose::kTranspose ? CUBLAS_OP_T : CUBLAS_OP_N; }

// The device address of a view as T*. cuBLAS needs element-aligned
// operands: InvalidArgument for a view at a byte offset that is not a
// multiple of sizeof(T).
template <typename T>
absl::StatusOr<T*> Address(const char* name, const DeviceMemoryBase& memory) {
  if (memory.offset() % sizeof(T) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cublas: ", name, " starts at byte offset ", memory.offset(),
                     ", not a multiple of the element size ", sizeof(T)));
  }
  return static_cast<T*>(CudaAddress(memory));
}

std::string GemmWhat(const char* prefix, const char* routine, const GemmArgs& g, int64_t batch) {
  return absl::StrCat(prefix, routine, "(", TransposeName(g.trans_a), TransposeName(g.trans_b),
                      ", m=", g.m, ", n=", g.n, ", k=", g.k, ", lda=", g.lda, ", ldb=", g.ldb,
                      ", ldc=", g.ldc, ", batch=", batch, ")");
}

}  // namespace

absl::StatusOr<std::unique_ptr<CuBlas>> CuBlas::Create(StreamExecutor* executor) {
  if (executor == nullptr) return absl::InvalidArgumentError("cublas: executor is null");
  RILL_ASSIGN_OR_RETURN(int ordinal, CudaDeviceOrdinal(executor));
  return std::unique_ptr<CuBlas>(new CuBlas(executor, ordinal));
}

CuBlas::~CuBlas() {
  MutexLock lock(&mu_);
  if (handle_ == nullptr && pointers_done_ == nullptr && pointers_.is_null()) return;
  CudaDeviceScope device(ordinal_);
  if (pointers_done_ != nullptr) {
    cudaEventSynchronize(pointers_done_);  // The last batched call is done with the arrays.
    cudaEventDestroy(pointers_done_);
  }
  if (!pointers_.is_null()) executor_->Deallocate(&pointers_).IgnoreError();
  if (handle_ != nullptr) cublasDestroy(handle_);
}

std::string CuBlas::Version() const {
  const int v = LibraryVersion();
  return absl::StrCat("cuBLAS ", v / 10000, ".", v / 100 % 100, ".", v % 100);
}

int CuBlas::LibraryVersion() {
  int major = 0, minor = 0, patch = 0;
  cublasGetProperty(MAJOR_VERSION, &major);
  cublasGetProperty(MINOR_VERSION, &minor);
  cublasGetProperty(PATCH_LEVEL, &patch);
  return major * 10000 + minor * 100 + patch;
}

absl::StatusOr<cublasHandle_t> CuBlas::Handle() {
  CudaDeviceScope device(ordinal_);
  RILL_RETURN_IF_ERROR(device.status());
  MutexLock lock(&mu_);
  return HandleLocked();
}

absl::StatusOr<cublasHandle_t> CuBlas::HandleLocked() {
  if (handle_ != nullptr) return handle_;
  cublasHandle_t handle = nullptr;
  RILL_RETURN_IF_ERROR(
      CuBlasStatus(cublasCreate(&handle), absl::StrCat("cublasCreate (device ", ordinal_, ")")));
  handle_ = handle;
  return handle_;
}

absl::StatusOr<CuBlas::Bound> CuBlas::BindLocked(cudaStream_t stream, cublasPointerMode_t mode) {
  RILL_ASSIGN_OR_RETURN(cublasHandle_t handle, HandleLocked());
  RILL_RETURN_IF_ERROR(CuBlasStatus(cublasSetStream(handle, stream), "cublasSetStream"));
  RILL_RETURN_IF_ERROR(CuBlasStatus(cublasSetPointerMode(handle, mode), "cublasSetPointerMode"));
  return Bound{handle, stream};
}

absl::StatusOr<cudaStream_t> CuBlas::CheckedStream(Stream* stream) {
  RILL_ASSIGN_OR_RETURN(cudaStream_t cuda_stream,
                        CudaPluginStream(executor_, stream, kName, "AsBlas()"));
  if (!stream->ok()) return stream->status();
  return cuda_stream;
}

absl::Status CuBlas::Run(Stream* stream, absl::string_view what, cublasPointerMode_t mode,
                         absl::FunctionRef<cublasStatus_t(const Bound&)> call) {
  RILL_ASSIGN_OR_RETURN(cudaStream_t cuda_stream, CheckedStream(stream));
  CudaDeviceScope device(ordinal_);
  RILL_RETURN_IF_ERROR(device.status());
  MutexLock lock(&mu_);
  RILL_ASSIGN_OR_RETURN(Bound bound, BindLocked(cuda_stream, mode));
  return CuBlasStatus(call(bound), what);
}

absl::Status CuBlas::WithHandle(Stream* stream, absl::string_view what,
                                absl::FunctionRef<cublasStatus_t(cublasHandle_t)> fn) {
  return Run(stream, what, CUBLAS_POINTER_MODE_HOST, [&](const Bound& b) { return fn(b.handle); });
}

absl::StatusOr<void*> CuBlas::PointerBufferLocked(cudaStream_t stream, size_t bytes) {
  if (pointers_done_ == nullptr) {
    RILL_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&pointers_done_, cudaEventDisableTiming));
  }
  if (pointers_.size() < bytes) {
    const size_t grown = std::max<size_t>({bytes, 2 * pointers_.size(), 4096});
    if (pointers_used_) RILL_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(pointers_done_));
    if (!pointers_.is_null()) RILL_RETURN_IF_ERROR(executor_->Deallocate(&pointers_));
    pointers_used_ = false;  // The new buffer has no pending reader.
    RILL_ASSIGN_OR_RETURN(pointers_, executor_->Allocate(grown));
  }
  if (pointers_used_) RILL_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, pointers_done_, 0));
  return CudaAddress(pointers_);
}

// One gemm, or the strided-batched form for batch_count > 1.
absl::Status CuBlas::Gemm(Stream* stream, const GemmArgs& g) {
  auto gemm = [&]<typename T>(T) -> absl::Status {
    RILL_ASSIGN_OR_RETURN(const T* a, Address<const T>("a", g.a));
    RILL_ASSIGN_OR_RETURN(const T* b, Address<const T>("b", g.b));
    RILL_ASSIGN_OR_RETURN(T * c, Address<T>("c", g.c));
    const T alpha = static_cast<T>(g.alpha), beta = static_cast<T>(g.beta);
    if (g.batch_count == 1) {
      return Run(stream, GemmWhat(Api<T>::kPrefix, "gemm_64", g, 1), CUBLAS_POINTER_MODE_HOST,
                 [&](const Bound& h) {
                   return Api<T>::gemm(h.handle, Op(g.trans_a), Op(g.trans_b), g.m, g.n, g.k,
                                       &alpha, a, g.lda, b, g.ldb, &beta, c, g.ldc);
                 });
    }
    return Run(stream, GemmWhat(Api<T>::kPrefix, "gemmStridedBatched_64", g, g.batch_count),
               CUBLAS_POINTER_MODE_HOST, [&](const Bound& h) {
                 return Api<T>::gemm_strided(h.handle, Op(g.trans_a), Op(g.trans_b), g.m, g.n, g.k,
                                             &alpha, a, g.lda, g.stride_a, b, g.ldb, g.stride_b,
                                             &beta, c, g.ldc, g.stride_c, g.batch_count);
               });
  };
  return g.type == DataType::kFloat ? gemm(float{}) : gemm(double{});
}

template <typename T>
absl::Status CuBlas::GemmBatchedT(Stream* stream, const GemmBatchedArgs& args) {
  const size_t count = args.a.size();
  std::vector<const void*> arrays(3 * count);  // a[0..count), b[...], c[...].
  for (size_t i = 0; i < count; ++i) {
    RILL_ASSIGN_OR_RETURN(arrays[i], Address<const T>("a[i]", args.a[i]));
    RILL_ASSIGN_OR_RETURN(arrays[count + i], Address<const T>("b[i]", args.b[i]));
    RILL_ASSIGN_OR_RETURN(arrays[2 * count + i], Address<T>("c[i]", args.c[i]));
  }
  const GemmArgs& g = args.shape;
  const T alpha = static_cast<T>(g.alpha), beta = static_cast<T>(g.beta);
  const size_t bytes = arrays.size() * sizeof(void*);
  RILL_ASSIGN_OR_RETURN(cudaStream_t cuda_stream, CheckedStream(stream));
  CudaDeviceScope device(ordinal_);
  RILL_RETURN_IF_ERROR(device.status());
  MutexLock lock(&mu_);
  RILL_ASSIGN_OR_RETURN(Bound bound, BindLocked(cuda_stream, CUBLAS_POINTER_MODE_HOST));
  RILL_ASSIGN_OR_RETURN(void* device_arrays, PointerBufferLocked(cuda_stream, bytes));
  // From pageable memory: staged before the call returns, so `arrays` may go.
  RILL_RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(device_arrays, arrays.data(), bytes, cudaMemcpyHostToDevice, cuda_stream),
      "cublas gemm-batched: cudaMemcpyAsync(pointer arrays)"));
  auto* const* table = static_cast<void* const*>(device_arrays);
  const absl::Status status =
      CuBlasStatus(Api<T>::gemm_batched(bound.handle, Op(g.trans_a), Op(g.trans_b), g.m, g.n, g.k,
                                        &alpha, reinterpret_cast<const T* const*>(table), g.lda,
                                        reinterpret_cast<const T* const*>(table + count), g.ldb,
                                        &beta, reinterpret_cast<T* const*>(table + 2 * count),
                                        g.ldc, static_cast<int64_t>(count)),
                   GemmWhat(Api<T>::kPrefix, "gemmBatched_64", g, static_cast<int64_t>(count)));
  // Recorded even after a failed gemm: the copy above was enqueued.
  RILL_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(pointers_done_, cuda_stream),
                                  "cublas gemm-batched: cudaEventRecord"));
  pointers_used_ = true;
  return status;
}

absl::Status CuBlas::GemmBatched(Stream* stream, const GemmBatchedArgs& args) {
  return args.shape.type == DataType::kFloat ? GemmBatchedT<float>(stream, args)
                                             : GemmBatchedT<double>(stream, args);
}

namespace {

template <typename T>
std::string VectorWhat(const char* routine, const VectorArgs& v) {
  return absl::StrCat(Api<T>::kPrefix, routine, "(n=", v.n, ", incx=", v.incx, ", incy=", v.incy,
                      ")");
}

}  // namespace

absl::Status CuBlas::Gemv(Stream* stream, const GemvArgs& g) {
  auto gemv = [&]<typename T>(T) -> absl::Status {
    RILL_ASSIGN_OR_RETURN(const T* a, Address<const T>("a", g.a));
    RILL_ASSIGN_OR_RETURN(const T* x, Address<const T>("x", g.x));
    RILL_ASSIGN_OR_RETURN(T * y, Address<T>("y", g.y));
    const T alpha = static_cast<T>(g.alpha), beta = static_cast<T>(g.beta);
    return Run(stream,
               absl::StrCat(Api<T>::kPrefix, "gemv_64(", TransposeName(g.trans), ", m=", g.m,
                            ", n=", g.n, ", lda=", g.lda, ")"),
               CUBLAS_POINTER_MODE_HOST, [&](const Bound& b) {
                 return Api<T>::gemv(b.handle, Op(g.trans), g.m, g.n, &alpha, a, g.lda, x, g.incx,
                                     &beta, y, g.incy);
               });
  };
  return g.type == DataType::kFloat ? gemv(float{}) : gemv(double{});
}

absl::Status CuBlas::Axpy(Stream* stream, const VectorArgs& v) {
  auto axpy = [&]<typename T>(T) -> absl::Status {
    RILL_ASSIGN_OR_RETURN(const T* x, Address<const T>("x", v.x));
    RILL_ASSIGN_OR_RETURN(T * y, Address<T>("y", v.y));
    const T alpha = static_cast<T>(v.alpha);
    return Run(stream, VectorWhat<T>("axpy_64", v), CUBLAS_POINTER_MODE_HOST, [&](const Bound& b) {
      return Api<T>::axpy(b.handle, v.n, &alpha, x, v.incx, y, v.incy);
    });
  };
  return v.type == DataType::kFloat ? axpy(float{}) : axpy(double{});
}

absl::Status CuBlas::Scal(Stream* stream, const VectorArgs& v) {
  auto scal = [&]<typename T>(T) -> absl::Status {
    RILL_ASSIGN_OR_RETURN(T * x, Address<T>("x", v.x));
    const T alpha = static_cast<T>(v.alpha);
    return Run(stream, VectorWhat<T>("scal_64", v), CUBLAS_POINTER_MODE_HOST,
               [&](const Bound& b) { return Api<T>::scal(b.handle, v.n, &alpha, x, v.incx); });
  };
  return v.type == DataType::kFloat ? scal(float{}) : scal(double{});
}

absl::Status CuBlas::Copy(Stream* stream, const VectorArgs& v) {
  auto copy = [&]<typename T>(T) -> absl::Status {
    RILL_ASSIGN_OR_RETURN(const T* x, Address<const T>("x", v.x));
    RILL_ASSIGN_OR_RETURN(T * y, Address<T>("y", v.y));
    return Run(stream, VectorWhat<T>("copy_64", v), CUBLAS_POINTER_MODE_HOST,
               [&](const Bound& b) { return Api<T>::copy(b.handle, v.n, x, v.incx, y, v.incy); });
  };
  return v.type == DataType::kFloat ? copy(float{}) : copy(double{});
}

// dot, nrm2 and asum write `result` in device memory: device pointer mode,
// so the call stays asynchronous.
absl::Status CuBlas::Dot(Stream* stream, const VectorArgs& v) {
  auto dot = [&]<typename T>(T) -> absl::Status {
    RILL_ASSIGN_OR_RETURN(const T* x, Address<const T>("x", v.x));
    RILL_ASSIGN_OR_RETURN(const T* y, Address<const T>("y", v.y));
    RILL_ASSIGN_OR_RETURN(T * r, Address<T>("result", v.result));
    return Run(stream, VectorWhat<T>("dot_64", v), CUBLAS_POINTER_MODE_DEVICE,
               [&](const Bound& b) { return Api<T>::dot(b.handle, v.n, x, v.incx, y, v.incy, r); });
  };
  return v.type == DataType::kFloat ? dot(float{}) : dot(double{});
}

absl::Status CuBlas::Nrm2(Stream* stream, const VectorArgs& v) {
  auto nrm2 = [&]<typename T>(T) -> absl::Status {
    RILL_ASSIGN_OR_RETURN(const T* x, Address<const T>("x", v.x));
    RILL_ASSIGN_OR_RETURN(T * r, Address<T>("result", v.result));
    return Run(stream, VectorWhat<T>("nrm2_64", v), CUBLAS_POINTER_MODE_DEVICE,
               [&](const Bound& b) { return Api<T>::nrm2(b.handle, v.n, x, v.incx, r); });
  };
  return v.type == DataType::kFloat ? nrm2(float{}) : nrm2(double{});
}

absl::Status CuBlas::Asum(Stream* stream, const VectorArgs& v) {
  auto asum = [&]<typename T>(T) -> absl::Status {
    RILL_ASSIGN_OR_RETURN(const T* x, Address<const T>("x", v.x));
    RILL_ASSIGN_OR_RETURN(T * r, Address<T>("result", v.result));
    return Run(stream, VectorWhat<T>("asum_64", v), CUBLAS_POINTER_MODE_DEVICE,
               [&](const Bound& b) { return Api<T>::asum(b.handle, v.n, x, v.incx, r); });
  };
  return v.type == DataType::kFloat ? asum(float{}) : asum(double{});
}

namespace {

absl::StatusOr<std::unique_ptr<PluginInterface>> CreateCuBlas(StreamExecutor* executor) {
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<CuBlas> blas, CuBlas::Create(executor));
  return std::unique_ptr<PluginInterface>(std::move(blas));
}

}  // namespace

RILL_REGISTER_PLUGIN(cublas, kCudaPlatformId, PluginKind::kBlas, CuBlas::kName, CreateCuBlas,
                     /*make_default=*/true);

}  // namespace rill
