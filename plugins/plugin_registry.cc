#include "rill/plugins/plugin_registry.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "rill/base/logging.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/platform.h"

namespace rill {

const char* PluginKindName(PluginKind kind) {
  switch (kind) {
    case PluginKind::kBlas:
      return "blas";
    case PluginKind::kDnn:
      return "dnn";
    case PluginKind::kRng:
      return "rng";
    case PluginKind::kFft:
      return "fft";
    case PluginKind::kCollectives:
      return "collectives";
  }
  return "unknown";
}

absl::Status CheckPluginKind(PluginKind kind) {
  for (PluginKind k : kAllPluginKinds) {
    if (k == kind) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("plugin kind ", static_cast<int>(kind),
                   " is not a PluginKind (blas, dnn, rng, fft, collectives)"));
}

const char* DataTypeName(DataType type) { return type == DataType::kFloat ? "float" : "double"; }

namespace {

// RILL_BLAS, RILL_DNN, ...
std::string EnvVariable(PluginKind kind) {
  return absl::StrCat("RILL_", absl::AsciiStrToUpper(PluginKindName(kind)));
}

}  // namespace

PluginRegistry& PluginRegistry::Default() {
  static PluginRegistry* registry = new PluginRegistry();  // Never destroyed.
  return *registry;
}

absl::Status PluginRegistry::Register(PlatformId platform, PluginKind kind, std::string name,
                                      Factory factory, bool make_default) {
  RILL_RETURN_IF_ERROR(CheckPluginKind(kind));
  if (name.empty() || !factory || platform == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("PluginRegistry::Register(",
                                                   PluginKindName(kind), ", \"", name,
                                                   "\"): name, factory and platform must be set"));
  }
  MutexLock lock(&mu_);
  if (FindLocked(platform, kind, name) != nullptr) return absl::OkStatus();  // Harmless repeat.
  registrations_.push_back(Registration{platform, kind, name, std::move(factory)});
  const auto key = std::make_pair(platform, kind);
  for (auto& [k, default_name] : defaults_) {
    if (k == key) {
      if (make_default) default_name = name;
      return absl::OkStatus();
    }
  }
  defaults_.emplace_back(key, name);
  return absl::OkStatus();
}

const PluginRegistry::Registration* PluginRegistry::FindLocked(PlatformId platform, PluginKind kind,
                                                               std::string_view name) const {
  for (const Registration& r : registrations_) {
    if (r.platform == platform && r.kind == kind && r.name == name) return &r;
  }
  return nullptr;
}

std::string PluginRegistry::NamesLocked(PlatformId platform, PluginKind kind) const {
  std::string names;
  for (const Registration& r : registrations_) {
    if (r.platform == platform && r.kind == kind)
      absl::StrAppend(&names, names.empty() ? "" : ", ", r.name);
  }
  return names.empty() ? "none" : names;
}

absl::StatusOr<std::vector<std::string>> PluginRegistry::DefaultChainLocked(PlatformId platform,
                                                                            PluginKind kind) const {
  const std::string variable = EnvVariable(kind);
  if (const char* env = std::getenv(variable.c_str()); env != nullptr && *env != '\0') {
    // A whole-program choice names plugins of several platforms
    // (RILL_DNN=xnnpack,onednn,cudnn): each platform keeps its own, in
    // order, and uses its default when it has none of them. A name no
    // platform registered is a mistake.
    std::vector<std::string> mine;
    for (absl::string_view part : absl::StrSplit(env, ',')) {
      const std::string name(absl::StripAsciiWhitespace(part));
      if (name.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(variable, "=", env, ": an empty plugin name"));
      }
      if (FindLocked(platform, kind, name) != nullptr) {
        mine.push_back(name);
        continue;
      }
      bool elsewhere = false;
      for (const Registration& r : registrations_)
        elsewhere = elsewhere || (r.kind == kind && r.name == name);
      if (!elsewhere) {
        return absl::NotFoundError(absl::StrCat(
            variable, "=", env, ": no platform has a ", PluginKindName(kind), " plugin named \"",
            name, "\"; registered for ", platform->name, ": ", NamesLocked(platform, kind)));
      }
    }
    if (!mine.empty()) {
      absl::StatusOr<std::vector<std::string>> chain =
          ParseChainLocked(platform, kind, absl::StrJoin(mine, ","));
      if (!chain.ok()) return Annotate(chain.status(), absl::StrCat("in ", variable, "=", env));
      return chain;
    }
  }
  for (const auto& [key, name] : defaults_) {
    if (key.first == platform && key.second == kind) return std::vector<std::string>{name};
  }
  return std::vector<std::string>{};
}

