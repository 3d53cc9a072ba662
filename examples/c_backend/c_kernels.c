/* The C backend's kernels: a few built-in kernels, written in C, that a
 * launch runs on the stream's worker thread, one simulated GPU thread after
 * another.
 *
 * kernel_load reads the format "cbackend.builtin", whose data bytes are the
 * name of a built-in (a trailing NUL is allowed):
 *
 *   spec.AddVariant(cbackend_platform_id, {"cbackend.builtin", "saxpy"});
 *
 * The built-ins, with their parameters in order (a pointer is a device
 * memory argument, anything else a value of exactly its size):
 *   saxpy    (float a, float* x, float* y, uint64 n)
 *            y[i] = a * x[i] + y[i] for the thread of global x index i < n
 *   fill_u32 (uint32* dst, uint32 value, uint64 n)
 *            dst[i] = value for the thread of global x index i < n
 *   volume   (int64* out, int64* dims, Dim3 extent, int64 bias)
 *            out[(z * extent.y + y) * extent.x + x] = x + 100 y + 10000 z
 *            + bias for each global (x, y, z) inside extent; the thread at
 *            the origin writes its block and grid dims into dims[0..5]
 *   scalars  (int8 small, uint64 wide, {int16 a; double b} mixed,
 *            double* out): out[0] = small + wide + mixed.a * mixed.b
 * These are the kernels of Rill's conformance suite
 * (rill/conformance/suite_kernels.h). As on a GPU, every thread of the
 * grid runs: saxpy's threads that differ only in y or z update the same
 * element again. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_backend_internal.h"

#define CB_MAX_PARAMS 4
#define CB_MAX_VALUE 24 /* the largest value parameter: a Dim3 */

typedef struct CbParam {
  const char* decl; /* "float a", for messages */
  bool is_memory;
  uint64_t size; /* a value's bytes; a memory argument's element size */
} CbParam;

typedef struct CbBuiltin {
  const char* name;
  size_t num_params;
  CbParam params[CB_MAX_PARAMS];
  /* Checks that the memory arguments hold what the launch touches. */
  RillError* (*check)(const CbLaunch* launch);
  void (*run)(const CbLaunch* launch);
} CbBuiltin;

struct RillKernel {
  const RillExecutor* executor;
  const CbBuiltin* builtin;
};

struct CbLaunch {
  const CbBuiltin* builtin;
  RillDim3 threads;
  RillDim3 blocks;
  void* memory[CB_MAX_PARAMS];         /* host addresses of memory arguments */
  uint64_t memory_size[CB_MAX_PARAMS]; /* their views' sizes */
  _Alignas(16) unsigned char value[CB_MAX_PARAMS][CB_MAX_VALUE]; /* copies of values */
};

/* ------------------------------------------------------------------------
 * Helpers */

bool cb_buffer_covers(RillBuffer buffer, uint64_t size, char* why, size_t why_size) {
  if (buffer.opaque == NULL) {
    snprintf(why, why_size, "null device memory");
    return false;
  }
  if (size > buffer.size) {
    snprintf(why, why_size,
             "%" PRIu64 " bytes overrun the view of %" PRIu64 " bytes at offset %" PRIu64, size,
             buffer.size, buffer.offset);
    return false;
  }
  return true;
}

static int64_t cb_min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* a * b + c in `*out`; false when it overflows. */
static bool cb_mul_add(uint64_t a, uint64_t b, uint64_t c, uint64_t* out) {
  if (b != 0 && a > (UINT64_MAX - c) / b) return false;
  *out = a * b + c;
  return true;
}

/* Threads along x in the whole grid. */
static int64_t cb_grid_x(const CbLaunch* l) { return l->blocks.x * l->threads.x; }

static uint64_t cb_u64(const CbLaunch* l, int i) {
  uint64_t v;
  memcpy(&v, l->value[i], sizeof(v));
  return v;
}

/* Elements along x a kernel with an element count `n` touches. */
static uint64_t cb_count_x(const CbLaunch* l, uint64_t n) {
  const uint64_t grid_x = (uint64_t)cb_grid_x(l);
  return n < grid_x ? n : grid_x;
}

