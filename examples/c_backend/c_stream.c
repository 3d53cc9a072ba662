/* The C backend's streams.
 *
 * A stream is a FIFO queue of work items and a worker thread that runs
 * them in order. Every entry of RillStreamFns checks its arguments, puts
 * an item on the queue and returns; the worker asks the host's stream
 * status before each copy, memset and launch (stream_ok) and skips it on a
 * failed stream, while host callbacks, event records, waits and markers
 * always run. Events are in c_event.c. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_backend_internal.h"

/* ------------------------------------------------------------------------
 * Types */

typedef enum CbKind {
  CB_COPY,     /* memcpy in any direction: host addresses at both ends */
  CB_MEMSET,   /* memset32 */
  CB_LAUNCH,   /* a kernel launch */
  CB_RECORD,   /* completes an event record */
  CB_WAIT,     /* blocks until an event record completes */
  CB_CALLBACK, /* a host function */
  CB_MARKER    /* one of a CbGroup's markers (deallocate, synchronize_all) */
} CbKind;

struct CbItem {
  _Atomic(CbItem*) next; /* the stream's queue */
  CbItem* link;          /* the recycling lists */
  CbKind kind;
  union {
    struct {
      void* dst;
      const void* src;
      uint64_t size;
    } copy;
    struct {
      void* dst;
      uint32_t pattern;
      uint64_t size;
    } memset;
    CbLaunch* launch;
    struct {
      RillEvent* event;
      CbRecord* record;
    } event;
    struct {
      RillHostFn fn;
      void* user_data;
    } callback;
    CbGroup* group;
  } u;
};

struct RillStream {
  RillExecutor* executor;
  RillStreamStatus* status;
  RillStream* prev; /* the executor's list, guarded by executor->mu */
  RillStream* next;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t work_cv; /* an item arrived, or stop */
  pthread_cond_t idle_cv; /* every item enqueued so far has run */
  /* The queue: a lock-free intrusive multi-producer, single-consumer list
   * (D. Vyukov's): producers swap themselves in at `tail`; the worker
   * alone reads from `head`, which starts at `stub`. */
  _Atomic(CbItem*) tail;
  CbItem* head;
  CbItem* stub;
  CbItem stub_item;
  _Atomic bool sleeping; /* the worker waits (or is about to) on work_cv */
  _Atomic bool stop;     /* exit once the queue is empty */
  /* Items ever enqueued and ever run: the worker spins on the first, and
   * block_until_done on the second, for a while before they sleep (a wake
   * up through a condition variable costs tens of microseconds). */
  _Atomic uint64_t enqueued;
  _Atomic uint64_t completed;
  _Atomic int drain_waiters; /* threads asleep (or about to be) in block_until_done */
  /* Recycled work items, so that an enqueue rarely calls malloc: the worker
   * returns run items to `returned` (guarded by mu, at most
   * CB_KEEP_ITEMS), and the enqueuing side takes them all into `spare`
   * (its own: one stream's entries are never called concurrently) when
   * it has none left. */
  CbItem* returned;
  int returned_count;
  CbItem* spare;
};

#define CB_KEEP_ITEMS 4096

/* How long the worker and block_until_done spin before they sleep, as
 * Rill's own host streams do. */
#define CB_SPIN_NS 50000

static inline void cb_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Spins up to CB_SPIN_NS until *counter reaches `target`; whether it did. */
static bool cb_spin_until(_Atomic uint64_t* counter, uint64_t target) {
  int64_t deadline = 0;
  for (unsigned i = 0;; ++i) {
    if (atomic_load(counter) >= target) return true;
    cb_cpu_relax();
    if ((i & 63) == 63) {
      const int64_t now = cb_now_ns();
      if (deadline == 0) {
        deadline = now + CB_SPIN_NS;
      } else if (now >= deadline) {
        return false;
      }
    }
  }
}

/* ------------------------------------------------------------------------
 * The queue and its worker */

/* Puts the stub back at the tail (the worker only; not counted as work). */
static void cb_enqueue_stub(RillStream* stream) {
  CbItem* stub = stream->stub;
  atomic_store(&stub->next, NULL);
  CbItem* prev = atomic_exchange(&stream->tail, stub);
  atomic_store(&prev->next, stub);
}

