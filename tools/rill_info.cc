// rill-info: lists every platform, its devices, their descriptions and
// features, the plugins and library versions, and which devices share
// hardware; `--json` gives the same as one JSON document.

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "rill/plugins/dnn/algorithm_selector.h"
#include "rill/rill.h"
#include "tools/info_report.h"
#include "tools/json_writer.h"
#include "tools/tool_flags.h"

ABSL_FLAG(bool, json, false, "print one JSON document (sizes in bytes) instead of the text report");

namespace rill::tools {
namespace {

// "0-1" for consecutive ordinals of one platform, else "host:0, opencl:0".
std::string DeviceList(const std::vector<std::string>& ids) {
  const std::string platform = ids.front().substr(0, ids.front().find(':'));
  std::vector<int> ordinals;
  for (const std::string& id : ids) {
    int ordinal = 0;
    if (id.substr(0, id.find(':')) != platform ||
        !absl::SimpleAtoi(id.substr(id.find(':') + 1), &ordinal) ||
        ordinal != static_cast<int>(ordinals.size())) {
      return absl::StrJoin(ids, ", ");
    }
    ordinals.push_back(ordinal);
  }
  return absl::StrCat("devices 0-", ordinals.size() - 1);
}

// "2147483648 bytes" -> "2.0 GiB"; other text unchanged.
std::string HumanValue(const std::string& value) {
  absl::string_view number = value;
  int64_t bytes = 0;
  if (absl::ConsumeSuffix(&number, " bytes") && absl::SimpleAtoi(number, &bytes) && bytes >= 1024) {
    return HumanBytes(bytes);
  }
  return value;
}

void PrintDevice(const InfoReport::Device& d) {
  if (!d.error.empty() && d.description.name.empty()) {
    std::printf("  device %d: %s\n", d.ordinal, d.error.c_str());
    return;
  }
  const DeviceDescription& desc = d.description;
  std::printf("  device %d: %s\n", d.ordinal, desc.name.c_str());
  std::printf("    vendor: %s\n    platform version: %s\n    driver version: %s\n",
              desc.vendor.c_str(), desc.platform_version.c_str(), desc.driver_version.c_str());
  std::printf("    memory: %s\n    compute units: %d\n", HumanBytes(desc.memory_bytes).c_str(),
              desc.compute_units);
  std::printf("    clock: %s\n", desc.clock_khz > 0
                                     ? absl::StrFormat("%.2f GHz", desc.clock_khz / 1e6).c_str()
                                     : "unknown");
  std::printf("    max threads per block: %lld\n    max block dims: %s\n    max grid dims: %s\n",
              static_cast<long long>(desc.max_threads_per_block),
              desc.max_block_dims.ToString().c_str(), desc.max_grid_dims.ToString().c_str());
  for (const auto& [key, value] : desc.extra)
    std::printf("    %s: %s\n", key.c_str(), HumanValue(value).c_str());
  std::vector<std::string> supported, lacking;
  for (const InfoReport::Feature& f : d.features) {
    if (f.supported) {
      supported.push_back(f.name);
    } else {
      lacking.push_back(absl::StrCat(f.name, " (", f.reason, ")"));
    }
  }
  if (!d.features.empty())
    std::printf("    features: %s\n", absl::StrJoin(supported, ", ").c_str());
  if (!lacking.empty()) std::printf("    lacks: %s\n", absl::StrJoin(lacking, "; ").c_str());
  if (!d.error.empty()) std::printf("    error: %s\n", d.error.c_str());
}

void PrintText(const InfoReport& r) {
  std::printf("Rill %s: %zu platform(s) registered\n", r.rill_version.c_str(), r.platforms.size());
  for (const InfoReport::Platform& p : r.platforms) {
    std::printf("\n== %s: %s\n", p.name.c_str(),
                p.available ? absl::StrCat(p.devices.size(), " device(s)").c_str()
                            : absl::StrCat("unavailable: ", p.reason).c_str());
    for (const InfoReport::SharedHardware& s : r.shared) {
      if (s.devices.front().substr(0, s.devices.front().find(':')) != p.name) continue;
      if (s.memory_bytes > 0) {
        std::printf("  %s share the same %d cores and %s of memory (%s)\n",
                    DeviceList(s.devices).c_str(), s.cores, HumanBytes(s.memory_bytes).c_str(),
                    s.reason.c_str());
      } else {  // One device on the cores of others.
        const std::vector<std::string> others(s.devices.begin() + 1, s.devices.end());
        std::printf("  device %s runs on the same %d cores as %s (%s)\n",
                    s.devices.front().substr(s.devices.front().find(':') + 1).c_str(), s.cores,
                    absl::StrJoin(others, ", ").c_str(), s.reason.c_str());
      }
    }
    for (const InfoReport::Device& d : p.devices) PrintDevice(d);
  }

  std::printf("\n== plugins\n");
  for (const InfoReport::Platform& p : r.platforms) {
    for (PluginKind kind : kAllPluginKinds) {
      std::vector<std::string> names;
      for (const InfoReport::Plugin& plugin : p.plugins) {
        if (plugin.kind == PluginKindName(kind))
          names.push_back(plugin.name + (plugin.is_default ? " (default)" : ""));
      }
      std::string line = names.empty() ? "none" : absl::StrJoin(names, ", ");
      for (const InfoReport::Device& d : p.devices) {
        auto it = d.plugins.find(PluginKindName(kind));
        if (it != d.plugins.end())
          absl::StrAppend(&line, "; device ", d.ordinal, " uses ", it->second);
      }
      std::printf("  %-8s %-11s %s\n", p.name.c_str(), PluginKindName(kind), line.c_str());
    }
  }

  {
    const AlgorithmSelector::Options dnn = AlgorithmSelector::Default().options();
    std::printf(
        "  dnn algorithm cache: %s; deterministic %s; tuning budget %s per shape\n",
        dnn.cache_path.empty() ? "memory only (RILL_DNN_CACHE unset)" : dnn.cache_path.c_str(),
        dnn.deterministic ? "on" : "off", absl::FormatDuration(dnn.budget).c_str());
  }

  std::printf("\n== run-time plugins (ABI %s; RILL_PLUGIN_PATH)\n", r.plugin_abi.c_str());
  if (r.runtime_plugins.empty()) std::printf("  none\n");
  for (const PlatformManager::PluginInfo& p : r.runtime_plugins) {
    if (p.status.ok()) {
      std::printf("  %s: %s %s, ABI %u.%u, provides %s\n", p.path.c_str(), p.name.c_str(),
                  p.version.c_str(), p.abi_major, p.abi_minor,
                  absl::StrJoin(p.provides, ", ").c_str());
    } else {
      // The reason without the "plugin <path>: " it starts with.
      const std::string why(absl::StripPrefix(p.status.message(), "plugin " + p.path + ": "));
      std::printf("  %s: skipped: %s\n", p.path.c_str(), why.c_str());
    }
  }

  std::printf("\n== libraries\n");
  for (const InfoReport::Library& l : r.libraries) {
    std::printf("  %-16s %s (%s)\n", l.name.c_str(), l.version.c_str(), l.where.c_str());
  }
  for (const InfoReport::Platform& p : r.platforms) {
    for (const InfoReport::Plugin& plugin : p.plugins) {
      if (!plugin.version.empty()) continue;
      std::printf("  %-16s version unknown: %s (%s %s plugin)\n", plugin.name.c_str(),
                  plugin.version_error.c_str(), p.name.c_str(), plugin.kind.c_str());
    }
  }
  bool any = false;
  for (const InfoReport::Platform& p : r.platforms)
    any = any || (p.available && !p.devices.empty());
  if (!any) std::printf("\nno platform has a usable device\n");
}

void WriteDevice(JsonWriter& j, const InfoReport::Device& d) {
  const DeviceDescription& desc = d.description;
  j.BeginObject();
  j.Member("ordinal", d.ordinal);
  j.Member("id", d.id);
  if (!d.error.empty()) j.Member("error", d.error);
  j.Member("name", desc.name);
  j.Member("vendor", desc.vendor);
  j.Member("platform_version", desc.platform_version);
  j.Member("driver_version", desc.driver_version);
  j.Member("memory_bytes", desc.memory_bytes);
  j.Member("compute_units", desc.compute_units);
  j.Member("clock_khz", desc.clock_khz);
  j.Member("max_threads_per_block", desc.max_threads_per_block);
  for (const auto& [key, dims] :
       {std::pair{"max_block_dims", desc.max_block_dims}, {"max_grid_dims", desc.max_grid_dims}}) {
    j.Key(key);
    j.BeginArray();
    j.Int(dims.x);
    j.Int(dims.y);
    j.Int(dims.z);
    j.EndArray();
  }
  j.Key("extra");
  j.BeginObject();
  for (const auto& [key, value] : desc.extra) j.Member(key, value);
  j.EndObject();
  j.Key("features");
  j.BeginArray();
  for (const InfoReport::Feature& f : d.features) {
    j.BeginObject();
    j.Member("name", f.name);
    j.Member("supported", f.supported);
    if (!f.supported) j.Member("reason", f.reason);
    j.EndObject();
  }
  j.EndArray();
  j.Key("plugins");
  j.BeginObject();
  for (const auto& [kind, name] : d.plugins) j.Member(kind, name);
  j.EndObject();
  j.EndObject();
}

void WritePlatform(JsonWriter& j, const InfoReport::Platform& p) {
  j.BeginObject();
  j.Member("name", p.name);
  j.Member("available", p.available);
  if (!p.available) j.Member("reason", p.reason);
  j.Member("device_count", static_cast<int64_t>(p.devices.size()));
  j.Key("devices");
  j.BeginArray();
  for (const InfoReport::Device& d : p.devices) WriteDevice(j, d);
  j.EndArray();
  j.Key("plugins");
  j.BeginArray();
  for (const InfoReport::Plugin& plugin : p.plugins) {
    j.BeginObject();
    j.Member("kind", plugin.kind);
    j.Member("name", plugin.name);
    j.Member("default", plugin.is_default);
    std::vector<int> selected_by;
    for (const InfoReport::Device& d : p.devices) {
      auto it = d.plugins.find(plugin.kind);
      if (it == d.plugins.end()) continue;
      const std::vector<std::string> chain = absl::StrSplit(it->second, ',');
      if (std::find(chain.begin(), chain.end(), plugin.name) != chain.end())
        selected_by.push_back(d.ordinal);
    }
    j.Key("selected_by_devices");
    j.BeginArray();
    for (int ordinal : selected_by) j.Int(ordinal);
    j.EndArray();
    j.Key("version");
    if (plugin.version.empty()) {
      j.Null();
      j.Member("version_error", plugin.version_error);
    } else {
      j.String(plugin.version);
    }
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

void PrintJson(const InfoReport& r) {
  JsonWriter j;
  j.BeginObject();
  j.Member("rill_version", r.rill_version);
  j.Key("platforms");
  j.BeginArray();
  for (const InfoReport::Platform& p : r.platforms) WritePlatform(j, p);
  j.EndArray();
  {
    const AlgorithmSelector::Options dnn = AlgorithmSelector::Default().options();
    j.Key("dnn_algorithm_selection");
    j.BeginObject();
    j.Member("cache_path", dnn.cache_path);
    j.Member("deterministic", dnn.deterministic);
    j.Member("budget_ms", static_cast<int64_t>(absl::ToInt64Milliseconds(dnn.budget)));
    j.EndObject();
  }
  j.Member("plugin_abi", r.plugin_abi);
  j.Key("runtime_plugins");
  j.BeginArray();
  for (const PlatformManager::PluginInfo& p : r.runtime_plugins) {
    j.BeginObject();
    j.Member("path", p.path);
    j.Member("loaded", p.status.ok());
    if (!p.status.ok()) j.Member("reason", std::string(p.status.message()));
    j.Member("name", p.name);
    j.Member("version", p.version);
    j.Member("abi", absl::StrCat(p.abi_major, ".", p.abi_minor));
    j.Key("provides");
    j.BeginArray();
    for (const std::string& what : p.provides) j.String(what);
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.Key("libraries");
  j.BeginArray();
  for (const InfoReport::Library& l : r.libraries) {
    j.BeginObject();
    j.Member("name", l.name);
    j.Member("version", l.version);
    j.Member("where", l.where);
    j.EndObject();
  }
  j.EndArray();
  j.Key("shared_hardware");
  j.BeginArray();
  for (const InfoReport::SharedHardware& s : r.shared) {
    j.BeginObject();
    j.Key("devices");
    j.BeginArray();
    for (const std::string& id : s.devices) j.String(id);
    j.EndArray();
    j.Member("shares", s.what);
    j.Member("cores", s.cores);
    if (s.memory_bytes > 0) j.Member("memory_bytes", s.memory_bytes);
    j.Member("reason", s.reason);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  std::fputs(j.str().c_str(), stdout);
}

}  // namespace
}  // namespace rill::tools

int main(int argc, char** argv) {
  rill::tools::CheckEnvironmentOrExit("rill-info");
  rill::tools::ParseToolFlags(
      argc, argv,
      {.name = "rill-info",
       .usage =
           "rill-info: every Rill platform, its devices (description, features), the plugins and "
           "library\n"
           "versions, and which devices share hardware. Exits 0 on a machine with no accelerator.\n"
           "Usage: rill-info [--json]",
       .flag_files = {"tools/rill_info.cc"},
       .other_modes_hint = "",
       .allow_positional = false});
  const rill::tools::InfoReport report = rill::tools::CollectInfo(rill::PlatformManager::Default());
  if (absl::GetFlag(FLAGS_json)) {
    rill::tools::PrintJson(report);
  } else {
    rill::tools::PrintText(report);
  }
  return 0;
}
