/* A BLAS and a DNN library plugin for Rill in plain C11, against the run-time
 * plugin ABI (rill/abi/rill_plugin.h) alone: no Rill library, no C++.
 *
 *  - "c_blas": gemm and gemv through OpenBLAS's CBLAS (cblas_?gemm,
 *    cblas_?gemv), float32 and float64. Everything else a BLAS offers (axpy,
 *    dot, ...) is left to the next plugin of the executor's chain
 *    (RILL_BLAS=c_blas,openblas).
 *  - "c_dnn": a naive direct forward convolution (NCHW, OIHW filter, groups,
 *    asymmetric padding, strides, dilations), float32 and float64. Every
 *    other DNN call goes to the chain's next plugin (RILL_DNN=c_dnn,onednn).
 *
 * Both serve every platform whose memory is host memory
 * (RILL_LIBRARY_HOST_MEMORY): Rill calls them on the stream's thread, in the
 * stream's order, with buffers whose opaque + offset is the host address; a
 * call computes and returns. See README.md.
 *
 * Built with -fvisibility=hidden: RillPluginInit is the one exported symbol.
 *   cc -std=c11 -shared -fPIC -fvisibility=hidden -I<prefix>/include \
 *      c_library.c -o librill_c_library.so -lopenblas
 */
#include <cblas.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rill/abi/rill_plugin.h"

/* The host table of the load, kept until shutdown (RillPluginInitArgs). */
static const RillHostApi* g_host = NULL;

/* printf-style error through the host (which copies the message). */
#if defined(__GNUC__)
#define C_LIBRARY_PRINTF(format_arg, first_arg) \
  __attribute__((format(printf, format_arg, first_arg)))
#else
#define C_LIBRARY_PRINTF(format_arg, first_arg)
#endif
static RillError* Error(RillCode code, const char* format, ...) C_LIBRARY_PRINTF(2, 3);
static RillError* Error(RillCode code, const char* format, ...) {
  char message[512];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  return g_host->error_new(code, message);
}

static const char* TypeName(RillDataType type) {
  switch (type) {
    case RILL_FLOAT32:
      return "float32";
    case RILL_FLOAT64:
      return "float64";
  }
  return "an unknown type";
}

/* Bytes per element; 0 for a type this plugin does not know. */
static uint64_t ElementSize(RillDataType type) {
  switch (type) {
    case RILL_FLOAT32:
      return 4;
    case RILL_FLOAT64:
      return 8;
  }
  return 0;
}

static void* Address(RillBuffer buffer) { return (char*)buffer.opaque + buffer.offset; }

/* Elements a strided vector of `count` elements spans; 0 when count is 0. */
static uint64_t VectorSpan(int64_t count, int64_t inc) {
  if (count <= 0) return 0;
  const uint64_t step = (uint64_t)(inc < 0 ? -inc : inc);
  return (uint64_t)(count - 1) * step + 1;
}

/* Elements `batch` column-major matrices of rows x cols with leading
 * dimension ld, `stride` elements apart, span. */
static uint64_t MatrixSpan(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  if (rows <= 0 || cols <= 0 || batch <= 0) return 0;
  return (uint64_t)(batch - 1) * (uint64_t)stride + (uint64_t)(cols - 1) * (uint64_t)ld +
         (uint64_t)rows;
}

/* NULL when `buffer` holds `elements` elements of `element_size` bytes. */
static RillError* CheckBuffer(const char* library, const char* name, RillBuffer buffer,
                              uint64_t elements, uint64_t element_size) {
  if (elements == 0) return NULL;
  if (buffer.opaque == NULL) {
    return Error(RILL_CODE_INVALID_ARGUMENT, "%s: buffer %s is null", library, name);
  }
  if (elements > UINT64_MAX / element_size || buffer.size < elements * element_size) {
    return Error(RILL_CODE_INVALID_ARGUMENT,
                 "%s: buffer %s holds %llu bytes; the call needs %llu elements of %llu bytes",
                 library, name, (unsigned long long)buffer.size, (unsigned long long)elements,
                 (unsigned long long)element_size);
  }
  return NULL;
}

/* ------------------------------------------------------------------------
 * BLAS: OpenBLAS through CBLAS. */

static char g_blas_version[256];