/* Checks that memory argument `i` holds `count` elements, aligned. */
static RillError* cb_need(const CbLaunch* l, int i, uint64_t count) {
  const CbParam* p = &l->builtin->params[i];
  if ((uintptr_t)l->memory[i] % p->size != 0) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT,
                    "kernel \"%s\" argument %d (%s) is not aligned to %" PRIu64 " bytes",
                    l->builtin->name, i, p->decl, p->size);
  }
  if (count > l->memory_size[i] / p->size) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT,
                    "kernel \"%s\" argument %d (%s): the launch touches %" PRIu64
                    " element(s) of %" PRIu64 " bytes, the buffer holds %" PRIu64 " bytes",
                    l->builtin->name, i, p->decl, count, p->size, l->memory_size[i]);
  }
  return NULL;
}

/* ------------------------------------------------------------------------
 * The built-ins */

static RillError* cb_saxpy_check(const CbLaunch* l) {
  const uint64_t count = cb_count_x(l, cb_u64(l, 3));
  RillError* error = cb_need(l, 1, count);
  return error != NULL ? error : cb_need(l, 2, count);
}

static void cb_saxpy_run(const CbLaunch* l) {
  float a;
  memcpy(&a, l->value[0], sizeof(a));
  const float* x = l->memory[1];
  float* y = l->memory[2];
  const uint64_t count = cb_count_x(l, cb_u64(l, 3));
  const int64_t repeats = l->threads.y * l->threads.z * l->blocks.y * l->blocks.z;
  for (int64_t r = 0; r < repeats; ++r) {
    for (uint64_t i = 0; i < count; ++i) y[i] = a * x[i] + y[i];
  }
}

static RillError* cb_fill_check(const CbLaunch* l) {
  return cb_need(l, 0, cb_count_x(l, cb_u64(l, 2)));
}

/* Threads that differ only in y or z write the same value: one pass. */
static void cb_fill_run(const CbLaunch* l) {
  uint32_t value;
  memcpy(&value, l->value[1], sizeof(value));
  uint32_t* dst = l->memory[0];
  const uint64_t count = cb_count_x(l, cb_u64(l, 2));
  for (uint64_t i = 0; i < count; ++i) dst[i] = value;
}

/* The part of `extent` the grid covers, in `*covered`; false when empty. */
static bool cb_volume_covered(const CbLaunch* l, const RillDim3* extent, RillDim3* covered) {
  covered->x = cb_min64(extent->x, l->blocks.x * l->threads.x);
  covered->y = cb_min64(extent->y, l->blocks.y * l->threads.y);
  covered->z = cb_min64(extent->z, l->blocks.z * l->threads.z);
  return covered->x > 0 && covered->y > 0 && covered->z > 0;
}

static RillError* cb_volume_check(const CbLaunch* l) {
  RillError* error = cb_need(l, 1, 6);
  if (error != NULL) return error;
  RillDim3 extent, covered;
  memcpy(&extent, l->value[2], sizeof(extent));
  if (!cb_volume_covered(l, &extent, &covered)) return NULL;
  /* Elements up to the last one written: ((cz - 1) * ey + cy - 1) * ex + cx. */
  uint64_t rows = 0;
  uint64_t count = 0;
  if (!cb_mul_add((uint64_t)(covered.z - 1), (uint64_t)extent.y, (uint64_t)(covered.y - 1),
                  &rows) ||
      !cb_mul_add(rows, (uint64_t)extent.x, (uint64_t)covered.x, &count)) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT,
                    "kernel \"volume\": extent (%" PRId64 ", %" PRId64 ", %" PRId64
                    ") is too large",
                    extent.x, extent.y, extent.z);
  }
  return cb_need(l, 0, count);
}

static void cb_volume_run(const CbLaunch* l) {
  int64_t* out = l->memory[0];
  int64_t* dims = l->memory[1];
  RillDim3 extent, covered;
  memcpy(&extent, l->value[2], sizeof(extent));
  int64_t bias;
  memcpy(&bias, l->value[3], sizeof(bias));
  const int64_t seen[6] = {l->threads.x, l->threads.y, l->threads.z,
                           l->blocks.x,  l->blocks.y,  l->blocks.z};
  memcpy(dims, seen, sizeof(seen));
  if (!cb_volume_covered(l, &extent, &covered)) return;
  for (int64_t z = 0; z < covered.z; ++z) {
    for (int64_t y = 0; y < covered.y; ++y) {
      for (int64_t x = 0; x < covered.x; ++x) {
        out[(z * extent.y + y) * extent.x + x] = x + 100 * y + 10000 * z + bias;
      }
    }
  }
}

