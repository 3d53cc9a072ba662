/* Rill's run-time plugin ABI: device backends and library plugins as shared
 * objects loaded at run time (PlatformManager::LoadPlugin, RILL_PLUGIN_PATH,
 * <prefix>/lib/rill/plugins). Plain C11; includes only the C headers below.
 *
 * A plugin exports one symbol, RillPluginInit (RILL_PLUGIN_ENTRY_NAME), and
 * nothing else. Rill calls it once per load with its ABI version and a host
 * table; the plugin returns a table of what it provides: a platform (a
 * backend, with executor, stream, event and kernel tables), a BLAS library,
 * a DNN library, or several of these. Rill turns it into its ordinary C++
 * objects, so the engine, ops, graphs and tools work on it unchanged.
 *
 * The rules, for both sides:
 *  - Every struct starts with `struct_size` and `ext` (an extension chain,
 *    NULL today). Fields are only ever appended. Set struct_size with
 *    RILL_STRUCT_SIZE(type, last field you know); a reader uses a field only
 *    when struct_size covers it (RILL_HAS_FIELD). Rill refuses a struct
 *    smaller than its mandatory fields need, naming the struct and both
 *    sizes.
 *  - Versions: a major and a minor (RILL_PLUGIN_ABI_MAJOR/MINOR). Rill loads
 *    a plugin of its own major whose minor is at least
 *    RILL_PLUGIN_ABI_MIN_MINOR; a newer minor than Rill's is accepted too
 *    (Rill reads only the fields it knows). Another major is refused with
 *    both versions, the file and the remedy. A plugin must not assume the
 *    host is as new as its header: check host->abi_minor and struct sizes
 *    before using what a later minor added.
 *  - Errors are RillError objects made by the host table's error_new and
 *    destroyed by its error_destroy (the host made them). A function that
 *    returns RillError* returns NULL on success; on failure the error passes
 *    to the caller, which destroys it. Codes are absl::StatusCode's values
 *    (RillCode). No C++ exception, longjmp or abort crosses the boundary.
 *  - Every object is destroyed by the destroy function of the table that
 *    created it, on the side that created it. Strings a plugin hands out
 *    (names, descriptions) must stay valid until its shutdown; Rill copies
 *    them. Pointers Rill passes in are valid only during the call unless
 *    the entry says otherwise.
 *  - Mandatory entries are checked at load, all missing ones named in one
 *    message; an optional entry left NULL has the fallback written at it.
 *  - Thread safety: every entry may be called from several threads at once,
 *    except that one stream's entries are not called concurrently.
 */
#ifndef RILL_ABI_RILL_PLUGIN_H_
#define RILL_ABI_RILL_PLUGIN_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version 1.2. Minor 1 appended RillPlatformFns.more_devices_hint and
 * RillPlatformFns.op_fallback, and RillExecutorFns.memory_limit; minor 2
 * RillExecutorFns.kernel_formats. */
#define RILL_PLUGIN_ABI_MAJOR 1
#define RILL_PLUGIN_ABI_MINOR 2
/* The oldest minor of this major that Rill still loads. */
#define RILL_PLUGIN_ABI_MIN_MINOR 0

/* The one symbol a plugin exports. */
#define RILL_PLUGIN_ENTRY_NAME "RillPluginInit"

/* Size of `type` up to and including `field`: what a struct that ends at
 * `field` declares as struct_size. */
#define RILL_STRUCT_SIZE(type, field) (offsetof(type, field) + sizeof(((type*)0)->field))
/* Whether the struct at `ptr` (its struct_size) holds `field`. */
#define RILL_HAS_FIELD(ptr, type, field) ((ptr)->struct_size >= RILL_STRUCT_SIZE(type, field))

/* Symbol visibility for the entry: build plugins with
 * -fvisibility=hidden; this exports RillPluginInit alone. */
#if defined(_WIN32)
#define RILL_PLUGIN_EXPORT __declspec(dllexport)
#else
#define RILL_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------------
 * Errors and the host table */

