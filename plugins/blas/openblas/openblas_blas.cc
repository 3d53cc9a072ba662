#include "rill/plugins/blas/openblas/openblas_blas.h"

#include <cblas.h>  // OpenBLAS's (include dir from its CMake package).
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rill/base/env_settings.h"
#include "rill/base/logging.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/host/host_thread_budget.h"
#include "rill/plugins/host_library.h"
#include "rill/stream/stream.h"

namespace rill {
namespace {

// --- Thread policy (see the class comment and plugins/blas/README.md).

// RILL_BLAS_THREADS, 0 for auto; a value the table of settings refuses
// (base/env_settings.cc) is logged and counts as auto.
int ThreadsFromEnv() {
  const absl::StatusOr<std::optional<int64_t>> n = EnvInt("RILL_BLAS_THREADS");
  if (!n.ok()) {
    RILL_LOG(WARNING) << "openblas: " << n.status().message() << "; using auto";
    return 0;
  }
  return n->has_value() ? static_cast<int>(**n) : 0;
}

struct ThreadPolicy {
  int fixed = ThreadsFromEnv();                         // 0: auto.
  int cores = std::max(1, openblas_get_num_threads());  // The library's own count at start.
};

ThreadPolicy& Policy() {
  static ThreadPolicy* policy = new ThreadPolicy();  // Never destroyed.
  return *policy;
}

// Counts a call in flight for its scope (platform/host/host_thread_budget.h)
// and sets the library's thread count for it. openblas_set_num_threads only stores the count the
// next call splits its work by (the pool never shrinks), so a call already running keeps its split.
class CallScope {
 public:
  CallScope() : policy_(Policy()) {
    const int want = policy_.fixed > 0 ? policy_.fixed : scope_.Share(policy_.cores);
    if (openblas_get_num_threads() != want) openblas_set_num_threads(want);
  }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  HostComputeScope scope_;  // Counts this call with every host library call running.
  ThreadPolicy& policy_;
};

// --- Enqueueing.

template <typename Work>
absl::Status EnqueueOn(StreamExecutor* owner, Stream* stream, Work work) {
  return EnqueueHostWork(owner, stream, "openblas", "AsBlas()", [work = std::move(work)]() mutable {
    CallScope scope;
    work();
  });
}

// OpenBLAS takes 32-bit sizes (blasint is int in this build).
absl::Status Fits(const char* name, int64_t value) {
  if (value <= INT_MAX) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name, "=", value, " exceeds OpenBLAS's 32-bit size limit (", INT_MAX, ")"));
}

absl::Status GemmFits(const GemmArgs& g) {
  for (auto [name, value] : {std::pair<const char*, int64_t>{"m", g.m},
                             {"n", g.n},
                             {"k", g.k},
                             {"lda", g.lda},
                             {"ldb", g.ldb},
                             {"ldc", g.ldc}}) {
    RILL_RETURN_IF_ERROR(Fits(name, value));
  }
  return absl::OkStatus();
}

absl::Status VectorFits(const VectorArgs& v) {
  RILL_RETURN_IF_ERROR(Fits("n", v.n));
  RILL_RETURN_IF_ERROR(Fits("incx", v.incx));
  return Fits("incy", v.incy);
}

CBLAS_TRANSPOSE ToCblas(Transpose t) {
  return t == Transpose::kTranspose ? CblasTrans : CblasNoTrans;
}

// --- Typed forwards to CBLAS, overloaded on the element type.

void CblasGemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha,
               const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasColMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void CblasGemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha,
               const double* a, int lda, const double* b, int ldb, double beta, double* c,
               int ldc) {
  cblas_dgemm(CblasColMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void CblasGemv(CBLAS_TRANSPOSE t, int m, int n, float alpha, const float* a, int lda,
               const float* x, int incx, float beta, float* y, int incy) {
  cblas_sgemv(CblasColMajor, t, m, n, alpha, a, lda, x, incx, beta, y, incy);
}
void CblasGemv(CBLAS_TRANSPOSE t, int m, int n, double alpha, const double* a, int lda,
               const double* x, int incx, double beta, double* y, int incy) {
  cblas_dgemv(CblasColMajor, t, m, n, alpha, a, lda, x, incx, beta, y, incy);
}
void CblasAxpy(int n, float alpha, const float* x, int incx, float* y, int incy) {
  cblas_saxpy(n, alpha, x, incx, y, incy);
}
void CblasAxpy(int n, double alpha, const double* x, int incx, double* y, int incy) {
  cblas_daxpy(n, alpha, x, incx, y, incy);
}
void CblasScal(int n, float alpha, float* x, int incx) { cblas_sscal(n, alpha, x, incx); }
void CblasScal(int n, double alpha, double* x, int incx) { cblas_dscal(n, alpha, x, incx); }
void CblasCopy(int n, const float* x, int incx, float* y, int incy) {
  cblas_scopy(n, x, incx, y, incy);
}
void CblasCopy(int n, const double* x, int incx, double* y, int incy) {
  cblas_dcopy(n, x, incx, y, incy);
}
float CblasDot(int n, const float* x, int incx, const float* y, int incy) {
  return cblas_sdot(n, x, incx, y, incy);
}
double CblasDot(int n, const double* x, int incx, const double* y, int incy) {
  return cblas_ddot(n, x, incx, y, incy);
}
float CblasNrm2(int n, const float* x, int incx) { return cblas_snrm2(n, x, incx); }
double CblasNrm2(int n, const double* x, int incx) { return cblas_dnrm2(n, x, incx); }
float CblasAsum(int n, const float* x, int incx) { return cblas_sasum(n, x, incx); }
double CblasAsum(int n, const double* x, int incx) { return cblas_dasum(n, x, incx); }

template <typename T>
T* Ptr(const DeviceMemoryBase& memory) {
  return static_cast<T*>(HostPointer(memory));
}

// One gemm (a batch of strided ones when g.batch_count > 1) from base pointers.
template <typename T>
void RunGemm(const GemmArgs& g, const T* a, const T* b, T* c) {
  const T alpha = static_cast<T>(g.alpha), beta = static_cast<T>(g.beta);
  for (int64_t i = 0; i < g.batch_count; ++i) {
    CblasGemm(ToCblas(g.trans_a), ToCblas(g.trans_b), static_cast<int>(g.m), static_cast<int>(g.n),
              static_cast<int>(g.k), alpha, a + i * g.stride_a, static_cast<int>(g.lda),
              b + i * g.stride_b, static_cast<int>(g.ldb), beta, c + i * g.stride_c,
              static_cast<int>(g.ldc));
  }
}

template <typename T>
void RunGemmBatched(const GemmArgs& g, const std::vector<T*>& a, const std::vector<T*>& b,
                    const std::vector<T*>& c) {
  GemmArgs one = g;
  one.batch_count = 1;
  for (size_t i = 0; i < a.size(); ++i) RunGemm<T>(one, a[i], b[i], c[i]);
}

template <typename T>
std::vector<T*> Pointers(const std::vector<DeviceMemoryBase>& memory) {
  std::vector<T*> out;
  out.reserve(memory.size());
  for (const DeviceMemoryBase& m : memory) out.push_back(Ptr<T>(m));
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<OpenBlas>> OpenBlas::Create(StreamExecutor* executor) {
  RILL_RETURN_IF_ERROR(CheckHostLibraryPlatform(executor, kName));
  Policy();  // Reads RILL_BLAS_THREADS and the library's thread count once.
  return std::unique_ptr<OpenBlas>(new OpenBlas(executor));
}

std::string OpenBlas::LibraryPath() {
  Dl_info info;
  void (*gemm)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint, float,
               const float*, blasint, const float*, blasint, float, float*, blasint) = &cblas_sgemm;
  if (dladdr(reinterpret_cast<void*>(gemm), &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

std::string OpenBlas::LibraryConfig() { return openblas_get_config(); }

int OpenBlas::ConfiguredThreads() { return Policy().fixed; }

absl::Status OpenBlas::Gemm(Stream* stream, const GemmArgs& g) {
  RILL_RETURN_IF_ERROR(GemmFits(g));
  if (g.type == DataType::kFloat) {
    return EnqueueOn(executor_, stream,
                     [g, a = Ptr<float>(g.a), b = Ptr<float>(g.b), c = Ptr<float>(g.c)] {
                       RunGemm<float>(g, a, b, c);
                     });
  }
  return EnqueueOn(executor_, stream,
                   [g, a = Ptr<double>(g.a), b = Ptr<double>(g.b), c = Ptr<double>(g.c)] {
                     RunGemm<double>(g, a, b, c);
                   });
}

absl::Status OpenBlas::GemmBatched(Stream* stream, const GemmBatchedArgs& args) {
  RILL_RETURN_IF_ERROR(GemmFits(args.shape));
  const GemmArgs& g = args.shape;
  if (g.type == DataType::kFloat) {
    return EnqueueOn(executor_, stream,
                     [g, a = Pointers<float>(args.a), b = Pointers<float>(args.b),
                      c = Pointers<float>(args.c)] { RunGemmBatched<float>(g, a, b, c); });
  }
  return EnqueueOn(executor_, stream,
                   [g, a = Pointers<double>(args.a), b = Pointers<double>(args.b),
                    c = Pointers<double>(args.c)] { RunGemmBatched<double>(g, a, b, c); });
}

namespace {

template <typename T>
void RunGemv(const GemvArgs& g) {
  CblasGemv(ToCblas(g.trans), static_cast<int>(g.m), static_cast<int>(g.n), static_cast<T>(g.alpha),
            Ptr<T>(g.a), static_cast<int>(g.lda), Ptr<T>(g.x), static_cast<int>(g.incx),
            static_cast<T>(g.beta), Ptr<T>(g.y), static_cast<int>(g.incy));
}

enum class Level1 { kAxpy, kScal, kCopy, kDot, kNrm2, kAsum };

template <typename T>
void RunLevel1(Level1 op, const VectorArgs& v) {
  const int n = static_cast<int>(v.n), incx = static_cast<int>(v.incx),
            incy = static_cast<int>(v.incy);
  T* x = Ptr<T>(v.x);
  switch (op) {
    case Level1::kAxpy:
      CblasAxpy(n, static_cast<T>(v.alpha), x, incx, Ptr<T>(v.y), incy);
      break;
    case Level1::kScal:
      CblasScal(n, static_cast<T>(v.alpha), x, incx);
      break;
    case Level1::kCopy:
      CblasCopy(n, x, incx, Ptr<T>(v.y), incy);
      break;
    case Level1::kDot:
      *Ptr<T>(v.result) = CblasDot(n, x, incx, Ptr<T>(v.y), incy);
      break;
    case Level1::kNrm2:
      *Ptr<T>(v.result) = CblasNrm2(n, x, incx);
      break;
    case Level1::kAsum:
      *Ptr<T>(v.result) = CblasAsum(n, x, incx);
      break;
  }
}

absl::Status EnqueueLevel1(StreamExecutor* owner, Stream* stream, Level1 op, const VectorArgs& v) {
  RILL_RETURN_IF_ERROR(VectorFits(v));
  if (v.type == DataType::kFloat)
    return EnqueueOn(owner, stream, [op, v] { RunLevel1<float>(op, v); });
  return EnqueueOn(owner, stream, [op, v] { RunLevel1<double>(op, v); });
}

}  // namespace

absl::Status OpenBlas::Gemv(Stream* stream, const GemvArgs& g) {
  for (auto [name, value] : {std::pair<const char*, int64_t>{"m", g.m},
                             {"n", g.n},
                             {"lda", g.lda},
                             {"incx", g.incx},
                             {"incy", g.incy}}) {
    RILL_RETURN_IF_ERROR(Fits(name, value));
  }
  if (g.type == DataType::kFloat) return EnqueueOn(executor_, stream, [g] { RunGemv<float>(g); });
  return EnqueueOn(executor_, stream, [g] { RunGemv<double>(g); });
}

absl::Status OpenBlas::Axpy(Stream* stream, const VectorArgs& v) {
  return EnqueueLevel1(executor_, stream, Level1::kAxpy, v);
}
absl::Status OpenBlas::Scal(Stream* stream, const VectorArgs& v) {
  return EnqueueLevel1(executor_, stream, Level1::kScal, v);
}
absl::Status OpenBlas::Copy(Stream* stream, const VectorArgs& v) {
  return EnqueueLevel1(executor_, stream, Level1::kCopy, v);
}
absl::Status OpenBlas::Dot(Stream* stream, const VectorArgs& v) {
  return EnqueueLevel1(executor_, stream, Level1::kDot, v);
}
absl::Status OpenBlas::Nrm2(Stream* stream, const VectorArgs& v) {
  return EnqueueLevel1(executor_, stream, Level1::kNrm2, v);
}
absl::Status OpenBlas::Asum(Stream* stream, const VectorArgs& v) {
  return EnqueueLevel1(executor_, stream, Level1::kAsum, v);
}

namespace {

absl::StatusOr<std::unique_ptr<PluginInterface>> CreateOpenBlas(StreamExecutor* executor) {
  absl::StatusOr<std::unique_ptr<OpenBlas>> blas = OpenBlas::Create(executor);
  if (!blas.ok()) return blas.status();
  return std::unique_ptr<PluginInterface>(std::move(*blas));
}

}  // namespace

RILL_REGISTER_HOST_LIBRARY_PLUGIN(openblas, PluginKind::kBlas, OpenBlas::kName, CreateOpenBlas,
                                  /*make_default=*/true);

}  // namespace rill
