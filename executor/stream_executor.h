#ifndef RILL_EXECUTOR_STREAM_EXECUTOR_H_
#define RILL_EXECUTOR_STREAM_EXECUTOR_H_

#include <atomic>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/base/attachments.h"
#include "rill/base/mutex.h"
#include "rill/executor/attached_streams.h"
#include "rill/executor/device_memory.h"
#include "rill/executor/stream_executor_interface.h"
#include "rill/plugins/plugin.h"
#include "rill/stream/event.h"
#include "rill/stream/kernel.h"
#include "rill/stream/stream.h"

namespace rill {

class BlasSupport;
class DnnSupport;
class FftSupport;
class Platform;
class RngSupport;
class CollectivesSupport;

// The handle users hold for one device: allocates its memory, creates its
// streams and events, loads kernels. Owns the backend's
// StreamExecutorInterface. Created and owned by the Platform (get one with
// Platform::ExecutorForDevice) and lives as long as the platform.
//
//   RILL_ASSIGN_OR_RETURN(Platform* host, PlatformManager::Default().PlatformWithName("host"));
//   RILL_ASSIGN_OR_RETURN(StreamExecutor* exec, host->ExecutorForDevice(0));
//   RILL_ASSIGN_OR_RETURN(ScopedDeviceMemory<float> buf, exec->AllocateOwnedArray<float>(n));
//   RILL_ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream, exec->CreateStream());
//
// Memory errors: a request of 0 bytes is InvalidArgument; more than the
// device can give (or more than 2^63 - 1 bytes) is ResourceExhausted. Destroying an executor with
// live streams waits for their work and detaches them (logged): their later calls fail with
// FailedPrecondition and destroying them stays safe. Thread-safe.
class StreamExecutor {
 public:
  StreamExecutor(Platform* platform, int device_ordinal,
                 std::unique_ptr<StreamExecutorInterface> impl);
  ~StreamExecutor();
  StreamExecutor(const StreamExecutor&) = delete;
  StreamExecutor& operator=(const StreamExecutor&) = delete;

  Platform* platform() const { return platform_; }
  int device_ordinal() const { return device_ordinal_; }
  // "host:0", "cuda:1": for messages.
  const std::string& DebugName() const { return debug_name_; }
  // A number no other executor of this process has had, counted from 0:
  // a dense index for per-executor tables kept by layers above (the op
  // layer's kernel choice). Never reused, so an entry left by a destroyed
  // executor is never mistaken for a new one's.
  uint32_t serial() const { return serial_; }
  // Per-executor state of the layers above (the tensor layer's storage
  // allocator, the op layer's loaded kernels): made on first use, destroyed
  // first thing when the executor goes, while its backend still works.
  Attachments& attachments() { return attachments_; }
  const DeviceDescription& GetDeviceDescription() const { return impl_->Description(); }
  // OK, or Unimplemented with the backend's reason.
  absl::Status Supports(Feature feature) const;

  // --- Device memory.
  absl::StatusOr<DeviceMemoryBase> Allocate(uint64_t bytes);
  template <typename T>
  absl::StatusOr<DeviceMemory<T>> AllocateArray(uint64_t element_count);
  template <typename T>
  absl::StatusOr<ScopedDeviceMemory<T>> AllocateOwnedArray(uint64_t element_count);
  // Frees memory from Allocate and nulls `*memory`. Work already enqueued
  // that uses it -- on this device's streams or a peer device's of the same
  // platform -- still sees it: the backend defers the free past that work
  // (host, OpenCL) or waits for it (cudaFree). Safe
  // from any thread, host callbacks included. InvalidArgument for a
  // sub-range or a handle this executor did not allocate.
  absl::Status Deallocate(DeviceMemoryBase* memory);
  MemoryStats GetMemoryStats() const { return impl_->GetMemoryStats(); }
  // The host address of `memory` where this device's memory is
  // host-addressable (see StreamExecutorInterface::HostAddress); otherwise
  // Unimplemented naming this executor.
  absl::StatusOr<void*> HostAddress(const DeviceMemoryBase& memory) const;
  // OK when `memory` lies within a live allocation of this executor -- or,
  // with `allow_peer`, of another device of the same platform (a peer
  // copy). Otherwise InvalidArgument naming `role` and the view: memory of
  // another device or platform, freed memory, or a view past its
  // allocation (offsets are checked without wrapping). Every path that hands
  // a view to the backend goes through it: Stream::Then*, the synchronous
  // copies and the plugins' argument checks.
  absl::Status CheckOwner(std::string_view role, const DeviceMemoryBase& memory,
                          bool allow_peer = false) const;