static void cb_enqueue(RillStream* stream, CbItem* item) {
  atomic_store(&item->next, NULL);
  /* Counted before it is linked: a block_until_done that counts this item
   * then counts every item ahead of it in the queue too (a marker another
   * thread is linking meanwhile included). */
  atomic_fetch_add(&stream->enqueued, 1);
  CbItem* prev = atomic_exchange(&stream->tail, item);
  atomic_store(&prev->next, item);
  /* Sequentially consistent with the worker's store of `sleeping` and its
   * look at the queue: either it sees this item, or this sees it asleep. */
  if (atomic_load(&stream->sleeping)) {
    pthread_mutex_lock(&stream->mu);
    pthread_cond_signal(&stream->work_cv);
    pthread_mutex_unlock(&stream->mu);
  }
}

/* The worker's next item, or NULL when the queue is empty (or a producer
 * is half-way through its push: the caller tries again). */
static CbItem* cb_dequeue(RillStream* stream) {
  CbItem* head = stream->head;
  CbItem* next = atomic_load(&head->next);
  if (head == stream->stub) {
    if (next == NULL) return NULL;
    stream->head = head = next;
    next = atomic_load(&head->next);
  }
  if (next != NULL) {
    stream->head = next;
    return head;
  }
  if (head != atomic_load(&stream->tail)) return NULL; /* a push in progress */
  cb_enqueue_stub(stream);
  next = atomic_load(&head->next);
  if (next == NULL) return NULL;
  stream->head = next;
  return head;
}

/* Whether the queue holds an item (or a push is in progress). */
static bool cb_queue_nonempty(RillStream* stream) {
  return stream->head != atomic_load(&stream->tail) || atomic_load(&stream->head->next) != NULL;
}

/* A work item for an entry of `stream` (not for markers, which come from
 * another thread). */
static CbItem* cb_item_new(RillStream* stream, CbKind kind) {
  if (stream->spare == NULL) {
    pthread_mutex_lock(&stream->mu);
    stream->spare = stream->returned;
    stream->returned = NULL;
    stream->returned_count = 0;
    pthread_mutex_unlock(&stream->mu);
  }
  CbItem* item = stream->spare;
  if (item != NULL) {
    stream->spare = item->link;
    memset(item, 0, sizeof(*item));
  } else {
    item = calloc(1, sizeof(*item));
    if (item == NULL) return NULL;
  }
  item->kind = kind;
  return item;
}

static void cb_free_items(CbItem* list) {
  while (list != NULL) {
    CbItem* next = list->link;
    free(list);
    list = next;
  }
}

static RillError* cb_out_of_memory(const char* what) {
  return cb_error(RILL_CODE_RESOURCE_EXHAUSTED, "%s: out of host memory for the work item", what);
}

/* CBACKEND_FAIL_MEMSET (an ABI test variant): every memset32 fails its
 * stream with DATA_LOSS when it runs, instead of writing. */
#if defined(CBACKEND_FAIL_MEMSET)
static const bool kFailEveryMemset = true;
#else
static const bool kFailEveryMemset = false;
#endif

/* Fills `size` bytes (a multiple of 4) at `dst`, of any alignment. */
static void cb_fill32(unsigned char* dst, uint32_t pattern, uint64_t size) {
  if (size == 0) return;
  memcpy(dst, &pattern, sizeof(pattern));
  uint64_t done = sizeof(pattern);
  while (done < size) {
    const uint64_t n = done < size - done ? done : size - done;
    memcpy(dst + done, dst, (size_t)n);
    done += n;
  }
}

/* Runs a marker: the last of its group frees the group's memory (a
 * deallocate) or wakes synchronize_all. The item belongs to the group. */
static void cb_run_marker(CbGroup* group) {
  RillExecutor* executor = group->executor;
  pthread_mutex_lock(&executor->mu);
  const bool last = --group->remaining == 0;
  void* memory = group->memory;
  if (last && memory == NULL) pthread_cond_broadcast(&executor->sync_cv);
  pthread_mutex_unlock(&executor->mu);
  /* A sync group is freed by its waiter; don't touch it from here on. */
  if (last && memory != NULL) {
    free(memory);
    free(group);
  }
}