/* OpenBLAS takes 32-bit sizes (blasint is int in the pthread build). NULL
 * when every size of `args` fits, else an error with `code` naming it. */
static RillError* GemmFits(const RillBlasGemmArgs* args, RillCode code) {
  const struct {
    const char* name;
    int64_t value;
  } sizes[] = {{"m", args->m},     {"n", args->n},     {"k", args->k},
               {"lda", args->lda}, {"ldb", args->ldb}, {"ldc", args->ldc}};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
    if (sizes[i].value < 0 || sizes[i].value > INT_MAX) {
      return Error(code, "c_blas: %s=%lld is outside OpenBLAS's 32-bit sizes", sizes[i].name,
                   (long long)sizes[i].value);
    }
  }
  return NULL;
}

static RillError* CheckGemmArgs(const RillBlasGemmArgs* args, RillCode code) {
  if (args == NULL || !RILL_HAS_FIELD(args, RillBlasGemmArgs, stride_c)) {
    return Error(code, "c_blas: RillBlasGemmArgs of %llu bytes; this plugin reads %llu",
                 args == NULL ? 0ull : (unsigned long long)args->struct_size,
                 (unsigned long long)RILL_STRUCT_SIZE(RillBlasGemmArgs, stride_c));
  }
  if (ElementSize(args->type) == 0) {
    return Error(code, "c_blas: gemm of %s (type %d); c_blas runs float32 and float64",
                 TypeName(args->type), (int)args->type);
  }
  return GemmFits(args, code);
}

static RillError* BlasGemmSupports(const RillBlasGemmArgs* args) {
  return CheckGemmArgs(args, RILL_CODE_UNIMPLEMENTED);
}

static RillError* BlasGemm(RillStream* stream, const RillBlasGemmArgs* args) {
  (void)stream; /* Host memory: Rill calls on the stream's thread, stream NULL. */
  RillError* error = CheckGemmArgs(args, RILL_CODE_INVALID_ARGUMENT);
  if (error != NULL) return error;
  const uint64_t size = ElementSize(args->type);
  const int64_t batch = args->batch_count;
  if (batch <= 0 || args->m == 0 || args->n == 0) return NULL;
  const int64_t a_rows = args->trans_a ? args->k : args->m;
  const int64_t a_cols = args->trans_a ? args->m : args->k;
  const int64_t b_rows = args->trans_b ? args->n : args->k;
  const int64_t b_cols = args->trans_b ? args->k : args->n;
  if ((error = CheckBuffer("c_blas", "a", args->a,
                           MatrixSpan(a_rows, a_cols, args->lda, batch, args->stride_a), size)) ||
      (error = CheckBuffer("c_blas", "b", args->b,
                           MatrixSpan(b_rows, b_cols, args->ldb, batch, args->stride_b), size)) ||
      (error = CheckBuffer("c_blas", "c", args->c,
                           MatrixSpan(args->m, args->n, args->ldc, batch, args->stride_c), size))) {
    return error;
  }
  const enum CBLAS_TRANSPOSE ta = args->trans_a ? CblasTrans : CblasNoTrans;
  const enum CBLAS_TRANSPOSE tb = args->trans_b ? CblasTrans : CblasNoTrans;
  const int m = (int)args->m, n = (int)args->n, k = (int)args->k;
  const int lda = (int)args->lda, ldb = (int)args->ldb, ldc = (int)args->ldc;
  char* a = Address(args->a);
  char* b = Address(args->b);
  char* c = Address(args->c);
  /* A single matrix ignores the strides (which may then be anything). */
  const uint64_t step_a = batch > 1 ? (uint64_t)args->stride_a * size : 0;
  const uint64_t step_b = batch > 1 ? (uint64_t)args->stride_b * size : 0;
  const uint64_t step_c = batch > 1 ? (uint64_t)args->stride_c * size : 0;
  for (int64_t i = 0; i < batch; ++i) {
    if (args->type == RILL_FLOAT32) {
      cblas_sgemm(CblasColMajor, ta, tb, m, n, k, (float)args->alpha, (const float*)a, lda,
                  (const float*)b, ldb, (float)args->beta, (float*)c, ldc);
    } else {
      cblas_dgemm(CblasColMajor, ta, tb, m, n, k, args->alpha, (const double*)a, lda,
                  (const double*)b, ldb, args->beta, (double*)c, ldc);
    }
    a += step_a;
    b += step_b;
    c += step_c;
  }
  return NULL;
}

