/* A complete Rill device backend in plain C11, loaded at run time through
 * the plugin ABI (rill/abi/rill_plugin.h): the platform "cbackend", whose
 * devices run on host threads and whose memory is host memory.
 *
 * This file: the entry RillPluginInit, the platform (device count and
 * descriptions), executors and their memory. Streams and events are in
 * c_stream.c, kernels in c_kernels.c.
 *
 * Settings, read once at load:
 *   CBACKEND_DEVICES    number of devices, 0 to 64 (default 1)
 *   CBACKEND_MEMORY_MB  memory each device may hand out, in MiB (default
 *                       1024)
 *
 * Compile-time variants, for Rill's ABI tests (CMakeLists.txt):
 *   CBACKEND_NAME               the platform name (default "cbackend")
 *   CBACKEND_AS_MINOR0          declare ABI 1.0 with minor-0 table sizes
 *   CBACKEND_ABI_MAJOR_OVERRIDE declare this ABI major instead
 *   CBACKEND_OMIT_MANDATORY     leave describe and memset32 NULL
 *   CBACKEND_INIT_RETURNS_NULL  refuse every host
 *   CBACKEND_FAIL_MEMSET        every memset fails its stream (c_stream.c) */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_backend_internal.h"

/* ------------------------------------------------------------------------
 * Global state: set by RillPluginInit, read-only afterwards. Nothing is on
 * the heap, so a host that refuses the plugin and closes it without calling
 * shutdown leaks nothing. */

const RillHostApi* cb_host = NULL;
static int32_t g_device_count = 1;
static int64_t g_memory_limit = (int64_t)1024 * 1024 * 1024;
/* Device names, "C backend device N": valid until shutdown, as the ABI
 * asks of strings handed to the host. */
static char g_device_names[CB_MAX_DEVICES][32];

static void cb_vformat(char* buffer, size_t size, const char* format, va_list args) {
  static const char kPrefix[] = "cbackend: ";
  memcpy(buffer, kPrefix, sizeof(kPrefix));
  vsnprintf(buffer + sizeof(kPrefix) - 1, size - (sizeof(kPrefix) - 1), format, args);
}

RillError* cb_error(RillCode code, const char* format, ...) {
  char message[1024];
  va_list args;
  va_start(args, format);
  cb_vformat(message, sizeof(message), format, args);
  va_end(args);
  return cb_host->error_new(code, message);
}

/* Logs through `host` (which need not be cb_host yet). */
static void cb_vlog(const RillHostApi* host, RillLogLevel level, const char* format, va_list args) {
  if (host == NULL || host->struct_size < RILL_STRUCT_SIZE(RillHostApi, log) || !host->log) {
    return;
  }
  char message[1024];
  cb_vformat(message, sizeof(message), format, args);
  host->log(level, message);
}

static void cb_log_to(const RillHostApi* host, RillLogLevel level, const char* format, ...)
    __attribute__((format(printf, 3, 4)));
static void cb_log_to(const RillHostApi* host, RillLogLevel level, const char* format, ...) {
  va_list args;
  va_start(args, format);
  cb_vlog(host, level, format, args);
  va_end(args);
}

void cb_log(RillLogLevel level, const char* format, ...) {
  va_list args;
  va_start(args, format);
  cb_vlog(cb_host, level, format, args);
  va_end(args);
}

RillError* cb_error_copy(const RillError* error) {
  if (error == NULL) return NULL;
  return cb_host->error_new(cb_host->error_code(error), cb_host->error_message(error));
}

int64_t cb_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Reads a decimal integer in [min, max] from environment variable `name`;
 * `fallback` when unset, and when malformed or out of range (with a log
 * line saying so). */
