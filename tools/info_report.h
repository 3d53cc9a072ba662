#ifndef RILL_TOOLS_INFO_REPORT_H_
#define RILL_TOOLS_INFO_REPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rill/platform/device_description.h"
#include "rill/platform/platform_manager.h"

namespace rill::tools {

// What rill-info reports, gathered once and then printed as text or JSON.
struct InfoReport {
  struct Feature {
    std::string name;  // FeatureName(): "host callbacks", "timers", ...
    bool supported = false;
    std::string reason;  // Why not, when not supported.
  };
  struct Device {
    int ordinal = 0;
    std::string id;     // "host:0"
    std::string error;  // The description or executor could not be had.
    DeviceDescription description;
    std::vector<Feature> features;
    std::map<std::string, std::string>
        plugins;  // Kind -> the chain it uses ("xnnpack,onednn"), or "error: ...".
  };
  struct Plugin {
    std::string kind;  // "blas"
    std::string name;  // "openblas"
    bool is_default = false;
    std::string version;        // PluginInterface::Version(), "" when unknown.
    std::string version_error;  // Why there is no version (no device to load it on, ...).
  };
  // Devices that are not separate hardware: host virtual devices, an OpenCL
  // CPU device on the host's cores.
  struct SharedHardware {
    std::vector<std::string> devices;  // "host:0", "host:1"
    std::string what;                  // "cores and memory", "cores"
    int cores = 0;
    int64_t memory_bytes = 0;  // 0 when memory is not shared.
    std::string reason;        // "virtual devices of one CPU"
  };
  struct Platform {
    std::string name;
    bool available = false;
    std::string reason;  // Why not available.
    std::vector<Device> devices;
    std::vector<Plugin> plugins;
  };
  struct Library {
    std::string name;     // "openblas", "abseil", "opencl platform"
    std::string version;  // "OpenBLAS 0.3.21 ...", "LTS 20220623.1"
    std::string where;    // "host blas plugin", "opencl:0 device description"
  };

  std::string rill_version;
  std::string plugin_abi;  // "1.1 (loads 1.0 and later minors)"
  std::vector<Platform> platforms;
  // Run-time plugins (rill/abi/rill_plugin.h), loaded or skipped.
  std::vector<PlatformManager::PluginInfo> runtime_plugins;
  std::vector<Library> libraries;
  std::vector<SharedHardware> shared;
};

// Asks every platform of `manager` for its devices, their executors'
// features and plugins, and every registered plugin for its version (by
// creating it on the platform's first usable device).
InfoReport CollectInfo(PlatformManager& manager);

// "1023 B", "512.0 KiB", "15.6 GiB".
std::string HumanBytes(int64_t bytes);

}  // namespace rill::tools

#endif  // RILL_TOOLS_INFO_REPORT_H_
