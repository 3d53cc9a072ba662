#ifndef RILL_PLUGINS_BLAS_CLBLAST_CLBLAST_BLAS_H_
#define RILL_PLUGINS_BLAS_CLBLAST_CLBLAST_BLAS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/plugins/blas/blas.h"

namespace rill {

class StreamExecutor;

// "CLBlastInvalidLeadDimA" for -1016, OpenCL names (ClErrorName) for the
// codes CLBlast shares with OpenCL.
std::string ClBlastStatusName(int code);
// OK for 0; else "<what>: CLBlast <name> (<code>)", InvalidArgument for
// CLBlast's argument codes, ResourceExhausted for its and OpenCL's memory
// codes, Unimplemented for kNotImplemented / no double precision, Internal
// otherwise.
absl::Status ClBlastStatus(int code, const std::string& what);

// BlasSupport for the OpenCL platform through CLBlast's C++ API, registered
// as "clblast", the OpenCL default. Every operation of BlasSupport in float
// and double. Buffers go to CLBlast as (cl_mem, element offset): a view's
// byte offset must be a multiple of the element size (else
// InvalidArgument). Calls are enqueued on the stream's command queue in
// stream order (OpenClStream::EnqueueDeviceWork); gemm-batched is one
// CLBlast gemm per matrix.
//
// First use: CLBlast compiles its kernels for the device the first time a
// routine runs in a process (about 6.5 s for gemm on PoCL with a cold
// kernel cache, ~0.1 s with PoCL's cache warm, see TOOLCHAIN.md §5).
//
//   StreamExecutor* cl = PlatformManager::Default().PlatformWithName("opencl")
//                            .value()->ExecutorForDevice(0).value();
//   stream->ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, m, n, k,
//                        1.0f, a, m, b, k, 0.0f, &c, m);   // a stream of `cl`
//
// Thread-safe.
class ClBlast : public BlasSupport {
 public:
  static constexpr char kName[] = "clblast";
  static absl::StatusOr<std::unique_ptr<ClBlast>> Create(StreamExecutor* executor);
  std::string Name() const override { return kName; }
  // "CLBlast 1.5.3", from the headers it was built with (no runtime query).
  std::string Version() const override;

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
  explicit ClBlast(StreamExecutor* executor) : executor_(executor) {}
  StreamExecutor* const executor_;  // Outlives the plugin (it owns it).
};

}  // namespace rill

#endif  // RILL_PLUGINS_BLAS_CLBLAST_CLBLAST_BLAS_H_