/* absl::StatusCode's values. */
typedef enum RillCode {
  RILL_CODE_OK = 0,
  RILL_CODE_CANCELLED = 1,
  RILL_CODE_UNKNOWN = 2,
  RILL_CODE_INVALID_ARGUMENT = 3,
  RILL_CODE_DEADLINE_EXCEEDED = 4,
  RILL_CODE_NOT_FOUND = 5,
  RILL_CODE_ALREADY_EXISTS = 6,
  RILL_CODE_PERMISSION_DENIED = 7,
  RILL_CODE_RESOURCE_EXHAUSTED = 8,
  RILL_CODE_FAILED_PRECONDITION = 9,
  RILL_CODE_ABORTED = 10,
  RILL_CODE_OUT_OF_RANGE = 11,
  RILL_CODE_UNIMPLEMENTED = 12,
  RILL_CODE_INTERNAL = 13,
  RILL_CODE_UNAVAILABLE = 14,
  RILL_CODE_DATA_LOSS = 15,
  RILL_CODE_UNAUTHENTICATED = 16
} RillCode;

/* An error: a code and a message. Opaque; made by RillHostApi.error_new. */
typedef struct RillError RillError;

/* The error state of one stream, owned by Rill (StreamStatus). A plugin's
 * stream asks it, before running each piece of queued work, whether to run
 * it (stream_ok), reports errors its work finds (stream_fail), and gives
 * event records the error they complete with (stream_error). Valid until
 * the stream's destroy returns. */
typedef struct RillStreamStatus RillStreamStatus;

typedef enum RillLogLevel {
  RILL_LOG_INFO = 0,
  RILL_LOG_WARNING = 1,
  RILL_LOG_ERROR = 2
} RillLogLevel;

/* What Rill gives a plugin at init. Valid until the plugin's shutdown
 * returns (keep the pointer). Every entry is set and thread-safe. */
typedef struct RillHostApi {
  size_t struct_size;
  void* ext;
  uint32_t abi_major;
  uint32_t abi_minor;

  /* A new error; `message` is copied (NULL reads as ""). Never NULL. */
  RillError* (*error_new)(RillCode code, const char* message);
  /* Destroys an error (NULL is ignored). */
  void (*error_destroy)(RillError* error);
  RillCode (*error_code)(const RillError* error);
  /* Valid until the error is destroyed. */
  const char* (*error_message)(const RillError* error);

  /* Writes a line to Rill's log (RILL_LOG; INFO shows at RILL_LOG_LEVEL=0). */
  void (*log)(RillLogLevel level, const char* message);

  /* Rill's allocator, for memory either side may need to free: aligned
   * (alignment a power of two, at most 4096), NULL when out of memory. */
  void* (*host_alloc)(size_t size, size_t alignment);
  void (*host_free)(void* ptr);

  /* The stream's queue has no error: run the next piece of work. When it
   * returns false, skip memcpys, memsets and launches (host callbacks are
   * always called; they check for themselves). */
  bool (*stream_ok)(const RillStreamStatus* status);
  /* Reports an error that queued work found; takes `error`. Later work is
   * skipped by stream_ok; the first error is the one the stream keeps. */
  void (*stream_fail)(RillStreamStatus* status, RillError* error);
  /* A copy of the queue's first error, NULL while there is none: what an
   * event record completes with. The caller destroys it. */
  RillError* (*stream_error)(const RillStreamStatus* status);
} RillHostApi;

/* ------------------------------------------------------------------------
 * Handles: each made and destroyed by the plugin. */

typedef struct RillExecutor RillExecutor; /* one device */
typedef struct RillStream RillStream;     /* an in-order queue on a device */
typedef struct RillEvent RillEvent;       /* a recorded point in a stream */
typedef struct RillKernel RillKernel;     /* a loaded kernel */

/* A view of device memory: `opaque` is what the plugin's allocate returned
 * (for a host-addressable device, the allocation's host address), `offset`
 * and `size` the view inside it, in bytes. */
/* RillBuffer, RillDim3 and RillKernelArg are plain values passed inside
 * other structs or in arrays: they have no struct_size and never change. */
typedef struct RillBuffer {
  void* opaque;
  uint64_t offset;
  uint64_t size;
} RillBuffer;

typedef struct RillDim3 {
  int64_t x, y, z;
} RillDim3;

/* Feature bits (RillDeviceDescription.features), as rill::Feature. A missing
 * bit makes the feature's calls fail with Unimplemented in Rill's front. */
