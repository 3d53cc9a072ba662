#ifndef RILL_PLATFORM_DEVICE_DESCRIPTION_H_
#define RILL_PLATFORM_DEVICE_DESCRIPTION_H_

#include <cstdint>
#include <map>
#include <string>

#include "rill/stream/launch_dim.h"

namespace rill {

// What a device is: filled in by its backend, printed by rill-info, and read
// by code that sizes work to the device. Backend-specific facts (a CUDA
// compute capability, an OpenCL device type) go into `extra` under short
// lower-case keys. A plain value type; thread-compatible.
struct DeviceDescription {
  std::string name;  // "Host virtual device 0", "NVIDIA H100 80GB HBM3"
  std::string vendor;
  std::string platform_version;  // e.g. "CUDA runtime 13.0"
  std::string driver_version;
  int64_t memory_bytes = 0;  // Device memory usable by Rill (the limit).
  int compute_units = 0;     // Cores, SMs, OpenCL compute units.
  int64_t clock_khz = 0;     // 0 when unknown.
  // Launch limits, checked by Stream::ThenLaunch.
  int64_t max_threads_per_block = 1024;
  Dim3 max_block_dims{1024, 1024, 64};
  Dim3 max_grid_dims{2147483647, 65535, 65535};
  std::map<std::string, std::string> extra;

  // One "key: value" line per field, for people.
  std::string ToString() const;
};

}  // namespace rill

#endif  // RILL_PLATFORM_DEVICE_DESCRIPTION_H_
