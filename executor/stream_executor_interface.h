#ifndef RILL_EXECUTOR_STREAM_EXECUTOR_INTERFACE_H_
#define RILL_EXECUTOR_STREAM_EXECUTOR_INTERFACE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rill/executor/device_memory.h"
#include "rill/platform/device_description.h"
#include "rill/stream/kernel.h"
#include "rill/stream/launch_dim.h"
#include "rill/stream/stream_status.h"

// The backend contract. A backend implements these four interfaces in its own
// folder (see platform/host for the reference) plus a Platform subclass; the
// front objects (StreamExecutor, Stream, Event, Kernel) validate arguments,
// keep error state and call into them. By the time a backend method is
// called, the front has checked: handles are non-null, sizes are non-zero
// and within the views, events were recorded before being waited on, launch
// dimensions fit the device description, and argument counts match. A backend
// reports what it finds itself (vendor errors, out of memory) as a Status.

namespace rill {

// Optional abilities a backend may lack. The conformance suite skips a case
// whose feature the backend declares unsupported, and checks that the call
// then fails with Unimplemented rather than doing something else.
enum class Feature {
  kHostCallbacks,
  kKernelLaunch,
  kTimers,
  kPinnedHostMemory,
  kDeviceToDeviceCopy,
  // The device's memory is ordinary host memory: a DeviceMemoryBase's
  // opaque() is a host pointer to its allocation (HostPointer() adds the
  // view's offset; StreamExecutorInterface::HostAddress returns it), which
  // host threads may read and write while the stream's work runs -- a host
  // callback on the stream sees what earlier work wrote. The host library
  // plugins (OpenBLAS, FFTW, oneDNN, ...; plugins/host_library.h) serve
  // such a device. Unlike the others, this feature is Unimplemented unless
  // the backend declares it (a wrong claim would let a library write
  // through a device handle).
  kHostAddressableMemory,
};
const char* FeatureName(Feature feature);

// Usage figures of one executor's device memory.
struct MemoryStats {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  int64_t num_allocs = 0;   // Live allocations.
  int64_t bytes_limit = 0;  // What Allocate may hand out in total.
};

// Per-stream creation options.
struct StreamOptions {
  // Larger runs earlier where the device supports priorities; 0 is normal.
  // Backends without priorities ignore it.
  int priority = 0;
};

// A recorded point in a stream. Created by StreamExecutorInterface::CreateEvent.
class EventInterface {
 public:
  enum class State { kPending, kComplete, kError };
  virtual ~EventInterface() = default;
  // Completion of the most recent record (kComplete before any record).
  virtual State Poll() = 0;
  // Blocks until the most recent record completes; returns the error of the
  // recording stream if that stream had failed before reaching the record.
  virtual absl::Status Synchronize() = 0;
  // Device time between the completion of `start`'s record and of this one's.
  // FailedPrecondition if either is not complete.
  virtual absl::StatusOr<absl::Duration> ElapsedSince(const EventInterface& start) = 0;
  // A wait for the record that is the latest one now: blocks until that
  // record completes and returns as Synchronize does. Waits across
  // platforms call it when they are enqueued and run it later, so a record
  // made after the wait was enqueued does not delay it (the Event contract:
  // waits keep the record they saw). Backends that can should return a
  // callable that stays valid after the event is destroyed; the default
  // waits for whatever record is the latest when it runs, and needs the
  // event alive.
  virtual absl::AnyInvocable<absl::Status() &&> WaiterForLatestRecord() {
    return [this] { return Synchronize(); };
  }
  // cudaEvent_t, cl_event, ...; nullptr where there is none.
  virtual void* native_handle() { return nullptr; }
};

// A loaded kernel. Created by StreamExecutorInterface::LoadKernel.
class KernelInterface {
 public:
  virtual ~KernelInterface() = default;
};

// An in-order queue of device work. Every method enqueues and returns at
// once; work runs in enqueue order. A returned error means nothing was
// enqueued. Errors found while running are recorded in the StreamStatus the
// stream was created with (Update), and work queued after a failure is
// skipped -- except event records, which still complete (carrying the
// error), so that no other stream waits forever. Skip, and read the error
// for records, by the status's queue view (queue_ok(), QueueGet()): an
// error the front found in a call takes effect at that call's place in the
// queue, not at once. (The CUDA backend reads an event record's error at
// enqueue, from the front's view, which is the same for errors found in
// calls; errors found later by its callbacks do not reach records already
// enqueued.)
class StreamInterface {
 public:
  virtual ~StreamInterface() = default;