static RillError* BlasGemv(RillStream* stream, const RillBlasGemvArgs* args) {
  (void)stream;
  if (args == NULL || !RILL_HAS_FIELD(args, RillBlasGemvArgs, incy)) {
    return Error(RILL_CODE_INVALID_ARGUMENT,
                 "c_blas: RillBlasGemvArgs of %llu bytes; this plugin reads %llu",
                 args == NULL ? 0ull : (unsigned long long)args->struct_size,
                 (unsigned long long)RILL_STRUCT_SIZE(RillBlasGemvArgs, incy));
  }
  const uint64_t size = ElementSize(args->type);
  if (size == 0) {
    /* gemv has no `supports` entry: a type Rill's front let through but
     * this plugin does not know is an error, not a hand-off. */
    return Error(RILL_CODE_UNIMPLEMENTED, "c_blas: gemv of %s (type %d)", TypeName(args->type),
                 (int)args->type);
  }
  const struct {
    const char* name;
    int64_t value;
  } sizes[] = {{"m", args->m},
               {"n", args->n},
               {"lda", args->lda},
               {"incx", args->incx < 0 ? -args->incx : args->incx},
               {"incy", args->incy < 0 ? -args->incy : args->incy}};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
    if (sizes[i].value < 0 || sizes[i].value > INT_MAX) {
      return Error(RILL_CODE_INVALID_ARGUMENT, "c_blas: %s=%lld is outside OpenBLAS's 32-bit sizes",
                   sizes[i].name, (long long)sizes[i].value);
    }
  }
  if (args->m == 0 || args->n == 0) return NULL;
  const int64_t x_len = args->trans ? args->m : args->n;
  const int64_t y_len = args->trans ? args->n : args->m;
  RillError* error;
  if ((error = CheckBuffer("c_blas", "a", args->a, MatrixSpan(args->m, args->n, args->lda, 1, 0),
                           size)) ||
      (error = CheckBuffer("c_blas", "x", args->x, VectorSpan(x_len, args->incx), size)) ||
      (error = CheckBuffer("c_blas", "y", args->y, VectorSpan(y_len, args->incy), size))) {
    return error;
  }
  const enum CBLAS_TRANSPOSE t = args->trans ? CblasTrans : CblasNoTrans;
  if (args->type == RILL_FLOAT32) {
    cblas_sgemv(CblasColMajor, t, (int)args->m, (int)args->n, (float)args->alpha,
                (const float*)Address(args->a), (int)args->lda, (const float*)Address(args->x),
                (int)args->incx, (float)args->beta, (float*)Address(args->y), (int)args->incy);
  } else {
    cblas_dgemv(CblasColMajor, t, (int)args->m, (int)args->n, args->alpha,
                (const double*)Address(args->a), (int)args->lda, (const double*)Address(args->x),
                (int)args->incx, args->beta, (double*)Address(args->y), (int)args->incy);
  }
  return NULL;
}

static const RillBlasFns kBlas = {
    .struct_size = RILL_STRUCT_SIZE(RillBlasFns, gemm_supports),
    .ext = NULL,
    .name = "c_blas",
    .version = g_blas_version,
    .target = RILL_LIBRARY_HOST_MEMORY,
    .make_default = false,
    .gemm = BlasGemm,
    .gemv = BlasGemv,
    .gemm_supports = BlasGemmSupports,
};

/* ------------------------------------------------------------------------
 * DNN: a naive direct forward convolution. */

