// "toy": a Rill backend written outside Rill, against its installed package
// only -- the backend contract (rill/executor/stream_executor_interface.h)
// implemented as plainly as it can be. Device memory is malloc'd host memory;
// each stream is a StreamWorker thread that runs its work in order; kernels
// are host functions (KernelSpec::AddHostFunction), run by Rill's
// RunHostKernel (rill/platform/utils/host_function_kernel.h). Linking rill::toy
// registers platform "toy" (TOY_DEVICES devices, default 1) and Rill's host
// BLAS/DNN/FFT/RNG plugins for it when the program loads.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "rill/base/mutex.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor_interface.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_manager.h"
#include "rill/platform/utils/backend_stream_set.h"
#include "rill/platform/utils/host_function_kernel.h"
#include "rill/platform/utils/stream_worker.h"
#include "rill/plugins/host_library.h"
#include "rill/stream/kernel_spec.h"

namespace toy {
namespace {

using ::rill::DeviceDescription;
using ::rill::DeviceMemoryBase;
using ::rill::EventInterface;
using ::rill::Feature;
using ::rill::HostPointer;
using ::rill::KernelArgs;
using ::rill::KernelInterface;
using ::rill::Mutex;
using ::rill::MutexLock;
using ::rill::StreamStatus;

class ToyStream;
using StreamSet = rill::BackendStreamSet<ToyStream>;
using Task = absl::AnyInvocable<absl::Status() &&>;

constexpr rill::PlatformIdInfo kToyPlatformIdInfo{"toy"};
constexpr rill::PlatformId kToyPlatformId = &kToyPlatformIdInfo;
constexpr int64_t kMemoryBytes = int64_t{1} << 30;  // Per device.

// TOY_HOST_MEMORY=0 hides that the memory is host memory (no host kernels,
// no host library plugins): to try a backend that gets ops only through
// its fallback device (TOY_OP_FALLBACK).
bool HostMemoryDeclared() {
  const char* env = std::getenv("TOY_HOST_MEMORY");
  return env == nullptr || std::string(env) != "0";
}

// An event: a future holding the outcome of its latest record (the
// recording stream's error), OK before any record. A wait takes the future
// that is the latest when it is enqueued, so a later record does not move
// it, and the event may go before the wait runs. Thread-safe.
class ToyEvent : public EventInterface {
 public:
  ToyEvent() { BeginRecord().set_value(absl::OkStatus()); }

  // Makes a new record the latest; its stream sets the value when it runs.
  std::promise<absl::Status> BeginRecord() {
    std::promise<absl::Status> record;
    MutexLock lock(&mu_);
    latest_ = record.get_future().share();
    return record;
  }
  std::shared_future<absl::Status> Latest() const {
    MutexLock lock(&mu_);
    return latest_;
  }

  State Poll() override {
    std::shared_future<absl::Status> record = Latest();
    if (record.wait_for(std::chrono::seconds()) != std::future_status::ready) {
      return State::kPending;
    }
    return record.get().ok() ? State::kComplete : State::kError;
  }
  absl::Status Synchronize() override { return Latest().get(); }
  absl::AnyInvocable<absl::Status() &&> WaiterForLatestRecord() override {
    return [record = Latest()] { return record.get(); };
  }
  absl::StatusOr<absl::Duration> ElapsedSince(const EventInterface&) override {
    return absl::UnimplementedError("toy events keep no time");
  }

 private:
  mutable Mutex mu_;
  std::shared_future<absl::Status> latest_ ABSL_GUARDED_BY(mu_);
};

// A stream: its work runs in enqueue order on its own StreamWorker thread.
// After an error, work is skipped, except event records, notifications and
// deferred frees (run_after_error). Thread-safe.
class ToyStream : public rill::StreamInterface {
 public:
  ToyStream(StreamStatus* status, std::shared_ptr<StreamSet> set)
      : status_(status), set_(std::move(set)), worker_(status) {
    set_->Add(this);
  }
  ~ToyStream() override {
    set_->Remove(this);  // First: a SynchronizeAll waiting for this stream needs the worker.
    worker_.Stop();
  }