  // --- Page-locked host memory.
  // Unlike Deallocate, HostMemoryDeallocate frees at once: as with any host
  // buffer, wait for the streams whose queued copies use `ptr` (of any
  // platform) before freeing it.
  absl::StatusOr<void*> HostMemoryAllocate(uint64_t bytes);
  absl::Status HostMemoryDeallocate(void* ptr);

  // --- Synchronous copies (block the caller; no stream). The device view is
  // checked as the stream copies check it (non-null, `size` within the view,
  // CheckOwner).
  absl::Status SynchronousMemcpy(DeviceMemoryBase* device_dst, const void* host_src, uint64_t size);
  absl::Status SynchronousMemcpy(void* host_dst, const DeviceMemoryBase& device_src, uint64_t size);
  // Waits for all work on all streams of this device.
  absl::Status SynchronizeAllActivity() { return impl_->SynchronizeAllActivity(); }

  // --- Streams, events, kernels.
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream(const StreamOptions& options = {});
  absl::StatusOr<std::unique_ptr<Event>> CreateEvent();
  // Loads the variant of `spec` for this executor's platform.
  absl::StatusOr<std::unique_ptr<Kernel>> LoadKernel(const KernelSpec& spec);
  // Whether LoadKernel(spec) would find a form it loads: the platform's
  // variant (KernelSpec::AddVariant) or a format the backend reads
  // (StreamExecutorInterface::CanLoad). Loads nothing.
  bool CanLoad(const KernelSpec& spec) const;
  // As above, checking the spec's declared parameters against Params.
  template <typename... Params>
  absl::StatusOr<TypedKernel<Params...>> LoadKernel(const KernelSpec& spec);

  // --- Library plugins (see plugins/plugin_registry.h, plugins/plugin_chain.h).
  // This executor's plugin of each kind -- the head of its fallback chain --
  // created from the PluginRegistry on first use (the chain SetPlugin made, else
  // RILL_<KIND> from the environment, else the registry's default);
  // nullptr when none is registered.
  BlasSupport* AsBlas();
  DnnSupport* AsDnn();
  RngSupport* AsRng();
  FftSupport* AsFft();
  CollectivesSupport* AsCollectives();
  // As above with the reason when there is none: Unimplemented "no BLAS
  // plugin for platform host", or the factory's error.
  absl::StatusOr<PluginInterface*> GetPlugin(PluginKind kind);
  // Plugin `name` of `kind` on this executor, for calls that choose their
  // plugin: a member of the chain (its fallbacks stay those after it), or
  // any other registered plugin, created on first use without fallback.
  absl::StatusOr<PluginInterface*> GetPlugin(PluginKind kind, std::string_view name);
  // Selects plugin `names` of `kind` for this executor: one name, or a
  // comma-separated fallback chain ("xnnpack,onednn": calls the first does
  // not support go to the next), creating the instances it lacks now.
  // Instances that leave the chain stay alive, unlinked, until the executor
  // is destroyed (work enqueued through them runs normally). NotFound,
  // listing the registered names, for an unknown name; InvalidArgument for
  // a name given twice or an empty one; a factory's error. On error the
  // chain in force is unchanged.
  absl::Status SetPlugin(PluginKind kind, std::string_view names);
  // The name of the plugin this executor uses (or will create) for `kind`:
  // the chain's head.
  absl::StatusOr<std::string> PluginName(PluginKind kind);
  // The names of the chain in force for `kind`, head first.
  absl::StatusOr<std::vector<std::string>> PluginChain(PluginKind kind);

