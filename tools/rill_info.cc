// rill-info: lists every platform, its devices and their descriptions.

#include <cstdio>
#include <string>

#include "rill.h"

int main() {
  using rill::Platform;
  rill::PlatformManager& manager = rill::PlatformManager::Default();
  const auto platforms = manager.AllPlatforms();
  std::printf("Rill platforms: %zu registered\n", platforms.size());
  for (Platform* platform : platforms) {
    const absl::Status available = platform->Availability();
    std::printf("\n== %s: %s\n", platform->Name().c_str(),
                available.ok() ? (std::to_string(platform->VisibleDeviceCount()) + " device(s)").c_str()
                               : ("unavailable: " + std::string(available.message())).c_str());
    for (int i = 0; i < platform->VisibleDeviceCount(); ++i) {
      absl::StatusOr<rill::DeviceDescription> d = platform->DescriptionForDevice(i);
      if (!d.ok()) {
        std::printf("  device %d: %s\n", i, d.status().ToString().c_str());
        continue;
      }
      std::printf("  device %d\n", i);
      std::string text = d->ToString();
      size_t start = 0;
      while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::printf("    %s\n", text.substr(start, end - start).c_str());
        start = end + 1;
      }
    }
  }
  if (manager.AvailablePlatforms().empty()) {
    std::printf("\nno platform has a usable device\n");
  }
  return 0;
}