absl::StatusOr<std::vector<std::string>> PluginRegistry::ParseChainLocked(
    PlatformId platform, PluginKind kind, std::string_view names) const {
  std::vector<std::string> chain;
  int position = 0;
  for (absl::string_view part : absl::StrSplit(AsAbsl(names), ',')) {
    std::string name(absl::StripAsciiWhitespace(part));
    ++position;
    if (name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(PluginKindName(kind), " plugin chain \"",
                                                     AsAbsl(names), "\": name ", position,
                                                     " is empty"));
    }
    if (FindLocked(platform, kind, name) == nullptr) return UnknownLocked(platform, kind, name);
    if (std::find(chain.begin(), chain.end(), name) != chain.end()) {
      return absl::InvalidArgumentError(absl::StrCat(PluginKindName(kind), " plugin \"", name,
                                                     "\" appears twice in the chain \"",
                                                     AsAbsl(names), "\""));
    }
    chain.push_back(std::move(name));
  }
  return chain;
}

absl::StatusOr<std::vector<std::string>> PluginRegistry::DefaultChain(PlatformId platform,
                                                                      PluginKind kind) const {
  MutexLock lock(&mu_);
  return DefaultChainLocked(platform, kind);
}

absl::StatusOr<std::vector<std::string>> PluginRegistry::ParseChain(PlatformId platform,
                                                                    PluginKind kind,
                                                                    std::string_view names) const {
  RILL_RETURN_IF_ERROR(CheckPluginKind(kind));
  MutexLock lock(&mu_);
  return ParseChainLocked(platform, kind, names);
}

absl::StatusOr<std::string> PluginRegistry::DefaultNameLocked(PlatformId platform,
                                                              PluginKind kind) const {
  RILL_ASSIGN_OR_RETURN(std::vector<std::string> chain, DefaultChainLocked(platform, kind));
  return chain.empty() ? std::string() : chain.front();
}

absl::StatusOr<std::string> PluginRegistry::DefaultName(PlatformId platform,
                                                        PluginKind kind) const {
  MutexLock lock(&mu_);
  return DefaultNameLocked(platform, kind);
}

absl::Status PluginRegistry::CheckRegistered(PlatformId platform, PluginKind kind,
                                             std::string_view name) const {
  MutexLock lock(&mu_);
  if (FindLocked(platform, kind, name) != nullptr) return absl::OkStatus();
  return UnknownLocked(platform, kind, name);
}

absl::Status PluginRegistry::UnknownLocked(PlatformId platform, PluginKind kind,
                                           std::string_view name) const {
  return absl::NotFoundError(absl::StrCat("no ", PluginKindName(kind), " plugin named \"",
                                          AsAbsl(name), "\" for platform ", platform->name,
                                          "; registered: ", NamesLocked(platform, kind)));
}

std::vector<PluginRegistry::Entry> PluginRegistry::List() const {
  MutexLock lock(&mu_);
  std::vector<Entry> out;
  for (const Registration& r : registrations_) {
    absl::StatusOr<std::string> default_name = DefaultNameLocked(r.platform, r.kind);
    out.push_back(Entry{r.platform, r.kind, r.name, default_name.ok() && *default_name == r.name});
  }
  return out;
}

absl::StatusOr<std::unique_ptr<PluginInterface>> PluginRegistry::Create(
    PluginKind kind, std::string_view name, StreamExecutor* executor) const {
  const PlatformId platform = executor->platform()->id();
  Factory factory;
  {
    MutexLock lock(&mu_);
    const Registration* r = FindLocked(platform, kind, name);
    if (r == nullptr) return UnknownLocked(platform, kind, name);
    factory = r->factory;
  }
  // Outside the lock: a factory may consult the registry.
  absl::StatusOr<std::unique_ptr<PluginInterface>> plugin = factory(executor);
  if (!plugin.ok()) {
    return Annotate(plugin.status(), absl::StrCat("creating ", PluginKindName(kind), " plugin \"",
                                                  AsAbsl(name), "\" for ", executor->DebugName()));
  }
  if (*plugin == nullptr) {
    return absl::InternalError(absl::StrCat("the factory of ", PluginKindName(kind), " plugin \"",
                                            AsAbsl(name), "\" returned null"));
  }
  return plugin;
}

namespace internal {

bool RegisterPluginAtLoad(const char* tag, PlatformId platform, PluginKind kind, const char* name,
                          PluginRegistry::Factory factory, bool make_default) {
  absl::Status status =
      PluginRegistry::Default().Register(platform, kind, name, std::move(factory), make_default);
  if (!status.ok())
    RILL_LOG(ERROR) << "registering plugin " << tag << " failed: " << status.ToString();
  return status.ok();
}

}  // namespace internal
}  // namespace rill
