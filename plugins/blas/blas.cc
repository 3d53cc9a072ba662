#include "rill/plugins/blas/blas.h"

#include "absl/strings/str_cat.h"
#include "rill/base/checked_math.h"
#include "rill/plugins/plugin_chain.h"
#include "rill/plugins/plugin_check.h"

namespace rill {

const char* TransposeName(Transpose t) { return t == Transpose::kNoTranspose ? "N" : "T"; }

namespace {

absl::Status Positive(const char* name, int64_t value) {
  if (value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(name, "=", value, " must be > 0"));
}

// Elements spanned by a column-major rows x cols matrix with leading
// dimension ld (checked: ld >= rows, and no overflow).
absl::StatusOr<int64_t> MatrixElements(const char* name, int64_t rows, int64_t cols, int64_t ld) {
  if (ld < rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("ld", name, "=", ld, " is smaller than the ", rows, " rows of ", name));
  }
  return (CheckedInt<int64_t>(cols - 1) * ld + rows)
      .Get(absl::StrCat("matrix ", name, " (", rows, "x", cols, ", ld", name, "=", ld, ")"));
}

// Elements spanned by n entries with stride inc (checked: inc > 0, and no
// overflow).
absl::StatusOr<int64_t> VectorElements(const char* name, int64_t n, int64_t inc) {
  if (inc <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("inc", name, "=", inc, " must be > 0"));
  }
  return (CheckedInt<int64_t>(n - 1) * inc + 1)
      .Get(absl::StrCat("vector ", name, " (n=", n, ", inc", name, "=", inc, ")"));
}

// `elements` of `type` in bytes, checked, then the buffer against it.
// `source`, when not empty, says which arguments made the count ("batch_count=2,
// stride_a=...") for the overflow's message.
absl::Status CheckElements(Stream* stream, const char* name, const DeviceMemoryBase& memory,
                           DataType type, int64_t elements, std::string_view source = {}) {
  RILL_ASSIGN_OR_RETURN(
      int64_t bytes,
      (CheckedInt<int64_t>(elements) * SizeOf(type))
          .Get(absl::StrCat(name, "'s ", elements, " elements",
                            source.empty() ? "" : absl::StrCat(" (", AsAbsl(source), ")"))));
  return CheckBuffer(stream, name, memory, static_cast<uint64_t>(bytes));
}

// Checks one matrix operand of a gemm: stored rows x cols (before op()).
absl::Status CheckMatrix(Stream* stream, const char* name, const DeviceMemoryBase& memory,
                         DataType type, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                         int64_t stride) {
  RILL_ASSIGN_OR_RETURN(int64_t elements, MatrixElements(name, rows, cols, ld));
  if (batch <= 1) return CheckElements(stream, name, memory, type, elements);
  if (stride < 0) {
    return absl::InvalidArgumentError(absl::StrCat("stride_", name, "=", stride, " is negative"));
  }
  const std::string source = absl::StrCat("batch_count=", batch, ", stride_", name, "=", stride,
                                          ", each ", rows, "x", cols, " with ld", name, "=", ld);
  RILL_ASSIGN_OR_RETURN(
      elements, (CheckedInt<int64_t>(batch - 1) * stride + elements)
                    .Get(absl::StrCat("batch of ", batch, " ", name, " matrices with stride_", name,
                                      "=", stride)));
  return CheckElements(stream, name, memory, type, elements, source);
}

absl::Status CheckGemmShape(Stream* stream, const GemmArgs& g) {
  RILL_RETURN_IF_ERROR(CheckPluginStream(stream));
  RILL_RETURN_IF_ERROR(Positive("m", g.m));
  RILL_RETURN_IF_ERROR(Positive("n", g.n));
  RILL_RETURN_IF_ERROR(Positive("k", g.k));
  return absl::OkStatus();
}

