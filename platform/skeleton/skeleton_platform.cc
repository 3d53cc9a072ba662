#include "skeleton_platform.h"

#include <memory>
#include <string>

#include "rill/base/status_macros.h"
#include "skeleton_executor.h"

namespace rill {

const PlatformIdInfo kSkeletonPlatformIdInfo{"skeleton"};
const PlatformId kSkeletonPlatformId = &kSkeletonPlatformIdInfo;

SkeletonPlatform::SkeletonPlatform() {
  // SKELETON: initialize the driver and count its devices here; keep a failure
  // (no driver, no device) as the reason Availability() returns.
}

SkeletonPlatform::~SkeletonPlatform() = default;

int SkeletonPlatform::VisibleDeviceCount() const {
  // SKELETON: the number of devices the driver reports; 0 when unavailable.
  return 1;
}

absl::Status SkeletonPlatform::Availability() const {
  // SKELETON: Unavailable with the driver's reason when it cannot run here.
  return absl::OkStatus();
}

std::string SkeletonPlatform::MoreDevicesHint() const {
  // SKELETON: how a user gets a second device here (an environment variable),
  // or "" when there is no such knob.
  return "";
}

DeviceDescription SkeletonPlatform::Describe(int ordinal) const {
  // SKELETON: ask the driver: name, vendor, versions, memory, compute units,
  // clock and launch limits (Stream::ThenLaunch checks launches against them).
  DeviceDescription d;
  d.name = "skeleton device";
  d.vendor = "none";
  d.platform_version = "skeleton 0";
  d.driver_version = "n/a";
  d.memory_bytes = 0;
  d.compute_units = 1;
  d.max_threads_per_block = 256;
  d.max_block_dims = Dim3{256, 256, 64};
  d.max_grid_dims = Dim3{65535, 65535, 65535};
  return d;
}

absl::StatusOr<DeviceDescription> SkeletonPlatform::DescriptionForDevice(int ordinal) const {
  RILL_RETURN_IF_ERROR(CheckOrdinal(ordinal));
  return Describe(ordinal);
}

absl::StatusOr<std::unique_ptr<StreamExecutorInterface>>
SkeletonPlatform::CreateExecutorImplementation(const StreamExecutorConfig& config) {
  // SKELETON: open device `config.ordinal` (a context, a queue) and hand it to
  // the executor; a driver error becomes a Status here.
  return std::make_unique<SkeletonExecutor>(Describe(config.ordinal));
}

absl::Status RegisterSkeletonPlatform(PlatformManager& manager) {
  return manager.RegisterPlatform(std::make_unique<SkeletonPlatform>());
}

}  // namespace rill

RILL_REGISTER_PLATFORM(skeleton, rill::RegisterSkeletonPlatform)
