#include "rill/plugins/blas/clblast/clblast_blas.h"

#include <clblast.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/base/mutex.h"
#include "rill/base/slow_notice.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/opencl/opencl_platform.h"
#include "rill/platform/opencl/opencl_plugin.h"
#include "rill/platform/opencl/opencl_status.h"
#include "rill/plugins/plugin_registry.h"

namespace rill {

std::string ClBlastStatusName(int code) {
  switch (code) {
    case -1024:
      return "CLBlastNotImplemented";
    case -1022:
      return "CLBlastInvalidMatrixA";
    case -1021:
      return "CLBlastInvalidMatrixB";
    case -1020:
      return "CLBlastInvalidMatrixC";
    case -1019:
      return "CLBlastInvalidVectorX";
    case -1018:
      return "CLBlastInvalidVectorY";
    case -1017:
      return "CLBlastInvalidDimension";
    case -1016:
      return "CLBlastInvalidLeadDimA";
    case -1015:
      return "CLBlastInvalidLeadDimB";
    case -1014:
      return "CLBlastInvalidLeadDimC";
    case -1013:
      return "CLBlastInvalidIncrementX";
    case -1012:
      return "CLBlastInvalidIncrementY";
    case -1011:
      return "CLBlastInsufficientMemoryA";
    case -1010:
      return "CLBlastInsufficientMemoryB";
    case -1009:
      return "CLBlastInsufficientMemoryC";
    case -1008:
      return "CLBlastInsufficientMemoryX";
    case -1007:
      return "CLBlastInsufficientMemoryY";
    case -2050:
      return "CLBlastInsufficientMemoryTemp";
    case -2049:
      return "CLBlastInvalidBatchCount";
    case -2048:
      return "CLBlastInvalidOverrideKernel";
    case -2047:
      return "CLBlastMissingOverrideParameter";
    case -2046:
      return "CLBlastInvalidLocalMemUsage";
    case -2045:
      return "CLBlastNoHalfPrecision";
    case -2044:
      return "CLBlastNoDoublePrecision";
    case -2043:
      return "CLBlastInvalidVectorScalar";
    case -2042:
      return "CLBlastInsufficientMemoryScalar";
    case -2041:
      return "CLBlastDatabaseError";
    case -2040:
      return "CLBlastUnknownError";
    case -2039:
      return "CLBlastUnexpectedError";
    default:
      return std::string(ClErrorName(code));  // Shared with OpenCL.
  }
}

absl::Status ClBlastStatus(int code, const std::string& what) {
  if (code == 0) return absl::OkStatus();
  if (code > -1000) return ClStatus(code, absl::StrCat(what, ": CLBlast"));
  const std::string message =
      absl::StrCat(what, ": CLBlast ", ClBlastStatusName(code), " (", code, ")");
  if (code == -1024 || code == -2044 || code == -2045) return absl::UnimplementedError(message);
  if (code >= -1022 && code <= -1012) return absl::InvalidArgumentError(message);
  if ((code >= -1011 && code <= -1007) || code == -2050 || code == -2042 || code == -2049) {
    return absl::InvalidArgumentError(message);  // Buffers too small for the shape.
  }
  return absl::InternalError(message);
}

namespace {

// A view as CLBlast takes it: the cl_mem and an offset in elements.
struct Operand {
  cl_mem mem;
  size_t offset;
};

template <typename T>
absl::StatusOr<Operand> Elements(const char* name, const DeviceMemoryBase& memory) {
  if (memory.offset() % sizeof(T) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("clblast: ", name, " starts at byte offset ", memory.offset(),
                     ", not a multiple of the element size ", sizeof(T)));
  }
  return Operand{ClMem(memory), static_cast<size_t>(memory.offset() / sizeof(T))};
}

clblast::Transpose ToClBlast(Transpose t) {
  return t == Transpose::kTranspose ? clblast::Transpose::kYes : clblast::Transpose::kNo;
}

// CLBlast's process-wide caches (compiled programs, tuning database) are
// not safe to fill from two threads at once: two first gemm<double> calls
// on two streams corrupted a string inside clblast::Gemm (std::length_error,
// about 1 run in 10 of ops_nn_test's OpenCL gradient case). Every call into
// CLBlast takes this lock; the calls only enqueue, so it is held briefly
// once the caches are warm.
Mutex& ClBlastMutex() {
  static Mutex* mu = new Mutex;
  return *mu;
}

// Enqueues fn(queue*, event*) -> clblast::StatusCode in stream order.
template <typename Fn>
absl::Status Run(StreamExecutor* owner, Stream* stream, std::string what, Fn fn) {
  return EnqueueOpenClWork(
      owner, stream, ClBlast::kName, "AsBlas()",
      [what = std::move(what), fn = std::move(fn),
       device = owner->DebugName()](cl_command_queue queue) mutable -> absl::StatusOr<cl_event> {
        cl_event event = nullptr;
        clblast::StatusCode code;
        {
          MutexLock lock(&ClBlastMutex());
          // The first call per routine, type and device compiles CLBlast's kernels (seconds on a
          // cold cache).
          SlowWorkNotice notice(
              absl::StrCat("compiling OpenCL kernels for the ", what, " on ", device,
                           " (first use; PoCL caches them in ~/.cache/pocl, later runs "
                           "are fast)..."));
          code = fn(&queue, &event);
        }
        RILL_RETURN_IF_ERROR(ClBlastStatus(static_cast<int>(code), what));
        return event;
      });
}

template <typename T>
absl::Status GemmT(StreamExecutor* owner, Stream* stream, const GemmArgs& g) {
  RILL_ASSIGN_OR_RETURN(Operand a, Elements<T>("a", g.a));
  RILL_ASSIGN_OR_RETURN(Operand b, Elements<T>("b", g.b));
  RILL_ASSIGN_OR_RETURN(Operand c, Elements<T>("c", g.c));
  std::string what = absl::StrCat("clblast gemm<", sizeof(T) == 4 ? "float" : "double", ">(m=", g.m,
                                  ", n=", g.n, ", k=", g.k, ", batch=", g.batch_count, ")");
  return Run(owner, stream, std::move(what), [=](cl_command_queue* q, cl_event* e) {
    const T alpha = static_cast<T>(g.alpha), beta = static_cast<T>(g.beta);
    if (g.batch_count == 1) {
      return clblast::Gemm<T>(clblast::Layout::kColMajor, ToClBlast(g.trans_a),
                              ToClBlast(g.trans_b), g.m, g.n, g.k, alpha, a.mem, a.offset, g.lda,
                              b.mem, b.offset, g.ldb, beta, c.mem, c.offset, g.ldc, q, e);
    }
    return clblast::GemmStridedBatched<T>(
        clblast::Layout::kColMajor, ToClBlast(g.trans_a), ToClBlast(g.trans_b), g.m, g.n, g.k,
        alpha, a.mem, a.offset, g.lda, g.stride_a, b.mem, b.offset, g.ldb, g.stride_b, beta, c.mem,
        c.offset, g.ldc, g.stride_c, g.batch_count, q, e);
  });
}

template <typename T>
absl::Status GemmBatchedT(StreamExecutor* owner, Stream* stream, const GemmBatchedArgs& args) {
  std::vector<Operand> a, b, c;
  for (size_t i = 0; i < args.a.size(); ++i) {
    RILL_ASSIGN_OR_RETURN(a.emplace_back(), Elements<T>("a[i]", args.a[i]));
    RILL_ASSIGN_OR_RETURN(b.emplace_back(), Elements<T>("b[i]", args.b[i]));
    RILL_ASSIGN_OR_RETURN(c.emplace_back(), Elements<T>("c[i]", args.c[i]));
  }
  const GemmArgs g = args.shape;
  std::string what = absl::StrCat("clblast gemm-batched<", sizeof(T) == 4 ? "float" : "double",
                                  ">(m=", g.m, ", n=", g.n, ", k=", g.k, ", count=", a.size(), ")");
  return Run(owner, stream, std::move(what), [=](cl_command_queue* q, cl_event* e) {
    const T alpha = static_cast<T>(g.alpha), beta = static_cast<T>(g.beta);
    for (size_t i = 0; i < a.size(); ++i) {
      if (*e != nullptr) clReleaseEvent(*e);  // Only the last one is kept.
      *e = nullptr;
      const clblast::StatusCode code =
          clblast::Gemm<T>(clblast::Layout::kColMajor, ToClBlast(g.trans_a), ToClBlast(g.trans_b),
                           g.m, g.n, g.k, alpha, a[i].mem, a[i].offset, g.lda, b[i].mem,
                           b[i].offset, g.ldb, beta, c[i].mem, c[i].offset, g.ldc, q, e);
      if (code != clblast::StatusCode::kSuccess) return code;
    }
    return clblast::StatusCode::kSuccess;
  });
}

template <typename T>
absl::Status GemvT(StreamExecutor* owner, Stream* stream, const GemvArgs& g) {
  RILL_ASSIGN_OR_RETURN(Operand a, Elements<T>("a", g.a));
  RILL_ASSIGN_OR_RETURN(Operand x, Elements<T>("x", g.x));
  RILL_ASSIGN_OR_RETURN(Operand y, Elements<T>("y", g.y));
  std::string what = absl::StrCat("clblast gemv(m=", g.m, ", n=", g.n, ")");
  return Run(owner, stream, std::move(what), [=](cl_command_queue* q, cl_event* e) {
    return clblast::Gemv<T>(clblast::Layout::kColMajor, ToClBlast(g.trans), g.m, g.n,
                            static_cast<T>(g.alpha), a.mem, a.offset, g.lda, x.mem, x.offset,
                            g.incx, static_cast<T>(g.beta), y.mem, y.offset, g.incy, q, e);
  });
}

enum class Level1 { kAxpy, kScal, kCopy, kDot, kNrm2, kAsum };

const char* Level1Name(Level1 op) {
  switch (op) {
    case Level1::kAxpy:
      return "axpy";
    case Level1::kScal:
      return "scal";
    case Level1::kCopy:
      return "copy";
    case Level1::kDot:
      return "dot";
    case Level1::kNrm2:
      return "nrm2";
    case Level1::kAsum:
      return "asum";
  }
  return "?";
}

template <typename T>
absl::Status Level1T(StreamExecutor* owner, Stream* stream, Level1 op, const VectorArgs& v) {
  RILL_ASSIGN_OR_RETURN(Operand x, Elements<T>("x", v.x));
  Operand y{nullptr, 0}, r{nullptr, 0};
  if (op == Level1::kAxpy || op == Level1::kCopy || op == Level1::kDot) {
    RILL_ASSIGN_OR_RETURN(y, Elements<T>("y", v.y));
  }
  if (op == Level1::kDot || op == Level1::kNrm2 || op == Level1::kAsum) {
    RILL_ASSIGN_OR_RETURN(r, Elements<T>("result", v.result));
  }
  std::string what = absl::StrCat("clblast ", Level1Name(op), "(n=", v.n, ")");
  return Run(owner, stream, std::move(what), [=](cl_command_queue* q, cl_event* e) {
    const size_t n = static_cast<size_t>(v.n), incx = v.incx, incy = v.incy;
    const T alpha = static_cast<T>(v.alpha);
    switch (op) {
      case Level1::kAxpy:
        return clblast::Axpy<T>(n, alpha, x.mem, x.offset, incx, y.mem, y.offset, incy, q, e);
      case Level1::kScal:
        return clblast::Scal<T>(n, alpha, x.mem, x.offset, incx, q, e);
      case Level1::kCopy:
        return clblast::Copy<T>(n, x.mem, x.offset, incx, y.mem, y.offset, incy, q, e);
      case Level1::kDot:
        return clblast::Dot<T>(n, r.mem, r.offset, x.mem, x.offset, incx, y.mem, y.offset, incy, q,
                               e);
      case Level1::kNrm2:
        return clblast::Nrm2<T>(n, r.mem, r.offset, x.mem, x.offset, incx, q, e);
      case Level1::kAsum:
        return clblast::Asum<T>(n, r.mem, r.offset, x.mem, x.offset, incx, q, e);
    }
    return clblast::StatusCode::kNotImplemented;
  });
}

absl::Status Level1(StreamExecutor* owner, Stream* stream, Level1 op, const VectorArgs& v) {
  return v.type == DataType::kFloat ? Level1T<float>(owner, stream, op, v)
                                    : Level1T<double>(owner, stream, op, v);
}

}  // namespace

