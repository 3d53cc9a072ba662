#include "rill/plugins/blas/blis/blis_blas.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

// Declarations and types only: nothing here references a BLIS symbol at
// link time (decltype(&bli_...) is unevaluated); every function is found
// with dlsym on the private handle.
#include <blis.h>

#include "absl/strings/str_cat.h"
#include "rill/base/env_settings.h"
#include "rill/base/logging.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/host/host_thread_budget.h"
#include "rill/plugins/host_library.h"
#include "rill/stream/stream.h"

#ifndef RILL_BLIS_LIBRARY
#define RILL_BLIS_LIBRARY "libblis.so.4"
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RILL_BLIS_SANITIZED 1
#else
#define RILL_BLIS_SANITIZED 0
#endif

namespace rill {
namespace {

// A pair of typed entry points, picked by element type.
template <typename F, typename D>
struct Typed {
  F f = nullptr;
  D d = nullptr;
  template <typename T>
  auto get() const {
    if constexpr (std::is_same_v<T, float>) {
      return f;
    } else {
      return d;
    }
  }
};

// The privately loaded library: its handle and the functions used.
struct BlisApi {
  absl::Status status;  // Why it is unusable, if it is.
  void* handle = nullptr;
  bool deepbind = false;
  Typed<decltype(&bli_sgemm_ex), decltype(&bli_dgemm_ex)> gemm;
  Typed<decltype(&bli_sgemv), decltype(&bli_dgemv)> gemv;
  Typed<decltype(&bli_saxpyv), decltype(&bli_daxpyv)> axpy;
  Typed<decltype(&bli_sscalv), decltype(&bli_dscalv)> scal;
  Typed<decltype(&bli_scopyv), decltype(&bli_dcopyv)> copy;
  Typed<decltype(&bli_sdotv), decltype(&bli_ddotv)> dot;
  Typed<decltype(&bli_snormfv), decltype(&bli_dnormfv)> nrm2;
  Typed<decltype(&bli_sasumv), decltype(&bli_dasumv)> asum;
  decltype(&bli_info_get_version_str) version = nullptr;
};

template <typename Fn>
bool Resolve(BlisApi* api, Fn* fn, const char* name) {
  *fn = reinterpret_cast<Fn>(dlsym(api->handle, name));
  if (*fn == nullptr) {
    const char* why = dlerror();
    api->status = absl::FailedPreconditionError(absl::StrCat(
        "blis: ", RILL_BLIS_LIBRARY, " lacks ", name, ": ", why != nullptr ? why : "not found"));
  }
  return *fn != nullptr;
}

BlisApi* LoadApi() {
  auto* api = new BlisApi();
  // On unless RILL_BLIS_DEEPBIND=0; a value the table of settings refuses
  // (base/env_settings.cc) is logged and counts as unset.
  const absl::StatusOr<std::optional<bool>> deepbind_env = EnvBool("RILL_BLIS_DEEPBIND");
  if (!deepbind_env.ok()) {
    RILL_LOG(WARNING) << "blis: " << deepbind_env.status().message() << "; using RTLD_DEEPBIND";
  }
  api->deepbind = !RILL_BLIS_SANITIZED && (!deepbind_env.ok() || deepbind_env->value_or(true));
  int flags = RTLD_NOW | RTLD_LOCAL;
#ifdef RTLD_DEEPBIND
  if (api->deepbind) flags |= RTLD_DEEPBIND;
#else
  api->deepbind = false;
#endif
  api->handle = dlopen(RILL_BLIS_LIBRARY, flags);
  if (api->handle == nullptr && std::strcmp(RILL_BLIS_LIBRARY, "libblis.so.4") != 0) {
    api->handle = dlopen("libblis.so.4", flags);  // The configure-time path moved: try the soname.
  }
  if (api->handle == nullptr) {
    const char* why = dlerror();
    api->status = absl::FailedPreconditionError(absl::StrCat(
        "blis: cannot load ", RILL_BLIS_LIBRARY,
        " (or libblis.so.4): ", why != nullptr ? why : "unknown error", "; install libblis4"));
    return api;
  }
  const bool ok =
      Resolve(api, &api->gemm.f, "bli_sgemm_ex") && Resolve(api, &api->gemm.d, "bli_dgemm_ex") &&
      Resolve(api, &api->gemv.f, "bli_sgemv") && Resolve(api, &api->gemv.d, "bli_dgemv") &&
      Resolve(api, &api->axpy.f, "bli_saxpyv") && Resolve(api, &api->axpy.d, "bli_daxpyv") &&
      Resolve(api, &api->scal.f, "bli_sscalv") && Resolve(api, &api->scal.d, "bli_dscalv") &&
      Resolve(api, &api->copy.f, "bli_scopyv") && Resolve(api, &api->copy.d, "bli_dcopyv") &&
      Resolve(api, &api->dot.f, "bli_sdotv") && Resolve(api, &api->dot.d, "bli_ddotv") &&
      Resolve(api, &api->nrm2.f, "bli_snormfv") && Resolve(api, &api->nrm2.d, "bli_dnormfv") &&
      Resolve(api, &api->asum.f, "bli_sasumv") && Resolve(api, &api->asum.d, "bli_dasumv") &&
      Resolve(api, &api->version, "bli_info_get_version_str");
  if (!ok) return api;
  void (*init)() = nullptr;
  if (Resolve(api, &init, "bli_init")) init();  // Pay BLIS's set-up now, not in the first call.
  return api;
}

// Loaded once, never unloaded (BLIS's OpenMP threads may outlive any user).
const BlisApi& Api() {
  static const BlisApi* api = LoadApi();
  return *api;
}

// --- Thread policy (see the class comment and plugins/blas/README.md).

// The library's own variables (BLIS_NUM_THREADS, OMP_NUM_THREADS): a
// positive count, else 0.
int PositiveEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return 0;
  const int n = std::atoi(value);
  return n > 0 ? n : 0;
}

// RILL_BLAS_THREADS, 0 for auto; a value the table of settings refuses
// (base/env_settings.cc) is logged and counts as auto.
int ThreadsFromEnv() {
  const absl::StatusOr<std::optional<int64_t>> n = EnvInt("RILL_BLAS_THREADS");
  if (!n.ok()) {
    RILL_LOG(WARNING) << "blis: " << n.status().message() << "; using auto";
    return 0;
  }
  return n->has_value() ? static_cast<int>(**n) : 0;
}

struct ThreadPolicy {
  int fixed = ThreadsFromEnv();  // 0: auto.
  int cores = [] {
    if (int n = PositiveEnv("BLIS_NUM_THREADS")) return n;
    if (int n = PositiveEnv("OMP_NUM_THREADS")) return n;
    return HostCores();
  }();
};

ThreadPolicy& Policy() {
  static ThreadPolicy* policy = new ThreadPolicy();  // Never destroyed.
  return *policy;
}

// Below this many multiply-adds (about 256^3) a gemm runs on one thread in
// auto mode: BLIS 0.9 threads even tiny gemms, and its OpenMP barriers cost
// more than they save there (measured: pipelined 32^3 sgemms ran 2.5 GFLOP/s
// on one thread, 0.02 on two with the cores shared).
constexpr double kThreadedGemmWork = 1 << 24;

// Counts a call in flight for its scope (platform/host/host_thread_budget.h)
// and gives it its thread count.
class CallScope {
 public:
  explicit CallScope(double work) : policy_(Policy()) {
    threads_ = policy_.fixed > 0          ? policy_.fixed
               : work < kThreadedGemmWork ? 1
                                          : scope_.Share(policy_.cores);
  }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
  int threads() const { return threads_; }

