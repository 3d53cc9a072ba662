#ifndef RILL_PLATFORM_CUDA_CUDA_PLATFORM_H_
#define RILL_PLATFORM_CUDA_CUDA_PLATFORM_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_id.h"
#include "rill/platform/platform_manager.h"

namespace rill {

extern const PlatformId kCudaPlatformId;

// The CUDA runtime as one Rill platform named "cuda": one executor
// (CudaExecutor) per device cudaGetDeviceCount reports. Device discovery
// runs on first use. Without a driver or a device the platform is still
// registered, with zero devices and the reason in Availability() ("no CUDA
// device: cudaGetDeviceCount: cudaErrorInsufficientDriver (35): CUDA driver
// version is insufficient for CUDA runtime version"); rill-info prints it.
//
// Descriptions carry name, compute capability, SM count, memory, clocks,
// launch limits, and in `extra`: "pci bus id", "driver version",
// "runtime version", "l2 cache", "memory bus width".
//
// Thread-safe.
class CudaPlatform : public Platform {
 public:
  CudaPlatform() = default;
  ~CudaPlatform() override;

  PlatformId id() const override { return kCudaPlatformId; }
  const std::string& Name() const override { return name_; }
  int VisibleDeviceCount() const override;
  absl::Status Availability() const override;
  absl::StatusOr<DeviceDescription> DescriptionForDevice(int ordinal) const override;

 protected:
  absl::StatusOr<std::unique_ptr<StreamExecutorInterface>> CreateExecutorImplementation(
      const StreamExecutorConfig& config) override;

 private:
  void Discover() const;

  const std::string name_ = "cuda";
  mutable std::once_flag discovered_;
  mutable std::vector<DeviceDescription> devices_;  // Written once, in Discover().
  mutable absl::Status availability_;
};

// Registers the CUDA platform with `manager`. Harmless when it is already
// registered.
absl::Status RegisterCudaPlatform(PlatformManager& manager);

}  // namespace rill

#endif  // RILL_PLATFORM_CUDA_CUDA_PLATFORM_H_