/* Runs one item on the worker, no lock held, and frees it. */
static void cb_run(RillStream* stream, CbItem* item) {
  switch (item->kind) {
    case CB_COPY:
      if (cb_host->stream_ok(stream->status)) {
        memmove(item->u.copy.dst, item->u.copy.src, (size_t)item->u.copy.size);
      }
      break;
    case CB_MEMSET:
      if (cb_host->stream_ok(stream->status)) {
        if (kFailEveryMemset) {
          char message[96];
          snprintf(message, sizeof(message),
                   "cbackend: injected memset failure (pattern 0x%08" PRIx32 ")",
                   item->u.memset.pattern);
          cb_host->stream_fail(stream->status, cb_host->error_new(RILL_CODE_DATA_LOSS, message));
        } else {
          cb_fill32(item->u.memset.dst, item->u.memset.pattern, item->u.memset.size);
        }
      }
      break;
    case CB_LAUNCH:
      if (cb_host->stream_ok(stream->status)) cb_launch_run(item->u.launch);
      cb_launch_free(item->u.launch);
      break;
    case CB_RECORD:
      cb_event_complete_record(item->u.event.event, item->u.event.record,
                               cb_host->stream_error(stream->status));
      break;
    case CB_WAIT: {
      /* A record that completed with an error fails this stream too, as
       * Rill's own backends do: work after the wait never sees data the
       * failed stream did not produce. */
      RillError* error = cb_event_wait_held(item->u.event.event, item->u.event.record);
      if (error != NULL) cb_host->stream_fail(stream->status, error);
      break;
    }
    case CB_CALLBACK:
      item->u.callback.fn(item->u.callback.user_data);
      break;
    case CB_MARKER:
      cb_run_marker(item->u.group);
      return; /* the item is part of its group */
  }
}

/* Gives run items back for cb_item_new (at most CB_KEEP_ITEMS kept). */
static void cb_return_items(RillStream* stream, CbItem* done, CbItem* last, int count) {
  pthread_mutex_lock(&stream->mu);
  if (stream->returned_count + count <= CB_KEEP_ITEMS) {
    last->link = stream->returned;
    stream->returned = done;
    stream->returned_count += count;
    done = NULL;
  }
  pthread_mutex_unlock(&stream->mu);
  cb_free_items(done);
}

static void* cb_worker(void* arg) {
  RillStream* stream = arg;
  uint64_t taken = 0;
  CbItem* done = NULL; /* run items, to recycle */
  CbItem* last = NULL;
  int done_count = 0;
  for (;;) {
    CbItem* item = cb_dequeue(stream);
    if (item == NULL) {
      if (done != NULL) {
        cb_return_items(stream, done, last, done_count);
        done = last = NULL;
        done_count = 0;
      }
      /* Spin a while for the next item, then sleep. */
      if (cb_spin_until(&stream->enqueued, taken + 1)) continue;
      pthread_mutex_lock(&stream->mu);
      atomic_store(&stream->sleeping, true);
      while (!cb_queue_nonempty(stream) && !atomic_load(&stream->stop)) {
        pthread_cond_wait(&stream->work_cv, &stream->mu);
      }
      atomic_store(&stream->sleeping, false);
      const bool stop = atomic_load(&stream->stop) && !cb_queue_nonempty(stream);
      pthread_mutex_unlock(&stream->mu);
      if (stop) return NULL;
      continue;
    }
    ++taken;
    const bool marker = item->kind == CB_MARKER;
    cb_run(stream, item);
    if (!marker) {
      item->link = done;
      if (done == NULL) last = item;
      done = item;
      ++done_count;
    }
    /* Sequentially consistent with block_until_done's drain_waiters and
     * completed accesses: either it sees this item done, or this sees it
     * waiting and wakes it (under mu, so the wake cannot come too early). */
    atomic_fetch_add(&stream->completed, 1);
    if (atomic_load(&stream->drain_waiters) > 0) {
      pthread_mutex_lock(&stream->mu);
      pthread_cond_broadcast(&stream->idle_cv);
      pthread_mutex_unlock(&stream->mu);
    }
    if (done_count >= 256) {
      cb_return_items(stream, done, last, done_count);
      done = last = NULL;
      done_count = 0;
    }
  }
}

/* ------------------------------------------------------------------------
 * Markers */

CbGroup* cb_group_new(RillExecutor* executor, int count, void* memory) {
  CbGroup* group = malloc(sizeof(CbGroup) + (size_t)count * sizeof(CbItem));
  if (group == NULL) return NULL;
  group->executor = executor;
  group->remaining = count;
  group->memory = memory;
  group->items = (CbItem*)(group + 1);
  return group;
}

void cb_stream_enqueue_markers(CbGroup* group) {
  int i = 0;
  for (RillStream* s = group->executor->streams; s != NULL; s = s->next, ++i) {
    CbItem* item = &group->items[i];
    item->kind = CB_MARKER;
    item->u.group = group;
    cb_enqueue(s, item);
  }
}

/* ------------------------------------------------------------------------
 * Stream entries */

