#ifndef RILL_ABI_PLUGIN_OBJECTS_H_
#define RILL_ABI_PLUGIN_OBJECTS_H_

// rill:internal -- not installed: the adapter's C++ objects over a plugin's
// C tables (loaded_plugin.h makes the platform).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/abi/loaded_plugin.h"
#include "rill/abi/rill_plugin.h"
#include "rill/base/mutex.h"
#include "rill/base/spin_lock.h"
#include "rill/executor/stream_executor_interface.h"
#include "rill/platform/platform.h"
#include "rill/stream/kernel_spec.h"

namespace rill::abi {

inline RillBuffer ToC(const DeviceMemoryBase& m) { return {m.opaque(), m.offset(), m.size()}; }

// A plugin's platform: Platform over RillPlatformFns.
class PluginPlatform : public Platform {
 public:
  explicit PluginPlatform(std::shared_ptr<LoadedPlugin> plugin);
  ~PluginPlatform() override;

  PlatformId id() const override { return id_; }
  const std::string& Name() const override { return name_; }
  int VisibleDeviceCount() const override { return count_; }
  absl::Status Availability() const override;
  std::string MoreDevicesHint() const override;
  std::string OpFallback() const override;
  absl::StatusOr<DeviceDescription> DescriptionForDevice(int ordinal) const override;
  // The description and the RILL_FEATURE_* bits of device `ordinal`.
  absl::StatusOr<std::pair<DeviceDescription, uint32_t>> Describe(int ordinal) const;

 protected:
  absl::StatusOr<std::unique_ptr<StreamExecutorInterface>> CreateExecutorImplementation(
      const StreamExecutorConfig& config) override;

 private:
  std::shared_ptr<LoadedPlugin> plugin_;
  PlatformId id_;
  std::string name_;
  int count_ = 0;
};

// One device of a plugin: StreamExecutorInterface over RillExecutorFns.
// Keeps the table of live allocations (memory stats, Owns, HostAddress)
// and frees what is left before the plugin's executor_destroy.
class PluginExecutor : public StreamExecutorInterface {
 public:
  PluginExecutor(std::shared_ptr<LoadedPlugin> plugin, PlatformId id, RillExecutor* handle,
                 DeviceDescription description, uint32_t features);
  ~PluginExecutor() override;

  const DeviceDescription& Description() const override { return description_; }
  absl::Status Supports(Feature feature) const override;
  absl::StatusOr<DeviceMemoryBase> Allocate(uint64_t size) override;
  absl::Status Deallocate(DeviceMemoryBase memory) override;
  absl::StatusOr<void*> HostMemoryAllocate(uint64_t size) override;
  absl::Status HostMemoryDeallocate(void* ptr) override;
  MemoryStats GetMemoryStats() const override;
  bool Owns(const DeviceMemoryBase& memory) const override;
  absl::StatusOr<void*> HostAddress(const DeviceMemoryBase& memory) const override;
  absl::Status SynchronousMemcpyHostToDevice(DeviceMemoryBase dst, const void* src,
                                             uint64_t size) override;
  absl::Status SynchronousMemcpyDeviceToHost(void* dst, DeviceMemoryBase src,
                                             uint64_t size) override;
  absl::Status SynchronizeAllActivity() override;
  absl::StatusOr<std::unique_ptr<StreamInterface>> CreateStream(const StreamOptions& options,
                                                                StreamStatus* status) override;
  absl::StatusOr<std::unique_ptr<EventInterface>> CreateEvent() override;
  absl::StatusOr<std::unique_ptr<KernelInterface>> LoadKernel(const KernelSpec& spec) override;
  bool CanLoad(const KernelSpec& spec) const override;

  bool host_addressable() const { return (features_ & RILL_FEATURE_HOST_ADDRESSABLE_MEMORY) != 0; }
  const std::shared_ptr<LoadedPlugin>& plugin() const { return plugin_; }

 private:
  struct KernelForm {
    std::string format;
    const uint8_t* data;
    size_t size;
  };
  std::optional<KernelForm> FormOf(const KernelSpec& spec) const;
  std::string Who() const;  // "plugin cbackend:0"

