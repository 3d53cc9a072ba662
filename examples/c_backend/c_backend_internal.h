/* The C backend's internal declarations, shared by its sources:
 *   c_backend.c  the entry, the platform, executors and their memory
 *   c_stream.c   streams: a worker thread and a FIFO queue each
 *   c_event.c    events and their records
 *   c_kernels.c  the built-in kernels, kernel_load and launch
 * Nothing here is exported: the module is built with -fvisibility=hidden
 * and only RillPluginInit carries RILL_PLUGIN_EXPORT.
 *
 * Locks, in the order they may be taken (never the other way round):
 *   RillExecutor.mu  ->  RillStream.mu
 *   RillEvent.mu (alone: never held while taking another)
 * A stream's worker holds no lock while it runs a piece of work, so a host
 * callback may call any entry, enqueue on its own stream included. */
#ifndef RILL_EXAMPLES_C_BACKEND_C_BACKEND_INTERNAL_H_
#define RILL_EXAMPLES_C_BACKEND_C_BACKEND_INTERNAL_H_

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "rill/abi/rill_plugin.h"

/* The platform name; each ABI test variant is built with its own. */
#ifndef CBACKEND_NAME
#define CBACKEND_NAME "cbackend"
#endif

/* The kernel format kernel_load reads: the data bytes name a built-in. */
#define CB_KERNEL_FORMAT "cbackend.builtin"
/* Alignment of device and host allocations. */
#define CB_ALIGNMENT 64
/* Most devices CBACKEND_DEVICES may ask for. */
#define CB_MAX_DEVICES 64

/* Launch limits, as RillPlatformFns.describe reports them. */
#define CB_MAX_THREADS_PER_BLOCK 1024
#define CB_MAX_BLOCK_X 1024
#define CB_MAX_BLOCK_Y 1024
#define CB_MAX_BLOCK_Z 64
#define CB_MAX_GRID_X 2147483647
#define CB_MAX_GRID_Y 65535
#define CB_MAX_GRID_Z 65535

/* ------------------------------------------------------------------------
 * Global state (c_backend.c) */

/* The host table RillPluginInit received; valid until shutdown. */
extern const RillHostApi* cb_host;

/* A new error with a printf-style message; the caller prefixes nothing:
 * "cbackend: " is added here. Never NULL. */
RillError* cb_error(RillCode code, const char* format, ...) __attribute__((format(printf, 2, 3)));
/* A log line through the host, prefixed with "cbackend: ". */
void cb_log(RillLogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));
/* A copy of `error` (NULL for NULL), made with the host's error_new. */
RillError* cb_error_copy(const RillError* error);

/* The monotonic clock, in nanoseconds. */
int64_t cb_now_ns(void);

/* ------------------------------------------------------------------------
 * Streams and executors */

typedef struct CbItem CbItem; /* a piece of queued work (c_stream.c) */

/* A group of markers, one per live stream of an executor, that deallocate
 * (free the memory after the last runs) or synchronize_all (wake the caller
 * after the last runs) enqueues. `remaining` is guarded by the executor's
 * mutex. Allocated with its items in one block (cb_group_new). */
typedef struct CbGroup {
  RillExecutor* executor;
  int remaining;
  void* memory; /* to free, for a deallocate group; NULL for a sync group */
  CbItem* items;
} CbGroup;

/* An executor: one device. */
struct RillExecutor {
  int32_t ordinal;
  int64_t memory_limit;

  pthread_mutex_t mu;
  pthread_cond_t sync_cv; /* a sync group's count reached zero */
  /* Guarded by mu: */
  RillStream* streams; /* live streams, a doubly linked list */
  int stream_count;
  int64_t bytes_in_use; /* allocated and not yet deallocated */
  /* Live allocations: an open-addressing table of address -> size
   * (c_backend.c). */
  void** alloc_keys;
  uint64_t* alloc_sizes;
  size_t alloc_capacity; /* a power of two, or 0 */
  size_t alloc_used;     /* live entries plus tombstones */
  size_t alloc_live;
};

/* Enqueues one of `group`'s marker items on each live stream of the group's
 * executor. Called with the executor's mutex held; `group->remaining` must
 * equal the executor's stream_count. */
void cb_stream_enqueue_markers(CbGroup* group);
/* A group with `count` marker items; NULL when out of memory. */
CbGroup* cb_group_new(RillExecutor* executor, int count, void* memory);

/* Entries of RillExecutorFns implemented in c_stream.c. */
RillError* cb_stream_create(RillExecutor* executor, int32_t priority, RillStreamStatus* status,
                            RillStream** out);
void cb_stream_destroy(RillStream* stream);
extern const RillStreamFns cb_stream_fns;
/* The error state Rill gave the stream. */
RillStreamStatus* cb_stream_status(const RillStream* stream);

/* The device's own BLAS library (c_blas.c). */
extern const RillBlasFns cb_blas_fns;

/* ------------------------------------------------------------------------
 * Events (c_event.c) */

/* One record_event of an event: completed by the queued record item. */
typedef struct CbRecord CbRecord;

RillError* cb_event_create(RillExecutor* executor, RillEvent** out);
void cb_event_destroy(RillEvent* event);
extern const RillEventFns cb_event_fns;

RillExecutor* cb_event_executor(const RillEvent* event);
/* A new record, now the event's latest, held (with the event) for the
 * record item; NULL when out of memory. */
CbRecord* cb_event_begin_record(RillEvent* event);
/* Completes `record` with `error` (taken; NULL for none) and drops the
 * record item's hold. */
void cb_event_complete_record(RillEvent* event, CbRecord* record, RillError* error);
/* The event's latest record, held (with the event) for a wait item; NULL
 * when the event was never recorded. */
CbRecord* cb_event_hold_latest(RillEvent* event);
/* Blocks until the held `record` completes, drops the hold and returns a
 * copy of the error it completed with (NULL for none). */
RillError* cb_event_wait_held(RillEvent* event, CbRecord* record);

/* ------------------------------------------------------------------------
 * Kernels (c_kernels.c) */

/* A launch, copied at enqueue: the dims, the kernel and the argument values
 * (memory arguments as host addresses). Freed with cb_launch_free. */
typedef struct CbLaunch CbLaunch;

RillError* cb_kernel_load(RillExecutor* executor, const char* format, const uint8_t* data,
                          size_t size, const char* name, RillKernel** out);
void cb_kernel_destroy(RillKernel* kernel);
/* Checks a launch against the device's limits and the kernel's signature
 * and copies it; an error (INVALID_ARGUMENT) when it is wrong. */
RillError* cb_launch_prepare(const RillExecutor* executor, const RillDim3* threads,
                             const RillDim3* blocks, const RillKernel* kernel,
                             const RillKernelArg* args, size_t num_args, CbLaunch** out);
/* Runs a prepared launch on the calling thread. */
void cb_launch_run(const CbLaunch* launch);
void cb_launch_free(CbLaunch* launch);

/* Whether `size` bytes fit in `buffer`'s view (counted from its offset) and
 * the view is not null; fills `why` with the reason when not. */
bool cb_buffer_covers(RillBuffer buffer, uint64_t size, char* why, size_t why_size);
/* The host address of a buffer's view. */
static inline void* cb_address(RillBuffer buffer) { return (char*)buffer.opaque + buffer.offset; }

#endif /* RILL_EXAMPLES_C_BACKEND_C_BACKEND_INTERNAL_H_ */