  absl::Status MemcpyHostToDevice(DeviceMemoryBase dst, const void* src, uint64_t size) override {
    return Enqueue([=] { std::memcpy(HostPointer(dst), src, size); });
  }
  absl::Status MemcpyDeviceToHost(void* dst, DeviceMemoryBase src, uint64_t size) override {
    return Enqueue([=] { std::memcpy(dst, HostPointer(src), size); });
  }
  absl::Status MemcpyDeviceToDevice(DeviceMemoryBase dst, DeviceMemoryBase src,
                                    uint64_t size) override {
    return Enqueue([=] { std::memmove(HostPointer(dst), HostPointer(src), size); });
  }
  absl::Status Memset32(DeviceMemoryBase dst, uint32_t pattern, uint64_t size) override {
    return Enqueue([=] {
      for (uint64_t i = 0; i < size; i += 4)
        std::memcpy(static_cast<char*>(HostPointer(dst)) + i, &pattern, 4);
    });
  }
  absl::Status RecordEvent(EventInterface* event) override {
    return Enqueue(
        [this, record = static_cast<ToyEvent*>(event)->BeginRecord()]() mutable {
          record.set_value(status_->QueueGet());
        },
        /*run_after_error=*/true);
  }
  absl::Status WaitForEvent(EventInterface* event) override {
    return EnqueueTask([record = static_cast<ToyEvent*>(event)->Latest()] { return record.get(); });
  }
  absl::Status DoHostCallback(Task callback) override { return EnqueueTask(std::move(callback)); }
  absl::Status Notify(absl::AnyInvocable<void() &&> callback) override {
    return Enqueue([cb = std::move(callback)]() mutable { std::move(cb)(); },
                   /*run_after_error=*/true);
  }
  absl::Status Launch(const rill::ThreadDim& threads, const rill::BlockDim& blocks,
                      const KernelInterface& kernel, KernelArgs args) override {
    return EnqueueTask(
        [fn = static_cast<const rill::HostKernel&>(kernel).fn(), threads, blocks,
         args = std::move(args)] { return rill::RunHostKernel(*fn, threads, blocks, args); });
  }
  absl::Status BlockHostUntilDone() override {
    if (worker_.OnThread()) {
      return absl::FailedPreconditionError(
          "BlockHostUntilDone from a callback of its own toy stream would deadlock");
    }
    worker_.WaitFor(worker_.enqueued());
    return absl::OkStatus();
  }

  // Queues `work`, which cannot fail, after the work before it.
  template <typename Work>
  absl::Status Enqueue(Work work, bool run_after_error = false) {
    return EnqueueTask(
        [work = std::move(work)]() mutable {
          work();
          return absl::OkStatus();
        },
        run_after_error);
  }

 private:
  // Queues `task`, whose error fails the stream. Nothing fails at enqueue.
  absl::Status EnqueueTask(Task task, bool run_after_error = false) {
    worker_.Enqueue(std::move(task), run_after_error);
    return absl::OkStatus();
  }

  StreamStatus* const status_;
  const std::shared_ptr<StreamSet> set_;
  rill::StreamWorker<Task> worker_;  // Last: its thread runs tasks that use the rest.
};

// One toy device: malloc'd memory counted against kMemoryBytes. Its streams
// are also in the platform's set: a free is deferred past their work.
// Thread-safe.
class ToyExecutor : public rill::StreamExecutorInterface {
 public:
  ToyExecutor(DeviceDescription description, std::shared_ptr<StreamSet> platform_streams)
      : description_(std::move(description)),
        streams_(std::make_shared<StreamSet>(std::move(platform_streams))) {}
  ~ToyExecutor() override {
    MutexLock lock(&mu_);
    for (auto& [ptr, size] : allocations_) std::free(ptr);
  }

