#include "rill/platform/opencl/opencl_stream.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/platform/opencl/opencl_event.h"
#include "rill/platform/opencl/opencl_kernel.h"
#include "rill/platform/opencl/opencl_status.h"

namespace rill {
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
    : context_(context),
      queue_(queue),
      base_align_(base_align),
      status_(status),
      registry_(std::move(registry)),
      worker_(status) {
  registry_->Add(this);
}

OpenClStream::~OpenClStream() {
  registry_->Remove(this);  // First: a SynchronizeAll waiting for this stream needs the worker.
  (void)BlockHostUntilDone();
  worker_.Stop();
  clFinish(queue_);
  if (last_event_ != nullptr) clReleaseEvent(last_event_);
  clReleaseCommandQueue(queue_);
}

absl::Status OpenClStream::Track(cl_int error, cl_event event,
                                 absl::FunctionRef<std::string()> what) {
  if (error != CL_SUCCESS) return ClStatus(error, what());
  Track(event);
  return absl::OkStatus();
}

void OpenClStream::Track(cl_event event) {
  if (last_event_ != nullptr) clReleaseEvent(last_event_);
  last_event_ = event;
  dirty_ = true;
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
  if (worker_.OnThread()) {
    return absl::FailedPreconditionError(
        "BlockHostUntilDone called from a host callback of the same stream would deadlock");
  }
  worker_.WaitFor(Enqueue([this] { return DrainDevice(); }, /*run_after_error=*/true));
  return absl::OkStatus();
}

absl::Status OpenClStream::MemcpyHostToDevice(DeviceMemoryBase dst, const void* src,
                                              uint64_t size) {
  Enqueue([this, dst, src, size] {
    cl_event event = nullptr;
    const cl_int error = clEnqueueWriteBuffer(queue_, ClMem(dst), CL_FALSE, dst.offset(), size, src,
                                              0, nullptr, &event);
    return Track(error, event, [&] {
      return absl::StrCat("clEnqueueWriteBuffer(offset=", dst.offset(), ", size=", size, ")");
    });
  });
  return absl::OkStatus();
}

absl::Status OpenClStream::MemcpyDeviceToHost(void* dst, DeviceMemoryBase src, uint64_t size) {
  Enqueue([this, dst, src, size] {
    cl_event event = nullptr;
    const cl_int error = clEnqueueReadBuffer(queue_, ClMem(src), CL_FALSE, src.offset(), size, dst,
                                             0, nullptr, &event);
    return Track(error, event, [&] {
      return absl::StrCat("clEnqueueReadBuffer(offset=", src.offset(), ", size=", size, ")");
    });
  });
  return absl::OkStatus();
}

absl::Status OpenClStream::MemcpyDeviceToDevice(DeviceMemoryBase dst, DeviceMemoryBase src,
                                                uint64_t size) {
  Enqueue([this, dst, src, size] {
    cl_event event = nullptr;
    const cl_int error = clEnqueueCopyBuffer(queue_, ClMem(src), ClMem(dst), src.offset(),
                                             dst.offset(), size, 0, nullptr, &event);
    return Track(error, event, [&] {
      return absl::StrCat("clEnqueueCopyBuffer(src_offset=", src.offset(),
                          ", dst_offset=", dst.offset(), ", size=", size, ")");
    });
  });
  return absl::OkStatus();
}

absl::Status OpenClStream::Memset32(DeviceMemoryBase dst, uint32_t pattern, uint64_t size) {
  Enqueue([this, dst, pattern, size] {
    uint8_t bytes[4];
    std::memcpy(bytes, &pattern, 4);
    cl_event event = nullptr;
    cl_int error;
    const char* call = "clEnqueueFillBuffer";
    int pattern_size = 4;
    if (bytes[0] == bytes[1] && bytes[0] == bytes[2] && bytes[0] == bytes[3]) {
      // One repeated byte (zeroing): any offset works.
      pattern_size = 1;
      error =
          clEnqueueFillBuffer(queue_, ClMem(dst), bytes, 1, dst.offset(), size, 0, nullptr, &event);
    } else if (dst.offset() % 4 == 0) {
      error =
          clEnqueueFillBuffer(queue_, ClMem(dst), bytes, 4, dst.offset(), size, 0, nullptr, &event);
    } else {
      // clEnqueueFillBuffer needs offset % pattern_size == 0: write the
      // pattern from the host instead, kept alive until the next drain.
      call = "clEnqueueWriteBuffer";
      auto host = std::make_shared<std::vector<uint32_t>>(size / 4, pattern);
      keep_alive_.push_back(host);
      error = clEnqueueWriteBuffer(queue_, ClMem(dst), CL_FALSE, dst.offset(), size, host->data(),
                                   0, nullptr, &event);
    }
    return Track(error, event, [&] {
      return absl::StrCat(call, "(Memset32, offset=", dst.offset(), ", size=", size,
                          ", pattern_size=", pattern_size, ")");
    });
  });
  return absl::OkStatus();
}

absl::Status OpenClStream::RecordEvent(EventInterface* event) {
  std::shared_ptr<OpenClEventState> state = static_cast<OpenClEvent*>(event)->state();
  const uint64_t generation = state->BeginRecord();
  Enqueue(
      [this, state, generation] {
        absl::Status status = status_->QueueGet();
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
      status = ClStatus(
          clGetEventInfo(record.marker, CL_EVENT_CONTEXT, sizeof(context), &context, nullptr),
          "clGetEventInfo(CL_EVENT_CONTEXT)");
      if (status.ok() && context == context_) {
        cl_event barrier = nullptr;
        status = Track(clEnqueueBarrierWithWaitList(queue_, 1, &record.marker, &barrier), barrier,
                       [] { return std::string("clEnqueueBarrierWithWaitList(wait for event)"); });
      } else if (status.ok()) {
        // Another context (another device): its events cannot be in our
        // wait lists, so wait here; our later commands are not enqueued yet.
        status = ClStatus(clWaitForEvents(1, &record.marker),
                          "clWaitForEvents(event of another context)");
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
  // Resolved now, so count, kind, size and alignment errors surface at enqueue.
  const std::shared_ptr<OpenClKernelCore>& core = static_cast<const OpenClKernel&>(kernel).core();
  RILL_ASSIGN_OR_RETURN(OpenClArgs resolved, ResolveArgs(*core, args, base_align_));
  // Holds the core, not the kernel, so the Kernel may be destroyed before
  // this runs. The arguments are released when the task goes, run or
  // skipped; enqueued commands hold their own references.
  struct PendingLaunch {
    std::shared_ptr<OpenClKernelCore> core;
    ThreadDim threads;
    BlockDim blocks;
    OpenClArgs args;
  };
  // One allocation per launch: the task itself fits in the Task's inline storage.
  auto launch =
      std::make_unique<PendingLaunch>(PendingLaunch{core, threads, blocks, std::move(resolved)});
  Enqueue([this, launch = std::move(launch)]() -> absl::Status {
    RILL_ASSIGN_OR_RETURN(cl_event event, launch->core->Enqueue(queue_, launch->threads,
                                                                launch->blocks, launch->args));
    Track(event);
    return absl::OkStatus();
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
    Track(*event);
    return absl::OkStatus();
  });
}

}  // namespace rill