#define RILL_FEATURE_HOST_CALLBACKS (1u << 0)
#define RILL_FEATURE_KERNEL_LAUNCH (1u << 1)
#define RILL_FEATURE_TIMERS (1u << 2)
#define RILL_FEATURE_PINNED_HOST_MEMORY (1u << 3)
#define RILL_FEATURE_DEVICE_TO_DEVICE_COPY (1u << 4)
/* Device memory is host memory: RillBuffer.opaque is the allocation's host
 * address, readable and writable by host threads while streams run. Rill
 * then gives the device its host library plugins (OpenBLAS, oneDNN, ...)
 * and host-code op kernels, and runs KernelSpec host functions on it
 * through host callbacks. */
#define RILL_FEATURE_HOST_ADDRESSABLE_MEMORY (1u << 5)

/* Filled by RillPlatformFns.describe; Rill sets struct_size to its size
 * and zeroes the rest. Strings: valid until shutdown, copied by Rill. */
typedef struct RillDeviceDescription {
  size_t struct_size;
  void* ext;
  const char* name;
  const char* vendor;
  const char* platform_version;
  const char* driver_version;
  int64_t memory_bytes;
  int32_t compute_units;
  int64_t clock_khz;
  int64_t max_threads_per_block;
  RillDim3 max_block_dims;
  RillDim3 max_grid_dims;
  uint32_t features; /* RILL_FEATURE_* bits */
} RillDeviceDescription;

/* ------------------------------------------------------------------------
 * Platform: counts and describes devices, creates executors. */
typedef struct RillPlatformFns {
  size_t struct_size;
  void* ext;
  /* Short lower-case name ("mine"); unique among loaded platforms. */
  const char* name;
  /* Mandatory. Devices usable here; 0 when the platform cannot run. */
  int32_t (*device_count)(void);
  /* Optional: NULL when the platform can run, else why not (an error,
   * RILL_CODE_UNAVAILABLE). Fallback: available when device_count() > 0. */
  RillError* (*availability)(void);
  /* Mandatory. Fills `out` for device `ordinal` (0 <= ordinal < count). */
  RillError* (*describe)(int32_t ordinal, RillDeviceDescription* out);
  /* Mandatory. Opens device `ordinal`. Rill calls it once per device and
   * Rill platform (a program with two PlatformManagers that both load the
   * plugin opens each device twice), and destroys the executor with
   * executor_destroy after every stream, event and kernel of it is
   * destroyed and all its memory freed. */
  RillError* (*executor_create)(int32_t ordinal, RillExecutor** out);
  void (*executor_destroy)(RillExecutor* executor); /* mandatory */
  /* --- minor 1 --- */
  /* Optional: how a user gets more devices ("set MINE_DEVICES=2"); NULL or
   * "" for none. */
  const char* more_devices_hint;
  /* Optional: the device that runs ops this platform has no kernel for
   * (Platform::OpFallback: "cpu", "host:0"); NULL or "" for none. */
  const char* op_fallback;
} RillPlatformFns;

/* ------------------------------------------------------------------------
 * Executor: memory, streams, events, kernels of one device. */
