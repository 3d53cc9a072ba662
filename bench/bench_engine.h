#ifndef RILL_BENCH_BENCH_ENGINE_H_
#define RILL_BENCH_BENCH_ENGINE_H_

#include <cstdlib>

#include "rill/engine/engine.h"

namespace rill::bench {

// The engine the tensor, op and graph benchmarks push to: 2 CPU workers, or
// RILL_BENCH_CPU_WORKERS. Made once; shut it down at the end of main.
inline engine::Engine* BenchEngine() {
  static engine::Engine* e = [] {
    engine::EngineOptions o;
    o.cpu_workers = 2;
    if (const char* w = std::getenv("RILL_BENCH_CPU_WORKERS")) o.cpu_workers = std::atoi(w);
    return engine::Engine::CreateFromEnv(o)->release();
  }();
  return e;
}

}  // namespace rill::bench

#endif  // RILL_BENCH_BENCH_ENGINE_H_
