// toy_demo: C = A * B through Stream::ThenBlasGemm on toy device 0, served
// by Rill's host BLAS plugin (which the toy backend registers for its
// platform), checked against a naive loop. Exits 0 when it matches, 1 on
// any failure, 77 (a skip for ctest) when no BLAS plugin was linked
// (TOY_DEMO_HAS_BLAS, set by CMakeLists.txt when rill::openblas is there).
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "rill/rill.h"

namespace {

absl::Status Run() {
  RILL_ASSIGN_OR_RETURN(rill::Platform * toy,
                        rill::PlatformManager::Default().PlatformWithName("toy"));
  RILL_ASSIGN_OR_RETURN(rill::StreamExecutor * executor, toy->ExecutorForDevice(0));
  RILL_ASSIGN_OR_RETURN(std::string blas, executor->PluginName(rill::PluginKind::kBlas));
  if (blas.empty()) return absl::NotFoundError("no BLAS plugin is registered for the toy platform");

  // C (m x n) = A (m x k) * B (k x n), column-major.
  constexpr int64_t m = 33, n = 20, k = 17;
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
      if (std::fabs(c[i + j * m] - ref) > 1e-4f) {
        return absl::InternalError("c[" + std::to_string(i) + "," + std::to_string(j) +
                                   "] = " + std::to_string(c[i + j * m]) + ", expected " +
                                   std::to_string(ref));
      }
    }
  }
  std::printf("toy_demo: %s ThenBlasGemm (%lldx%lldx%lld) on %s matches the naive loop\n",
              blas.c_str(), static_cast<long long>(m), static_cast<long long>(n),
              static_cast<long long>(k), executor->DebugName().c_str());
  return absl::OkStatus();
}

}  // namespace

int main() {
#ifndef TOY_DEMO_HAS_BLAS
  std::printf("toy_demo: skipped: built without a host BLAS plugin (rill::openblas)\n");
  return 77;
#endif
  absl::Status status = Run();
  if (!status.ok()) {
    std::printf("toy_demo: FAILED: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
