#include "tools/info_report.h"

#include <string_view>
#include <utility>

#include "absl/base/config.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "rill/abi/rill_plugin.h"
#include "rill/executor/stream_executor.h"
#include "rill/plugins/plugin_registry.h"
#include "tools/tool_flags.h"

namespace rill::tools {
namespace {

// Every declared Feature: FeatureName() names each and says "unknown
// feature" past the last, so a new one shows up here without an edit.
std::vector<::rill::Feature> AllFeatures() {
  std::vector<::rill::Feature> features;
  for (int i = 0; i < 64; ++i) {
    const auto feature = static_cast<::rill::Feature>(i);
    if (std::string_view(FeatureName(feature)) == "unknown feature") break;
    features.push_back(feature);
  }
  return features;
}

InfoReport::Device CollectDevice(Platform* platform, int ordinal) {
  InfoReport::Device device;
  device.ordinal = ordinal;
  device.id = absl::StrCat(platform->Name(), ":", ordinal);
  absl::StatusOr<DeviceDescription> description = platform->DescriptionForDevice(ordinal);
  if (!description.ok()) {
    device.error = description.status().ToString();
    return device;
  }
  device.description = *std::move(description);
  absl::StatusOr<StreamExecutor*> executor = platform->ExecutorForDevice(ordinal);
  if (!executor.ok()) {
    device.error = executor.status().ToString();
    return device;
  }
  for (::rill::Feature feature : AllFeatures()) {
    const absl::Status supported = (*executor)->Supports(feature);
    device.features.push_back(
        {FeatureName(feature), supported.ok(), std::string(supported.message())});
  }
  for (PluginKind kind : kAllPluginKinds) {
    // The chain in force: "onednn", or "xnnpack,onednn" (fallbacks after the first).
    absl::StatusOr<std::vector<std::string>> chain = (*executor)->PluginChain(kind);
    if (!chain.ok()) {
      device.plugins[PluginKindName(kind)] = absl::StrCat("error: ", chain.status().message());
    } else if (!chain->empty()) {
      device.plugins[PluginKindName(kind)] = absl::StrJoin(*chain, ",");
    }
  }
  return device;
}

// The plugin's version, through an instance on `executor`: the executor's
// own when it uses that plugin, else a fresh one.
void FillVersion(StreamExecutor* executor, PluginKind kind, InfoReport::Plugin& plugin) {
  absl::StatusOr<std::string> selected = executor->PluginName(kind);
  if (selected.ok() && *selected == plugin.name) {
    absl::StatusOr<PluginInterface*> instance = executor->GetPlugin(kind);
    if (instance.ok()) {
      plugin.version = (*instance)->Version();
      return;
    }
    plugin.version_error = std::string(instance.status().message());
    return;
  }
  absl::StatusOr<std::unique_ptr<PluginInterface>> instance =
      PluginRegistry::Default().Create(kind, plugin.name, executor);
  if (instance.ok()) {
    plugin.version = (*instance)->Version();
  } else {
    plugin.version_error = std::string(instance.status().message());
  }
}

std::vector<InfoReport::Plugin> CollectPlugins(Platform* platform) {
  StreamExecutor* executor = nullptr;  // The first usable device's.
  for (int i = 0; i < platform->VisibleDeviceCount() && executor == nullptr; ++i) {
    if (absl::StatusOr<StreamExecutor*> e = platform->ExecutorForDevice(i); e.ok()) executor = *e;
  }
  std::vector<InfoReport::Plugin> plugins;
  const std::vector<PluginRegistry::Entry> entries = PluginRegistry::Default().List();
  for (PluginKind kind : kAllPluginKinds) {
    for (const PluginRegistry::Entry& e : entries) {
      if (e.platform != platform->id() || e.kind != kind) continue;
      InfoReport::Plugin plugin{PluginKindName(kind), e.name, e.is_default, "", ""};
      if (executor != nullptr) {
        FillVersion(executor, kind, plugin);
      } else {
        plugin.version_error =
            absl::StrCat("not loaded: no usable ", platform->Name(), " device here");
      }
      if (plugin.version.empty() && plugin.version_error.empty())
        plugin.version_error = "the plugin does not say";
      plugins.push_back(std::move(plugin));
    }
  }
  return plugins;
}

void CollectLibraries(InfoReport& report) {
  for (const InfoReport::Platform& p : report.platforms) {
    for (const InfoReport::Plugin& plugin : p.plugins) {
      if (plugin.version.empty()) continue;
      report.libraries.push_back(
          {plugin.name, plugin.version, absl::StrCat(p.name, " ", plugin.kind, " plugin")});
    }
  }
  // Device runtimes (the OpenCL platform, e.g. PoCL; the CUDA runtime), once per version.
  for (const InfoReport::Platform& p : report.platforms) {
    if (p.name == "host") continue;
    for (const InfoReport::Device& d : p.devices) {
      const DeviceDescription& desc = d.description;
      if (desc.platform_version.empty()) continue;
      std::string version = desc.platform_version;
      if (!desc.driver_version.empty() && desc.driver_version != "n/a") {
        absl::StrAppend(&version, ", driver ", desc.driver_version);
      }
      bool seen = false;
      for (InfoReport::Library& l : report.libraries) {
        if (l.name == p.name + " runtime" && l.version == version) {
          absl::StrAppend(&l.where, ", ", d.id);
          seen = true;
        }
      }
      if (!seen) report.libraries.push_back({p.name + " runtime", version, d.id});
    }
  }
  report.libraries.push_back(
      {"abseil", absl::StrCat("LTS ", ABSL_LTS_RELEASE_VERSION, ".", ABSL_LTS_RELEASE_PATCH_LEVEL),
       "build"});
}

// Host virtual devices are one CPU; an OpenCL CPU device runs on its cores too.
void CollectShared(InfoReport& report) {
  std::vector<std::string> host_ids;
  for (const InfoReport::Platform& p : report.platforms) {
    if (p.name != "host" || p.devices.empty()) continue;
    for (const InfoReport::Device& d : p.devices) host_ids.push_back(d.id);
    const DeviceDescription& first = p.devices.front().description;
    if (p.devices.size() > 1) {
      report.shared.push_back({host_ids, "cores and memory", first.compute_units,
                               first.memory_bytes,
                               "virtual devices: RILL_HOST_DEVICES splits one CPU"});
    }
  }
  if (host_ids.empty()) return;
  for (const InfoReport::Platform& p : report.platforms) {
    if (p.name == "host") continue;
    for (const InfoReport::Device& d : p.devices) {
      auto type = d.description.extra.find("device type");
      if (type == d.description.extra.end() || type->second != "CPU") continue;
      std::vector<std::string> ids = {d.id};
      ids.insert(ids.end(), host_ids.begin(), host_ids.end());
      report.shared.push_back({ids, "cores", d.description.compute_units, 0,
                               "an OpenCL CPU device runs on the host CPU"});
    }
  }
}

}  // namespace

std::string HumanBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

InfoReport CollectInfo(PlatformManager& manager) {
  InfoReport report;
  report.rill_version = RillVersion();
  report.plugin_abi =
      absl::StrCat(RILL_PLUGIN_ABI_MAJOR, ".", RILL_PLUGIN_ABI_MINOR, " (loads ",
                   RILL_PLUGIN_ABI_MAJOR, ".", RILL_PLUGIN_ABI_MIN_MINOR, " and later minors)");
  report.runtime_plugins = manager.Plugins();
  for (Platform* platform : manager.AllPlatforms()) {
    InfoReport::Platform p;
    p.name = platform->Name();
    const absl::Status available = platform->Availability();
    p.available = available.ok();
    p.reason = std::string(available.message());
    for (int i = 0; i < platform->VisibleDeviceCount(); ++i)
      p.devices.push_back(CollectDevice(platform, i));
    p.plugins = CollectPlugins(platform);
    report.platforms.push_back(std::move(p));
  }
  CollectLibraries(report);
  CollectShared(report);
  return report;
}

}  // namespace rill::tools
