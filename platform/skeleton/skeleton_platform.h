#ifndef RILL_PLATFORM_SKELETON_SKELETON_PLATFORM_H_
#define RILL_PLATFORM_SKELETON_SKELETON_PLATFORM_H_

// >>> template only (scripts/new_backend.sh leaves this out of copies)
// rill:internal -- the skeleton's headers are not installed with Rill's package.
// <<< template only

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_id.h"
#include "rill/platform/platform_manager.h"

namespace rill {

extern const PlatformId kSkeletonPlatformId;

// The skeleton platform: one device whose every operation is Unimplemented.
// A new backend starts as a copy of this folder (scripts/new_backend.sh) and
// fills in the `// SKELETON:` markers; README.md walks through them in
// order. Owned by the PlatformManager it is registered with; it owns its
// executors. Thread-safe.
//
//   RILL_ASSIGN_OR_RETURN(Platform* p, PlatformManager::Default().PlatformWithName("skeleton"));
//   RILL_ASSIGN_OR_RETURN(StreamExecutor* e, p->ExecutorForDevice(0));
//   e->CreateStream();  // Unimplemented: "skeleton: streams are not implemented"
class SkeletonPlatform : public Platform {
 public:
  SkeletonPlatform();
  ~SkeletonPlatform() override;

  PlatformId id() const override { return kSkeletonPlatformId; }
  const std::string& Name() const override { return name_; }
  int VisibleDeviceCount() const override;
  absl::Status Availability() const override;
  std::string MoreDevicesHint() const override;
  absl::StatusOr<DeviceDescription> DescriptionForDevice(int ordinal) const override;

 protected:
  absl::StatusOr<std::unique_ptr<StreamExecutorInterface>> CreateExecutorImplementation(
      const StreamExecutorConfig& config) override;

 private:
  DeviceDescription Describe(int ordinal) const;

  const std::string name_ = "skeleton";
};

// Registers the skeleton platform with `manager`. Harmless when it is
// already registered.
absl::Status RegisterSkeletonPlatform(PlatformManager& manager);

}  // namespace rill

#endif  // RILL_PLATFORM_SKELETON_SKELETON_PLATFORM_H_
