// PluginPlatform and PluginExecutor: a plugin's platform and devices.

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "rill/abi/plugin_objects.h"
#include "rill/base/status_macros.h"
#include "rill/platform/utils/host_function_kernel.h"
#include "rill/plugins/host_library.h"

namespace rill::abi {
namespace {

std::string Str(const char* s) { return s ? s : ""; }

}  // namespace

PluginPlatform::PluginPlatform(std::shared_ptr<LoadedPlugin> plugin)
    : plugin_(std::move(plugin)),
      id_(PluginPlatformId(plugin_->platform_name())),
      name_(plugin_->platform_name()) {
  count_ = plugin_->platform().device_count();
  if (count_ < 0) count_ = 0;
}

PluginPlatform::~PluginPlatform() { DestroyExecutors(); }

absl::Status PluginPlatform::Availability() const {
  if (plugin_->platform().availability) {
    absl::Status s = TakeError(plugin_->platform().availability());
    if (!s.ok()) return absl::UnavailableError(absl::StrCat(name_, ": ", s.message()));
  }
  if (count_ == 0) {
    return absl::UnavailableError(
        absl::StrCat(name_, " (plugin ", plugin_->path(), ") reports no device"));
  }
  return absl::OkStatus();
}

std::string PluginPlatform::MoreDevicesHint() const {
  return Str(plugin_->platform().more_devices_hint);
}

std::string PluginPlatform::OpFallback() const { return Str(plugin_->platform().op_fallback); }

absl::StatusOr<std::pair<DeviceDescription, uint32_t>> PluginPlatform::Describe(int ordinal) const {
  RillDeviceDescription d{};
  d.struct_size = sizeof(d);
  RILL_RETURN_IF_ERROR(Annotate(TakeError(plugin_->platform().describe(ordinal, &d)),
                                absl::StrCat(name_, ": describing device ", ordinal)));
  DeviceDescription out;
  out.name = Str(d.name);
  out.vendor = Str(d.vendor);
  out.platform_version = Str(d.platform_version);
  out.driver_version = Str(d.driver_version);
  out.memory_bytes = d.memory_bytes;
  out.compute_units = d.compute_units;
  out.clock_khz = d.clock_khz;
  if (d.max_threads_per_block > 0) out.max_threads_per_block = d.max_threads_per_block;
  if (d.max_block_dims.x > 0) {
    out.max_block_dims = Dim3{d.max_block_dims.x, d.max_block_dims.y, d.max_block_dims.z};
  }
  if (d.max_grid_dims.x > 0) {
    out.max_grid_dims = Dim3{d.max_grid_dims.x, d.max_grid_dims.y, d.max_grid_dims.z};
  }
  out.extra["plugin"] = plugin_->path();
  out.extra["plugin ABI"] = absl::StrCat(plugin_->abi_major(), ".", plugin_->abi_minor());
  return std::make_pair(std::move(out), d.features);
}

absl::StatusOr<DeviceDescription> PluginPlatform::DescriptionForDevice(int ordinal) const {
  RILL_RETURN_IF_ERROR(CheckOrdinal(ordinal));
  RILL_ASSIGN_OR_RETURN(auto described, Describe(ordinal));
  return std::move(described.first);
}

absl::StatusOr<std::unique_ptr<StreamExecutorInterface>>
PluginPlatform::CreateExecutorImplementation(const StreamExecutorConfig& config) {
  RILL_ASSIGN_OR_RETURN(auto described, Describe(config.ordinal));
  RillExecutor* handle = nullptr;
  RILL_RETURN_IF_ERROR(
      Annotate(TakeError(plugin_->platform().executor_create(config.ordinal, &handle)),
               absl::StrCat(name_, ": opening device ", config.ordinal)));
  if (handle == nullptr) {
    return absl::InternalError(absl::StrCat(name_, ": executor_create returned no executor"));
  }
  return std::make_unique<PluginExecutor>(plugin_, id_, handle, std::move(described.first),
                                          described.second);
}

absl::StatusOr<std::unique_ptr<Platform>> MakePluginPlatform(std::shared_ptr<LoadedPlugin> plugin) {
  if (!plugin->has_platform()) {
    return absl::InvalidArgumentError(absl::StrCat("plugin ", plugin->path(), " has no platform"));
  }
  auto platform = std::make_unique<PluginPlatform>(std::move(plugin));
  if (platform->VisibleDeviceCount() > 0) {
    RILL_ASSIGN_OR_RETURN(auto described, platform->Describe(0));
    if (described.second & RILL_FEATURE_HOST_ADDRESSABLE_MEMORY) {
      RILL_RETURN_IF_ERROR(RegisterHostLibraryPlugins(platform->id()));
    }
  }
  return std::unique_ptr<Platform>(std::move(platform));
}

// --- PluginExecutor

PluginExecutor::PluginExecutor(std::shared_ptr<LoadedPlugin> plugin, PlatformId id,
                               RillExecutor* handle, DeviceDescription description,
                               uint32_t features)
    : plugin_(std::move(plugin)),
      fns_(plugin_->executor()),
      id_(id),
      handle_(handle),
      device_(handle,
              [plugin = plugin_](RillExecutor* h) { plugin->platform().executor_destroy(h); }),
      description_(std::move(description)),
      features_(features) {
  limit_ = fns_.memory_limit ? fns_.memory_limit(handle_) : description_.memory_bytes;
  stats_.bytes_limit = limit_;
}

PluginExecutor::~PluginExecutor() {
  // The front destroyed the streams; memory still allocated (a leak of the
  // program's) goes back to the plugin before the device closes.
  absl::flat_hash_map<void*, uint64_t> left;
  absl::flat_hash_map<void*, bool> host_left;
  {
    MutexLock lock(&mu_);
    left.swap(allocations_);
    host_left.swap(host_allocations_);
  }
  for (const auto& [opaque, size] : left) fns_.deallocate(handle_, RillBuffer{opaque, 0, size});
  for (const auto& [ptr, plugins] : host_left) {
    if (plugins) {
      fns_.host_memory_deallocate(handle_, ptr);
    } else {
      std::free(ptr);
    }
  }
  device_.reset();  // executor_destroy, unless a detached stream still holds the device.
}

std::string PluginExecutor::Who() const {
  return absl::StrCat(plugin_->platform_name(), " (plugin ", plugin_->path(), ")");
}

absl::Status PluginExecutor::Supports(Feature feature) const {
  uint32_t bit = 0;
  bool ok = false;
  switch (feature) {
    case Feature::kHostCallbacks:
      bit = RILL_FEATURE_HOST_CALLBACKS;
      break;
    case Feature::kKernelLaunch:
      bit = RILL_FEATURE_KERNEL_LAUNCH;
      // Host functions run through host callbacks on host memory.
      ok = host_addressable() && (features_ & RILL_FEATURE_HOST_CALLBACKS);
      break;
    case Feature::kTimers:
      bit = RILL_FEATURE_TIMERS;
      if (plugin_->event().elapsed_us == nullptr) bit = 0;
      break;
    case Feature::kPinnedHostMemory:
      bit = RILL_FEATURE_PINNED_HOST_MEMORY;
      break;
    case Feature::kDeviceToDeviceCopy:
      bit = RILL_FEATURE_DEVICE_TO_DEVICE_COPY;
      if (plugin_->stream().memcpy_device_to_device == nullptr) bit = 0;
      break;
    case Feature::kHostAddressableMemory:
      bit = RILL_FEATURE_HOST_ADDRESSABLE_MEMORY;
      break;
  }
  if (ok || (bit != 0 && (features_ & bit))) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(Who(), " does not declare ", FeatureName(feature)));
}

