#ifndef RILL_OPS_RUNTIME_H_
#define RILL_OPS_RUNTIME_H_

#include <memory>

#include "absl/status/statusor.h"
#include "rill/engine/engine.h"
#include "rill/ops/op_registry.h"
#include "rill/platform/platform_manager.h"
#include "rill/plugins/plugin_registry.h"

namespace rill {

// One Rill instance above the backends: a platform manager, the op and
// plugin registries, and an engine over those platforms. What a device
// accumulates lives under it: executors belong to the platform manager, and
// with them the storage allocators, loaded kernels, the op layer's kernel
// choices (by executor serial) and the library plugin instances (the random
// generators' state); the random vars belong to the engine. Tensors made on
// engine() find their executors among platforms() (ExecutorFor(ctx,
// engine)).
//
// Default() is the process's, never destroyed: PlatformManager::Default(),
// OpRegistry::Global(), PluginRegistry::Default(), Engine::Default(). A test
// makes a fresh one to isolate all of that state:
//
//   RILL_ASSIGN_OR_RETURN(std::unique_ptr<Runtime> rt, Runtime::Create());
//   RILL_ASSIGN_OR_RETURN(Tensor x, Tensor::Empty({4}, DType::kF32, engine::Context::Host(),
//                                                &rt->engine()));
//
// A fresh runtime registers a new instance of every linked platform
// (PlatformManager::RegisterLinkedPlatforms) and makes its engine with the
// options given (EngineOptions::platforms is set to its manager). The op
// and plugin registries are shared with Default(): they hold declarations
// and factories, not per-device state. Destroying a runtime shuts its
// engine down, then destroys its platforms; its tensors must go first.
// Thread-safe.
class Runtime {
 public:
  static Runtime& Default();
  static absl::StatusOr<std::unique_ptr<Runtime>> Create(engine::EngineOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  PlatformManager& platforms() const { return *platforms_; }
  ops::OpRegistry& ops() const { return *ops_; }
  PluginRegistry& plugins() const { return *plugins_; }
  engine::Engine& engine() const { return *engine_; }

 private:
  Runtime() = default;
  // Owned by a fresh runtime (declared first: destroyed after the engine).
  std::unique_ptr<PlatformManager> owned_platforms_;
  std::unique_ptr<engine::Engine> owned_engine_;
  PlatformManager* platforms_ = nullptr;
  ops::OpRegistry* ops_ = nullptr;
  PluginRegistry* plugins_ = nullptr;
  engine::Engine* engine_ = nullptr;
};

}  // namespace rill

#endif  // RILL_OPS_RUNTIME_H_
