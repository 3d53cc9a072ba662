#include "rill/ops/runtime.h"

#include <utility>

#include "rill/base/status_macros.h"

namespace rill {

Runtime& Runtime::Default() {
  static Runtime* runtime = [] {
    auto* r = new Runtime;  // Never destroyed.
    r->platforms_ = &PlatformManager::Default();
    r->ops_ = &ops::OpRegistry::Global();
    r->plugins_ = &PluginRegistry::Default();
    r->engine_ = &engine::Engine::Default();
    return r;
  }();
  return *runtime;
}

absl::StatusOr<std::unique_ptr<Runtime>> Runtime::Create(engine::EngineOptions options) {
  std::unique_ptr<Runtime> r(new Runtime);
  r->owned_platforms_ = std::make_unique<PlatformManager>();
  RILL_RETURN_IF_ERROR(r->owned_platforms_->RegisterLinkedPlatforms());
  options.platforms = r->owned_platforms_.get();
  RILL_ASSIGN_OR_RETURN(r->owned_engine_, engine::Engine::Create(options));
  r->platforms_ = r->owned_platforms_.get();
  r->ops_ = &ops::OpRegistry::Global();
  r->plugins_ = &PluginRegistry::Default();
  r->engine_ = r->owned_engine_.get();
  return r;
}

Runtime::~Runtime() {
  if (owned_engine_ != nullptr) owned_engine_->Shutdown(false);
  owned_engine_.reset();  // Before the platforms its workers' streams belong to.
}

}  // namespace rill