absl::StatusOr<DeviceMemoryBase> PluginExecutor::Allocate(uint64_t size) {
  {
    // Reserved here, so that allocations racing each other cannot pass
    // the limit together; given back if the plugin fails.
    MutexLock lock(&mu_);
    if (limit_ > 0 &&
        (size > static_cast<uint64_t>(limit_) ||
         static_cast<uint64_t>(stats_.bytes_in_use) > static_cast<uint64_t>(limit_) - size)) {
      return absl::ResourceExhaustedError(
          absl::StrCat(Who(), ": allocating ", size, " bytes would pass the device's limit of ",
                       limit_, " bytes (", stats_.bytes_in_use, " in use)"));
    }
    stats_.bytes_in_use += static_cast<int64_t>(size);
  }
  RillBuffer out{};
  absl::Status status = Annotate(TakeError(fns_.allocate(handle_, size, &out)),
                                 absl::StrCat(Who(), ": allocating ", size, " bytes"));
  if (status.ok() && out.opaque == nullptr) {
    status = absl::InternalError(absl::StrCat(Who(), ": allocate returned a null buffer"));
  }
  MutexLock lock(&mu_);
  if (!status.ok()) {
    stats_.bytes_in_use -= static_cast<int64_t>(size);
    return status;
  }
  allocations_[out.opaque] = size;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  ++stats_.num_allocs;
  return DeviceMemoryBase(out.opaque, size);
}

