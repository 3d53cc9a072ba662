#ifndef RILL_PLUGINS_BLAS_BLAS_H_
#define RILL_PLUGINS_BLAS_BLAS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "rill/executor/device_memory.h"
#include "rill/plugins/plugin.h"

namespace rill {

class Stream;

// BLAS conventions: matrices are column-major, as in reference BLAS; strides
// (`inc`) and leading dimensions (`ld`) are in elements; alpha and beta are
// carried as double and converted to the call's DataType.
enum class Transpose { kNoTranspose, kTranspose };
const char* TransposeName(Transpose t);

// C = alpha * op(A) * op(B) + beta * C, op(A) m x k, op(B) k x n, C m x n.
// With batch_count > 1, matrix i of A starts stride_a elements after matrix
// i - 1 (likewise B and C): gemm strided-batched.
struct GemmArgs {
  DataType type = DataType::kFloat;
  Transpose trans_a = Transpose::kNoTranspose;
  Transpose trans_b = Transpose::kNoTranspose;
  int64_t m = 0, n = 0, k = 0;
  double alpha = 1;
  DeviceMemoryBase a;
  int64_t lda = 0;
  DeviceMemoryBase b;
  int64_t ldb = 0;
  double beta = 0;
  DeviceMemoryBase c;
  int64_t ldc = 0;
  int64_t batch_count = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

// Gemm over arrays of matrices: a[i], b[i], c[i] for i < a.size(); the
// shape fields of `shape` apply to each (its a, b, c, batch_count and
// strides are ignored).
struct GemmBatchedArgs {
  GemmArgs shape;
  std::vector<DeviceMemoryBase> a, b, c;
};

// y = alpha * op(A) * x + beta * y, A m x n.
struct GemvArgs {
  DataType type = DataType::kFloat;
  Transpose trans = Transpose::kNoTranspose;
  int64_t m = 0, n = 0;
  double alpha = 1;
  DeviceMemoryBase a;
  int64_t lda = 0;
  DeviceMemoryBase x;
  int64_t incx = 1;
  double beta = 0;
  DeviceMemoryBase y;
  int64_t incy = 1;
};

// Level-1 routines over n elements of x (and y): axpy (y += alpha x), scal
// (x *= alpha), copy (y = x), dot (result = x . y), nrm2 (result = |x|_2),
// asum (result = sum |x_i|). `result` is one element of device memory.
struct VectorArgs {
  DataType type = DataType::kFloat;
  int64_t n = 0;
  double alpha = 1;
  DeviceMemoryBase x;
  int64_t incx = 1;
  DeviceMemoryBase y;
  int64_t incy = 1;
  DeviceMemoryBase result;
};

// The BLAS interface of one executor. Each Do* call checks its arguments
// (InvalidArgument naming the bad values: non-positive sizes, leading
// dimensions or strides too small, buffers too small for the shape, a zero
// batch) and then enqueues the operation on `stream`, which must belong to
// the plugin's executor. Errors found while the work runs land in the
// stream's status. Stream::ThenBlas* forward here.
//
// An implementation overrides the protected virtuals, which run only on
// checked arguments. Thread-safe: calls may come from several streams.
class BlasSupport : public PluginInterface {
 public:
  static constexpr PluginKind kKind = PluginKind::kBlas;

  // What a capability query asks about: the routine ("gemm", "gemm_batched",
  // "gemv", "axpy", "scal", "copy", "dot", "nrm2", "asum"), the element type
  // and, for the matrix routines, the sizes.
  struct Operation {
    const char* routine = "gemm";
    DataType type = DataType::kFloat;
    int64_t m = 0, n = 0, k = 0;
    std::string ToString() const;  // "gemm float 64x64x64".
  };
  // Whether this plugin runs `op`: OK, or Unimplemented saying why. Every
  // DoBlas* call asks before it dispatches; a call this plugin does not
  // support goes to its fallback() (plugins/plugin_chain.h). The default
  // supports everything.
  virtual absl::Status Supports(const Operation& op) const;

  absl::Status DoBlasGemm(Stream* stream, const GemmArgs& args);  // batch_count >= 1
  absl::Status DoBlasGemmBatched(Stream* stream, const GemmBatchedArgs& args);
  absl::Status DoBlasGemv(Stream* stream, const GemvArgs& args);
  absl::Status DoBlasAxpy(Stream* stream, const VectorArgs& args);
  absl::Status DoBlasScal(Stream* stream, const VectorArgs& args);
  absl::Status DoBlasCopy(Stream* stream, const VectorArgs& args);
  absl::Status DoBlasDot(Stream* stream, const VectorArgs& args);
  absl::Status DoBlasNrm2(Stream* stream, const VectorArgs& args);
  absl::Status DoBlasAsum(Stream* stream, const VectorArgs& args);

 protected:
  virtual absl::Status Gemm(Stream* stream, const GemmArgs& args) = 0;
  virtual absl::Status GemmBatched(Stream* stream, const GemmBatchedArgs& args) = 0;
  virtual absl::Status Gemv(Stream* stream, const GemvArgs& args) = 0;
  virtual absl::Status Axpy(Stream* stream, const VectorArgs& args) = 0;
  virtual absl::Status Scal(Stream* stream, const VectorArgs& args) = 0;
  virtual absl::Status Copy(Stream* stream, const VectorArgs& args) = 0;
  virtual absl::Status Dot(Stream* stream, const VectorArgs& args) = 0;
  virtual absl::Status Nrm2(Stream* stream, const VectorArgs& args) = 0;
  virtual absl::Status Asum(Stream* stream, const VectorArgs& args) = 0;
};

}  // namespace rill

#endif  // RILL_PLUGINS_BLAS_BLAS_H_