RillError* cb_stream_create(RillExecutor* executor, int32_t priority, RillStreamStatus* status,
                            RillStream** out) {
  (void)priority; /* one priority: every stream has its own thread */
  RillStream* stream = calloc(1, sizeof(*stream));
  if (stream == NULL) return cb_error(RILL_CODE_RESOURCE_EXHAUSTED, "stream_create: out of memory");
  stream->executor = executor;
  stream->status = status;
  stream->stub = &stream->stub_item;
  stream->head = stream->stub;
  atomic_init(&stream->tail, stream->stub);
  pthread_mutex_init(&stream->mu, NULL);
  pthread_cond_init(&stream->work_cv, NULL);
  pthread_cond_init(&stream->idle_cv, NULL);
  const int rc = pthread_create(&stream->thread, NULL, cb_worker, stream);
  if (rc != 0) {
    pthread_cond_destroy(&stream->idle_cv);
    pthread_cond_destroy(&stream->work_cv);
    pthread_mutex_destroy(&stream->mu);
    free(stream);
    return cb_error(RILL_CODE_RESOURCE_EXHAUSTED, "stream_create: cannot start a thread: %s",
                    strerror(rc));
  }
  pthread_mutex_lock(&executor->mu);
  stream->next = executor->streams;
  if (executor->streams != NULL) executor->streams->prev = stream;
  executor->streams = stream;
  ++executor->stream_count;
  pthread_mutex_unlock(&executor->mu);
  *out = stream;
  return NULL;
}

static RillError* cb_block_until_done(RillStream* stream) {
  const uint64_t target = atomic_load(&stream->enqueued);
  if (cb_spin_until(&stream->completed, target)) return NULL;
  pthread_mutex_lock(&stream->mu);
  atomic_fetch_add(&stream->drain_waiters, 1);
  while (atomic_load(&stream->completed) < target) {
    pthread_cond_wait(&stream->idle_cv, &stream->mu);
  }
  atomic_fetch_sub(&stream->drain_waiters, 1);
  pthread_mutex_unlock(&stream->mu);
  return NULL;
}

/* Drains the queue, leaves the executor's list (markers that arrived
 * meanwhile still run), stops and joins the worker. */
void cb_stream_destroy(RillStream* stream) {
  if (stream == NULL) return;
  cb_block_until_done(stream);
  RillExecutor* executor = stream->executor;
  pthread_mutex_lock(&executor->mu);
  if (stream->prev != NULL) {
    stream->prev->next = stream->next;
  } else {
    executor->streams = stream->next;
  }
  if (stream->next != NULL) stream->next->prev = stream->prev;
  --executor->stream_count;
  pthread_mutex_unlock(&executor->mu);

  pthread_mutex_lock(&stream->mu);
  stream->stop = true;
  pthread_cond_signal(&stream->work_cv);
  pthread_mutex_unlock(&stream->mu);
  pthread_join(stream->thread, NULL);

  cb_free_items(stream->returned);
  cb_free_items(stream->spare);
  pthread_cond_destroy(&stream->idle_cv);
  pthread_cond_destroy(&stream->work_cv);
  pthread_mutex_destroy(&stream->mu);
  free(stream);
}

static RillError* cb_enqueue_copy(RillStream* stream, const char* what, void* dst, const void* src,
                                  uint64_t size) {
  CbItem* item = cb_item_new(stream, CB_COPY);
  if (item == NULL) return cb_out_of_memory(what);
  item->u.copy.dst = dst;
  item->u.copy.src = src;
  item->u.copy.size = size;
  cb_enqueue(stream, item);
  return NULL;
}

static RillError* cb_memcpy_h2d(RillStream* stream, RillBuffer dst, const void* src,
                                uint64_t size) {
  if (size == 0) return NULL;
  char why[160];
  if (src == NULL || !cb_buffer_covers(dst, size, why, sizeof(why))) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT, "memcpy host->device of %" PRIu64 " bytes: %s",
                    size, src == NULL ? "null source" : why);
  }
  return cb_enqueue_copy(stream, "memcpy host->device", cb_address(dst), src, size);
}

static RillError* cb_memcpy_d2h(RillStream* stream, void* dst, RillBuffer src, uint64_t size) {
  if (size == 0) return NULL;
  char why[160];
  if (dst == NULL || !cb_buffer_covers(src, size, why, sizeof(why))) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT, "memcpy device->host of %" PRIu64 " bytes: %s",
                    size, dst == NULL ? "null destination" : why);
  }
  return cb_enqueue_copy(stream, "memcpy device->host", dst, cb_address(src), size);
}

static RillError* cb_memcpy_d2d(RillStream* stream, RillBuffer dst, RillBuffer src, uint64_t size) {
  if (size == 0) return NULL;
  char why[160];
  if (!cb_buffer_covers(dst, size, why, sizeof(why))) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT,
                    "memcpy device->device of %" PRIu64 " bytes: destination: %s", size, why);
  }
  if (!cb_buffer_covers(src, size, why, sizeof(why))) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT,
                    "memcpy device->device of %" PRIu64 " bytes: source: %s", size, why);
  }
  return cb_enqueue_copy(stream, "memcpy device->device", cb_address(dst), cb_address(src), size);
}