/* NULL when this plugin runs `args`, else an error with `code` saying why. */
static RillError* CheckConvArgs(const RillConvArgs* args, RillCode code) {
  if (args == NULL || !RILL_HAS_FIELD(args, RillConvArgs, y)) {
    return Error(code, "c_dnn: RillConvArgs of %llu bytes; this plugin reads %llu",
                 args == NULL ? 0ull : (unsigned long long)args->struct_size,
                 (unsigned long long)RILL_STRUCT_SIZE(RillConvArgs, y));
  }
  if (ElementSize(args->type) == 0) {
    return Error(code, "c_dnn: convolution of %s (type %d); c_dnn runs float32 and float64",
                 TypeName(args->type), (int)args->type);
  }
  if (args->batch < 1 || args->in_channels < 1 || args->in_height < 1 || args->in_width < 1 ||
      args->out_channels < 1 || args->kernel_height < 1 || args->kernel_width < 1 ||
      args->out_height < 1 || args->out_width < 1) {
    return Error(code,
                 "c_dnn: sizes below 1 (x [%lld, %lld, %lld, %lld], w [%lld, ., %lld, %lld], "
                 "y %lldx%lld)",
                 (long long)args->batch, (long long)args->in_channels, (long long)args->in_height,
                 (long long)args->in_width, (long long)args->out_channels,
                 (long long)args->kernel_height, (long long)args->kernel_width,
                 (long long)args->out_height, (long long)args->out_width);
  }
  if (args->stride_h < 1 || args->stride_w < 1 || args->dilation_h < 1 || args->dilation_w < 1 ||
      args->pad_top < 0 || args->pad_left < 0 || args->pad_bottom < 0 || args->pad_right < 0) {
    return Error(code,
                 "c_dnn: stride %lldx%lld, dilation %lldx%lld, padding %lld/%lld/%lld/%lld "
                 "(strides and dilations must be >= 1, padding >= 0)",
                 (long long)args->stride_h, (long long)args->stride_w, (long long)args->dilation_h,
                 (long long)args->dilation_w, (long long)args->pad_top, (long long)args->pad_left,
                 (long long)args->pad_bottom, (long long)args->pad_right);
  }
  if (args->groups < 1 || args->in_channels % args->groups != 0 ||
      args->out_channels % args->groups != 0) {
    return Error(code, "c_dnn: %lld input and %lld output channels in %lld groups",
                 (long long)args->in_channels, (long long)args->out_channels,
                 (long long)args->groups);
  }
  return NULL;
}

static RillError* DnnConvForwardSupports(const RillConvArgs* args) {
  return CheckConvArgs(args, RILL_CODE_UNIMPLEMENTED);
}