static RillError* cb_scalars_check(const CbLaunch* l) { return cb_need(l, 3, 1); }

/* Mixed is {int16 a; double b}: a at offset 0, b at offset 8, 16 bytes. */
static void cb_scalars_run(const CbLaunch* l) {
  int8_t small;
  int16_t a;
  double b;
  memcpy(&small, l->value[0], sizeof(small));
  memcpy(&a, l->value[2], sizeof(a));
  memcpy(&b, l->value[2] + 8, sizeof(b));
  double* out = l->memory[3];
  out[0] = (double)small + (double)cb_u64(l, 1) + (double)a * b;
}

static const CbBuiltin cb_builtins[] = {
    {"saxpy",
     4,
     {{"float a", false, 4}, {"float* x", true, 4}, {"float* y", true, 4}, {"uint64 n", false, 8}},
     cb_saxpy_check,
     cb_saxpy_run},
    {"fill_u32",
     3,
     {{"uint32* dst", true, 4}, {"uint32 value", false, 4}, {"uint64 n", false, 8}},
     cb_fill_check,
     cb_fill_run},
    {"volume",
     4,
     {{"int64* out", true, 8},
      {"int64* dims", true, 8},
      {"Dim3 extent", false, 24},
      {"int64 bias", false, 8}},
     cb_volume_check,
     cb_volume_run},
    {"scalars",
     4,
     {{"int8 small", false, 1},
      {"uint64 wide", false, 8},
      {"Mixed{int16 a; double b} mixed", false, 16},
      {"double* out", true, 8}},
     cb_scalars_check,
     cb_scalars_run},
};
#define CB_NUM_BUILTINS (sizeof(cb_builtins) / sizeof(cb_builtins[0]))
#define CB_BUILTIN_LIST "saxpy, fill_u32, volume, scalars"

/* "saxpy(float a, float* x, float* y, uint64 n)" into `out`. */
static void cb_signature(const CbBuiltin* b, char* out, size_t size) {
  int n = snprintf(out, size, "%s(", b->name);
  for (size_t i = 0; i < b->num_params && n >= 0 && (size_t)n < size; ++i) {
    n += snprintf(out + n, size - (size_t)n, "%s%s", i == 0 ? "" : ", ", b->params[i].decl);
  }
  if (n >= 0 && (size_t)n < size) snprintf(out + n, size - (size_t)n, ")");
}

/* ------------------------------------------------------------------------
 * Entries */

RillError* cb_kernel_load(RillExecutor* executor, const char* format, const uint8_t* data,
                          size_t size, const char* name, RillKernel** out) {
  if (name == NULL) name = "(unnamed)";
  if (format == NULL || strcmp(format, CB_KERNEL_FORMAT) != 0) {
    return cb_error(RILL_CODE_UNIMPLEMENTED,
                    "kernel \"%s\": format \"%s\" is not one this backend reads (it reads \"%s\")",
                    name, format == NULL ? "(null)" : format, CB_KERNEL_FORMAT);
  }
  while (size > 0 && data[size - 1] == '\0') --size;
  const CbBuiltin* builtin = NULL;
  for (size_t i = 0; i < CB_NUM_BUILTINS; ++i) {
    if (data != NULL && strlen(cb_builtins[i].name) == size &&
        memcmp(cb_builtins[i].name, data, size) == 0) {
      builtin = &cb_builtins[i];
    }
  }
  if (builtin == NULL) {
    return cb_error(RILL_CODE_NOT_FOUND,
                    "kernel \"%s\": no built-in kernel \"%.*s\" (the built-ins: " CB_BUILTIN_LIST
                    ")",
                    name, (int)(size < 64 ? size : 64), data == NULL ? "" : (const char*)data);
  }
  RillKernel* kernel = malloc(sizeof(*kernel));
  if (kernel == NULL) {
    return cb_error(RILL_CODE_RESOURCE_EXHAUSTED, "kernel \"%s\": out of memory", name);
  }
  kernel->executor = executor;
  kernel->builtin = builtin;
  *out = kernel;
  return NULL;
}

void cb_kernel_destroy(RillKernel* kernel) { free(kernel); }

/* Whether each of `d` is in [1, max]. */
static bool cb_dims_within(const RillDim3* d, int64_t max_x, int64_t max_y, int64_t max_z) {
  return d->x >= 1 && d->x <= max_x && d->y >= 1 && d->y <= max_y && d->z >= 1 && d->z <= max_z;
}