// A's stored shape is m x k (k x m when transposed); B's k x n (n x k).
absl::Status CheckGemmOperands(Stream* stream, const GemmArgs& g, const DeviceMemoryBase& a,
                               const DeviceMemoryBase& b, const DeviceMemoryBase& c,
                               int64_t batch) {
  const bool ta = g.trans_a == Transpose::kTranspose, tb = g.trans_b == Transpose::kTranspose;
  RILL_RETURN_IF_ERROR(CheckMatrix(stream, "a", a, g.type, ta ? g.k : g.m, ta ? g.m : g.k, g.lda,
                                   batch, g.stride_a));
  RILL_RETURN_IF_ERROR(CheckMatrix(stream, "b", b, g.type, tb ? g.n : g.k, tb ? g.k : g.n, g.ldb,
                                   batch, g.stride_b));
  if (batch > 1) {
    RILL_ASSIGN_OR_RETURN(int64_t c_span, MatrixElements("c", g.m, g.n, g.ldc));
    if (g.stride_c < c_span) {
      return absl::InvalidArgumentError(
          absl::StrCat("stride_c=", g.stride_c,
                       " makes the batch's C matrices overlap (each spans ", c_span, " elements)"));
    }
  }
  return CheckMatrix(stream, "c", c, g.type, g.m, g.n, g.ldc, batch, g.stride_c);
}

absl::Status CheckVectors(Stream* stream, const VectorArgs& v, bool uses_y, bool uses_result) {
  RILL_RETURN_IF_ERROR(CheckPluginStream(stream));
  RILL_RETURN_IF_ERROR(Positive("n", v.n));
  RILL_ASSIGN_OR_RETURN(int64_t x_elements, VectorElements("x", v.n, v.incx));
  RILL_RETURN_IF_ERROR(CheckElements(stream, "x", v.x, v.type, x_elements));
  if (uses_y) {
    RILL_ASSIGN_OR_RETURN(int64_t y_elements, VectorElements("y", v.n, v.incy));
    RILL_RETURN_IF_ERROR(CheckElements(stream, "y", v.y, v.type, y_elements));
  }
  if (uses_result) RILL_RETURN_IF_ERROR(CheckElements(stream, "result", v.result, v.type, 1));
  return absl::OkStatus();
}

}  // namespace

std::string BlasSupport::Operation::ToString() const {
  std::string s = absl::StrCat(routine, " ", DataTypeName(type));
  if (m > 0)
    absl::StrAppend(&s, " ", m, "x", n, k > 0 ? absl::StrCat("x", k) : "");
  else if (n > 0)
    absl::StrAppend(&s, " n=", n);
  return s;
}

absl::Status BlasSupport::Supports(const Operation&) const { return absl::OkStatus(); }

absl::Status BlasSupport::DoBlasGemm(Stream* stream, const GemmArgs& args) {
  RILL_RETURN_IF_ERROR(CheckGemmShape(stream, args));
  RILL_RETURN_IF_ERROR(Positive("batch_count", args.batch_count));
  RILL_RETURN_IF_ERROR(CheckGemmOperands(stream, args, args.a, args.b, args.c, args.batch_count));
  RILL_ASSIGN_OR_RETURN(BlasSupport * blas,
                        RouteCall(this, Operation{"gemm", args.type, args.m, args.n, args.k}));
  return blas->Gemm(stream, args);
}

absl::Status BlasSupport::DoBlasGemmBatched(Stream* stream, const GemmBatchedArgs& args) {
  RILL_RETURN_IF_ERROR(CheckGemmShape(stream, args.shape));
  RILL_RETURN_IF_ERROR(Positive("batch_count", static_cast<int64_t>(args.a.size())));
  if (args.b.size() != args.a.size() || args.c.size() != args.a.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("batched gemm needs as many b and c matrices as a: got ", args.a.size(), ", ",
                     args.b.size(), ", ", args.c.size()));
  }
  for (size_t i = 0; i < args.a.size(); ++i) {
    RILL_RETURN_IF_ERROR(
        Annotate(CheckGemmOperands(stream, args.shape, args.a[i], args.b[i], args.c[i], 1),
                 absl::StrCat("batch entry ", i)));
  }
  RILL_ASSIGN_OR_RETURN(BlasSupport * blas,
                        RouteCall(this, Operation{"gemm_batched", args.shape.type, args.shape.m,
                                                  args.shape.n, args.shape.k}));
  return blas->GemmBatched(stream, args);
}

