/* cbackend_blas: a BLAS library for the C backend's own devices
 * (RILL_LIBRARY_OWN_PLATFORM), as a device vendor ships its BLAS with its
 * backend. Rill calls it on the submitting thread with the plugin's stream;
 * it enqueues the work there, in the stream's order, and returns. A naive
 * float32 gemm: gemm_supports refuses float64, so that a chain such as
 * RILL_BLAS=cbackend_blas,openblas hands those calls on. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "c_backend_internal.h"

typedef struct CbGemm {
  RillStream* stream;
  RillBlasGemmArgs args;
} CbGemm;

static float* cb_floats(RillBuffer b) { return (float*)((char*)b.opaque + b.offset); }

/* Runs on the stream's worker, in order; frees its work item. */
static void cb_gemm_run(void* user_data) {
  CbGemm* g = user_data;
  const RillBlasGemmArgs* a = &g->args;
  if (cb_host->stream_ok(cb_stream_status(g->stream))) {
    for (int64_t batch = 0; batch < a->batch_count; ++batch) {
      const float* A = cb_floats(a->a) + batch * a->stride_a;
      const float* B = cb_floats(a->b) + batch * a->stride_b;
      float* C = cb_floats(a->c) + batch * a->stride_c;
      for (int64_t j = 0; j < a->n; ++j) {
        for (int64_t i = 0; i < a->m; ++i) {
          double sum = 0;
          for (int64_t p = 0; p < a->k; ++p) {
            const float x = a->trans_a ? A[p + i * a->lda] : A[i + p * a->lda];
            const float y = a->trans_b ? B[j + p * a->ldb] : B[p + j * a->ldb];
            sum += (double)x * y;
          }
          float* c = &C[i + j * a->ldc];
          *c = (float)(a->alpha * sum + (a->beta == 0 ? 0.0 : a->beta * *c));
        }
      }
    }
  }
  free(g);
}

static RillError* cb_gemm_supports(const RillBlasGemmArgs* args) {
  if (args->type != RILL_FLOAT32) {
    return cb_error(RILL_CODE_UNIMPLEMENTED, "cbackend_blas: float32 gemm only (got type %d)",
                    (int)args->type);
  }
  return NULL;
}

static RillError* cb_gemm(RillStream* stream, const RillBlasGemmArgs* args) {
  if (stream == NULL) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT,
                    "cbackend_blas serves " CBACKEND_NAME " devices: it needs their stream");
  }
  RillError* unsupported = cb_gemm_supports(args);
  if (unsupported != NULL) return unsupported;
  CbGemm* g = malloc(sizeof(*g));
  if (g == NULL) return cb_error(RILL_CODE_RESOURCE_EXHAUSTED, "cbackend_blas: out of memory");
  g->stream = stream;
  memset(&g->args, 0, sizeof(g->args));
  /* Copy what this header knows, no more than the caller's struct holds. */
  memcpy(&g->args, args,
         args->struct_size < sizeof(g->args) ? args->struct_size : sizeof(g->args));
  RillError* error = cb_stream_fns.host_callback(stream, cb_gemm_run, g);
  if (error != NULL) free(g);
  return error;
}

const RillBlasFns cb_blas_fns = {
    .struct_size = sizeof(RillBlasFns),
    .ext = NULL,
    .name = CBACKEND_NAME "_blas",
    .version = "naive float32 gemm (Rill's C backend example)",
    .target = RILL_LIBRARY_OWN_PLATFORM,
    .make_default = false,
    .gemm = cb_gemm,
    .gemv = NULL,
    .gemm_supports = cb_gemm_supports,
};
