#ifndef RILL_ENGINE_WORKER_BATCH_H_
#define RILL_ENGINE_WORKER_BATCH_H_

// rill:internal -- not installed: the engine's implementation; users include engine.h.

#include "rill/engine/opr_block.h"

namespace rill::engine::internal {

class EngineBase;

// What a worker thread batches: the blocks it freed and has not handed back
// yet, and how many functions it retired since it last looked for a pusher
// waiting for room. Thread-compatible: each thread has its own (tls_worker).
struct WorkerBatch {
  static constexpr int kSize = 32;
  const EngineBase* engine = nullptr;  // Set: this thread is one of its workers.
  OprBlock* first = nullptr;
  OprBlock* last = nullptr;
  int size = 0;
  int retired_unchecked = 0;
};
// This thread's batch (defined in engine_blocks.cc): Recycle and WorkerIdle
// fill it, Retire counts into it, and HelpWhileWaiting makes a waiting
// thread a worker of one engine for the time of its wait.
extern constinit thread_local WorkerBatch tls_worker;

}  // namespace rill::engine::internal

#endif  // RILL_ENGINE_WORKER_BATCH_H_