  std::shared_ptr<LoadedPlugin> plugin_;
  const RillExecutorFns& fns_;
  PlatformId id_;
  RillExecutor* handle_;
  // The plugin's executor_destroy runs when the last of this executor and
  // its streams, events and kernels goes (a stream the front detached may
  // outlive the executor).
  std::shared_ptr<RillExecutor> device_;
  DeviceDescription description_;
  uint32_t features_;
  int64_t limit_;
  mutable Mutex mu_;
  absl::flat_hash_map<void*, uint64_t> allocations_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<void*, bool> host_allocations_ ABSL_GUARDED_BY(mu_);  // true: the plugin's
  MemoryStats stats_ ABSL_GUARDED_BY(mu_);
};

// One stream of a plugin (StreamInterface over RillStreamFns); its handle
// is what an own-platform library receives.
class PluginStream : public StreamInterface {
 public:
  PluginStream(std::shared_ptr<LoadedPlugin> plugin, std::shared_ptr<RillExecutor> device,
               RillStream* handle, StreamStatus* status);
  ~PluginStream() override;

  absl::Status MemcpyHostToDevice(DeviceMemoryBase dst, const void* src, uint64_t size) override;
  absl::Status MemcpyDeviceToHost(void* dst, DeviceMemoryBase src, uint64_t size) override;
  absl::Status MemcpyDeviceToDevice(DeviceMemoryBase dst, DeviceMemoryBase src,
                                    uint64_t size) override;
  absl::Status Memset32(DeviceMemoryBase dst, uint32_t pattern, uint64_t size) override;
  absl::Status RecordEvent(EventInterface* event) override;
  absl::Status WaitForEvent(EventInterface* event) override;
  absl::Status DoHostCallback(absl::AnyInvocable<absl::Status() &&> callback) override;
  absl::Status Notify(absl::AnyInvocable<void() &&> callback) override;
  absl::Status Launch(const ThreadDim& threads, const BlockDim& blocks,
                      const KernelInterface& kernel, KernelArgs args) override;
  absl::Status BlockHostUntilDone() override;
  void* native_handle() override;

  RillStream* handle() const { return handle_; }

 private:
  struct Callback;
  static void RunCallback(void* user_data);
  // A Callback from the pool (or new), and back: an enqueue then rarely
  // allocates (the host streams' queues keep their slots too).
  Callback* TakeCallback();
  void Recycle(Callback* callback);
  absl::Status Enqueue(Callback* callback);

  std::shared_ptr<LoadedPlugin> plugin_;
  std::shared_ptr<RillExecutor> device_;
  const RillStreamFns& fns_;
  RillStream* handle_;
  StreamStatus* status_;
  SpinLock pool_mu_;
  std::vector<Callback*> pool_ ABSL_GUARDED_BY(pool_mu_);
};

// One event of a plugin (EventInterface over RillEventFns).
class PluginEvent : public EventInterface {
 public:
  PluginEvent(std::shared_ptr<LoadedPlugin> plugin, std::shared_ptr<RillExecutor> device,
              RillEvent* handle);
  ~PluginEvent() override;
  State Poll() override;
  absl::Status Synchronize() override;
  absl::StatusOr<absl::Duration> ElapsedSince(const EventInterface& start) override;
  RillEvent* handle() const { return handle_; }

 private:
  std::shared_ptr<LoadedPlugin> plugin_;
  std::shared_ptr<RillExecutor> device_;
  RillEvent* handle_;
};

// A loaded kernel: one of the plugin's own format (kernel_load), or a
// KernelSpec host function that the stream runs through a host callback on
// a host-addressable device.
class PluginKernel : public KernelInterface {
 public:
  PluginKernel(std::shared_ptr<LoadedPlugin> plugin, std::shared_ptr<RillExecutor> device,
               RillKernel* handle)
      : plugin_(std::move(plugin)), device_(std::move(device)), handle_(handle) {}
  explicit PluginKernel(HostBlockFn fn)
      : host_fn_(std::make_shared<const HostBlockFn>(std::move(fn))) {}
  ~PluginKernel() override {
    if (handle_) plugin_->executor().kernel_destroy(handle_);
  }
  const RillKernel* handle() const { return handle_; }
  const std::shared_ptr<const HostBlockFn>& host_fn() const { return host_fn_; }

 private:
  std::shared_ptr<LoadedPlugin> plugin_;
  std::shared_ptr<RillExecutor> device_;
  RillKernel* handle_ = nullptr;
  std::shared_ptr<const HostBlockFn> host_fn_;
};

}  // namespace rill::abi

#endif  // RILL_ABI_PLUGIN_OBJECTS_H_