typedef struct RillExecutorFns {
  size_t struct_size;
  void* ext;
  /* Mandatory. `size` > 0. Sets out->opaque and out->size (offset 0);
   * RILL_CODE_RESOURCE_EXHAUSTED when the device cannot provide it. */
  RillError* (*allocate)(RillExecutor* executor, uint64_t size, RillBuffer* out);
  /* Mandatory. Frees what allocate returned. Work already queued on the
   * device's streams may still use it: free after that work (defer, or
   * wait), and never block inside a host callback of this device. */
  void (*deallocate)(RillExecutor* executor, RillBuffer memory);
  /* Mandatory. Synchronous copies, outside any stream's order. */
  RillError* (*memcpy_host_to_device)(RillExecutor* executor, RillBuffer dst, const void* src,
                                      uint64_t size);
  RillError* (*memcpy_device_to_host)(RillExecutor* executor, void* dst, RillBuffer src,
                                      uint64_t size);
  /* Mandatory. Waits for all work on every stream of the device. Rill
   * never calls it from a host callback of the device. */
  RillError* (*synchronize_all)(RillExecutor* executor);
  /* Mandatory. A new in-order stream; `status` (its error state) outlives
   * it. Rill drains a stream (stream block_until_done) before destroying
   * it. */
  RillError* (*stream_create)(RillExecutor* executor, int32_t priority, RillStreamStatus* status,
                              RillStream** out);
  void (*stream_destroy)(RillStream* stream);
  /* Mandatory. event_destroy may come while records of and waits for the
   * event are still queued: keep what they need until they ran. */
  RillError* (*event_create)(RillExecutor* executor, RillEvent** out);
  void (*event_destroy)(RillEvent* event);
  /* Optional, with kernel_destroy and RillStreamFns.launch: loads a kernel
   * in the plugin's own `format` (KernelSpec::AddVariant(platform id,
   * {format, data})); `name` is the kernel's name. RILL_CODE_UNIMPLEMENTED
   * for a format it does not read. Fallback: only KernelSpec host
   * functions load, on a host-addressable device. kernel_destroy may come
   * while launches of the kernel are still queued. */
  RillError* (*kernel_load)(RillExecutor* executor, const char* format, const uint8_t* data,
                            size_t size, const char* name, RillKernel** out);
  void (*kernel_destroy)(RillKernel* kernel);
  /* Optional: page-locked host memory. Fallback: Rill's allocator. */
  RillError* (*host_memory_allocate)(RillExecutor* executor, uint64_t size, void** out);
  void (*host_memory_deallocate)(RillExecutor* executor, void* ptr);
  /* --- minor 1 --- */
  /* Optional: bytes allocate may hand out in all. Fallback:
   * RillDeviceDescription.memory_bytes. */
  int64_t (*memory_limit)(RillExecutor* executor);
  /* --- minor 2 --- */
  /* Optional: the standard kernel formats kernel_load reads besides its
   * own, comma-separated: "cuda.fatbin", "cuda.ptx", "opencl.c". Rill then
   * loads a KernelSpec's CUDA fatbin or PTX, or OpenCL C, on the device (the
   * op layer's device kernels included). NULL or "": none. */
  const char* kernel_formats;
} RillExecutorFns;

/* A function of Rill's that a stream runs in its order (a host callback).
 * Called exactly once, on a host thread, even after the stream failed (the
 * function checks for itself), and from no lock the plugin holds that its
 * entries take: it may enqueue on the same stream. */
typedef void (*RillHostFn)(void* user_data);

/* One launch argument: device memory, or a value of `size` bytes at `value`
 * (valid during the launch call only: copy it). */
typedef struct RillKernelArg {
  bool is_memory;
  RillBuffer memory;
  const void* value;
  uint64_t size;
} RillKernelArg;

/* ------------------------------------------------------------------------
 * Stream: every entry enqueues and returns at once; work runs in enqueue
 * order, each piece only if stream_ok (event records and host callbacks
 * always). A returned error means nothing was enqueued. */
typedef struct RillStreamFns {
  size_t struct_size;
  void* ext;
  /* Mandatory. `src`/`dst` host memory stays valid until the copy ran. */
  RillError* (*memcpy_host_to_device)(RillStream* stream, RillBuffer dst, const void* src,
                                      uint64_t size);
  RillError* (*memcpy_device_to_host)(RillStream* stream, void* dst, RillBuffer src, uint64_t size);
  /* Optional (RILL_FEATURE_DEVICE_TO_DEVICE_COPY). Fallback: Unimplemented. */
  RillError* (*memcpy_device_to_device)(RillStream* stream, RillBuffer dst, RillBuffer src,
                                        uint64_t size);
  /* Mandatory. Fills `size` bytes (a multiple of 4) with `pattern`. */
  RillError* (*memset32)(RillStream* stream, RillBuffer dst, uint32_t pattern, uint64_t size);
  /* Mandatory. `event` is of the same executor; a record completes with
   * stream_error's error when the queue has one. */
  RillError* (*record_event)(RillStream* stream, RillEvent* event);
  /* Mandatory. Later work waits until the event's latest record (at the
   * time of this call) completes. `event` is of the same platform (another
   * device of it, maybe). A record that completed with an error fails the
   * waiting stream: stream_fail with a copy of that error. */
  RillError* (*wait_event)(RillStream* stream, RillEvent* event);
  /* Mandatory. Runs fn(user_data) once all earlier work is done. */
  RillError* (*host_callback)(RillStream* stream, RillHostFn fn, void* user_data);
  /* Mandatory. Blocks until all enqueued work has run. Rill never calls it
   * from one of the stream's own host callbacks. NULL, or an error of the
   * plugin's own (the stream's errors reach Rill through stream_fail). */
  RillError* (*block_until_done)(RillStream* stream);
  /* Optional (RILL_FEATURE_KERNEL_LAUNCH, with kernel_load). `args` and
   * the values they point at are valid during the call only. */
  RillError* (*launch)(RillStream* stream, const RillDim3* threads, const RillDim3* blocks,
                       const RillKernel* kernel, const RillKernelArg* args, size_t num_args);
  /* Optional: the native queue handle for interop; NULL when none. */
  void* (*native_handle)(RillStream* stream);
} RillStreamFns;