static int64_t cb_env_int(const RillHostApi* host, const char* name, int64_t min, int64_t max,
                          int64_t fallback) {
  const char* text = getenv(name);
  if (text == NULL || *text == '\0') return fallback;
  char* end = NULL;
  errno = 0;
  const long long value = strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < min || value > max) {
    cb_log_to(host, RILL_LOG_WARNING,
              "%s=\"%s\" is not a whole number from %" PRId64 " to %" PRId64 "; using %" PRId64,
              name, text, min, max, fallback);
    return fallback;
  }
  return value;
}

/* ------------------------------------------------------------------------
 * The platform */

static int32_t cb_device_count(void) { return g_device_count; }

static RillError* cb_availability(void) {
  if (g_device_count > 0) return NULL;
  return cb_error(RILL_CODE_UNAVAILABLE,
                  "CBACKEND_DEVICES=0 leaves no device; set it to 1 or more");
}

/* Sets `field` of `out` when the host's struct holds it. */
#define CB_SET(out, field, value)                                                  \
  do {                                                                             \
    if (RILL_HAS_FIELD(out, RillDeviceDescription, field)) (out)->field = (value); \
  } while (0)

static RillError* cb_describe(int32_t ordinal, RillDeviceDescription* out) __attribute__((unused));
static RillError* cb_describe(int32_t ordinal, RillDeviceDescription* out) {
  if (ordinal < 0 || ordinal >= g_device_count) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT,
                    "describe: no device %" PRId32 " (%" PRId32 " devices)", ordinal,
                    g_device_count);
  }
  const RillDim3 block_dims = {CB_MAX_BLOCK_X, CB_MAX_BLOCK_Y, CB_MAX_BLOCK_Z};
  const RillDim3 grid_dims = {CB_MAX_GRID_X, CB_MAX_GRID_Y, CB_MAX_GRID_Z};
  CB_SET(out, name, g_device_names[ordinal]);
  CB_SET(out, vendor, "Rill examples");
  CB_SET(out, platform_version, CBACKEND_NAME " 1.0 (C11, pthreads)");
  CB_SET(out, driver_version, "none: host memory and host threads");
  CB_SET(out, memory_bytes, g_memory_limit);
  CB_SET(out, compute_units, 1);
  CB_SET(out, clock_khz, 0);
  CB_SET(out, max_threads_per_block, CB_MAX_THREADS_PER_BLOCK);
  CB_SET(out, max_block_dims, block_dims);
  CB_SET(out, max_grid_dims, grid_dims);
  CB_SET(out, features,
         RILL_FEATURE_HOST_CALLBACKS | RILL_FEATURE_KERNEL_LAUNCH | RILL_FEATURE_TIMERS |
             RILL_FEATURE_PINNED_HOST_MEMORY | RILL_FEATURE_DEVICE_TO_DEVICE_COPY |
             RILL_FEATURE_HOST_ADDRESSABLE_MEMORY);
  return NULL;
}

static RillError* cb_executor_create(int32_t ordinal, RillExecutor** out) {
  if (ordinal < 0 || ordinal >= g_device_count) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT,
                    "executor_create: no device %" PRId32 " (%" PRId32 " devices)", ordinal,
                    g_device_count);
  }
  RillExecutor* executor = calloc(1, sizeof(*executor));
  if (executor == NULL) {
    return cb_error(RILL_CODE_RESOURCE_EXHAUSTED, "out of host memory opening device %" PRId32,
                    ordinal);
  }
  executor->ordinal = ordinal;
  executor->memory_limit = g_memory_limit;
  pthread_mutex_init(&executor->mu, NULL);
  pthread_cond_init(&executor->sync_cv, NULL);
  *out = executor;
  return NULL;
}

