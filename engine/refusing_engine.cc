#include "rill/engine/refusing_engine.h"

#include "absl/strings/str_cat.h"
#include "rill/platform/platform_manager.h"

namespace rill::engine::internal {

PlatformManager& RefusingEngine::platforms() const { return PlatformManager::Default(); }

std::string RefusingEngine::DescribePending() {
  return absl::StrCat("nothing (this engine refuses all work: ", why_.message(), ")");
}

std::unique_ptr<Engine> NewRefusingEngine(absl::Status why) {
  return std::make_unique<RefusingEngine>(std::move(why));
}

}  // namespace rill::engine::internal