static RillError* cb_memset32(RillStream* stream, RillBuffer dst, uint32_t pattern, uint64_t size)
    __attribute__((unused));
static RillError* cb_memset32(RillStream* stream, RillBuffer dst, uint32_t pattern, uint64_t size) {
  if (size % 4 != 0) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT,
                    "memset32 of %" PRIu64 " bytes: the size must be a multiple of 4", size);
  }
  if (size == 0) return NULL;
  char why[160];
  if (!cb_buffer_covers(dst, size, why, sizeof(why))) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT, "memset32 of %" PRIu64 " bytes: %s", size, why);
  }
  CbItem* item = cb_item_new(stream, CB_MEMSET);
  if (item == NULL) return cb_out_of_memory("memset32");
  item->u.memset.dst = cb_address(dst);
  item->u.memset.pattern = pattern;
  item->u.memset.size = size;
  cb_enqueue(stream, item);
  return NULL;
}

static RillError* cb_record_event(RillStream* stream, RillEvent* event) {
  if (event == NULL) return cb_error(RILL_CODE_INVALID_ARGUMENT, "record_event: null event");
  if (cb_event_executor(event) != stream->executor) {
    return cb_error(RILL_CODE_INVALID_ARGUMENT,
                    "record_event: the event belongs to device %" PRId32 ", the stream to %" PRId32,
                    cb_event_executor(event)->ordinal, stream->executor->ordinal);
  }
  CbItem* item = cb_item_new(stream, CB_RECORD);
  if (item == NULL) return cb_out_of_memory("record_event");
  CbRecord* record = cb_event_begin_record(event);
  if (record == NULL) {
    free(item);
    return cb_out_of_memory("record_event");
  }
  item->u.event.event = event;
  item->u.event.record = record;
  cb_enqueue(stream, item);
  return NULL;
}

/* Waits for the event's latest record as of now; nothing to wait for when
 * it was never recorded. The event may be of another executor of this
 * platform. */
static RillError* cb_wait_event(RillStream* stream, RillEvent* event) {
  if (event == NULL) return cb_error(RILL_CODE_INVALID_ARGUMENT, "wait_event: null event");
  CbItem* item = cb_item_new(stream, CB_WAIT);
  if (item == NULL) return cb_out_of_memory("wait_event");
  CbRecord* record = cb_event_hold_latest(event);
  if (record == NULL) {
    free(item);
    return NULL;
  }
  item->u.event.event = event;
  item->u.event.record = record;
  cb_enqueue(stream, item);
  return NULL;
}

RillStreamStatus* cb_stream_status(const RillStream* stream) { return stream->status; }

static RillError* cb_host_callback(RillStream* stream, RillHostFn fn, void* user_data) {
  if (fn == NULL) return cb_error(RILL_CODE_INVALID_ARGUMENT, "host_callback: null function");
  CbItem* item = cb_item_new(stream, CB_CALLBACK);
  if (item == NULL) return cb_out_of_memory("host_callback");
  item->u.callback.fn = fn;
  item->u.callback.user_data = user_data;
  cb_enqueue(stream, item);
  return NULL;
}

static RillError* cb_launch(RillStream* stream, const RillDim3* threads, const RillDim3* blocks,
                            const RillKernel* kernel, const RillKernelArg* args, size_t num_args) {
  CbLaunch* launch = NULL;
  RillError* error =
      cb_launch_prepare(stream->executor, threads, blocks, kernel, args, num_args, &launch);
  if (error != NULL) return error;
  CbItem* item = cb_item_new(stream, CB_LAUNCH);
  if (item == NULL) {
    cb_launch_free(launch);
    return cb_out_of_memory("launch");
  }
  item->u.launch = launch;
  cb_enqueue(stream, item);
  return NULL;
}

const RillStreamFns cb_stream_fns = {
    .struct_size = sizeof(RillStreamFns),
    .memcpy_host_to_device = cb_memcpy_h2d,
    .memcpy_device_to_host = cb_memcpy_d2h,
    .memcpy_device_to_device = cb_memcpy_d2d,
#if !defined(CBACKEND_OMIT_MANDATORY)
    .memset32 = cb_memset32,
#endif
    .record_event = cb_record_event,
    .wait_event = cb_wait_event,
    .host_callback = cb_host_callback,
    .block_until_done = cb_block_until_done,
    .launch = cb_launch,
    .native_handle = NULL,
};