absl::Status PluginExecutor::Deallocate(DeviceMemoryBase memory) {
  uint64_t size = 0;
  {
    MutexLock lock(&mu_);
    auto it = allocations_.find(memory.opaque());
    if (it == allocations_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Who(), ": Deallocate of ", memory.ToString(), ", not allocated here"));
    }
    size = it->second;
    if (memory.offset() != 0 || memory.size() != size) {
      return absl::InvalidArgumentError(
          absl::StrCat(Who(), ": Deallocate of ", memory.ToString(), ", a view of ", memory.size(),
                       " bytes at offset ", memory.offset(), " into an allocation of ", size,
                       " bytes: free the whole allocation"));
    }
    allocations_.erase(it);
    stats_.bytes_in_use -= static_cast<int64_t>(size);
    --stats_.num_allocs;
  }
  fns_.deallocate(handle_, RillBuffer{memory.opaque(), 0, size});
  return absl::OkStatus();
}

absl::StatusOr<void*> PluginExecutor::HostMemoryAllocate(uint64_t size) {
  void* ptr = nullptr;
  const bool plugins = fns_.host_memory_allocate != nullptr;
  if (plugins) {
    RILL_RETURN_IF_ERROR(Annotate(TakeError(fns_.host_memory_allocate(handle_, size, &ptr)),
                                  absl::StrCat(Who(), ": pinned host memory of ", size, " bytes")));
  } else if (posix_memalign(&ptr, 64, size == 0 ? 1 : size) != 0) {
    ptr = nullptr;
  }
  if (ptr == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat(Who(), ": no host memory for ", size, " bytes"));
  }
  MutexLock lock(&mu_);
  host_allocations_[ptr] = plugins;
  return ptr;
}

absl::Status PluginExecutor::HostMemoryDeallocate(void* ptr) {
  bool plugins = false;
  {
    MutexLock lock(&mu_);
    auto it = host_allocations_.find(ptr);
    if (it == host_allocations_.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: HostMemoryDeallocate of %p, not allocated here", Who(), ptr));
    }
    plugins = it->second;
    host_allocations_.erase(it);
  }
  if (plugins) {
    fns_.host_memory_deallocate(handle_, ptr);
  } else {
    std::free(ptr);
  }
  return absl::OkStatus();
}

MemoryStats PluginExecutor::GetMemoryStats() const {
  MutexLock lock(&mu_);
  return stats_;
}

bool PluginExecutor::Owns(const DeviceMemoryBase& memory) const {
  MutexLock lock(&mu_);
  auto it = allocations_.find(memory.opaque());
  return it != allocations_.end() && memory.LiesWithin(it->second);
}

absl::StatusOr<void*> PluginExecutor::HostAddress(const DeviceMemoryBase& memory) const {
  if (!host_addressable()) {
    return absl::UnimplementedError(absl::StrCat(Who(), ": device memory is not host memory"));
  }
  if (!Owns(memory)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Who(), ": ", memory.ToString(), " is not memory of this device"));
  }
  return HostPointer(memory);
}

absl::Status PluginExecutor::SynchronousMemcpyHostToDevice(DeviceMemoryBase dst, const void* src,
                                                           uint64_t size) {
  return TakeError(fns_.memcpy_host_to_device(handle_, ToC(dst), src, size));
}

absl::Status PluginExecutor::SynchronousMemcpyDeviceToHost(void* dst, DeviceMemoryBase src,
                                                           uint64_t size) {
  return TakeError(fns_.memcpy_device_to_host(handle_, dst, ToC(src), size));
}