absl::Status BlasSupport::DoBlasGemv(Stream* stream, const GemvArgs& g) {
  RILL_RETURN_IF_ERROR(CheckPluginStream(stream));
  RILL_RETURN_IF_ERROR(Positive("m", g.m));
  RILL_RETURN_IF_ERROR(Positive("n", g.n));
  RILL_ASSIGN_OR_RETURN(int64_t a_elements, MatrixElements("a", g.m, g.n, g.lda));
  RILL_RETURN_IF_ERROR(CheckElements(stream, "a", g.a, g.type, a_elements));
  const bool t = g.trans == Transpose::kTranspose;
  RILL_ASSIGN_OR_RETURN(int64_t x_elements, VectorElements("x", t ? g.m : g.n, g.incx));
  RILL_RETURN_IF_ERROR(CheckElements(stream, "x", g.x, g.type, x_elements));
  RILL_ASSIGN_OR_RETURN(int64_t y_elements, VectorElements("y", t ? g.n : g.m, g.incy));
  RILL_RETURN_IF_ERROR(CheckElements(stream, "y", g.y, g.type, y_elements));
  RILL_ASSIGN_OR_RETURN(BlasSupport * blas, RouteCall(this, Operation{"gemv", g.type, g.m, g.n}));
  return blas->Gemv(stream, g);
}

absl::Status BlasSupport::DoBlasAxpy(Stream* stream, const VectorArgs& args) {
  RILL_RETURN_IF_ERROR(CheckVectors(stream, args, /*uses_y=*/true, /*uses_result=*/false));
  RILL_ASSIGN_OR_RETURN(BlasSupport * blas, RouteCall(this, Operation{"axpy", args.type, args.n}));
  return blas->Axpy(stream, args);
}

absl::Status BlasSupport::DoBlasScal(Stream* stream, const VectorArgs& args) {
  RILL_RETURN_IF_ERROR(CheckVectors(stream, args, /*uses_y=*/false, /*uses_result=*/false));
  RILL_ASSIGN_OR_RETURN(BlasSupport * blas, RouteCall(this, Operation{"scal", args.type, args.n}));
  return blas->Scal(stream, args);
}

absl::Status BlasSupport::DoBlasCopy(Stream* stream, const VectorArgs& args) {
  RILL_RETURN_IF_ERROR(CheckVectors(stream, args, /*uses_y=*/true, /*uses_result=*/false));
  RILL_ASSIGN_OR_RETURN(BlasSupport * blas, RouteCall(this, Operation{"copy", args.type, args.n}));
  return blas->Copy(stream, args);
}

absl::Status BlasSupport::DoBlasDot(Stream* stream, const VectorArgs& args) {
  RILL_RETURN_IF_ERROR(CheckVectors(stream, args, /*uses_y=*/true, /*uses_result=*/true));
  RILL_ASSIGN_OR_RETURN(BlasSupport * blas, RouteCall(this, Operation{"dot", args.type, args.n}));
  return blas->Dot(stream, args);
}

absl::Status BlasSupport::DoBlasNrm2(Stream* stream, const VectorArgs& args) {
  RILL_RETURN_IF_ERROR(CheckVectors(stream, args, /*uses_y=*/false, /*uses_result=*/true));
  RILL_ASSIGN_OR_RETURN(BlasSupport * blas, RouteCall(this, Operation{"nrm2", args.type, args.n}));
  return blas->Nrm2(stream, args);
}

absl::Status BlasSupport::DoBlasAsum(Stream* stream, const VectorArgs& args) {
  RILL_RETURN_IF_ERROR(CheckVectors(stream, args, /*uses_y=*/false, /*uses_result=*/true));
  RILL_ASSIGN_OR_RETURN(BlasSupport * blas, RouteCall(this, Operation{"asum", args.type, args.n}));
  return blas->Asum(stream, args);
}

}  // namespace rill
