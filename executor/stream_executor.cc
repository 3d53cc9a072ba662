#include "rill/executor/stream_executor.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rill/base/logging.h"
#include "rill/base/status_macros.h"
#include "rill/platform/platform.h"
#include "rill/plugins/blas/blas.h"
#include "rill/plugins/collectives/collectives.h"
#include "rill/plugins/dnn/dnn.h"
#include "rill/plugins/fft/fft.h"
#include "rill/plugins/plugin_registry.h"
#include "rill/plugins/rng/rng.h"
#include "rill/stream/stream_listener.h"

namespace rill {

const char* FeatureName(Feature feature) {
  switch (feature) {
    case Feature::kHostCallbacks:
      return "host callbacks";
    case Feature::kKernelLaunch:
      return "kernel launch";
    case Feature::kTimers:
      return "timers";
    case Feature::kPinnedHostMemory:
      return "pinned host memory";
    case Feature::kDeviceToDeviceCopy:
      return "device-to-device copy";
    case Feature::kHostAddressableMemory:
      return "host-addressable memory";
  }
  return "unknown feature";
}

namespace {
uint32_t NextSerial() {
  static std::atomic<uint32_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

StreamExecutor::StreamExecutor(Platform* platform, int device_ordinal,
                               std::unique_ptr<StreamExecutorInterface> impl)
    : platform_(platform),
      device_ordinal_(device_ordinal),
      debug_name_(absl::StrCat(platform->Name(), ":", device_ordinal)),
      serial_(NextSerial()),
      impl_(std::move(impl)) {
  internal::InstallEnvironmentListeners();
}

StreamExecutor::~StreamExecutor() {
  attachments_.Clear();  // They may free memory and kernels through the backend.
  alive_->store(false, std::memory_order_release);
  const int detached = streams_->DetachAll([](Stream* stream) { stream->Detach(); });
  if (detached > 0) {
    RILL_LOG(WARNING) << "executor " << debug_name_ << " destroyed with " << detached
                      << " live stream(s); their work was drained and they are detached";
  }
}

absl::Status StreamExecutor::Supports(Feature feature) const {
  absl::Status status = impl_->Supports(feature);
  if (status.ok()) return status;  // The hot path: no message is built.
  return Annotate(status, absl::StrCat(debug_name_, " lacks ", FeatureName(feature)));
}

absl::StatusOr<void*> StreamExecutor::HostAddress(const DeviceMemoryBase& memory) const {
  absl::StatusOr<void*> address = impl_->HostAddress(memory);
  if (address.ok()) return address;
  return Annotate(address.status(),
                  absl::StrCat("HostAddress(", memory.ToString(), ") on ", debug_name_));
}

namespace {

void Report(const std::string& device, bool free, bool host_memory, uint64_t bytes,
            const void* address, const absl::Status& status) {
  if (!StreamListenersActive()) return;
  internal::ReportAllocation(AllocationEvent{device, free, host_memory, bytes, address, status});
}

// Sizes past int64's range are refused before a backend sees them: byte
// counts are signed in memory statistics and most vendor APIs.
absl::Status CheckAllocationSize(const char* what, const std::string& device, uint64_t bytes) {
  if (bytes == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " on ", device, ": cannot allocate 0 bytes"));
  }
  if (bytes > static_cast<uint64_t>(INT64_MAX)) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, " on ", device, ": ", bytes,
                     " bytes is more than any device gives (2^63 - 1 at most)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DeviceMemoryBase> StreamExecutor::Allocate(uint64_t bytes) {
  RILL_RETURN_IF_ERROR(CheckAllocationSize("Allocate", debug_name_, bytes));
  absl::StatusOr<DeviceMemoryBase> memory = impl_->Allocate(bytes);
  Report(debug_name_, false, false, bytes, memory.ok() ? memory->opaque() : nullptr,
         memory.status());
  if (!memory.ok()) {
    return Annotate(memory.status(), absl::StrCat("Allocate(", bytes, " bytes) on ", debug_name_));
  }
  return memory;
}

absl::Status StreamExecutor::Deallocate(DeviceMemoryBase* memory) {
  if (memory == nullptr || memory->is_null()) return absl::OkStatus();
  if (memory->offset() != 0) {
    return absl::InvalidArgumentError(absl::StrCat("Deallocate on ", debug_name_, ": ",
                                                   memory->ToString(),
                                                   " is a sub-range, not an allocation"));
  }
  Report(debug_name_, true, false, memory->size(), memory->opaque(), absl::OkStatus());
  RILL_RETURN_IF_ERROR(
      Annotate(impl_->Deallocate(*memory),
               absl::StrCat("Deallocate(", memory->ToString(), ") on ", debug_name_)));
  *memory = DeviceMemoryBase();
  return absl::OkStatus();
}

absl::StatusOr<void*> StreamExecutor::HostMemoryAllocate(uint64_t bytes) {
  RILL_RETURN_IF_ERROR(CheckAllocationSize("HostMemoryAllocate", debug_name_, bytes));
  RILL_RETURN_IF_ERROR(Supports(Feature::kPinnedHostMemory));
  absl::StatusOr<void*> ptr = impl_->HostMemoryAllocate(bytes);
  Report(debug_name_, false, true, bytes, ptr.ok() ? *ptr : nullptr, ptr.status());
  if (!ptr.ok()) {
    return Annotate(ptr.status(), absl::StrCat("HostMemoryAllocate(", bytes, ") on ", debug_name_));
  }
  return ptr;
}

absl::Status StreamExecutor::HostMemoryDeallocate(void* ptr) {
  if (ptr == nullptr) return absl::OkStatus();
  Report(debug_name_, true, true, 0, ptr, absl::OkStatus());
  return Annotate(impl_->HostMemoryDeallocate(ptr),
                  absl::StrFormat("HostMemoryDeallocate(%p) on %s", ptr, debug_name_));
}

absl::Status StreamExecutor::CheckOwner(std::string_view role, const DeviceMemoryBase& memory,
                                        bool allow_peer) const {
  if (impl_->Owns(memory)) return absl::OkStatus();
  if (allow_peer) {
    for (int i = 0; i < platform_->VisibleDeviceCount(); ++i) {
      StreamExecutor* other = platform_->ExistingExecutor(i);
      if (other != nullptr && other != this && other->implementation()->Owns(memory)) {
        return absl::OkStatus();
      }
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      AsAbsl(role), " ", memory.ToString(), " is not in an allocation of ", debug_name_,
      allow_peer ? " or of another device of its platform" : "",
      " (memory of another device or platform, freed memory, or a view past its allocation)"));
}

namespace {

absl::Status CheckCopy(const char* what, const DeviceMemoryBase& device, const void* host,
                       uint64_t size) {
  if (device.is_null()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": device memory is null"));
  }
  if (host == nullptr && size > 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": host pointer is null"));
  }
  if (size > device.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", size, " bytes overrun ", device.ToString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status StreamExecutor::SynchronousMemcpy(DeviceMemoryBase* device_dst, const void* host_src,
                                               uint64_t size) {
  const std::string what =
      absl::StrCat("SynchronousMemcpy(host->device, ", size, " bytes) on ", debug_name_);
  if (device_dst == nullptr) return absl::InvalidArgumentError(what + ": destination is null");
  RILL_RETURN_IF_ERROR(CheckCopy(what.c_str(), *device_dst, host_src, size));
  if (size == 0) return absl::OkStatus();
  RILL_RETURN_IF_ERROR(Annotate(CheckOwner("destination", *device_dst), what));
  return Annotate(impl_->SynchronousMemcpyHostToDevice(*device_dst, host_src, size), what);
}