  StreamExecutorInterface* implementation() const { return impl_.get(); }
  // True until this executor's destructor starts; objects that may outlive
  // it (events) keep a copy to refuse use afterwards.
  std::shared_ptr<const std::atomic<bool>> liveness() const { return alive_; }

 private:
  friend class Stream;
  absl::Status CheckSignature(const KernelSpec& spec, const std::type_info& signature,
                              int arity) const;

  Platform* platform_;
  int device_ordinal_;
  std::string debug_name_;
  uint32_t serial_;
  std::unique_ptr<StreamExecutorInterface> impl_;
  Attachments attachments_;
  const std::shared_ptr<std::atomic<bool>> alive_ = std::make_shared<std::atomic<bool>>(true);
  // Shared with the streams: either side may be destroyed first.
  const std::shared_ptr<AttachedStreams> streams_ = std::make_shared<AttachedStreams>();

  struct PluginSlot {
    // Every instance made for the kind, kept until the executor goes: a
    // call in flight may still follow a fallback to one that left the chain.
    std::vector<std::unique_ptr<PluginInterface>> instances;
    std::vector<PluginInterface*> chain;  // Linked through fallback_; empty until first use.
  };
  // Makes `names` the chain (creating what is missing); unchanged on error.
  absl::Status BuildChainLocked(PluginKind kind, PluginSlot& slot,
                                const std::vector<std::string>& names)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(plugin_mu_);
  absl::StatusOr<PluginInterface*> InstanceLocked(PluginKind kind, PluginSlot& slot,
                                                  std::string_view name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(plugin_mu_);
  Mutex plugin_mu_;
  PluginSlot plugins_[std::size(kAllPluginKinds)] ABSL_GUARDED_BY(plugin_mu_);  // By PluginKind.
};

// ---------------------------------------------------------------------------
// Implementation of the templates.

template <typename T>
absl::StatusOr<DeviceMemory<T>> StreamExecutor::AllocateArray(uint64_t element_count) {
  if (element_count > UINT64_MAX / sizeof(T)) {
    return absl::InvalidArgumentError("AllocateArray: " + std::to_string(element_count) +
                                      " elements of " + std::to_string(sizeof(T)) +
                                      " bytes overflow a 64-bit size");
  }
  auto base = Allocate(element_count * sizeof(T));
  if (!base.ok()) return base.status();
  return DeviceMemory<T>(*base);
}

template <typename T>
absl::StatusOr<ScopedDeviceMemory<T>> StreamExecutor::AllocateOwnedArray(uint64_t element_count) {
  auto memory = AllocateArray<T>(element_count);
  if (!memory.ok()) return memory.status();
  return ScopedDeviceMemory<T>(this, *memory);
}

template <typename... Params>
absl::StatusOr<TypedKernel<Params...>> StreamExecutor::LoadKernel(const KernelSpec& spec) {
  absl::Status status = CheckSignature(spec, typeid(KernelSignature<std::decay_t<Params>...>),
                                       static_cast<int>(sizeof...(Params)));
  if (!status.ok()) return status;
  auto kernel = LoadKernel(spec);
  if (!kernel.ok()) return kernel.status();
  return TypedKernel<Params...>(std::move(*kernel));
}

template <typename T>
void ScopedDeviceMemory<T>::Free() {
  if (parent_ != nullptr && !memory_.is_null()) {
    DeviceMemoryBase base = memory_;
    absl::Status status = parent_->Deallocate(&base);
    (void)status;  // Only fails for handles the executor does not know.
  }
  memory_ = DeviceMemory<T>();
}

}  // namespace rill

#endif  // RILL_EXECUTOR_STREAM_EXECUTOR_H_
