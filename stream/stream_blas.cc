// Stream::ThenBlas*: one-line forwards to the executor's BlasSupport.

#include "rill/plugins/blas/blas.h"
#include "rill/stream/stream_plugin.h"

namespace rill {
namespace {

std::string GemmContext(const char* name, const GemmArgs& g) {
  return absl::StrCat(name, "(", DataTypeName(g.type), ", ", TransposeName(g.trans_a),
                      TransposeName(g.trans_b), ", m=", g.m, ", n=", g.n, ", k=", g.k,
                      ", lda=", g.lda, ", ldb=", g.ldb, ", ldc=", g.ldc, ", batch=", g.batch_count,
                      ")");
}

std::string VectorContext(const char* name, const VectorArgs& v) {
  return absl::StrCat(name, "(", DataTypeName(v.type), ", n=", v.n, ", incx=", v.incx,
                      ", incy=", v.incy, ")");
}

}  // namespace

Stream& Stream::ThenBlasGemm(const GemmArgs& args) {
  return ThenPlugin<BlasSupport>([&] { return GemmContext("ThenBlasGemm", args); },
                                 [&](BlasSupport* blas) { return blas->DoBlasGemm(this, args); });
}

Stream& Stream::ThenBlasGemmBatched(const GemmBatchedArgs& args) {
  return ThenPlugin<BlasSupport>(
      [&] {
        GemmArgs shape = args.shape;
        shape.batch_count = static_cast<int64_t>(args.a.size());
        return GemmContext("ThenBlasGemmBatched", shape);
      },
      [&](BlasSupport* blas) { return blas->DoBlasGemmBatched(this, args); });
}

Stream& Stream::ThenBlasGemv(const GemvArgs& g) {
  return ThenPlugin<BlasSupport>(
      [&] {
        return absl::StrCat("ThenBlasGemv(", DataTypeName(g.type), ", ", TransposeName(g.trans),
                            ", m=", g.m, ", n=", g.n, ", lda=", g.lda, ")");
      },
      [&](BlasSupport* blas) { return blas->DoBlasGemv(this, g); });
}

#define RILL_STREAM_BLAS_VECTOR(Name)                                       \
  Stream& Stream::ThenBlas##Name(const VectorArgs& args) {                  \
    return ThenPlugin<BlasSupport>(                                         \
        [&] { return VectorContext("ThenBlas" #Name, args); },              \
        [&](BlasSupport* blas) { return blas->DoBlas##Name(this, args); }); \
  }
RILL_STREAM_BLAS_VECTOR(Axpy)
RILL_STREAM_BLAS_VECTOR(Scal)
RILL_STREAM_BLAS_VECTOR(Copy)
RILL_STREAM_BLAS_VECTOR(Dot)
RILL_STREAM_BLAS_VECTOR(Nrm2)
RILL_STREAM_BLAS_VECTOR(Asum)
#undef RILL_STREAM_BLAS_VECTOR

}  // namespace rill
