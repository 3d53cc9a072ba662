#ifndef CUSTOM_BLAS_NAIVE_BLAS_H_
#define CUSTOM_BLAS_NAIVE_BLAS_H_

#include <atomic>
#include <string>

#include "rill/plugins/blas/blas.h"

// A BLAS plugin written outside Rill: plain loops on the stream's thread.
// Gemm (with strided batches) and Axpy are implemented; the rest answer
// Unimplemented. Rill checks every argument before these methods run.
// Thread-safe.
class NaiveBlas : public rill::BlasSupport {
 public:
  static constexpr char kName[] = "naive";
  std::string Name() const override { return kName; }
  // How many gemms this plugin has run.
  int gemms_run() const { return gemms_run_.load(); }

 protected:
  absl::Status Gemm(rill::Stream* stream, const rill::GemmArgs& args) override;
  absl::Status GemmBatched(rill::Stream* stream, const rill::GemmBatchedArgs& args) override;
  absl::Status Gemv(rill::Stream* stream, const rill::GemvArgs& args) override;
  absl::Status Axpy(rill::Stream* stream, const rill::VectorArgs& args) override;
  absl::Status Scal(rill::Stream* stream, const rill::VectorArgs& args) override;
  absl::Status Copy(rill::Stream* stream, const rill::VectorArgs& args) override;
  absl::Status Dot(rill::Stream* stream, const rill::VectorArgs& args) override;
  absl::Status Nrm2(rill::Stream* stream, const rill::VectorArgs& args) override;
  absl::Status Asum(rill::Stream* stream, const rill::VectorArgs& args) override;

 private:
  std::atomic<int> gemms_run_{0};
};

// Registers "naive" for the host platform with PluginRegistry::Default().
absl::Status RegisterNaiveBlas();

#endif  // CUSTOM_BLAS_NAIVE_BLAS_H_