static void cb_executor_destroy(RillExecutor* executor) {
  if (executor == NULL) return;
  if (executor->stream_count > 0) {
    /* The host broke its promise; the streams' workers still use the
     * executor, so it is left alive rather than freed under them. */
    cb_log(RILL_LOG_ERROR, "device %" PRId32 " destroyed with %d live stream(s); not freed",
           executor->ordinal, executor->stream_count);
    return;
  }
  if (executor->alloc_live > 0) {
    cb_log(RILL_LOG_WARNING,
           "device %" PRId32 " destroyed with %zu allocation(s) (%" PRId64
           " bytes) never deallocated; freeing them",
           executor->ordinal, executor->alloc_live, executor->bytes_in_use);
  }
  for (size_t i = 0; i < executor->alloc_capacity; ++i) {
    void* key = executor->alloc_keys[i];
    if (key != NULL && key != (void*)executor) free(key); /* the executor marks tombstones */
  }
  free(executor->alloc_keys);
  free(executor->alloc_sizes);
  pthread_cond_destroy(&executor->sync_cv);
  pthread_mutex_destroy(&executor->mu);
  free(executor);
}

/* ------------------------------------------------------------------------
 * The allocation table: address -> size, open addressing with linear
 * probing. An empty slot is NULL; a removed one holds the executor's own
 * address (a tombstone no allocation can equal). Guarded by executor->mu. */

static size_t cb_slot(const void* key, size_t capacity) {
  uint64_t h = (uint64_t)(uintptr_t)key >> 6;
  h *= UINT64_C(0x9E3779B97F4A7C15);
  return (size_t)(h >> 32) & (capacity - 1);
}

/* Grows (or cleans) the table so one more entry fits under 1/2 load;
 * false when out of memory. */
static bool cb_table_reserve(RillExecutor* e) {
  if (e->alloc_capacity > 0 && (e->alloc_used + 1) * 2 <= e->alloc_capacity) return true;
  size_t capacity = e->alloc_capacity == 0 ? 64 : e->alloc_capacity;
  while ((e->alloc_live + 1) * 4 > capacity) capacity *= 2;
  void** keys = calloc(capacity, sizeof(*keys));
  uint64_t* sizes = calloc(capacity, sizeof(*sizes));
  if (keys == NULL || sizes == NULL) {
    free(keys);
    free(sizes);
    return false;
  }
  for (size_t i = 0; i < e->alloc_capacity; ++i) {
    void* key = e->alloc_keys[i];
    if (key == NULL || key == (void*)e) continue;
    size_t j = cb_slot(key, capacity);
    while (keys[j] != NULL) j = (j + 1) & (capacity - 1);
    keys[j] = key;
    sizes[j] = e->alloc_sizes[i];
  }
  free(e->alloc_keys);
  free(e->alloc_sizes);
  e->alloc_keys = keys;
  e->alloc_sizes = sizes;
  e->alloc_capacity = capacity;
  e->alloc_used = e->alloc_live;
  return true;
}

/* Inserts; cb_table_reserve must have succeeded. */
static void cb_table_insert(RillExecutor* e, void* key, uint64_t size) {
  size_t j = cb_slot(key, e->alloc_capacity);
  while (e->alloc_keys[j] != NULL && e->alloc_keys[j] != (void*)e) {
    j = (j + 1) & (e->alloc_capacity - 1);
  }
  if (e->alloc_keys[j] == NULL) ++e->alloc_used;
  e->alloc_keys[j] = key;
  e->alloc_sizes[j] = size;
  ++e->alloc_live;
}

/* Removes `key`; its size in `*size`. False when it is not in the table. */
static bool cb_table_remove(RillExecutor* e, const void* key, uint64_t* size) {
  if (e->alloc_capacity == 0 || key == NULL) return false;
  for (size_t j = cb_slot(key, e->alloc_capacity);; j = (j + 1) & (e->alloc_capacity - 1)) {
    if (e->alloc_keys[j] == NULL) return false;
    if (e->alloc_keys[j] == key) {
      *size = e->alloc_sizes[j];
      e->alloc_keys[j] = (void*)e;
      --e->alloc_live;
      return true;
    }
  }
}

/* ------------------------------------------------------------------------
 * Executor: memory */

