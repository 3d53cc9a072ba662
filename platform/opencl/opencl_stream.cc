#include "platform/opencl/opencl_stream.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "platform/opencl/opencl_event.h"
#include "platform/opencl/opencl_kernel.h"
#include "platform/opencl/opencl_status.h"

namespace rill {

void OpenClStreamRegistry::Add(OpenClStream* stream) {
  MutexLock lock(&mu_);
  streams_.insert(stream);
}

void OpenClStreamRegistry::Remove(OpenClStream* stream) {
  MutexLock lock(&mu_);
  streams_.erase(stream);
}

void OpenClStreamRegistry::SynchronizeAll() {
  // Held across the waits so no stream is destroyed meanwhile.
  MutexLock lock(&mu_);
  for (OpenClStream* stream : streams_) (void)stream->BlockHostUntilDone();
}

absl::StatusOr<std::unique_ptr<OpenClStream>> OpenClStream::Create(
    cl_context context, cl_device_id device, uint64_t base_align, StreamStatus* status,
    std::shared_ptr<OpenClStreamRegistry> registry) {
  cl_int error = CL_SUCCESS;
  // In order (no CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE), with profiling for timers.
  cl_command_queue queue = clCreateCommandQueue(context, device, CL_QUEUE_PROFILING_ENABLE, &error);
  if (error == CL_INVALID_QUEUE_PROPERTIES || error == CL_INVALID_VALUE) {
    queue = clCreateCommandQueue(context, device, 0, &error);  // A device without profiling.
  }
  RILL_RETURN_IF_ERROR(ClStatus(error, "clCreateCommandQueue"));
  return std::unique_ptr<OpenClStream>(
      new OpenClStream(context, queue, base_align, status, std::move(registry)));
}

OpenClStream::OpenClStream(cl_context context, cl_command_queue queue, uint64_t base_align,
                           StreamStatus* status, std::shared_ptr<OpenClStreamRegistry> registry)
    : context_(context), queue_(queue), base_align_(base_align), status_(status),
      registry_(std::move(registry)) {
  registry_->Add(this);
  worker_ = std::thread([this] { WorkLoop(); });
}

OpenClStream::~OpenClStream() {
  (void)BlockHostUntilDone();
  {
    MutexLock lock(&mu_);
    stop_ = true;
    work_cv_.SignalAll();
  }
  worker_.join();
  registry_->Remove(this);
  clFinish(queue_);
  if (last_event_ != nullptr) clReleaseEvent(last_event_);
  clReleaseCommandQueue(queue_);
}

void OpenClStream::Enqueue(Task task, bool run_after_error) {
  MutexLock lock(&mu_);
  queue_entries_.push_back(Entry{std::move(task), run_after_error});
  ++enqueued_;
  work_cv_.Signal();
}

void OpenClStream::WorkLoop() {
  for (;;) {
    Entry entry;
    {
      MutexLock lock(&mu_);
      work_cv_.Wait(&mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !queue_entries_.empty() || stop_;
      });
      if (queue_entries_.empty()) return;  // stop_ and drained.
      entry = std::move(queue_entries_.front());
      queue_entries_.pop_front();
    }
    if (status_->ok() || entry.run_after_error) status_->Update(std::move(entry.task)());
    entry.task = nullptr;  // Release captures before signalling completion.
    MutexLock lock(&mu_);
    ++completed_;
    done_cv_.SignalAll();
  }
}

absl::Status OpenClStream::Track(cl_int error, cl_event event, const char* what) {
  RILL_RETURN_IF_ERROR(ClStatus(error, what));
  if (last_event_ != nullptr) clReleaseEvent(last_event_);
  last_event_ = event;
  dirty_ = true;
  return absl::OkStatus();
}

absl::Status OpenClStream::DrainDevice() {
  if (!dirty_) return absl::OkStatus();
  absl::Status status = ClStatus(clFinish(queue_), "clFinish");
  if (status.ok() && last_event_ != nullptr) status = MarkerStatus(last_event_);
  if (last_event_ != nullptr) clReleaseEvent(last_event_);
  last_event_ = nullptr;
  dirty_ = false;
  keep_alive_.clear();
  return status;
}

