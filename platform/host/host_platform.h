#ifndef RILL_PLATFORM_HOST_HOST_PLATFORM_H_
#define RILL_PLATFORM_HOST_HOST_PLATFORM_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/platform/host/host_stream.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_id.h"
#include "rill/platform/platform_manager.h"

namespace rill {

extern const PlatformId kHostPlatformId;

// How the host platform is set up.
struct HostPlatformOptions {
  std::string name = "host";
  PlatformId id = kHostPlatformId;  // Another id makes a distinct platform (tests).
  int device_count = 1;             // Virtual devices, each with its own memory budget.
  int64_t memory_limit_bytes = 0;   // Per device; 0 means the machine's physical memory.
};

// The options from the environment: RILL_HOST_DEVICES (a count >= 1,
// default 1) and RILL_HOST_MEMORY_LIMIT (bytes per device, with an optional
// K, M or G suffix; default: physical memory). InvalidArgument naming the
// variable and its value when one does not parse.
absl::StatusOr<HostPlatformOptions> HostPlatformOptionsFromEnv();

// The host CPU as a platform of `device_count` virtual devices. Each device
// is a StreamExecutor whose memory is aligned host memory (counted against a
// per-device limit, so running out is a testable ResourceExhausted), whose
// streams are real asynchronous in-order queues each on its own thread, and
// whose kernels are C++ functions run over the launch grid (blocks in
// parallel on a process-wide pool when the grid is large enough to pay).
// Thread-safe.
class HostPlatform : public Platform {
 public:
  explicit HostPlatform(HostPlatformOptions options);
  // A platform that reports zero devices and `why` as its Availability().
  HostPlatform(HostPlatformOptions options, absl::Status why);
  ~HostPlatform() override;

  PlatformId id() const override { return options_.id; }
  const std::string& Name() const override { return options_.name; }
  int VisibleDeviceCount() const override;
  absl::Status Availability() const override { return availability_; }
  std::string MoreDevicesHint() const override;
  absl::StatusOr<DeviceDescription> DescriptionForDevice(int ordinal) const override;

 protected:
  absl::StatusOr<std::unique_ptr<StreamExecutorInterface>> CreateExecutorImplementation(
      const StreamExecutorConfig& config) override;

 private:
  DeviceDescription Describe(int ordinal) const;

  HostPlatformOptions options_;
  absl::Status availability_;
  // The streams of all its devices: a free waits for their queued work.
  const std::shared_ptr<HostStreamRegistry> streams_ = std::make_shared<HostStreamRegistry>();
};

// Registers the host platform, configured from the environment, with
// `manager`, and the host library plugins for it with
// PluginRegistry::Default() (RegisterHostLibraryPlugins). Harmless when it
// is already registered. A bad environment setting registers a platform
// with no devices that says why.
absl::Status RegisterHostPlatform(PlatformManager& manager);

}  // namespace rill

#endif  // RILL_PLATFORM_HOST_HOST_PLATFORM_H_