absl::Status PluginExecutor::SynchronizeAllActivity() {
  return TakeError(fns_.synchronize_all(handle_));
}

absl::StatusOr<std::unique_ptr<StreamInterface>> PluginExecutor::CreateStream(
    const StreamOptions& options, StreamStatus* status) {
  RillStream* stream = nullptr;
  RILL_RETURN_IF_ERROR(
      Annotate(TakeError(fns_.stream_create(handle_, options.priority, ToC(status), &stream)),
               absl::StrCat(Who(), ": creating a stream")));
  if (stream == nullptr) {
    return absl::InternalError(absl::StrCat(Who(), ": stream_create returned no stream"));
  }
  return std::make_unique<PluginStream>(plugin_, device_, stream, status);
}

absl::StatusOr<std::unique_ptr<EventInterface>> PluginExecutor::CreateEvent() {
  RillEvent* event = nullptr;
  RILL_RETURN_IF_ERROR(Annotate(TakeError(fns_.event_create(handle_, &event)),
                                absl::StrCat(Who(), ": creating an event")));
  if (event == nullptr) {
    return absl::InternalError(absl::StrCat(Who(), ": event_create returned no event"));
  }
  return std::make_unique<PluginEvent>(plugin_, device_, event);
}

// The form of `spec` this device loads: its variant for the platform, else
// a standard format the plugin lists in kernel_formats; null for none.
std::optional<PluginExecutor::KernelForm> PluginExecutor::FormOf(const KernelSpec& spec) const {
  if (fns_.kernel_load == nullptr) return std::nullopt;
  if (const KernelVariant* variant = spec.variant(id_)) {
    return KernelForm{variant->format, variant->data.data(), variant->data.size()};
  }
  const std::vector<std::string> formats =
      absl::StrSplit(fns_.kernel_formats ? fns_.kernel_formats : "", ',', absl::SkipEmpty());
  for (const std::string& f : formats) {
    if (f == "cuda.fatbin" && !spec.cuda_fatbin().empty()) {
      return KernelForm{f, spec.cuda_fatbin().data(), spec.cuda_fatbin().size()};
    }
    if (f == "cuda.ptx" && !spec.cuda_ptx().empty()) {
      return KernelForm{f, reinterpret_cast<const uint8_t*>(spec.cuda_ptx().data()),
                        spec.cuda_ptx().size()};
    }
    if (f == "opencl.c" && !spec.opencl_source().empty()) {
      return KernelForm{f, reinterpret_cast<const uint8_t*>(spec.opencl_source().data()),
                        spec.opencl_source().size()};
    }
  }
  return std::nullopt;
}

absl::StatusOr<std::unique_ptr<KernelInterface>> PluginExecutor::LoadKernel(
    const KernelSpec& spec) {
  if (std::optional<KernelForm> form = FormOf(spec)) {
    RillKernel* kernel = nullptr;
    RILL_RETURN_IF_ERROR(Annotate(
        TakeError(fns_.kernel_load(handle_, form->format.c_str(), form->data, form->size,
                                   spec.name().c_str(), &kernel)),
        absl::StrCat(Who(), ": loading kernel ", spec.name(), " (format ", form->format, ")")));
    if (kernel == nullptr) {
      return absl::InternalError(absl::StrCat(Who(), ": kernel_load returned no kernel"));
    }
    return std::make_unique<PluginKernel>(plugin_, device_, kernel);
  }
  if (spec.has_host_function() && host_addressable()) {
    return std::make_unique<PluginKernel>(spec.host_function());
  }
  return absl::UnimplementedError(absl::StrCat(
      Who(), ": kernel ", spec.name(), " has no form this device loads: ",
      fns_.kernel_load ? "a KernelSpec::AddVariant of this platform, a format of kernel_formats, "
                         "or "
                       : "",
      host_addressable() ? "a host function" : "(its memory is not host memory)"));
}

bool PluginExecutor::CanLoad(const KernelSpec& spec) const {
  return FormOf(spec).has_value() || (spec.has_host_function() && host_addressable());
}

}  // namespace rill::abi