static RillError* cb_allocate(RillExecutor* e, uint64_t size, RillBuffer* out) {
  if (size == 0) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT, "allocate of 0 bytes on device %" PRId32,
                    e->ordinal);
  }
  pthread_mutex_lock(&e->mu);
  const int64_t in_use = e->bytes_in_use;
  if (size > (uint64_t)(e->memory_limit - in_use) || size > SIZE_MAX - CB_ALIGNMENT) {
    pthread_mutex_unlock(&e->mu);
    return cb_error(RILL_CODE_RESOURCE_EXHAUSTED,
                    "cannot allocate %" PRIu64 " bytes on device %" PRId32 ": %" PRId64
                    " of its %" PRId64 " bytes are in use (CBACKEND_MEMORY_MB sets the limit)",
                    size, e->ordinal, in_use, e->memory_limit);
  }
  e->bytes_in_use += (int64_t)size; /* charged now; uncharged if the allocation fails */
  pthread_mutex_unlock(&e->mu);

  void* memory = NULL;
  const size_t rounded = ((size_t)size + CB_ALIGNMENT - 1) / CB_ALIGNMENT * CB_ALIGNMENT;
  const int rc = posix_memalign(&memory, CB_ALIGNMENT, rounded);

  pthread_mutex_lock(&e->mu);
  if (rc != 0 || !cb_table_reserve(e)) {
    e->bytes_in_use -= (int64_t)size;
    pthread_mutex_unlock(&e->mu);
    free(memory);
    return cb_error(RILL_CODE_RESOURCE_EXHAUSTED,
                    "cannot allocate %" PRIu64 " bytes on device %" PRId32
                    ": the host is out of memory",
                    size, e->ordinal);
  }
  cb_table_insert(e, memory, size);
  pthread_mutex_unlock(&e->mu);
  out->opaque = memory;
  out->offset = 0;
  out->size = size;
  return NULL;
}

/* Frees at once when the device has no stream; otherwise after the work
 * already queued on every stream of the device, by a marker on each (the
 * last to run frees). Never blocks, so a host callback may call it. The
 * bytes count as free at once. */
static void cb_deallocate(RillExecutor* e, RillBuffer memory) {
  uint64_t size = 0;
  pthread_mutex_lock(&e->mu);
  if (!cb_table_remove(e, memory.opaque, &size)) {
    pthread_mutex_unlock(&e->mu);
    if (memory.opaque != NULL) {
      cb_log(RILL_LOG_ERROR, "deallocate: %p is not an allocation of device %" PRId32 "; ignored",
             memory.opaque, e->ordinal);
    }
    return;
  }
  e->bytes_in_use -= (int64_t)size;
  if (e->stream_count == 0) {
    pthread_mutex_unlock(&e->mu);
    free(memory.opaque);
    return;
  }
  CbGroup* group = cb_group_new(e, e->stream_count, memory.opaque);
  if (group == NULL) {
    pthread_mutex_unlock(&e->mu);
    cb_log(RILL_LOG_ERROR,
           "deallocate: out of host memory to defer freeing %" PRIu64 " bytes on device %" PRId32
           "; they leak",
           size, e->ordinal);
    return;
  }
  cb_stream_enqueue_markers(group);
  pthread_mutex_unlock(&e->mu);
}

static RillError* cb_sync_memcpy_h2d(RillExecutor* e, RillBuffer dst, const void* src,
                                     uint64_t size) {
  if (size == 0) return NULL;
  char why[160];
  if (!cb_buffer_covers(dst, size, why, sizeof(why)) || src == NULL) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT, "memcpy host->device of %" PRIu64 " bytes: %s",
                    size, src == NULL ? "null source" : why);
  }
  (void)e;
  memmove(cb_address(dst), src, (size_t)size);
  return NULL;
}

static RillError* cb_sync_memcpy_d2h(RillExecutor* e, void* dst, RillBuffer src, uint64_t size) {
  if (size == 0) return NULL;
  char why[160];
  if (!cb_buffer_covers(src, size, why, sizeof(why)) || dst == NULL) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT, "memcpy device->host of %" PRIu64 " bytes: %s",
                    size, dst == NULL ? "null destination" : why);
  }
  (void)e;
  memmove(dst, cb_address(src), (size_t)size);
  return NULL;
}