typedef enum RillEventState {
  RILL_EVENT_PENDING = 0,
  RILL_EVENT_COMPLETE = 1,
  RILL_EVENT_ERROR = 2
} RillEventState;

typedef struct RillEventFns {
  size_t struct_size;
  void* ext;
  /* Mandatory. Completion of the latest record (COMPLETE before any). */
  RillEventState (*poll)(RillEvent* event);
  /* Mandatory. Blocks until the latest record completes; returns the error
   * the record completed with (a copy; NULL when none). */
  RillError* (*synchronize)(RillEvent* event);
  /* Optional (RILL_FEATURE_TIMERS): microseconds between the completion of
   * `start`'s record and `end`'s. RILL_CODE_FAILED_PRECONDITION when either
   * is not complete or was never recorded; a record's error when it
   * completed with one. */
  RillError* (*elapsed_us)(RillEvent* start, RillEvent* end, double* out);
} RillEventFns;

/* ------------------------------------------------------------------------
 * Library extensions: BLAS and DNN as plugins. A library serves either
 *  - RILL_LIBRARY_HOST_MEMORY: every platform whose memory is host memory
 *    (the host backend's and any such device's). Rill calls it on the
 *    stream's host thread, in the stream's order, with `stream` NULL and
 *    buffers whose opaque + offset is the host address: compute and
 *    return.
 *  - RILL_LIBRARY_OWN_PLATFORM: the plugin's own platform. Rill calls it
 *    on the submitting thread with the plugin's stream; it enqueues the
 *    work there and returns (errors found later go to stream_fail).
 * An entry left NULL, or answering RILL_CODE_UNIMPLEMENTED from `supports`,
 * hands the call to the next plugin of the executor's chain
 * (RILL_BLAS=mine,openblas). */
typedef enum RillLibraryTarget {
  RILL_LIBRARY_HOST_MEMORY = 0,
  RILL_LIBRARY_OWN_PLATFORM = 1
} RillLibraryTarget;

typedef enum RillDataType { RILL_FLOAT32 = 0, RILL_FLOAT64 = 1 } RillDataType;

/* Column-major BLAS, as rill::GemmArgs: C = alpha op(A) op(B) + beta C,
 * op(A) m x k, with batch_count matrices `stride_*` elements apart. Rill
 * has checked shapes, leading dimensions and buffer sizes. */
typedef struct RillBlasGemmArgs {
  size_t struct_size;
  void* ext;
  RillDataType type;
  bool trans_a, trans_b;
  int64_t m, n, k;
  double alpha;
  RillBuffer a;
  int64_t lda;
  RillBuffer b;
  int64_t ldb;
  double beta;
  RillBuffer c;
  int64_t ldc;
  int64_t batch_count;
  int64_t stride_a, stride_b, stride_c;
} RillBlasGemmArgs;

/* y = alpha op(A) x + beta y, A m x n. */
typedef struct RillBlasGemvArgs {
  size_t struct_size;
  void* ext;
  RillDataType type;
  bool trans;
  int64_t m, n;
  double alpha;
  RillBuffer a;
  int64_t lda;
  RillBuffer x;
  int64_t incx;
  double beta;
  RillBuffer y;
  int64_t incy;
} RillBlasGemvArgs;