/* One implementation per element type; sums in double. */
#define RILL_C_DNN_CONV(NAME, T)                                                              \
  static void NAME(const RillConvArgs* p) {                                                   \
    const T* x = (const T*)Address(p->x);                                                     \
    const T* w = (const T*)Address(p->w);                                                     \
    T* y = (T*)Address(p->y);                                                                 \
    const int64_t in_per_group = p->in_channels / p->groups;                                  \
    const int64_t out_per_group = p->out_channels / p->groups;                                \
    for (int64_t n = 0; n < p->batch; ++n) {                                                  \
      for (int64_t oc = 0; oc < p->out_channels; ++oc) {                                      \
        const int64_t first_in = (oc / out_per_group) * in_per_group;                         \
        const T* w_oc = w + oc * in_per_group * p->kernel_height * p->kernel_width;           \
        T* y_plane = y + (n * p->out_channels + oc) * p->out_height * p->out_width;           \
        for (int64_t oh = 0; oh < p->out_height; ++oh) {                                      \
          for (int64_t ow = 0; ow < p->out_width; ++ow) {                                     \
            double sum = 0;                                                                   \
            for (int64_t ic = 0; ic < in_per_group; ++ic) {                                   \
              const T* x_plane =                                                              \
                  x + (n * p->in_channels + first_in + ic) * p->in_height * p->in_width;      \
              const T* w_plane = w_oc + ic * p->kernel_height * p->kernel_width;              \
              for (int64_t r = 0; r < p->kernel_height; ++r) {                                \
                const int64_t ih = oh * p->stride_h - p->pad_top + r * p->dilation_h;         \
                if (ih < 0 || ih >= p->in_height) continue;                                   \
                for (int64_t s = 0; s < p->kernel_width; ++s) {                               \
                  const int64_t iw = ow * p->stride_w - p->pad_left + s * p->dilation_w;      \
                  if (iw < 0 || iw >= p->in_width) continue;                                  \
                  sum += (double)x_plane[ih * p->in_width + iw] *                             \
                         (double)w_plane[r * p->kernel_width + s];                            \
                }                                                                             \
              }                                                                               \
            }                                                                                 \
            T* out = y_plane + oh * p->out_width + ow;                                        \
            /* beta == 0: y is not read (it may hold NaNs). */                                \
            *out = p->beta == 0 ? (T)(p->alpha * sum) : (T)(p->alpha * sum + p->beta * *out); \
          }                                                                                   \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
  }

RILL_C_DNN_CONV(ConvFloat, float)
RILL_C_DNN_CONV(ConvDouble, double)
#undef RILL_C_DNN_CONV

static RillError* DnnConvForward(RillStream* stream, const RillConvArgs* args) {
  (void)stream;
  RillError* error = CheckConvArgs(args, RILL_CODE_INVALID_ARGUMENT);
  if (error != NULL) return error;
  const uint64_t size = ElementSize(args->type);
  const uint64_t x_elements = (uint64_t)args->batch * (uint64_t)args->in_channels *
                              (uint64_t)args->in_height * (uint64_t)args->in_width;
  const uint64_t w_elements = (uint64_t)args->out_channels *
                              (uint64_t)(args->in_channels / args->groups) *
                              (uint64_t)args->kernel_height * (uint64_t)args->kernel_width;
  const uint64_t y_elements = (uint64_t)args->batch * (uint64_t)args->out_channels *
                              (uint64_t)args->out_height * (uint64_t)args->out_width;
  if ((error = CheckBuffer("c_dnn", "x", args->x, x_elements, size)) ||
      (error = CheckBuffer("c_dnn", "w", args->w, w_elements, size)) ||
      (error = CheckBuffer("c_dnn", "y", args->y, y_elements, size))) {
    return error;
  }
  if (args->type == RILL_FLOAT32) {
    ConvFloat(args);
  } else {
    ConvDouble(args);
  }
  return NULL;
}

static const RillDnnFns kDnn = {
    .struct_size = RILL_STRUCT_SIZE(RillDnnFns, conv_forward_supports),
    .ext = NULL,
    .name = "c_dnn",
    .version = "c_dnn 1.0 (naive direct convolution in C)",
    .target = RILL_LIBRARY_HOST_MEMORY,
    .make_default = false,
    .conv_forward = DnnConvForward,
    .conv_forward_supports = DnnConvForwardSupports,
};

/* ------------------------------------------------------------------------
 * The entry. */

static const RillPlugin kPlugin = {
    .struct_size = RILL_STRUCT_SIZE(RillPlugin, shutdown),
    .ext = NULL,
    .abi_major = RILL_PLUGIN_ABI_MAJOR,
    .abi_minor = RILL_PLUGIN_ABI_MINOR,
    .name = "c_library",
    .version = "1.0 (c_blas on OpenBLAS, c_dnn naive)",
    .platform = NULL,
    .executor = NULL,
    .stream = NULL,
    .event = NULL,
    .blas = &kBlas,
    .dnn = &kDnn,
    .shutdown = NULL,
};

RILL_PLUGIN_EXPORT const RillPlugin* RillPluginInit(const RillPluginInitArgs* args) {
  /* What this plugin uses of the host: error_new and log. */
  if (args == NULL || !RILL_HAS_FIELD(args, RillPluginInitArgs, host) || args->host == NULL ||
      !RILL_HAS_FIELD(args->host, RillHostApi, log)) {
    return NULL;
  }
  const RillHostApi* host = args->host;
  if (args->host_abi_major != RILL_PLUGIN_ABI_MAJOR) {
    char message[256];
    snprintf(message, sizeof(message),
             "c_library: built for Rill plugin ABI %d.%d, the host is ABI %u.%u; rebuild the "
             "plugin against the host's rill/abi/rill_plugin.h",
             RILL_PLUGIN_ABI_MAJOR, RILL_PLUGIN_ABI_MINOR, (unsigned)args->host_abi_major,
             (unsigned)args->host_abi_minor);
    host->log(RILL_LOG_ERROR, message);
    return NULL;
  }
  g_host = host;
  /* openblas_get_config() already starts with "OpenBLAS <version>". */
  const char* config = openblas_get_config();
  if (config == NULL) config = "";
  snprintf(g_blas_version, sizeof(g_blas_version), "%s%s",
           strncmp(config, "OpenBLAS", 8) == 0 ? "" : "OpenBLAS ", config);
  return &kPlugin;
}
