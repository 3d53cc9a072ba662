#ifndef RILL_STREAM_STREAM_LISTENER_H_
#define RILL_STREAM_STREAM_LISTENER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace rill {

// One operation on a stream (a copy, fill, kernel launch, host callback,
// wait, or library call), as a StreamListener sees it. Times are on the
// trace clock (base/trace_clock.h: nanoseconds since the Unix epoch).
struct StreamOp {
  uint64_t id = 0;               // Process-unique, rising in enqueue order.
  std::string device;            // "host:0", "cuda:1".
  std::string lane;              // The stream's name: "host:0 stream 3" (see SetStreamLabel).
  std::string name;              // "ThenBlasGemm".
  std::string args;              // Types and shapes: "f32, NN, m=64, n=64, k=64, ...".
  std::string plugin;            // The library plugin that served it ("openblas"); empty otherwise.
  std::string algorithm;         // What the plugin chose, when it says (NoteAlgorithm).
  int64_t enqueue_start_ns = 0;  // Around the Then* call, on the calling thread.
  int64_t enqueue_end_ns = 0;
  // OnEnqueued: the call's own error (bad arguments), if it was refused.
  // OnCompleted: the first error before the end of the work in stream order.
  absl::Status status;
  // OnCompleted: when the work ran on the device, measured with the
  // backend's events (Feature::kTimers) and placed on the trace clock by one
  // anchor event per stream, so the spans of one stream never overlap
  // out of order. False on backends without timers, and when the stream
  // had failed before the work.
  bool has_device_time = false;
  int64_t device_start_ns = 0;
  int64_t device_end_ns = 0;
};

// An allocation or free of device (or pinned host) memory.
struct AllocationEvent {
  std::string device;        // "host:0".
  bool free = false;         // Deallocate rather than Allocate.
  bool host_memory = false;  // HostMemoryAllocate / HostMemoryDeallocate.
  uint64_t bytes = 0;
  const void* address = nullptr;
  absl::Status status;  // Allocate's error, if it failed.
  int64_t time_ns = 0;
};

// Sees every stream operation of the process (TensorFlow's StreamExecutor
// had TraceListener for this): verbose mode (stream/verbose.h) and the
// trace (stream/trace_recorder.h) are listeners, and users can add their
// own. While at least one listener is registered, every Then* call brackets
// its work with two timer events and a notification, so listening costs
// device time; with none, a Then* call pays one relaxed atomic load.
// Implementations must be thread-safe: calls arrive on enqueuing threads and
// on backends' callback threads, concurrently. They must not enqueue on the
// stream they are told about.
class StreamListener {
 public:
  virtual ~StreamListener() = default;
  // After a Then* call returns, on the calling thread. A call refused at
  // enqueue (its `status` says why) gets no OnCompleted.
  virtual void OnEnqueued(const StreamOp& op) {}
  // When the work has run (or was skipped because the stream failed
  // before it), on a host thread of the backend.
  virtual void OnCompleted(const StreamOp& op) {}
  // After StreamExecutor::Allocate / Deallocate (and the pinned host
  // memory forms), on the calling thread.
  virtual void OnAllocation(const AllocationEvent& event) {}
};

// Registers `listener` for every stream of every executor from now on.
// Work already enqueued is not reported. Thread-safe.
void AddStreamListener(std::shared_ptr<StreamListener> listener);
// Unregisters it; calls about work enqueued before may still arrive (the
// listener is kept alive until they have). No-op if it is not registered.
void RemoveStreamListener(const StreamListener* listener);

// For plugins: during a Stream::Then* call, names the algorithm or
// implementation the library chose ("jit:avx2", "CUDNN_CONVOLUTION_FWD_ALGO_
// IMPLICIT_GEMM"), for the listeners' StreamOp::algorithm. Cheap, and a
// no-op when nobody listens or outside a Then* call.
void NoteAlgorithm(std::string_view algorithm);
// For plugin chains (plugins/plugin_chain.h): during a Stream::Then* call,
// names the plugin that serves it when that is not the one called (a
// fallback, or the algorithm selector's choice), for StreamOp::plugin.
void NotePlugin(std::string_view plugin);

// Names the lane `stream` shows as in traces and verbose lines, instead of
// "<device> stream <n>" (the engine labels its pools' streams this way).
class Stream;
void SetStreamLabel(Stream* stream, std::string label);
// The lane name of `stream` ("host:0 stream 3", or its label).
std::string StreamLane(const Stream* stream);

namespace internal {
inline std::atomic<int> stream_listener_count{0};
// A snapshot of the registered listeners.
std::vector<std::shared_ptr<StreamListener>> StreamListeners();
// Installs the listeners the environment asks for (RILL_VERBOSE,
// RILL_TRACE) once per process; called when an executor is created.
void InstallEnvironmentListeners();
// The default lane name of a new stream of `device`: "<device> stream <n>",
// n counting from 1 per device.
std::string NextStreamLane(const std::string& device);
void ReportAllocation(AllocationEvent event);
}  // namespace internal

// Whether any listener is registered (one relaxed load).
inline bool StreamListenersActive() {
  return internal::stream_listener_count.load(std::memory_order_relaxed) != 0;
}

}  // namespace rill

#endif  // RILL_STREAM_STREAM_LISTENER_H_