std::string ClBlast::Version() const {
  return absl::StrCat("CLBlast ", CLBLAST_VERSION_MAJOR, ".", CLBLAST_VERSION_MINOR, ".",
                      CLBLAST_VERSION_PATCH);
}

absl::StatusOr<std::unique_ptr<ClBlast>> ClBlast::Create(StreamExecutor* executor) {
  RILL_RETURN_IF_ERROR(AsOpenClExecutor(executor).status());
  return std::unique_ptr<ClBlast>(new ClBlast(executor));
}

absl::Status ClBlast::Gemm(Stream* stream, const GemmArgs& g) {
  return g.type == DataType::kFloat ? GemmT<float>(executor_, stream, g)
                                    : GemmT<double>(executor_, stream, g);
}

absl::Status ClBlast::GemmBatched(Stream* stream, const GemmBatchedArgs& args) {
  return args.shape.type == DataType::kFloat ? GemmBatchedT<float>(executor_, stream, args)
                                             : GemmBatchedT<double>(executor_, stream, args);
}

absl::Status ClBlast::Gemv(Stream* stream, const GemvArgs& g) {
  return g.type == DataType::kFloat ? GemvT<float>(executor_, stream, g)
                                    : GemvT<double>(executor_, stream, g);
}

absl::Status ClBlast::Axpy(Stream* stream, const VectorArgs& v) {
  return Level1(executor_, stream, Level1::kAxpy, v);
}
absl::Status ClBlast::Scal(Stream* stream, const VectorArgs& v) {
  return Level1(executor_, stream, Level1::kScal, v);
}
absl::Status ClBlast::Copy(Stream* stream, const VectorArgs& v) {
  return Level1(executor_, stream, Level1::kCopy, v);
}
absl::Status ClBlast::Dot(Stream* stream, const VectorArgs& v) {
  return Level1(executor_, stream, Level1::kDot, v);
}
absl::Status ClBlast::Nrm2(Stream* stream, const VectorArgs& v) {
  return Level1(executor_, stream, Level1::kNrm2, v);
}
absl::Status ClBlast::Asum(Stream* stream, const VectorArgs& v) {
  return Level1(executor_, stream, Level1::kAsum, v);
}

namespace {

absl::StatusOr<std::unique_ptr<PluginInterface>> CreateClBlast(StreamExecutor* executor) {
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<ClBlast> blas, ClBlast::Create(executor));
  return std::unique_ptr<PluginInterface>(std::move(blas));
}

}  // namespace

RILL_REGISTER_PLUGIN(clblast, kOpenClPlatformId, PluginKind::kBlas, ClBlast::kName, CreateClBlast,
                     /*make_default=*/true);

}  // namespace rill
