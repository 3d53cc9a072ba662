#include "rill/platform/platform_manager.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
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
  static PlatformManager* manager = new PlatformManager();  // Never destroyed.
  return *manager;
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
  MutexLock lock(&mu_);
  for (const auto& p : platforms_) {
    if (absl::EqualsIgnoreCase(AsAbsl(p->Name()), AsAbsl(name))) return p.get();
  }
  return absl::NotFoundError(
      absl::StrCat("no platform named \"", AsAbsl(name), "\"; ", DescribeLocked()));
}

absl::StatusOr<Platform*> PlatformManager::PlatformWithId(PlatformId id) const {
  MutexLock lock(&mu_);
  for (const auto& p : platforms_) {
    if (p->id() == id) return p.get();
  }
  return absl::NotFoundError(
      absl::StrCat("no platform with id \"", id ? id->name : "null", "\"; ", DescribeLocked()));
}

std::vector<Platform*> PlatformManager::AllPlatforms() const {
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
  return absl::OkStatus();
}

}  // namespace rill
