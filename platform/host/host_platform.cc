#include "rill/platform/host/host_platform.h"

#include <unistd.h>

#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "rill/base/env_settings.h"
#include "rill/base/status_macros.h"
#include "rill/platform/host/host_executor.h"
#include "rill/plugins/host_library.h"

namespace rill {

const PlatformIdInfo kHostPlatformIdInfo{"host"};
const PlatformId kHostPlatformId = &kHostPlatformIdInfo;

namespace {

int64_t PhysicalMemoryBytes() {
  return static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
}

// The value of `key` in /proc/cpuinfo's first processor, or "".
std::string CpuInfo(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "";
}

}  // namespace

absl::StatusOr<HostPlatformOptions> HostPlatformOptionsFromEnv() {
  HostPlatformOptions options;
  RILL_ASSIGN_OR_RETURN(std::optional<int64_t> devices, EnvInt("RILL_HOST_DEVICES"));
  if (devices.has_value()) options.device_count = static_cast<int>(*devices);
  RILL_ASSIGN_OR_RETURN(std::optional<int64_t> limit, EnvBytes("RILL_HOST_MEMORY_LIMIT"));
  if (limit.has_value()) options.memory_limit_bytes = *limit;
  return options;
}

HostPlatform::HostPlatform(HostPlatformOptions options) : options_(std::move(options)) {
  if (options_.memory_limit_bytes <= 0) options_.memory_limit_bytes = PhysicalMemoryBytes();
}

HostPlatform::HostPlatform(HostPlatformOptions options, absl::Status why)
    : HostPlatform(std::move(options)) {
  availability_ = absl::UnavailableError(why.message());
}

HostPlatform::~HostPlatform() = default;

std::string HostPlatform::MoreDevicesHint() const {
  return "set RILL_HOST_DEVICES=N (N virtual host devices, 1 to 1024)";
}

int HostPlatform::VisibleDeviceCount() const {
  return availability_.ok() ? options_.device_count : 0;
}

DeviceDescription HostPlatform::Describe(int ordinal) const {
  static const std::string cpu = CpuInfo("model name");
  static const std::string mhz = CpuInfo("cpu MHz");
  DeviceDescription d;
  d.name = absl::StrCat("Host virtual device ", ordinal, " of ", options_.device_count);
  d.vendor = CpuInfo("vendor_id");
  d.platform_version = "rill host 1";
  d.driver_version = "n/a";
  d.memory_bytes = options_.memory_limit_bytes;
  d.compute_units = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double clock_mhz = 0;
  if (absl::SimpleAtod(mhz, &clock_mhz)) d.clock_khz = static_cast<int64_t>(clock_mhz * 1000);
  d.extra["cpu"] = cpu;
  d.extra["stream threads"] = "one per stream";
  return d;
}

absl::StatusOr<DeviceDescription> HostPlatform::DescriptionForDevice(int ordinal) const {
  RILL_RETURN_IF_ERROR(CheckOrdinal(ordinal));
  return Describe(ordinal);
}

absl::StatusOr<std::unique_ptr<StreamExecutorInterface>> HostPlatform::CreateExecutorImplementation(
    const StreamExecutorConfig& config) {
  return std::make_unique<HostExecutor>(Describe(config.ordinal), options_.memory_limit_bytes,
                                        streams_);
}

absl::Status RegisterHostPlatform(PlatformManager& manager) {
  // Device memory is host memory (Feature::kHostAddressableMemory), so the
  // host library plugins linked into the program (OpenBLAS, FFTW, oneDNN,
  // ...) serve this platform; any such backend makes the same call.
  RILL_RETURN_IF_ERROR(RegisterHostLibraryPlugins(kHostPlatformId));
  absl::StatusOr<HostPlatformOptions> options = HostPlatformOptionsFromEnv();
  if (!options.ok()) {
    return manager.RegisterPlatform(
        std::make_unique<HostPlatform>(HostPlatformOptions{}, options.status()));
  }
  return manager.RegisterPlatform(std::make_unique<HostPlatform>(*std::move(options)));
}

}  // namespace rill

RILL_REGISTER_PLATFORM(host, rill::RegisterHostPlatform)
