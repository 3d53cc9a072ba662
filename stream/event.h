#ifndef RILL_STREAM_EVENT_H_
#define RILL_STREAM_EVENT_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/status.h"

namespace rill {

class EventInterface;
class StreamExecutor;

// A point in a stream's work. Record it on one stream, then wait for it on
// another stream (Stream::ThenWaitFor) or on the host (Synchronize, Poll).
// Re-recording moves the point; waits already enqueued keep the record they
// saw. Created by StreamExecutor::CreateEvent; may be destroyed while a wait
// on it is still pending (the backend keeps what it needs alive). It may
// also outlive its executor: every use after the executor was destroyed
// (recording, waiting, Synchronize) fails with FailedPrecondition naming
// the device, and destroying it stays safe. Destroying the executor while
// another thread is using the event is a race the caller must avoid.
// Thread-safe.
//
//   RILL_ASSIGN_OR_RETURN(auto done, executor->CreateEvent());
//   producer.ThenMemcpy(&dev, host, n).ThenRecordEvent(done.get());
//   consumer.ThenWaitFor(done.get()).ThenLaunch(...);
class Event {
 public:
  enum class Status { kUnrecorded, kPending, kComplete, kError };

  // `parent` must be alive here; the event notices when it is destroyed.
  Event(StreamExecutor* parent, std::unique_ptr<EventInterface> impl);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // kUnrecorded until the first ThenRecordEvent; kError when the recording
  // stream had failed before it reached the record, or the executor is gone.
  Status PollForStatus();
  // Blocks until the latest record has completed. FailedPrecondition if the
  // event was never recorded; the recording stream's error if it failed.
  absl::Status Synchronize();

  bool recorded() const { return recorded_.load(std::memory_order_acquire); }
  // The executor, or nullptr once it has been destroyed.
  StreamExecutor* parent() const {
    return alive_->load(std::memory_order_acquire) ? parent_ : nullptr;
  }
  // OK while the executor lives; FailedPrecondition naming it afterwards.
  absl::Status CheckAlive() const;
  EventInterface* implementation() const { return impl_.get(); }
  // The backend's handle (cudaEvent_t, cl_event); nullptr on host.
  void* native_handle() const;

 private:
  friend class Stream;
  void MarkRecorded() { recorded_.store(true, std::memory_order_release); }

  StreamExecutor* parent_;
  std::shared_ptr<const std::atomic<bool>> alive_;  // The executor's liveness flag.
  std::string device_;                              // "host:0", for messages.
  std::unique_ptr<EventInterface> impl_;
  std::atomic<bool> recorded_{false};
};

}  // namespace rill

#endif  // RILL_STREAM_EVENT_H_
