#ifndef RILL_PLATFORM_PLATFORM_H_
#define RILL_PLATFORM_PLATFORM_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/executor/executor_cache.h"
#include "rill/executor/stream_executor.h"
#include "rill/executor/stream_executor_interface.h"
#include "rill/platform/device_description.h"
#include "rill/platform/platform_id.h"

namespace rill {

// One kind of device (host CPU, CUDA, OpenCL): counts and describes its
// devices and hands out one cached StreamExecutor per device. Registered
// with, and owned by, a PlatformManager. A platform that is built but cannot
// run here (no driver, no device, a bad setting) is still registered: it
// reports zero devices and says why through Availability().
//
// A backend subclasses Platform and implements the pure virtuals; the base
// does ordinal checks and executor caching.
//
//   RILL_ASSIGN_OR_RETURN(Platform* p, PlatformManager::Default().PlatformWithName("host"));
//   for (int i = 0; i < p->VisibleDeviceCount(); ++i) {
//     RILL_ASSIGN_OR_RETURN(StreamExecutor* e, p->ExecutorForDevice(i));
//   }
//
// Executors live until the platform is destroyed. Thread-safe.
class Platform {
 public:
  virtual ~Platform();

  virtual PlatformId id() const = 0;
  // Short lower-case name: "host", "cuda", "opencl".
  virtual const std::string& Name() const = 0;
  // Devices usable here; 0 when the platform is unavailable.
  virtual int VisibleDeviceCount() const = 0;
  // OK when the platform can run here; otherwise Unavailable with the reason
  // (e.g. "no CUDA device: cudaErrorInsufficientDriver").
  virtual absl::Status Availability() const { return absl::OkStatus(); }
  // How a user gets more devices of this platform here, for tools and the
  // conformance suite to print when a case needs two: "set
  // RILL_HOST_DEVICES=2". Empty when there is no such knob.
  virtual std::string MoreDevicesHint() const { return ""; }
  // Where the op layer runs an op this platform has no kernel for, with
  // copies of its inputs there and of its outputs back: a device as
  // engine::Context::Parse reads it ("cpu", the engine's CPU context;
  // "host:0"), or empty (the default) for none, so that such an op fails
  // with Unimplemented saying what its kernels need. Each fallback is
  // logged once per op and counted (ops::FallbackCount()); the graph
  // executor places such nodes on this device at Bind and lists them.
  virtual std::string OpFallback() const { return ""; }
  virtual absl::StatusOr<DeviceDescription> DescriptionForDevice(int ordinal) const = 0;

  // The executor of device `ordinal`, created on first use. InvalidArgument
  // for a negative ordinal, NotFound past the last device, Unavailable when
  // the platform has no usable device.
  absl::StatusOr<StreamExecutor*> ExecutorForDevice(int ordinal);
  absl::StatusOr<StreamExecutor*> GetExecutor(const StreamExecutorConfig& config);
  // The executor of device `ordinal` if it was created already; nullptr
  // otherwise (never creates one).
  StreamExecutor* ExistingExecutor(int ordinal) const;

 protected:
  // Checks `ordinal` as ExecutorForDevice documents.
  absl::Status CheckOrdinal(int ordinal) const;
  // Creates the backend of device `config.ordinal` (already checked).
  virtual absl::StatusOr<std::unique_ptr<StreamExecutorInterface>> CreateExecutorImplementation(
      const StreamExecutorConfig& config) = 0;
  // Destroys the cached executors now; for a subclass whose executors need
  // its members, call from its destructor.
  void DestroyExecutors() { cache_.DestroyAll(); }

 private:
  ExecutorCache cache_;
};

}  // namespace rill

#endif  // RILL_PLATFORM_PLATFORM_H_