typedef struct RillBlasFns {
  size_t struct_size;
  void* ext;
  /* The name the chain setting uses ("mine"); unique per platform. */
  const char* name;
  /* The library and its version, for rill-info; may be NULL. */
  const char* version;
  RillLibraryTarget target;
  /* Whether it becomes the default BLAS of its platforms. */
  bool make_default;
  /* Mandatory. */
  RillError* (*gemm)(RillStream* stream, const RillBlasGemmArgs* args);
  /* Optional: NULL hands gemv to the chain's next plugin. */
  RillError* (*gemv)(RillStream* stream, const RillBlasGemvArgs* args);
  /* Optional: NULL, or RILL_CODE_UNIMPLEMENTED with the reason, for a gemm
   * this library does not run (say, float64); the chain's next runs it.
   * The query carries the type, m, n and k only (the rest is zero): it is
   * asked before the call's other arguments are known. A gemm it accepts
   * may still fail in `gemm` with the reason. */
  RillError* (*gemm_supports)(const RillBlasGemmArgs* args);
} RillBlasFns;

/* Forward 2-D convolution (cross-correlation, as rill::DnnSupport's
 * kForward), NCHW float tensors, filter [out_channels, in_channels/groups,
 * kh, kw]: y = alpha conv(x, w) + beta y. Rill has checked the shapes. */
typedef struct RillConvArgs {
  size_t struct_size;
  void* ext;
  RillDataType type;
  int64_t batch, in_channels, in_height, in_width;
  int64_t out_channels, kernel_height, kernel_width;
  int64_t out_height, out_width;
  int64_t pad_top, pad_left, pad_bottom, pad_right;
  int64_t stride_h, stride_w, dilation_h, dilation_w;
  int64_t groups;
  double alpha, beta;
  RillBuffer x, w, y;
} RillConvArgs;

typedef struct RillDnnFns {
  size_t struct_size;
  void* ext;
  const char* name;
  const char* version;
  RillLibraryTarget target;
  bool make_default;
  /* Mandatory. */
  RillError* (*conv_forward)(RillStream* stream, const RillConvArgs* args);
  /* Optional, as RillBlasFns.gemm_supports; the query carries the shapes,
   * pads, strides, dilations, groups, type, alpha and beta (no buffers). */
  RillError* (*conv_forward_supports)(const RillConvArgs* args);
} RillDnnFns;

/* ------------------------------------------------------------------------
 * The plugin: what RillPluginInit returns. */
typedef struct RillPlugin {
  size_t struct_size;
  void* ext;
  /* The ABI the plugin was built against: RILL_PLUGIN_ABI_MAJOR/MINOR. */
  uint32_t abi_major;
  uint32_t abi_minor;
  /* For people: "mine 0.3 (vendor driver 12.1)". */
  const char* name;
  const char* version;
  /* A backend: the platform and its object tables, all five set, or all
   * NULL for a plugin that only brings libraries. */
  const RillPlatformFns* platform;
  const RillExecutorFns* executor;
  const RillStreamFns* stream;
  const RillEventFns* event;
  /* Library extensions; each may be NULL. */
  const RillBlasFns* blas;
  const RillDnnFns* dnn;
  /* Optional: called once, last, before the shared object is closed (after
   * every object the plugin made was destroyed) -- also when Rill refused
   * the table the entry returned (another major, missing entries). */
  void (*shutdown)(void);
} RillPlugin;

/* What the entry receives. Valid during the call; `host` until shutdown.
 * host_abi_major/minor equal host->abi_major/minor (given twice so that a
 * plugin can refuse a host before reading its table). */
typedef struct RillPluginInitArgs {
  size_t struct_size;
  void* ext;
  uint32_t host_abi_major;
  uint32_t host_abi_minor;
  const RillHostApi* host;
  /* The file being loaded, for messages. */
  const char* path;
} RillPluginInitArgs;

/* The entry. Returns the plugin's table (valid until shutdown), or NULL
 * when the plugin cannot run with this host; it may then log why through
 * args->host->log. Called once per load; a plugin that refuses a host's
 * major returns NULL. */
typedef const RillPlugin* (*RillPluginInitFn)(const RillPluginInitArgs* args);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RILL_ABI_RILL_PLUGIN_H_ */
