#include "rill/platform/platform_manager.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "rill/abi/loaded_plugin.h"
#include "rill/base/logging.h"
#include "rill/base/status_macros.h"

namespace rill {

PlatformManager::PlatformManager() = default;

PlatformManager::~PlatformManager() {
  // Newest first: a later platform may depend on an earlier one.
  MutexLock lock(&mu_);
  while (!platforms_.empty()) platforms_.pop_back();
}

PlatformManager& PlatformManager::Default() {
  static PlatformManager* manager = [] {
    auto* m = new PlatformManager();  // Never destroyed.
    m->discover_ = true;
    return m;
  }();
  return *manager;
}

namespace {
std::atomic<bool> plugin_discovery{true};
}  // namespace

void internal::SetPluginDiscovery(bool on) { plugin_discovery.store(on); }

void PlatformManager::DiscoverPlugins() const {
  if (!discover_ || !plugin_discovery.load()) return;
  absl::call_once(discover_once_, [this] {
    auto* self = const_cast<PlatformManager*>(this);
    if (const char* path = std::getenv("RILL_PLUGIN_PATH"); path && *path) {
      self->LoadPluginsFrom(path);
    }
    // Then the install's plugin folder, and the one beside the program
    // (<bin>/../lib/rill/plugins: an installed program's, or a tool's in
    // the build tree), each once.
    std::vector<std::string> folders;
#ifdef RILL_DEFAULT_PLUGIN_DIR
    folders.push_back(RILL_DEFAULT_PLUGIN_DIR);
#endif
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      folders.push_back((exe.parent_path() / ".." / "lib" / "rill" / "plugins").string());
#ifdef RILL_PLUGIN_LIBDIR
      folders.push_back(
          (exe.parent_path() / ".." / RILL_PLUGIN_LIBDIR / "rill" / "plugins").string());
#endif
    }
    std::vector<std::string> seen;
    for (const std::string& folder : folders) {
      if (!std::filesystem::is_directory(folder, ec)) continue;
      const std::string canonical = std::filesystem::canonical(folder, ec).string();
      if (ec || std::find(seen.begin(), seen.end(), canonical) != seen.end()) continue;
      seen.push_back(canonical);
      self->LoadPluginsFrom(canonical);
    }
  });
}

absl::Status PlatformManager::LoadPlugin(std::string_view path_view) {
  const std::string path(path_view);
  PluginInfo info;
  info.path = path;
  MutexLock load(&load_mu_);
  absl::Status status = [&]() -> absl::Status {
    // The process opens and initializes a shared object once: a second
    // path to it, or a second manager, gets the same plugin.
    RILL_ASSIGN_OR_RETURN(std::shared_ptr<abi::LoadedPlugin> plugin, abi::LoadedPlugin::Open(path));
    info.name = plugin->name();
    info.version = plugin->version();
    info.abi_major = plugin->abi_major();
    info.abi_minor = plugin->abi_minor();
    info.provides = plugin->Provides();
    {
      MutexLock lock(&mu_);
      for (const auto& loaded : loaded_) {
        if (loaded == plugin) {
          return absl::AlreadyExistsError(
              absl::StrCat("plugin ", path, " is loaded already (as ", loaded->path(), ")"));
        }
      }
      if (plugin->has_platform()) {
        for (const auto& p : platforms_) {
          if (absl::EqualsIgnoreCase(AsAbsl(p->Name()), plugin->platform_name())) {
            return absl::AlreadyExistsError(
                absl::StrCat("plugin ", path, ": its platform name \"", plugin->platform_name(),
                             "\" is taken by a platform registered before"));
          }
        }
      }
    }
    // Libraries first: a failure there leaves nothing of the plugin here.
    RILL_RETURN_IF_ERROR(abi::RegisterPluginLibraries(plugin));
    if (plugin->has_platform()) {
      RILL_ASSIGN_OR_RETURN(std::unique_ptr<Platform> platform, abi::MakePluginPlatform(plugin));
      RILL_RETURN_IF_ERROR(
          Annotate(RegisterPlatform(std::move(platform)), absl::StrCat("plugin ", path)));
    }
    MutexLock lock(&mu_);
    loaded_.push_back(std::move(plugin));
    return absl::OkStatus();
  }();
  info.status = status;
  if (absl::IsAlreadyExists(status)) {
    RILL_LOG(INFO) << "skipped " << status.ToString();  // Loaded, or linked in, already.
  } else if (!status.ok()) {
    RILL_LOG(WARNING) << "skipped " << status.ToString();
  }
  MutexLock lock(&mu_);
  plugins_.push_back(std::move(info));
  return status;
}

int PlatformManager::LoadPluginsFrom(std::string_view search_path) {
  int loaded = 0;
  for (const std::string& entry :
       std::vector<std::string>(absl::StrSplit(AsAbsl(search_path), ':', absl::SkipEmpty()))) {
    std::error_code ec;
    std::vector<std::string> files;
    if (std::filesystem::is_directory(entry, ec)) {
      try {
        for (const auto& f : std::filesystem::directory_iterator(entry, ec)) {
          if (f.path().extension() == ".so") files.push_back(f.path().string());
        }
      } catch (const std::filesystem::filesystem_error& e) {
        RILL_LOG(WARNING) << "plugin folder " << entry << ": " << e.what();
      }
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(entry);
    }
    for (const std::string& file : files) loaded += LoadPlugin(file).ok() ? 1 : 0;
  }
  return loaded;
}