 private:
  HostComputeScope scope_;  // Counts this call with every host library call running.
  ThreadPolicy& policy_;
  int threads_;
};

// --- Enqueueing.

// `work(threads)` runs on the stream's thread; `flops` sizes its thread count.
template <typename Work>
absl::Status EnqueueOn(StreamExecutor* owner, Stream* stream, Work work, double flops = 0) {
  return EnqueueHostWork(owner, stream, "blis", "AsBlas()",
                         [work = std::move(work), flops]() mutable {
                           CallScope scope(flops);
                           work(scope.threads());
                         });
}

// Multiply-adds of one gemm of the call (each runs on its own).
double GemmWork(const GemmArgs& g) { return static_cast<double>(g.m) * g.n * g.k; }

trans_t ToBlis(Transpose t) {
  return t == Transpose::kTranspose ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE;
}

template <typename T>
T* Ptr(const DeviceMemoryBase& memory) {
  return static_cast<T*>(HostPointer(memory));
}

// One gemm (a batch of strided ones when g.batch_count > 1) from base
// pointers. Column-major: row stride 1, column stride ld.
template <typename T>
void RunGemm(const GemmArgs& g, T* a, T* b, T* c, int threads) {
  T alpha = static_cast<T>(g.alpha), beta = static_cast<T>(g.beta);
  rntm_t rntm = BLIS_RNTM_INITIALIZER;
  bli_rntm_set_num_threads_only(threads, &rntm);
  auto gemm = Api().gemm.get<T>();
  for (int64_t i = 0; i < g.batch_count; ++i) {
    gemm(ToBlis(g.trans_a), ToBlis(g.trans_b), g.m, g.n, g.k, &alpha, a + i * g.stride_a, 1, g.lda,
         b + i * g.stride_b, 1, g.ldb, &beta, c + i * g.stride_c, 1, g.ldc, nullptr, &rntm);
  }
}

template <typename T>
std::vector<T*> Pointers(const std::vector<DeviceMemoryBase>& memory) {
  std::vector<T*> out;
  out.reserve(memory.size());
  for (const DeviceMemoryBase& m : memory) out.push_back(Ptr<T>(m));
  return out;
}

template <typename T>
void RunGemv(const GemvArgs& g) {
  T alpha = static_cast<T>(g.alpha), beta = static_cast<T>(g.beta);
  Api().gemv.get<T>()(ToBlis(g.trans), BLIS_NO_CONJUGATE, g.m, g.n, &alpha, Ptr<T>(g.a), 1, g.lda,
                      Ptr<T>(g.x), g.incx, &beta, Ptr<T>(g.y), g.incy);
}

enum class Level1 { kAxpy, kScal, kCopy, kDot, kNrm2, kAsum };

template <typename T>
void RunLevel1(Level1 op, const VectorArgs& v) {
  const BlisApi& api = Api();
  T alpha = static_cast<T>(v.alpha);
  T* x = Ptr<T>(v.x);
  switch (op) {
    case Level1::kAxpy:
      api.axpy.get<T>()(BLIS_NO_CONJUGATE, v.n, &alpha, x, v.incx, Ptr<T>(v.y), v.incy);
      break;
    case Level1::kScal:
      api.scal.get<T>()(BLIS_NO_CONJUGATE, v.n, &alpha, x, v.incx);
      break;
    case Level1::kCopy:
      api.copy.get<T>()(BLIS_NO_CONJUGATE, v.n, x, v.incx, Ptr<T>(v.y), v.incy);
      break;
    case Level1::kDot:
      api.dot.get<T>()(BLIS_NO_CONJUGATE, BLIS_NO_CONJUGATE, v.n, x, v.incx, Ptr<T>(v.y), v.incy,
                       Ptr<T>(v.result));
      break;
    case Level1::kNrm2:
      api.nrm2.get<T>()(v.n, x, v.incx, Ptr<T>(v.result));
      break;
    case Level1::kAsum:
      api.asum.get<T>()(v.n, x, v.incx, Ptr<T>(v.result));
      break;
  }
}

absl::Status EnqueueLevel1(StreamExecutor* owner, Stream* stream, Level1 op, const VectorArgs& v) {
  if (v.type == DataType::kFloat)
    return EnqueueOn(owner, stream, [op, v](int) { RunLevel1<float>(op, v); });
  return EnqueueOn(owner, stream, [op, v](int) { RunLevel1<double>(op, v); });
}

}  // namespace

