#ifndef RILL_ENGINE_ENGINE_KINDS_H_
#define RILL_ENGINE_ENGINE_KINDS_H_

// rill:internal -- not installed: the engine's implementation; users include engine.h.

#include <memory>

#include "rill/engine/engine.h"

namespace rill::engine::internal {

std::unique_ptr<Engine> NewNaiveEngine(const EngineOptions& options);
std::unique_ptr<Engine> NewThreadedEngine(const EngineOptions& options);

}  // namespace rill::engine::internal

#endif  // RILL_ENGINE_ENGINE_KINDS_H_