std::vector<PlatformManager::PluginInfo> PlatformManager::Plugins() const {
  DiscoverPlugins();
  MutexLock lock(&mu_);
  return plugins_;
}

absl::Status PlatformManager::RegisterPlatform(std::unique_ptr<Platform> platform) {
  if (platform == nullptr) return absl::InvalidArgumentError("RegisterPlatform: platform is null");
  MutexLock lock(&mu_);
  for (const auto& existing : platforms_) {
    if (existing->id() == platform->id()) return absl::OkStatus();  // Same platform again.
    if (absl::EqualsIgnoreCase(AsAbsl(existing->Name()), AsAbsl(platform->Name()))) {
      return absl::AlreadyExistsError(
          absl::StrCat("RegisterPlatform: another platform is already registered under the name \"",
                       platform->Name(), "\""));
    }
  }
  platforms_.push_back(std::move(platform));
  return absl::OkStatus();
}

std::string PlatformManager::DescribeLocked() const {
  if (platforms_.empty())
    return "no platform is registered (is a backend such as rill::host linked?)";
  std::string out = "registered platforms: ";
  for (size_t i = 0; i < platforms_.size(); ++i) {
    const Platform& p = *platforms_[i];
    absl::StrAppend(&out, i ? ", " : "", p.Name());
    absl::Status available = p.Availability();
    if (available.ok()) {
      absl::StrAppend(&out, " (", p.VisibleDeviceCount(), " device(s))");
    } else {
      absl::StrAppend(&out, " (unavailable: ", available.message(), ")");
    }
  }
  return out;
}

absl::StatusOr<Platform*> PlatformManager::PlatformWithName(std::string_view name) const {
  DiscoverPlugins();
  MutexLock lock(&mu_);
  for (const auto& p : platforms_) {
    if (absl::EqualsIgnoreCase(AsAbsl(p->Name()), AsAbsl(name))) return p.get();
  }
  return absl::NotFoundError(
      absl::StrCat("no platform named \"", AsAbsl(name), "\"; ", DescribeLocked()));
}

absl::StatusOr<Platform*> PlatformManager::PlatformWithId(PlatformId id) const {
  DiscoverPlugins();
  MutexLock lock(&mu_);
  for (const auto& p : platforms_) {
    if (p->id() == id) return p.get();
  }
  return absl::NotFoundError(
      absl::StrCat("no platform with id \"", id ? id->name : "null", "\"; ", DescribeLocked()));
}

std::vector<Platform*> PlatformManager::AllPlatforms() const {
  DiscoverPlugins();
  MutexLock lock(&mu_);
  std::vector<Platform*> out;
  for (const auto& p : platforms_) out.push_back(p.get());
  return out;
}

std::vector<Platform*> PlatformManager::AvailablePlatforms() const {
  std::vector<Platform*> out;
  for (Platform* p : AllPlatforms()) {
    if (p->Availability().ok() && p->VisibleDeviceCount() > 0) out.push_back(p);
  }
  return out;
}

namespace internal {

namespace {
struct LinkedPlatform {
  const char* tag;
  absl::Status (*register_fn)(PlatformManager&);
};
Mutex& LinkedMutex() {
  static Mutex* mu = new Mutex;
  return *mu;
}
std::vector<LinkedPlatform>& Linked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(LinkedMutex()) {
  static auto* linked = new std::vector<LinkedPlatform>;
  return *linked;
}
}  // namespace

bool RegisterAtLoad(const char* tag, absl::Status (*register_fn)(PlatformManager&)) {
  {
    MutexLock lock(&LinkedMutex());
    Linked().push_back({tag, register_fn});
  }
  absl::Status status = register_fn(PlatformManager::Default());
  if (!status.ok()) {
    RILL_LOG(ERROR) << "registering platform " << tag << " failed: " << status.ToString();
  }
  return status.ok();
}

}  // namespace internal

absl::Status PlatformManager::RegisterLinkedPlatforms() {
  std::vector<internal::LinkedPlatform> linked;
  {
    MutexLock lock(&internal::LinkedMutex());
    linked = internal::Linked();
  }
  for (const internal::LinkedPlatform& p : linked) {
    RILL_RETURN_IF_ERROR(
        Annotate(p.register_fn(*this), absl::StrCat("registering platform ", p.tag)));
  }
  // And the platforms of the plugins the default manager loaded.
  PlatformManager& global = Default();
  global.DiscoverPlugins();
  std::vector<std::shared_ptr<abi::LoadedPlugin>> plugins;
  if (&global != this) {
    MutexLock lock(&global.mu_);
    plugins = global.loaded_;
  }
  for (const auto& plugin : plugins) {
    if (!plugin->has_platform()) continue;
    RILL_ASSIGN_OR_RETURN(std::unique_ptr<Platform> platform, abi::MakePluginPlatform(plugin));
    RILL_RETURN_IF_ERROR(
        Annotate(RegisterPlatform(std::move(platform)), absl::StrCat("plugin ", plugin->path())));
  }
  return absl::OkStatus();
}

}  // namespace rill