absl::Status OpenClStream::BlockHostUntilDone() {
  uint64_t target;
  {
    MutexLock lock(&mu_);
    if (std::this_thread::get_id() == worker_.get_id()) {
      return absl::FailedPreconditionError(
          "BlockHostUntilDone called from a host callback of the same stream would deadlock");
    }
  }
  Enqueue([this] { return DrainDevice(); }, /*run_after_error=*/true);
  MutexLock lock(&mu_);
  target = enqueued_;
  done_cv_.Wait(&mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return completed_ >= target; });
  return absl::OkStatus();
}

absl::Status OpenClStream::MemcpyHostToDevice(DeviceMemoryBase dst, const void* src, uint64_t size) {
  Enqueue([this, dst, src, size] {
    cl_event event = nullptr;
    const cl_int error = clEnqueueWriteBuffer(queue_, ClMem(dst), CL_FALSE, dst.offset(), size, src,
                                              0, nullptr, &event);
    return Track(error, event, "clEnqueueWriteBuffer");
  });
  return absl::OkStatus();
}

absl::Status OpenClStream::MemcpyDeviceToHost(void* dst, DeviceMemoryBase src, uint64_t size) {
  Enqueue([this, dst, src, size] {
    cl_event event = nullptr;
    const cl_int error = clEnqueueReadBuffer(queue_, ClMem(src), CL_FALSE, src.offset(), size, dst,
                                             0, nullptr, &event);
    return Track(error, event, "clEnqueueReadBuffer");
  });
  return absl::OkStatus();
}

absl::Status OpenClStream::MemcpyDeviceToDevice(DeviceMemoryBase dst, DeviceMemoryBase src,
                                                uint64_t size) {
  Enqueue([this, dst, src, size] {
    cl_event event = nullptr;
    const cl_int error = clEnqueueCopyBuffer(queue_, ClMem(src), ClMem(dst), src.offset(),
                                             dst.offset(), size, 0, nullptr, &event);
    return Track(error, event, "clEnqueueCopyBuffer");
  });
  return absl::OkStatus();
}

absl::Status OpenClStream::Memset32(DeviceMemoryBase dst, uint32_t pattern, uint64_t size) {
  Enqueue([this, dst, pattern, size] {
    uint8_t bytes[4];
    std::memcpy(bytes, &pattern, 4);
    cl_event event = nullptr;
    cl_int error;
    if (bytes[0] == bytes[1] && bytes[0] == bytes[2] && bytes[0] == bytes[3]) {
      // One repeated byte (zeroing): any offset works.
      error = clEnqueueFillBuffer(queue_, ClMem(dst), bytes, 1, dst.offset(), size, 0, nullptr, &event);
    } else if (dst.offset() % 4 == 0) {
      error = clEnqueueFillBuffer(queue_, ClMem(dst), bytes, 4, dst.offset(), size, 0, nullptr, &event);
    } else {
      // clEnqueueFillBuffer needs offset % pattern_size == 0: write the
      // pattern from the host instead, kept alive until the next drain.
      auto host = std::make_shared<std::vector<uint32_t>>(size / 4, pattern);
      keep_alive_.push_back(host);
      error = clEnqueueWriteBuffer(queue_, ClMem(dst), CL_FALSE, dst.offset(), size, host->data(),
                                   0, nullptr, &event);
    }
    return Track(error, event, "clEnqueueFillBuffer");
  });
  return absl::OkStatus();
}

absl::Status OpenClStream::RecordEvent(EventInterface* event) {
  std::shared_ptr<OpenClEventState> state = static_cast<OpenClEvent*>(event)->state();
  const uint64_t generation = state->BeginRecord();
  Enqueue(
      [this, state, generation] {
        absl::Status status = status_->Get();
        cl_event marker = nullptr;
        if (status.ok()) {
          status = ClStatus(clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &marker),
                            "clEnqueueMarkerWithWaitList(record event)");
          if (status.ok()) clFlush(queue_);  // Waiters on other queues must see it progress.
        }
        state->Complete(generation, status, status.ok() ? marker : nullptr);
        return status;
      },
      /*run_after_error=*/true);
  return absl::OkStatus();
}

