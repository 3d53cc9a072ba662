#ifndef RILL_PLATFORM_OPENCL_OPENCL_PLATFORM_H_
#define RILL_PLATFORM_OPENCL_OPENCL_PLATFORM_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/platform/opencl/opencl_executor.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_id.h"
#include "rill/platform/platform_manager.h"

namespace rill {

extern const PlatformId kOpenClPlatformId;

// OpenCL as one Rill platform named "opencl": its devices are all devices
// of all OpenCL platforms the ICD loader lists, in (platform, device) order
// -- on a CPU-only machine with PoCL, one "pthread-..." CPU device. Device
// discovery runs on first use. Without an ICD or a device the platform is
// still registered, with zero devices and the reason in Availability()
// ("clGetPlatformIDs: CL_PLATFORM_NOT_FOUND_KHR (-1001)").
//
// Each device gets an OpenClExecutor with its own cl_context. The
// description carries name, vendor, OpenCL version, driver version, global
// memory, compute units, clock, launch limits, and in `extra`: "device
// type", "opencl c", "platform", "max alloc", "base align".
//
//   Platform* cl = PlatformManager::Default().PlatformWithName("opencl").value();
//   if (cl->VisibleDeviceCount() > 0) { StreamExecutor* e = cl->ExecutorForDevice(0).value(); }
//
// Thread-safe.
class OpenClPlatform : public Platform {
 public:
  OpenClPlatform() = default;
  ~OpenClPlatform() override;

  PlatformId id() const override { return kOpenClPlatformId; }
  const std::string& Name() const override { return name_; }
  int VisibleDeviceCount() const override;
  absl::Status Availability() const override;
  std::string MoreDevicesHint() const override {
    return "with PoCL, set POCL_DEVICES=\"pthread basic\" (two CPU devices)";
  }
  absl::StatusOr<DeviceDescription> DescriptionForDevice(int ordinal) const override;

 protected:
  absl::StatusOr<std::unique_ptr<StreamExecutorInterface>> CreateExecutorImplementation(
      const StreamExecutorConfig& config) override;

 private:
  // Lists the devices once.
  void Discover() const;

  const std::string name_ = "opencl";
  mutable std::once_flag discovered_;
  mutable std::vector<OpenClDeviceInfo> devices_;  // Written once, in Discover().
  mutable absl::Status availability_;
  // The streams of all its devices: a release waits for their queued work.
  const std::shared_ptr<OpenClStreamRegistry> streams_ = std::make_shared<OpenClStreamRegistry>();
};

// Registers the OpenCL platform with `manager`. Harmless when it is already
// registered.
absl::Status RegisterOpenClPlatform(PlatformManager& manager);

}  // namespace rill

#endif  // RILL_PLATFORM_OPENCL_OPENCL_PLATFORM_H_
