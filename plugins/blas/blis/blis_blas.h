#ifndef RILL_PLUGINS_BLAS_BLIS_BLIS_BLAS_H_
#define RILL_PLUGINS_BLAS_BLIS_BLIS_BLAS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "rill/plugins/blas/blas.h"

namespace rill {

class StreamExecutor;

// BlasSupport for host-memory devices (the host platform;
// plugins/host_library.h) through BLIS's typed API (bli_sgemm_ex, bli_dgemv,
// ...). Registered as "blis" (not the default; select it with SetPlugin or
// RILL_BLAS=blis). Calls are checked (BlasSupport), enqueued on the stream and
// run on the stream's worker thread, in stream order.
//
// Symbols: BLIS exports cblas_* like OpenBLAS, so linking both lets the
// first on the link line serve both. This plugin therefore does not link
// libblis: on first use it dlopen()s it (the path found at configure time,
// else the soname libblis.so.4) with RTLD_NOW | RTLD_LOCAL, so none of its
// symbols enter the global scope, plus RTLD_DEEPBIND so BLIS's calls to its
// own exported functions bind inside BLIS even where OpenBLAS defines the
// same names. DEEPBIND is left out in sanitizer builds (ASan and TSan
// refuse it; BLIS's bli_* entry points are still resolved from the handle)
// and when RILL_BLIS_DEEPBIND=0. Only bli_* functions are called, looked up
// with dlsym on that handle; LibraryPath() reports the object they live in.
// The library stays loaded for the life of the process.
//
// Threading (plugins/blas/README.md): level-3 calls pass BLIS a per-call
// thread count (an rntm_t). Auto (the default): one thread for a gemm under
// 2^24 multiply-adds (BLIS would thread even tiny ones, and its OpenMP
// barriers then cost far more than they save), else max(1, cores / calls in
// flight), where cores is BLIS_NUM_THREADS or OMP_NUM_THREADS if set, else
// the hardware's. RILL_BLAS_THREADS=<n> fixes the count for every call.
// Levels 1 and 2 are single-threaded in BLIS.
//
//   RILL_RETURN_IF_ERROR(exec->SetPlugin(PluginKind::kBlas, "blis"));
//   stream->ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, m, n, k,
//                        1.0, a, m, b, k, 0.0, &c, m);
//
// Thread-safe.
class Blis : public BlasSupport {
 public:
  static constexpr char kName[] = "blis";

  // FailedPrecondition (with dlerror()'s text) when libblis cannot be loaded
  // or lacks a function.
  static absl::StatusOr<std::unique_ptr<Blis>> Create(StreamExecutor* executor);

  std::string Name() const override { return kName; }
  std::string Version() const override { return "BLIS " + LibraryVersion(); }

  // Loads BLIS if needed; OK once it is usable.
  static absl::Status Load();
  // The shared object the plugin's bli_* functions live in (dladdr of
  // bli_sgemm_ex as resolved from the handle); "" when not loaded.
  static std::string LibraryPath();
  // bli_info_get_version_str(): "0.9.0".
  static std::string LibraryVersion();
  // A function of the privately loaded BLIS, for callers that want to call
  // it directly (benchmarks). NotFound for an unknown name.
  static absl::StatusOr<void*> Symbol(const char* name);
  // Whether the library was loaded with RTLD_DEEPBIND.
  static bool DeepBind();
  // The threads a gemm of `work` multiply-adds (m n k) uses when it is the
  // only call in flight.
  static int ThreadsPerCall(double work);

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
  explicit Blis(StreamExecutor* executor) : executor_(executor) {}

  StreamExecutor* const executor_;  // Owns this plugin.
};

}  // namespace rill

#endif  // RILL_PLUGINS_BLAS_BLIS_BLIS_BLAS_H_