  const DeviceDescription& Description() const override { return description_; }
  absl::Status Supports(Feature feature) const override {
    switch (feature) {
      case Feature::kHostCallbacks:
      case Feature::kKernelLaunch:
      case Feature::kDeviceToDeviceCopy:
        return absl::OkStatus();
      case Feature::kHostAddressableMemory:  // The host library plugins and host kernels need it.
        if (HostMemoryDeclared()) return absl::OkStatus();
        return absl::UnimplementedError(
            "the toy backend hides its host memory (TOY_HOST_MEMORY=0)");
      default:  // kTimers, kPinnedHostMemory.
        return absl::UnimplementedError(
            absl::StrCat("the toy backend has no ", rill::FeatureName(feature)));
    }
  }

  absl::StatusOr<DeviceMemoryBase> Allocate(uint64_t size) override {
    MutexLock lock(&mu_);
    if (size > static_cast<uint64_t>(kMemoryBytes - in_use_)) {
      return absl::ResourceExhaustedError(
          absl::StrCat(size, " bytes requested, ", kMemoryBytes - in_use_, " free"));
    }
    void* ptr = std::malloc(size);
    if (ptr == nullptr) return absl::ResourceExhaustedError("malloc failed");
    allocations_[ptr] = size;
    in_use_ += size;
    peak_ = std::max(peak_, in_use_);
    return DeviceMemoryBase(ptr, size);
  }
  absl::Status Deallocate(DeviceMemoryBase memory) override {
    {
      MutexLock lock(&mu_);
      auto it = allocations_.find(memory.opaque());
      if (it == allocations_.end()) return absl::InvalidArgumentError("not a toy allocation here");
      if (it->second != memory.size()) {
        return absl::InvalidArgumentError(absl::StrCat("a ", memory.size(), "-byte sub-range of a ",
                                                       it->second, "-byte allocation"));
      }
      in_use_ -= it->second;
      allocations_.erase(it);
    }
    // Work queued on any stream of the platform (a peer's copy too) may
    // still use the block: each stream holds it until that work has run and
    // the last frees it. Never blocks, so a host callback may free.
    std::shared_ptr<void> block(memory.opaque(), [](void* p) { std::free(p); });
    streams_->ForEachLiveOnPlatform([&](ToyStream* stream) {
      stream->Enqueue([block] {}, /*run_after_error=*/true).IgnoreError();
    });
    return absl::OkStatus();
  }
  absl::StatusOr<void*> HostMemoryAllocate(uint64_t) override {
    return absl::UnimplementedError("the toy backend has no pinned host memory");
  }
  absl::Status HostMemoryDeallocate(void*) override {
    return absl::UnimplementedError("the toy backend has no pinned host memory");
  }
  rill::MemoryStats GetMemoryStats() const override {
    MutexLock lock(&mu_);
    return {in_use_, peak_, static_cast<int64_t>(allocations_.size()), kMemoryBytes};
  }
  bool Owns(const DeviceMemoryBase& memory) const override {
    MutexLock lock(&mu_);
    auto it = allocations_.find(memory.opaque());
    return it != allocations_.end() && memory.LiesWithin(it->second);
  }
  absl::StatusOr<void*> HostAddress(const DeviceMemoryBase& memory) const override {
    if (!HostMemoryDeclared()) return absl::UnimplementedError("TOY_HOST_MEMORY=0");
    if (!Owns(memory)) return absl::InvalidArgumentError("not memory of this toy device");
    return HostPointer(memory);
  }

  absl::Status SynchronousMemcpyHostToDevice(DeviceMemoryBase dst, const void* src,
                                             uint64_t size) override {
    std::memcpy(HostPointer(dst), src, size);
    return absl::OkStatus();
  }
  absl::Status SynchronousMemcpyDeviceToHost(void* dst, DeviceMemoryBase src,
                                             uint64_t size) override {
    std::memcpy(dst, HostPointer(src), size);
    return absl::OkStatus();
  }
  absl::Status SynchronizeAllActivity() override { return streams_->SynchronizeAll(); }