absl::Status OpenClStream::WaitForEvent(EventInterface* event) {
  std::shared_ptr<OpenClEventState> state = static_cast<OpenClEvent*>(event)->state();
  const uint64_t generation = state->latest();
  Enqueue([this, state, generation]() -> absl::Status {
    OpenClRecord record = state->WaitRun(generation);
    absl::Status status = Annotate(record.status, "the stream that recorded the event had failed");
    if (record.marker == nullptr) return status;
    if (status.ok()) {
      cl_context context = nullptr;
      status = ClStatus(clGetEventInfo(record.marker, CL_EVENT_CONTEXT, sizeof(context), &context,
                                       nullptr),
                        "clGetEventInfo(CL_EVENT_CONTEXT)");
      if (status.ok() && context == context_) {
        cl_event barrier = nullptr;
        status = Track(clEnqueueBarrierWithWaitList(queue_, 1, &record.marker, &barrier), barrier,
                       "clEnqueueBarrierWithWaitList(wait for event)");
      } else if (status.ok()) {
        // Another context (another device): its events cannot be in our
        // wait lists, so wait here; our later commands are not enqueued yet.
        status = ClStatus(clWaitForEvents(1, &record.marker), "clWaitForEvents(event of another context)");
        if (status.ok()) status = MarkerStatus(record.marker);
      }
    }
    clReleaseEvent(record.marker);
    return status;
  });
  return absl::OkStatus();
}

absl::Status OpenClStream::DoHostCallback(absl::AnyInvocable<absl::Status() &&> callback) {
  Enqueue([this, cb = std::move(callback)]() mutable -> absl::Status {
    RILL_RETURN_IF_ERROR(DrainDevice());
    return std::move(cb)();
  });
  return absl::OkStatus();
}

absl::Status OpenClStream::Notify(absl::AnyInvocable<void() &&> callback) {
  Enqueue(
      [this, cb = std::move(callback)]() mutable {
        absl::Status status = DrainDevice();  // Recorded before the callback reads the status.
        status_->Update(status);
        std::move(cb)();
        return status;
      },
      /*run_after_error=*/true);
  return absl::OkStatus();
}

absl::Status OpenClStream::Launch(const ThreadDim& threads, const BlockDim& blocks,
                                  const KernelInterface& kernel, KernelArgs args) {
  // The core, not the kernel, so the Kernel may be destroyed before this runs.
  std::shared_ptr<OpenClKernelCore> core = static_cast<const OpenClKernel&>(kernel).core();
  // Resolved now, so count and alignment errors surface at enqueue.
  RILL_ASSIGN_OR_RETURN(std::vector<OpenClArg> resolved, ResolveArgs(*core, args, base_align_));
  // Released when the task goes, run or skipped; enqueued commands hold
  // their own references.
  std::shared_ptr<std::vector<OpenClArg>> owned(
      new std::vector<OpenClArg>(std::move(resolved)), [](std::vector<OpenClArg>* args) {
        ReleaseArgs(*args);
        delete args;
      });
  Enqueue([this, core = std::move(core), threads, blocks, owned = std::move(owned)]() -> absl::Status {
    absl::StatusOr<cl_event> event = core->Enqueue(queue_, threads, blocks, *owned);
    if (!event.ok()) return event.status();
    return Track(CL_SUCCESS, *event, "clEnqueueNDRangeKernel");
  });
  return absl::OkStatus();
}

void OpenClStream::EnqueueDeviceWork(DeviceWork work) {
  Enqueue([this, work = std::move(work)]() mutable -> absl::Status {
    absl::StatusOr<cl_event> event = std::move(work)(queue_);
    if (!event.ok()) return event.status();
    if (*event == nullptr) {
      dirty_ = true;
      return absl::OkStatus();
    }
    return Track(CL_SUCCESS, *event, "device work");
  });
}

}  // namespace rill
