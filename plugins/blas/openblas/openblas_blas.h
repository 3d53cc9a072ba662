#ifndef RILL_PLUGINS_BLAS_OPENBLAS_OPENBLAS_BLAS_H_
#define RILL_PLUGINS_BLAS_OPENBLAS_OPENBLAS_BLAS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "rill/plugins/blas/blas.h"

namespace rill {

class StreamExecutor;

// BlasSupport for host-memory devices (the host platform;
// plugins/host_library.h) through OpenBLAS's CBLAS API, linked normally.
// Registered as "openblas", the host default. Each call is checked
// (BlasSupport), then enqueued on the stream and run on the stream's worker
// thread, in stream order; batched gemms are a loop of cblas_?gemm calls.
//
// Symbols: this plugin calls cblas_* and relies on them resolving to
// OpenBLAS. BLIS exports the same names, so no Rill target links libblis
// (the "blis" plugin dlopen()s it privately); LibraryPath() reports where
// the cblas_sgemm this plugin calls lives, and the tests assert it is
// OpenBLAS.
//
// Threading (plugins/blas/README.md): OpenBLAS keeps one process-wide
// pthread pool, so concurrent callers share its workers rather than
// multiplying them. Each call sets the library's thread count to
// max(1, cores / calls in flight) when it differs ("auto", the default), so
// one busy stream gets every core and several concurrent streams run
// single-threaded calls side by side instead of queueing on the pool.
// RILL_BLAS_THREADS=<n> fixes the count per call instead.
//
//   RILL_ASSIGN_OR_RETURN(StreamExecutor* exec, host->ExecutorForDevice(0));
//   RILL_RETURN_IF_ERROR(exec->SetPlugin(PluginKind::kBlas, "openblas"));
//   stream->ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, m, n, k,
//                        1.0f, a, m, b, k, 0.0f, &c, m);
//
// Thread-safe.
class OpenBlas : public BlasSupport {
 public:
  static constexpr char kName[] = "openblas";

  static absl::StatusOr<std::unique_ptr<OpenBlas>> Create(StreamExecutor* executor);

  std::string Name() const override { return kName; }
  std::string Version() const override { return LibraryConfig(); }

  // The shared object that serves this plugin's calls: dladdr() of the
  // cblas_sgemm it calls (".../libopenblas...so").
  static std::string LibraryPath();
  // openblas_get_config(): "OpenBLAS 0.3.21 DYNAMIC_ARCH ... Haswell MAX_THREADS=64".
  static std::string LibraryConfig();
  // The fixed per-call thread count from RILL_BLAS_THREADS, or 0 for auto.
  static int ConfiguredThreads();

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
  explicit OpenBlas(StreamExecutor* executor) : executor_(executor) {}

  StreamExecutor* const executor_;  // Owns this plugin.
};

}  // namespace rill

#endif  // RILL_PLUGINS_BLAS_OPENBLAS_OPENBLAS_BLAS_H_