  absl::StatusOr<std::unique_ptr<rill::StreamInterface>> CreateStream(
      const rill::StreamOptions&, StreamStatus* status) override {
    return std::make_unique<ToyStream>(status, streams_);
  }
  absl::StatusOr<std::unique_ptr<EventInterface>> CreateEvent() override {
    return std::make_unique<ToyEvent>();
  }
  absl::StatusOr<std::unique_ptr<KernelInterface>> LoadKernel(
      const rill::KernelSpec& spec) override {
    if (!spec.has_host_function()) {
      return absl::UnimplementedError(
          absl::StrCat("kernel \"", spec.name(), "\" has no host function"));
    }
    return std::make_unique<rill::HostKernel>(spec.host_function());
  }

 private:
  const DeviceDescription description_;
  const std::shared_ptr<StreamSet> streams_;
  mutable Mutex mu_;
  absl::flat_hash_map<void*, uint64_t> allocations_ ABSL_GUARDED_BY(mu_);
  int64_t in_use_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_ ABSL_GUARDED_BY(mu_) = 0;
};

// The platform: `devices` toy devices, or none and why. Thread-safe.
class ToyPlatform : public rill::Platform {
 public:
  ToyPlatform(int devices, absl::Status availability)
      : devices_(devices), availability_(std::move(availability)) {}

  rill::PlatformId id() const override { return kToyPlatformId; }
  const std::string& Name() const override { return name_; }
  int VisibleDeviceCount() const override { return availability_.ok() ? devices_ : 0; }
  absl::Status Availability() const override { return availability_; }
  std::string MoreDevicesHint() const override { return "set TOY_DEVICES=2"; }
  // TOY_OP_FALLBACK=cpu: ops with no kernel here run on the CPU context.
  std::string OpFallback() const override {
    const char* env = std::getenv("TOY_OP_FALLBACK");
    return env != nullptr ? env : "";
  }
  absl::StatusOr<DeviceDescription> DescriptionForDevice(int ordinal) const override {
    RILL_RETURN_IF_ERROR(CheckOrdinal(ordinal));
    DeviceDescription d;
    d.name = absl::StrCat("Toy device ", ordinal);
    d.vendor = "Rill examples";
    d.memory_bytes = kMemoryBytes;
    d.compute_units = 1;
    return d;
  }

 protected:
  absl::StatusOr<std::unique_ptr<rill::StreamExecutorInterface>> CreateExecutorImplementation(
      const rill::StreamExecutorConfig& config) override {
    RILL_ASSIGN_OR_RETURN(DeviceDescription description, DescriptionForDevice(config.ordinal));
    return std::make_unique<ToyExecutor>(std::move(description), streams_);
  }

 private:
  const std::string name_ = "toy";
  const int devices_;
  const absl::Status availability_;
  // The streams of every device: a free is deferred past their queued work.
  const std::shared_ptr<StreamSet> streams_ = std::make_shared<StreamSet>();
};

// Registers the platform with `manager` (a bad TOY_DEVICES gives one without
// devices that says why), and Rill's host library plugins for it: the host
// addresses its memory.
absl::Status RegisterToy(rill::PlatformManager& manager) {
  int devices = 1;
  absl::Status availability;
  const char* env = std::getenv("TOY_DEVICES");
  if (env != nullptr && *env != '\0' &&
      (!absl::SimpleAtoi(env, &devices) || devices < 1 || devices > 16)) {
    availability = absl::UnavailableError(
        absl::StrCat("TOY_DEVICES='", env, "' is not a device count from 1 to 16"));
  }
  RILL_RETURN_IF_ERROR(
      manager.RegisterPlatform(std::make_unique<ToyPlatform>(devices, availability)));
  if (!HostMemoryDeclared()) return absl::OkStatus();
  return rill::RegisterHostLibraryPlugins(kToyPlatformId);
}

}  // namespace
}  // namespace toy

RILL_REGISTER_PLATFORM(toy, toy::RegisterToy)