absl::Status StreamExecutor::SynchronousMemcpy(void* host_dst, const DeviceMemoryBase& device_src,
                                               uint64_t size) {
  const std::string what =
      absl::StrCat("SynchronousMemcpy(device->host, ", size, " bytes) on ", debug_name_);
  RILL_RETURN_IF_ERROR(CheckCopy(what.c_str(), device_src, host_dst, size));
  if (size == 0) return absl::OkStatus();
  RILL_RETURN_IF_ERROR(Annotate(CheckOwner("source", device_src), what));
  return Annotate(impl_->SynchronousMemcpyDeviceToHost(host_dst, device_src, size), what);
}

absl::StatusOr<std::unique_ptr<Stream>> StreamExecutor::CreateStream(const StreamOptions& options) {
  std::unique_ptr<Stream> stream(new Stream(this, streams_));
  RILL_RETURN_IF_ERROR(
      Annotate(stream->Init(options), absl::StrCat("CreateStream on ", debug_name_)));
  streams_->Add(stream.get());
  return stream;
}

absl::StatusOr<std::unique_ptr<Event>> StreamExecutor::CreateEvent() {
  absl::StatusOr<std::unique_ptr<EventInterface>> impl = impl_->CreateEvent();
  if (!impl.ok()) return Annotate(impl.status(), absl::StrCat("CreateEvent on ", debug_name_));
  return std::make_unique<Event>(this, std::move(*impl));
}