/* Waits for the work enqueued so far on every stream of the device: a
 * marker on each, the caller woken when the last has run. */
static RillError* cb_synchronize_all(RillExecutor* e) {
  pthread_mutex_lock(&e->mu);
  if (e->stream_count == 0) {
    pthread_mutex_unlock(&e->mu);
    return NULL;
  }
  CbGroup* group = cb_group_new(e, e->stream_count, NULL);
  if (group == NULL) {
    pthread_mutex_unlock(&e->mu);
    return cb_error(RILL_CODE_RESOURCE_EXHAUSTED, "synchronize_all: out of host memory");
  }
  cb_stream_enqueue_markers(group);
  while (group->remaining > 0) pthread_cond_wait(&e->sync_cv, &e->mu);
  pthread_mutex_unlock(&e->mu);
  free(group);
  return NULL;
}

static RillError* cb_host_memory_allocate(RillExecutor* e, uint64_t size, void** out) {
  if (size == 0 || size > SIZE_MAX - CB_ALIGNMENT) {
    return cb_error(size == 0 ? RILL_CODE_INVALID_ARGUMENT : RILL_CODE_RESOURCE_EXHAUSTED,
                    "host_memory_allocate of %" PRIu64 " bytes for device %" PRId32, size,
                    e->ordinal);
  }
  const size_t rounded = ((size_t)size + CB_ALIGNMENT - 1) / CB_ALIGNMENT * CB_ALIGNMENT;
  if (posix_memalign(out, CB_ALIGNMENT, rounded) != 0) {
    return cb_error(RILL_CODE_RESOURCE_EXHAUSTED,
                    "host_memory_allocate: the host is out of memory for %" PRIu64 " bytes", size);
  }
  return NULL;
}

static void cb_host_memory_deallocate(RillExecutor* e, void* ptr) {
  (void)e;
  free(ptr);
}

/* Not in a minor-0 table (CBACKEND_AS_MINOR0). */
static int64_t cb_memory_limit(RillExecutor* e) __attribute__((unused));
static int64_t cb_memory_limit(RillExecutor* e) { return e->memory_limit; }

/* ------------------------------------------------------------------------
 * The tables */

#if defined(CBACKEND_AS_MINOR0)
/* As a plugin built against ABI 1.0 declares them: without the fields
 * minor 1 appended. */
#define CB_ABI_MINOR 0
#define CB_PLATFORM_FNS_SIZE RILL_STRUCT_SIZE(RillPlatformFns, executor_destroy)
#define CB_EXECUTOR_FNS_SIZE RILL_STRUCT_SIZE(RillExecutorFns, host_memory_deallocate)
#else
#define CB_ABI_MINOR RILL_PLUGIN_ABI_MINOR
#define CB_PLATFORM_FNS_SIZE sizeof(RillPlatformFns)
#define CB_EXECUTOR_FNS_SIZE sizeof(RillExecutorFns)
#endif

#if defined(CBACKEND_ABI_MAJOR_OVERRIDE)
#define CB_ABI_MAJOR CBACKEND_ABI_MAJOR_OVERRIDE
#else
#define CB_ABI_MAJOR RILL_PLUGIN_ABI_MAJOR
#endif

static const RillPlatformFns cb_platform_fns = {
    .struct_size = CB_PLATFORM_FNS_SIZE,
    .name = CBACKEND_NAME,
    .device_count = cb_device_count,
    .availability = cb_availability,
#if !defined(CBACKEND_OMIT_MANDATORY)
    .describe = cb_describe,
#endif
    .executor_create = cb_executor_create,
    .executor_destroy = cb_executor_destroy,
#if !defined(CBACKEND_AS_MINOR0)
    .more_devices_hint = "set CBACKEND_DEVICES=2",
    .op_fallback = NULL,
#endif
};

