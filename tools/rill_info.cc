// rill-info: lists every platform, its devices and their descriptions.

#include <cstdio>
#include <string>

#include "plugins/plugin_registry.h"
#include "rill.h"

namespace {

// Per platform and kind: the registered plugins, the default, and what each
// device's executor uses.
void PrintPlugins(rill::PlatformManager& manager) {
  const auto entries = rill::PluginRegistry::Default().List();
  std::printf("\n== plugins\n");
  for (rill::Platform* platform : manager.AllPlatforms()) {
    for (rill::PluginKind kind : rill::kAllPluginKinds) {
      std::string names;
      for (const auto& e : entries) {
        if (e.platform != platform->id() || e.kind != kind) continue;
        names += (names.empty() ? "" : ", ") + e.name + (e.is_default ? " (default)" : "");
      }
      if (names.empty()) names = "none";
      std::printf("  %-8s %-5s %s", platform->Name().c_str(), rill::PluginKindName(kind), names.c_str());
      for (int i = 0; i < platform->VisibleDeviceCount(); ++i) {
        absl::StatusOr<rill::StreamExecutor*> executor = platform->ExecutorForDevice(i);
        if (!executor.ok()) continue;
        absl::StatusOr<std::string> selected = (*executor)->PluginName(kind);
        if (selected.ok() && !selected->empty()) std::printf("; device %d uses %s", i, selected->c_str());
        if (!selected.ok()) std::printf("; device %d: %s", i, std::string(selected.status().message()).c_str());
      }
      std::printf("\n");
    }
  }
}

}  // namespace

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
  PrintPlugins(manager);
  if (manager.AvailablePlatforms().empty()) {
    std::printf("\nno platform has a usable device\n");
  }
  return 0;
}