absl::Status Blis::Load() { return Api().status; }

absl::StatusOr<std::unique_ptr<Blis>> Blis::Create(StreamExecutor* executor) {
  RILL_RETURN_IF_ERROR(CheckHostLibraryPlatform(executor, kName));
  RILL_RETURN_IF_ERROR(Load());
  Policy();
  return std::unique_ptr<Blis>(new Blis(executor));
}

std::string Blis::LibraryPath() {
  if (!Load().ok()) return "";
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(Api().gemm.f), &info) == 0 || info.dli_fname == nullptr)
    return "";
  return info.dli_fname;
}

std::string Blis::LibraryVersion() {
  if (!Load().ok()) return "";
  return Api().version();
}

absl::StatusOr<void*> Blis::Symbol(const char* name) {
  RILL_RETURN_IF_ERROR(Load());
  void* symbol = dlsym(Api().handle, name);
  if (symbol == nullptr) return absl::NotFoundError(absl::StrCat("blis: no symbol ", name));
  return symbol;
}

bool Blis::DeepBind() { return Load().ok() && Api().deepbind; }

int Blis::ThreadsPerCall(double work) {
  if (Policy().fixed > 0) return Policy().fixed;
  return work < kThreadedGemmWork ? 1 : Policy().cores;
}

absl::Status Blis::Gemm(Stream* stream, const GemmArgs& g) {
  if (g.type == DataType::kFloat) {
    return EnqueueOn(
        executor_, stream,
        [g, a = Ptr<float>(g.a), b = Ptr<float>(g.b), c = Ptr<float>(g.c)](int threads) {
          RunGemm<float>(g, a, b, c, threads);
        },
        GemmWork(g));
  }
  return EnqueueOn(
      executor_, stream,
      [g, a = Ptr<double>(g.a), b = Ptr<double>(g.b), c = Ptr<double>(g.c)](int threads) {
        RunGemm<double>(g, a, b, c, threads);
      },
      GemmWork(g));
}

