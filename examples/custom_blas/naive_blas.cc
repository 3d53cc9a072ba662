#include "naive_blas.h"

#include <memory>

#include "rill/executor/device_memory.h"
#include "rill/platform/host/host_platform.h"
#include "rill/rill.h"

namespace {

template <typename T>
T* Ptr(const rill::DeviceMemoryBase& memory) {
  return static_cast<T*>(rill::HostPointer(memory));
}

template <typename T>
void NaiveGemm(const rill::GemmArgs& g) {
  const bool ta = g.trans_a == rill::Transpose::kTranspose,
             tb = g.trans_b == rill::Transpose::kTranspose;
  for (int64_t s = 0; s < g.batch_count; ++s) {
    const T* a = Ptr<T>(g.a) + s * g.stride_a;
    const T* b = Ptr<T>(g.b) + s * g.stride_b;
    T* c = Ptr<T>(g.c) + s * g.stride_c;
    for (int64_t j = 0; j < g.n; ++j) {
      for (int64_t i = 0; i < g.m; ++i) {
        T sum = 0;
        for (int64_t l = 0; l < g.k; ++l) {
          sum += (ta ? a[l + i * g.lda] : a[i + l * g.lda]) *
                 (tb ? b[j + l * g.ldb] : b[l + j * g.ldb]);
        }
        T& out = c[i + j * g.ldc];
        out = static_cast<T>(g.alpha) * sum + (g.beta == 0 ? T(0) : static_cast<T>(g.beta) * out);
      }
    }
  }
}

template <typename T>
void NaiveAxpy(const rill::VectorArgs& v) {
  const T* x = Ptr<T>(v.x);
  T* y = Ptr<T>(v.y);
  for (int64_t i = 0; i < v.n; ++i) y[i * v.incy] += static_cast<T>(v.alpha) * x[i * v.incx];
}

absl::Status Missing(const char* op) {
  return absl::UnimplementedError(std::string("the naive BLAS has no ") + op);
}

}  // namespace

// Work goes to the stream's own queue (on the host: its worker thread), so it
// runs in stream order after everything enqueued before it.
absl::Status NaiveBlas::Gemm(rill::Stream* stream, const rill::GemmArgs& args) {
  return stream->implementation()->DoHostCallback([this, args]() -> absl::Status {
    if (args.type == rill::DataType::kFloat) {
      NaiveGemm<float>(args);
    } else {
      NaiveGemm<double>(args);
    }
    gemms_run_.fetch_add(1);
    return absl::OkStatus();
  });
}

absl::Status NaiveBlas::Axpy(rill::Stream* stream, const rill::VectorArgs& args) {
  return stream->implementation()->DoHostCallback([args]() -> absl::Status {
    if (args.type == rill::DataType::kFloat) {
      NaiveAxpy<float>(args);
    } else {
      NaiveAxpy<double>(args);
    }
    return absl::OkStatus();
  });
}

absl::Status NaiveBlas::GemmBatched(rill::Stream*, const rill::GemmBatchedArgs&) {
  return Missing("gemm_batched");
}
absl::Status NaiveBlas::Gemv(rill::Stream*, const rill::GemvArgs&) { return Missing("gemv"); }
absl::Status NaiveBlas::Scal(rill::Stream*, const rill::VectorArgs&) { return Missing("scal"); }
absl::Status NaiveBlas::Copy(rill::Stream*, const rill::VectorArgs&) { return Missing("copy"); }
absl::Status NaiveBlas::Dot(rill::Stream*, const rill::VectorArgs&) { return Missing("dot"); }
absl::Status NaiveBlas::Nrm2(rill::Stream*, const rill::VectorArgs&) { return Missing("nrm2"); }
absl::Status NaiveBlas::Asum(rill::Stream*, const rill::VectorArgs&) { return Missing("asum"); }

absl::Status RegisterNaiveBlas() {
  return rill::PluginRegistry::Default().Register(
      rill::kHostPlatformId, rill::PluginKind::kBlas, NaiveBlas::kName,
      [](rill::StreamExecutor*) -> absl::StatusOr<std::unique_ptr<rill::PluginInterface>> {
        return std::make_unique<NaiveBlas>();
      });
}
