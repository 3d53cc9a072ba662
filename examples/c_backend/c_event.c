/* The C backend's events.
 *
 * An event holds its latest record. Each record_event makes a new record,
 * a small reference-counted object: the event points at it as the latest,
 * the queued record item completes it (with the stream's error, if any,
 * and the monotonic time), and a queued wait holds the record that was the
 * latest when the wait was enqueued, so re-recording the event does not
 * move a wait already queued. Events are reference-counted too: destroying
 * one while a record or wait of it is queued is safe. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>

#include "c_backend_internal.h"

struct CbRecord {
  int refs;         /* the event's latest, the record item, waits; guarded by the event's mu */
  bool done;        /* the record item has run */
  RillError* error; /* the stream's error when it ran; owned */
  int64_t done_ns;  /* when it ran (CLOCK_MONOTONIC) */
};

struct RillEvent {
  RillExecutor* executor;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* a record completed */
  /* Guarded by mu: */
  int refs;         /* the handle, and each queued record or wait item */
  CbRecord* latest; /* NULL until the first record */
};

/* Drops a reference to `record`; called with its event's mu held. */
static void cb_record_release(CbRecord* record) {
  if (--record->refs > 0) return;
  cb_host->error_destroy(record->error);
  free(record);
}

/* Drops a reference to `event` (the handle's, or a queued item's). */
static void cb_event_release(RillEvent* event) {
  pthread_mutex_lock(&event->mu);
  const bool last = --event->refs == 0;
  pthread_mutex_unlock(&event->mu);
  if (!last) return;
  if (event->latest != NULL) cb_record_release(event->latest);
  pthread_cond_destroy(&event->cv);
  pthread_mutex_destroy(&event->mu);
  free(event);
}

/* Waits for `record` of `event` and returns a copy of its error; called
 * with event->mu held, which the wait releases meanwhile. */
static RillError* cb_record_wait_locked(RillEvent* event, CbRecord* record) {
  while (!record->done) pthread_cond_wait(&event->cv, &event->mu);
  return cb_error_copy(record->error);
}

/* ------------------------------------------------------------------------
 * For the streams (c_stream.c) */

RillExecutor* cb_event_executor(const RillEvent* event) { return event->executor; }

CbRecord* cb_event_begin_record(RillEvent* event) {
  CbRecord* record = calloc(1, sizeof(*record));
  if (record == NULL) return NULL;
  pthread_mutex_lock(&event->mu);
  record->refs = 2; /* the event's latest, and the record item */
  if (event->latest != NULL) cb_record_release(event->latest);
  event->latest = record;
  ++event->refs;
  pthread_mutex_unlock(&event->mu);
  return record;
}

void cb_event_complete_record(RillEvent* event, CbRecord* record, RillError* error) {
  pthread_mutex_lock(&event->mu);
  record->error = error;
  record->done_ns = cb_now_ns();
  record->done = true;
  cb_record_release(record);
  pthread_cond_broadcast(&event->cv);
  pthread_mutex_unlock(&event->mu);
  cb_event_release(event);
}

CbRecord* cb_event_hold_latest(RillEvent* event) {
  pthread_mutex_lock(&event->mu);
  CbRecord* record = event->latest;
  if (record != NULL) {
    ++record->refs;
    ++event->refs;
  }
  pthread_mutex_unlock(&event->mu);
  return record;
}

RillError* cb_event_wait_held(RillEvent* event, CbRecord* record) {
  pthread_mutex_lock(&event->mu);
  RillError* error = cb_record_wait_locked(event, record);
  cb_record_release(record);
  pthread_mutex_unlock(&event->mu);
  cb_event_release(event);
  return error;
}

/* ------------------------------------------------------------------------
 * Entries */

RillError* cb_event_create(RillExecutor* executor, RillEvent** out) {
  RillEvent* event = calloc(1, sizeof(*event));
  if (event == NULL) return cb_error(RILL_CODE_RESOURCE_EXHAUSTED, "event_create: out of memory");
  event->executor = executor;
  event->refs = 1;
  pthread_mutex_init(&event->mu, NULL);
  pthread_cond_init(&event->cv, NULL);
  *out = event;
  return NULL;
}

void cb_event_destroy(RillEvent* event) {
  if (event != NULL) cb_event_release(event);
}

/* COMPLETE before the first record. */
static RillEventState cb_event_poll(RillEvent* event) {
  pthread_mutex_lock(&event->mu);
  const CbRecord* latest = event->latest;
  RillEventState state = RILL_EVENT_COMPLETE;
  if (latest != NULL && !latest->done) {
    state = RILL_EVENT_PENDING;
  } else if (latest != NULL && latest->error != NULL) {
    state = RILL_EVENT_ERROR;
  }
  pthread_mutex_unlock(&event->mu);
  return state;
}

static RillError* cb_event_synchronize(RillEvent* event) {
  pthread_mutex_lock(&event->mu);
  CbRecord* record = event->latest;
  RillError* error = NULL;
  if (record != NULL) {
    ++record->refs; /* the event may be re-recorded while this waits */
    error = cb_record_wait_locked(event, record);
    cb_record_release(record);
  }
  pthread_mutex_unlock(&event->mu);
  return error;
}

/* The completion time of `event`'s latest record in `*done_ns`; an error
 * (FAILED_PRECONDITION) when there is none or it has not completed, a copy
 * of the record's error when it completed with one. */
static RillError* cb_event_completion(RillEvent* event, const char* which, int64_t* done_ns) {
  pthread_mutex_lock(&event->mu);
  const CbRecord* latest = event->latest;
  RillError* error = NULL;
  if (latest == NULL) {
    error = cb_error(RILL_CODE_FAILED_PRECONDITION, "elapsed_us: the %s event was never recorded",
                     which);
  } else if (!latest->done) {
    error = cb_error(RILL_CODE_FAILED_PRECONDITION,
                     "elapsed_us: the %s event's latest record has not completed", which);
  } else if (latest->error != NULL) {
    error = cb_error_copy(latest->error);
  } else {
    *done_ns = latest->done_ns;
  }
  pthread_mutex_unlock(&event->mu);
  return error;
}

/* Microseconds between the completions of the two events' latest records
 * (negative when `end` completed first). A record that completed with an
 * error gives that error. */
static RillError* cb_event_elapsed_us(RillEvent* start, RillEvent* end, double* out) {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  RillError* error = cb_event_completion(start, "start", &start_ns);
  if (error == NULL) error = cb_event_completion(end, "end", &end_ns);
  if (error != NULL) return error;
  *out = (double)(end_ns - start_ns) / 1000.0;
  return NULL;
}

const RillEventFns cb_event_fns = {
    .struct_size = sizeof(RillEventFns),
    .poll = cb_event_poll,
    .synchronize = cb_event_synchronize,
    .elapsed_us = cb_event_elapsed_us,
};