absl::StatusOr<std::unique_ptr<Kernel>> StreamExecutor::LoadKernel(const KernelSpec& spec) {
  absl::StatusOr<std::unique_ptr<KernelInterface>> impl = impl_->LoadKernel(spec);
  if (!impl.ok()) {
    return Annotate(impl.status(),
                    absl::StrCat("LoadKernel(\"", spec.name(), "\") on ", debug_name_));
  }
  return std::make_unique<Kernel>(this, spec.name(), spec.host_arity(), spec.host_signature(),
                                  spec.params(), std::move(*impl));
}

bool StreamExecutor::CanLoad(const KernelSpec& spec) const {
  return spec.variant(platform_->id()) != nullptr || impl_->CanLoad(spec);
}

absl::Status StreamExecutor::CheckSignature(const KernelSpec& spec, const std::type_info& signature,
                                            int arity) const {
  // Only the host variant declares its parameter types; device variants
  // (PTX, OpenCL C) are checked by count at launch where the backend can.
  if (spec.host_signature() == nullptr || *spec.host_signature() == signature) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("LoadKernel(\"", spec.name(), "\") on ", debug_name_, ": loaded with ", arity,
                   " parameter(s) whose types differ from the ", spec.host_arity(),
                   " the spec's host function declares"));
}

absl::Status StreamExecutor::BuildChainLocked(PluginKind kind, PluginSlot& slot,
                                              const std::vector<std::string>& names) {
  if (names.empty()) {
    return absl::UnimplementedError(absl::StrCat("no ", absl::AsciiStrToUpper(PluginKindName(kind)),
                                                 " plugin for platform ", platform_->Name()));
  }
  // Every member first (reusing instances made before); the chain changes
  // only when all of them exist.
  std::vector<PluginInterface*> chain;
  for (const std::string& name : names) {
    RILL_ASSIGN_OR_RETURN(PluginInterface * instance, InstanceLocked(kind, slot, name));
    chain.push_back(instance);
  }
  for (auto& p : slot.instances) p->fallback_.store(nullptr, std::memory_order_release);
  for (size_t i = 0; i + 1 < chain.size(); ++i)
    chain[i]->fallback_.store(chain[i + 1], std::memory_order_release);
  slot.chain = std::move(chain);
  return absl::OkStatus();
}

absl::StatusOr<PluginInterface*> StreamExecutor::InstanceLocked(PluginKind kind, PluginSlot& slot,
                                                                std::string_view name) {
  for (auto& p : slot.instances) {
    if (p->Name() == name) return p.get();
  }
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<PluginInterface> instance,
                        PluginRegistry::Default().Create(kind, name, this));
  slot.instances.push_back(std::move(instance));
  return slot.instances.back().get();
}