static const RillExecutorFns cb_executor_fns = {
    .struct_size = CB_EXECUTOR_FNS_SIZE,
    .allocate = cb_allocate,
    .deallocate = cb_deallocate,
    .memcpy_host_to_device = cb_sync_memcpy_h2d,
    .memcpy_device_to_host = cb_sync_memcpy_d2h,
    .synchronize_all = cb_synchronize_all,
    .stream_create = cb_stream_create,
    .stream_destroy = cb_stream_destroy,
    .event_create = cb_event_create,
    .event_destroy = cb_event_destroy,
    .kernel_load = cb_kernel_load,
    .kernel_destroy = cb_kernel_destroy,
    .host_memory_allocate = cb_host_memory_allocate,
    .host_memory_deallocate = cb_host_memory_deallocate,
#if !defined(CBACKEND_AS_MINOR0)
    .memory_limit = cb_memory_limit,
#endif
};

/* Forgets the host. Every object is gone by now, and the global state has
 * nothing on the heap to free. */
static void cb_shutdown(void) { cb_host = NULL; }

static const RillPlugin cb_plugin = {
    .struct_size = sizeof(RillPlugin),
    .abi_major = CB_ABI_MAJOR,
    .abi_minor = CB_ABI_MINOR,
    .name = CBACKEND_NAME " (Rill's C11 example backend: host memory, a thread per stream)",
    .version = "1.0",
    .platform = &cb_platform_fns,
    .executor = &cb_executor_fns,
    .stream = &cb_stream_fns,
    .event = &cb_event_fns,
    .blas = &cb_blas_fns,
    .dnn = NULL,
    .shutdown = cb_shutdown,
};

/* ------------------------------------------------------------------------
 * The entry */

#if defined(CBACKEND_INIT_RETURNS_NULL)
static const bool kRefuseEveryHost = true;
#else
static const bool kRefuseEveryHost = false;
#endif

RILL_PLUGIN_EXPORT const RillPlugin* RillPluginInit(const RillPluginInitArgs* args);

RILL_PLUGIN_EXPORT const RillPlugin* RillPluginInit(const RillPluginInitArgs* args) {
  if (args == NULL || args->struct_size < RILL_STRUCT_SIZE(RillPluginInitArgs, host) ||
      args->host == NULL) {
    return NULL;
  }
  const RillHostApi* host = args->host;
  if (args->host_abi_major != RILL_PLUGIN_ABI_MAJOR) {
    cb_log_to(host, RILL_LOG_ERROR,
              "built for Rill plugin ABI %d.%d, the host speaks %" PRIu32 ".%" PRIu32
              ": rebuild the plugin against this Rill's rill/abi/rill_plugin.h",
              RILL_PLUGIN_ABI_MAJOR, RILL_PLUGIN_ABI_MINOR, args->host_abi_major,
              args->host_abi_minor);
    return NULL;
  }
  const size_t needed = RILL_STRUCT_SIZE(RillHostApi, stream_error);
  if (host->struct_size < needed) {
    cb_log_to(host, RILL_LOG_ERROR,
              "the host table is %zu bytes, this plugin uses %zu (up to stream_error)",
              host->struct_size, needed);
    return NULL;
  }
  if (kRefuseEveryHost) {
    cb_log_to(host, RILL_LOG_WARNING,
              "built with CBACKEND_INIT_RETURNS_NULL: refusing to load, as a test asks");
    return NULL;
  }
  g_device_count = (int32_t)cb_env_int(host, "CBACKEND_DEVICES", 0, CB_MAX_DEVICES, 1);
  g_memory_limit = cb_env_int(host, "CBACKEND_MEMORY_MB", 1, (int64_t)1 << 30, 1024) * 1024 * 1024;
  for (int i = 0; i < CB_MAX_DEVICES; ++i) {
    snprintf(g_device_names[i], sizeof(g_device_names[i]), "C backend device %d", i);
  }
  cb_host = host;
  return &cb_plugin;
}