absl::Status Blis::GemmBatched(Stream* stream, const GemmBatchedArgs& args) {
  GemmArgs g = args.shape;
  g.batch_count = 1;
  if (g.type == DataType::kFloat) {
    return EnqueueOn(
        executor_, stream,
        [g, a = Pointers<float>(args.a), b = Pointers<float>(args.b),
         c = Pointers<float>(args.c)](int threads) {
          for (size_t i = 0; i < a.size(); ++i) RunGemm<float>(g, a[i], b[i], c[i], threads);
        },
        GemmWork(g));
  }
  return EnqueueOn(
      executor_, stream,
      [g, a = Pointers<double>(args.a), b = Pointers<double>(args.b),
       c = Pointers<double>(args.c)](int threads) {
        for (size_t i = 0; i < a.size(); ++i) RunGemm<double>(g, a[i], b[i], c[i], threads);
      },
      GemmWork(g));
}

absl::Status Blis::Gemv(Stream* stream, const GemvArgs& g) {
  if (g.type == DataType::kFloat)
    return EnqueueOn(executor_, stream, [g](int) { RunGemv<float>(g); });
  return EnqueueOn(executor_, stream, [g](int) { RunGemv<double>(g); });
}

absl::Status Blis::Axpy(Stream* stream, const VectorArgs& v) {
  return EnqueueLevel1(executor_, stream, Level1::kAxpy, v);
}
absl::Status Blis::Scal(Stream* stream, const VectorArgs& v) {
  return EnqueueLevel1(executor_, stream, Level1::kScal, v);
}
absl::Status Blis::Copy(Stream* stream, const VectorArgs& v) {
  return EnqueueLevel1(executor_, stream, Level1::kCopy, v);
}
absl::Status Blis::Dot(Stream* stream, const VectorArgs& v) {
  return EnqueueLevel1(executor_, stream, Level1::kDot, v);
}
absl::Status Blis::Nrm2(Stream* stream, const VectorArgs& v) {
  return EnqueueLevel1(executor_, stream, Level1::kNrm2, v);
}
absl::Status Blis::Asum(Stream* stream, const VectorArgs& v) {
  return EnqueueLevel1(executor_, stream, Level1::kAsum, v);
}

namespace {

absl::StatusOr<std::unique_ptr<PluginInterface>> CreateBlis(StreamExecutor* executor) {
  absl::StatusOr<std::unique_ptr<Blis>> blas = Blis::Create(executor);
  if (!blas.ok()) return blas.status();
  return std::unique_ptr<PluginInterface>(std::move(*blas));
}

}  // namespace

RILL_REGISTER_HOST_LIBRARY_PLUGIN(blis, PluginKind::kBlas, Blis::kName, CreateBlis,
                                  /*make_default=*/false);

}  // namespace rill