absl::StatusOr<PluginInterface*> StreamExecutor::GetPlugin(PluginKind kind) {
  RILL_RETURN_IF_ERROR(Annotate(CheckPluginKind(kind), absl::StrCat("GetPlugin on ", debug_name_)));
  MutexLock lock(&plugin_mu_);
  PluginSlot& slot = plugins_[static_cast<int>(kind)];
  if (slot.chain.empty()) {  // SetPlugin builds the chain at once: not selected, so the registry's.
    RILL_ASSIGN_OR_RETURN(std::vector<std::string> names,
                          PluginRegistry::Default().DefaultChain(platform_->id(), kind));
    RILL_RETURN_IF_ERROR(BuildChainLocked(kind, slot, names));
  }
  return slot.chain.front();
}

absl::StatusOr<PluginInterface*> StreamExecutor::GetPlugin(PluginKind kind, std::string_view name) {
  RILL_RETURN_IF_ERROR(Annotate(CheckPluginKind(kind), absl::StrCat("GetPlugin on ", debug_name_)));
  RILL_RETURN_IF_ERROR(PluginRegistry::Default().CheckRegistered(platform_->id(), kind, name));
  MutexLock lock(&plugin_mu_);
  return InstanceLocked(kind, plugins_[static_cast<int>(kind)], name);
}

BlasSupport* StreamExecutor::AsBlas() {
  return static_cast<BlasSupport*>(GetPlugin(PluginKind::kBlas).value_or(nullptr));
}

DnnSupport* StreamExecutor::AsDnn() {
  return static_cast<DnnSupport*>(GetPlugin(PluginKind::kDnn).value_or(nullptr));
}

FftSupport* StreamExecutor::AsFft() {
  return static_cast<FftSupport*>(GetPlugin(PluginKind::kFft).value_or(nullptr));
}

CollectivesSupport* StreamExecutor::AsCollectives() {
  return static_cast<CollectivesSupport*>(GetPlugin(PluginKind::kCollectives).value_or(nullptr));
}

RngSupport* StreamExecutor::AsRng() {
  return static_cast<RngSupport*>(GetPlugin(PluginKind::kRng).value_or(nullptr));
}

absl::Status StreamExecutor::SetPlugin(PluginKind kind, std::string_view names) {
  RILL_RETURN_IF_ERROR(Annotate(CheckPluginKind(kind), absl::StrCat("SetPlugin on ", debug_name_)));
  RILL_ASSIGN_OR_RETURN(std::vector<std::string> chain,
                        PluginRegistry::Default().ParseChain(platform_->id(), kind, names));
  MutexLock lock(&plugin_mu_);
  PluginSlot& slot = plugins_[static_cast<int>(kind)];
  return BuildChainLocked(kind, slot, chain);
}

absl::StatusOr<std::string> StreamExecutor::PluginName(PluginKind kind) {
  RILL_ASSIGN_OR_RETURN(std::vector<std::string> chain, PluginChain(kind));
  return chain.empty() ? std::string() : chain.front();
}

absl::StatusOr<std::vector<std::string>> StreamExecutor::PluginChain(PluginKind kind) {
  RILL_RETURN_IF_ERROR(
      Annotate(CheckPluginKind(kind), absl::StrCat("PluginChain on ", debug_name_)));
  MutexLock lock(&plugin_mu_);
  const PluginSlot& slot = plugins_[static_cast<int>(kind)];
  if (!slot.chain.empty()) {
    std::vector<std::string> names;
    for (const PluginInterface* p : slot.chain) names.push_back(p->Name());
    return names;
  }
  return PluginRegistry::Default().DefaultChain(platform_->id(), kind);
}

Kernel::Kernel(StreamExecutor* parent, std::string name, int arity, const std::type_info* signature,
               std::vector<KernelParam> params, std::unique_ptr<KernelInterface> impl)
    : parent_(parent),
      name_(std::move(name)),
      arity_(arity),
      signature_(signature),
      params_(std::move(params)),
      impl_(std::move(impl)) {}
Kernel::~Kernel() = default;

}  // namespace rill