static RillError* cb_check_dims(const char* kernel, const RillDim3* t, const RillDim3* b) {
  if (!cb_dims_within(t, CB_MAX_BLOCK_X, CB_MAX_BLOCK_Y, CB_MAX_BLOCK_Z) ||
      t->x * t->y * t->z > CB_MAX_THREADS_PER_BLOCK) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT,
                    "launch of \"%s\": thread dims (%" PRId64 ", %" PRId64 ", %" PRId64
                    ") outside the device's limits: each from 1 to (%d, %d, %d), at most %d "
                    "threads per block",
                    kernel, t->x, t->y, t->z, CB_MAX_BLOCK_X, CB_MAX_BLOCK_Y, CB_MAX_BLOCK_Z,
                    CB_MAX_THREADS_PER_BLOCK);
  }
  if (!cb_dims_within(b, CB_MAX_GRID_X, CB_MAX_GRID_Y, CB_MAX_GRID_Z)) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT,
                    "launch of \"%s\": block dims (%" PRId64 ", %" PRId64 ", %" PRId64
                    ") outside the device's limits: each from 1 to (%d, %d, %d)",
                    kernel, b->x, b->y, b->z, CB_MAX_GRID_X, CB_MAX_GRID_Y, CB_MAX_GRID_Z);
  }
  return NULL;
}

RillError* cb_launch_prepare(const RillExecutor* executor, const RillDim3* threads,
                             const RillDim3* blocks, const RillKernel* kernel,
                             const RillKernelArg* args, size_t num_args, CbLaunch** out) {
  if (kernel == NULL || threads == NULL || blocks == NULL) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT, "launch: null %s",
                    kernel == NULL ? "kernel" : "dims");
  }
  const CbBuiltin* b = kernel->builtin;
  if (kernel->executor != executor) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT,
                    "launch of \"%s\": the kernel was loaded on device %" PRId32
                    ", the stream is on device %" PRId32,
                    b->name, kernel->executor->ordinal, executor->ordinal);
  }
  RillError* error = cb_check_dims(b->name, threads, blocks);
  if (error != NULL) return error;
  char signature[160];
  if (num_args != b->num_params || (num_args > 0 && args == NULL)) {
    cb_signature(b, signature, sizeof(signature));
    return cb_error(RILL_CODE_INVALID_ARGUMENT, "kernel \"%s\" takes %zu argument(s), got %zu: %s",
                    b->name, b->num_params, args == NULL ? (size_t)0 : num_args, signature);
  }
  CbLaunch* l = calloc(1, sizeof(*l));
  if (l == NULL) return cb_error(RILL_CODE_RESOURCE_EXHAUSTED, "launch: out of memory");
  l->builtin = b;
  l->threads = *threads;
  l->blocks = *blocks;
  for (size_t i = 0; i < num_args && error == NULL; ++i) {
    const CbParam* p = &b->params[i];
    const RillKernelArg* a = &args[i];
    if (a->is_memory != p->is_memory) {
      error =
          cb_error(RILL_CODE_INVALID_ARGUMENT, "kernel \"%s\" argument %zu (%s) must be %s, got %s",
                   b->name, i, p->decl, p->is_memory ? "device memory" : "a value",
                   a->is_memory ? "device memory" : "a value");
    } else if (p->is_memory && a->memory.opaque == NULL) {
      error =
          cb_error(RILL_CODE_INVALID_ARGUMENT,
                   "kernel \"%s\" argument %zu (%s) is null device memory", b->name, i, p->decl);
    } else if (p->is_memory) {
      l->memory[i] = cb_address(a->memory);
      l->memory_size[i] = a->memory.size;
    } else if (a->size != p->size || a->value == NULL) {
      error = cb_error(RILL_CODE_INVALID_ARGUMENT,
                       "kernel \"%s\" argument %zu (%s) must be a value of %" PRIu64
                       " bytes, got %" PRIu64 "%s",
                       b->name, i, p->decl, p->size, a->size, a->value == NULL ? " at null" : "");
    } else {
      memcpy(l->value[i], a->value, (size_t)a->size);
    }
  }
  if (error == NULL) error = b->check(l);
  if (error != NULL) {
    free(l);
    return error;
  }
  *out = l;
  return NULL;
}

void cb_launch_run(const CbLaunch* launch) { launch->builtin->run(launch); }

void cb_launch_free(CbLaunch* launch) { free(launch); }
