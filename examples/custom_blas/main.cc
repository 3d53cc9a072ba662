// Registers the naive BLAS plugin after start-up, selects it on executor 0,
// runs a gemm through Stream::ThenBlasGemm, checks it against a reference and
// prints which plugin ran. Exits 0 on success, 1 on any failure.
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "naive_blas.h"
#include "rill/rill.h"

namespace {

absl::Status Run() {
  RILL_RETURN_IF_ERROR(RegisterNaiveBlas());
  RILL_ASSIGN_OR_RETURN(rill::Platform * host,
                        rill::PlatformManager::Default().PlatformWithName("host"));
  RILL_ASSIGN_OR_RETURN(rill::StreamExecutor * executor, host->ExecutorForDevice(0));
  RILL_RETURN_IF_ERROR(executor->SetPlugin(rill::PluginKind::kBlas, NaiveBlas::kName));

  // C (m x n) = A (m x k) * B (k x n), column-major.
  constexpr int64_t m = 5, n = 4, k = 3;
  std::vector<float> a(m * k), b(k * n), c(m * n, -1.f);
  for (int64_t i = 0; i < m * k; ++i) a[i] = static_cast<float>(i % 7) - 3.f;
  for (int64_t i = 0; i < k * n; ++i) b[i] = 0.5f * static_cast<float>(i % 5);
  RILL_ASSIGN_OR_RETURN(auto da, executor->AllocateOwnedArray<float>(a.size()));
  RILL_ASSIGN_OR_RETURN(auto db, executor->AllocateOwnedArray<float>(b.size()));
  RILL_ASSIGN_OR_RETURN(auto dc, executor->AllocateOwnedArray<float>(c.size()));
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<rill::Stream> stream, executor->CreateStream());
  stream->ThenMemcpy(da.ptr(), a.data(), a.size() * sizeof(float))
      .ThenMemcpy(db.ptr(), b.data(), b.size() * sizeof(float))
      .ThenBlasGemm<float>(rill::Transpose::kNoTranspose, rill::Transpose::kNoTranspose, m, n, k,
                           1.f, *da, m, *db, k, 0.f, dc.ptr(), m)
      .ThenMemcpy(c.data(), *dc, c.size() * sizeof(float));
  RILL_RETURN_IF_ERROR(stream->BlockHostUntilDone());

  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < m; ++i) {
      float ref = 0;
      for (int64_t l = 0; l < k; ++l) ref += a[i + l * m] * b[l + j * k];
      if (std::fabs(c[i + j * m] - ref) > 1e-5f) {
        return absl::InternalError("c[" + std::to_string(i) + "," + std::to_string(j) +
                                   "] = " + std::to_string(c[i + j * m]) + ", expected " +
                                   std::to_string(ref));
      }
    }
  }
  auto* naive = dynamic_cast<NaiveBlas*>(executor->AsBlas());
  if (naive == nullptr || naive->gemms_run() != 1)
    return absl::InternalError("the naive plugin did not run");
  RILL_ASSIGN_OR_RETURN(std::string name, executor->PluginName(rill::PluginKind::kBlas));
  std::printf("custom_blas: %s ran ThenBlasGemm (%lldx%lldx%lld) on %s: OK\n", name.c_str(),
              static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
              executor->DebugName().c_str());

  // The naive plugin lacks gemv: the stream says so, with the call and plugin.
  stream->ThenBlasGemv<float>(rill::Transpose::kNoTranspose, m, k, 1.f, *da, m, *db, 1, 0.f,
                              dc.ptr(), 1);
  std::printf("custom_blas: gemv through it: %s\n", stream->status().ToString().c_str());
  if (stream->status().code() != absl::StatusCode::kUnimplemented) {
    return absl::InternalError("expected Unimplemented from the naive gemv");
  }

  // Other executors keep the registry's default.
  for (const auto& entry : rill::PluginRegistry::Default().List()) {
    if (entry.kind == rill::PluginKind::kBlas) {
      std::printf("custom_blas: registered BLAS plugin %s%s\n", entry.name.c_str(),
                  entry.is_default ? " (default)" : "");
    }
  }
  return absl::OkStatus();
}

}  // namespace

int main() {
  absl::Status status = Run();
  if (!status.ok()) {
    std::printf("custom_blas: FAILED: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