  virtual absl::Status MemcpyHostToDevice(DeviceMemoryBase dst, const void* src, uint64_t size) = 0;
  virtual absl::Status MemcpyDeviceToHost(void* dst, DeviceMemoryBase src, uint64_t size) = 0;
  virtual absl::Status MemcpyDeviceToDevice(DeviceMemoryBase dst, DeviceMemoryBase src,
                                            uint64_t size) = 0;
  // Fills `dst` (size a multiple of 4) with the 32-bit `pattern`.
  virtual absl::Status Memset32(DeviceMemoryBase dst, uint32_t pattern, uint64_t size) = 0;
  virtual absl::Status RecordEvent(EventInterface* event) = 0;
  // `event` belongs to the same platform and has been recorded.
  virtual absl::Status WaitForEvent(EventInterface* event) = 0;
  // Runs `callback` on a host thread once all earlier work is done; a
  // returned error puts the stream in the error state.
  virtual absl::Status DoHostCallback(absl::AnyInvocable<absl::Status() &&> callback) = 0;
  // Runs `callback` on a host thread once all earlier work is done, even
  // when the stream has failed (like an event record): schedulers use it to
  // learn that work finished, whatever the outcome.
  virtual absl::Status Notify(absl::AnyInvocable<void() &&> callback) = 0;
  virtual absl::Status Launch(const ThreadDim& threads, const BlockDim& blocks,
                              const KernelInterface& kernel, KernelArgs args) = 0;
  // Blocks until all enqueued work has run. Called from a host callback or
  // notification of this same stream (which the wait would include), it
  // returns FailedPrecondition at once instead of deadlocking.
  virtual absl::Status BlockHostUntilDone() = 0;
  // cudaStream_t, cl_command_queue, ...; nullptr where there is none.
  virtual void* native_handle() { return nullptr; }
};

// One device of a platform: memory, streams, events, kernels. Owned by its
// StreamExecutor front. Thread-safe.
class StreamExecutorInterface {
 public:
  virtual ~StreamExecutorInterface() = default;

  virtual const DeviceDescription& Description() const = 0;
  // OK, or Unimplemented with the reason. By default every feature is
  // supported but kHostAddressableMemory, which a backend declares itself.
  virtual absl::Status Supports(Feature feature) const {
    if (feature == Feature::kHostAddressableMemory) {
      return absl::UnimplementedError("device memory is not host memory");
    }
    return absl::OkStatus();
  }

  // `size` > 0. ResourceExhausted when the device cannot provide it.
  virtual absl::StatusOr<DeviceMemoryBase> Allocate(uint64_t size) = 0;
  // `memory` was returned by Allocate (offset 0, full size).
  // Frees an allocation. Work already enqueued on this device's streams may
  // still use it: the free must come after that work (defer it, as the host
  // and OpenCL backends do, or wait, as cudaFree does), and must not block a
  // host callback of this device.
  virtual absl::Status Deallocate(DeviceMemoryBase memory) = 0;
  // Page-locked host memory for fast, asynchronous transfers.
  virtual absl::StatusOr<void*> HostMemoryAllocate(uint64_t size) = 0;
  virtual absl::Status HostMemoryDeallocate(void* ptr) = 0;
  virtual MemoryStats GetMemoryStats() const = 0;
  // Whether `memory` lies in an allocation of this device. Backends that
  // cannot tell answer true; library plugins use it to reject a buffer of
  // another device.
  virtual bool Owns(const DeviceMemoryBase& memory) const { return true; }
  // The host address of `memory`'s first byte, for a backend whose device
  // memory the host can read and write directly, which declares
  // Feature::kHostAddressableMemory (the host backend; a unified-memory
  // device). Unimplemented where it cannot (OpenCL buffers, CUDA device
  // memory); InvalidArgument for memory this device does not own.
  virtual absl::StatusOr<void*> HostAddress(const DeviceMemoryBase& memory) const {
    return absl::UnimplementedError("device memory is not host-addressable");
  }

  virtual absl::Status SynchronousMemcpyHostToDevice(DeviceMemoryBase dst, const void* src,
                                                     uint64_t size) = 0;
  virtual absl::Status SynchronousMemcpyDeviceToHost(void* dst, DeviceMemoryBase src,
                                                     uint64_t size) = 0;
  // Waits for all work on every stream of this device.
  virtual absl::Status SynchronizeAllActivity() = 0;

  // `status` outlives the stream; the backend records runtime errors there.
  virtual absl::StatusOr<std::unique_ptr<StreamInterface>> CreateStream(
      const StreamOptions& options, StreamStatus* status) = 0;
  virtual absl::StatusOr<std::unique_ptr<EventInterface>> CreateEvent() = 0;
  // Loads this platform's variant of `spec`; Unimplemented when it has none.
  virtual absl::StatusOr<std::unique_ptr<KernelInterface>> LoadKernel(const KernelSpec& spec) = 0;
  // Whether LoadKernel would find a form of `spec` it loads, answered
  // without loading: a backend that reads one of KernelSpec's own formats
  // (host function, CUDA fatbin/PTX, OpenCL C) says so here. The op layer
  // asks it to choose device-code kernels. The default, false, leaves it to
  // StreamExecutor::CanLoad, which also accepts the platform's variant
  // (KernelSpec::AddVariant).
  virtual bool CanLoad(const KernelSpec& spec) const { return false; }
};

}  // namespace rill

#endif  // RILL_EXECUTOR_STREAM_EXECUTOR_INTERFACE_H_
