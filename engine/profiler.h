#ifndef RILL_ENGINE_PROFILER_H_
#define RILL_ENGINE_PROFILER_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "rill/base/mutex.h"
#include "rill/stream/trace_recorder.h"

namespace rill::engine::internal {

struct Var;

// An engine's trace: one span per function on the thread that ran (or
// enqueued) it, one on its stream's lane for the device time of a device
// function's work, and an arrow from each function to every function that
// waited for it. Records into the engine's own recorder after Start()
// (EngineOptions::trace_path, Engine::StartProfiling), and into the
// process-wide trace while that is on (RILL_TRACE, StartTracing).
// Thread-safe.
class Profiler {
 public:
  Profiler() : key_base_(TraceRecorder::NewKeySpace()) {}
  void Start() { own_enabled_.store(true, std::memory_order_release); }
  bool enabled() const {
    return own_enabled_.load(std::memory_order_acquire) ||
           rill::internal::global_tracing.load(std::memory_order_relaxed);
  }
  void Record(const TraceRecorder::Span& span);
  // The function pushed `seq`th reads `reads` and writes `writes`: arrows
  // from the last writer of each var it uses and, for a write, from the
  // readers since then -- the functions it waits for. Pushers only.
  void NoteDeps(uint64_t seq, absl::Span<Var* const> reads, absl::Span<Var* const> writes);
  // The key of the function pushed `seq`th, for its spans.
  uint64_t Key(uint64_t seq) const { return key_base_ + seq + 1; }
  // Writes the engine's own recorder. On failure the status names the path
  // and the system's reason, with the code errno gives (a missing folder:
  // NotFound; no permission: PermissionDenied).
  absl::Status Write(const std::string& path) const { return own_.Write(path); }
  static int64_t NowNs();

 private:
  void AddFlow(uint64_t from_seq, uint64_t to_seq);
  struct VarUsers {
    uint64_t writer = 0;            // seq + 1; 0: none seen.
    std::vector<uint64_t> readers;  // Since the writer, as seq + 1.
  };

  const uint64_t key_base_;
  std::atomic<bool> own_enabled_{false};
  TraceRecorder own_;
  Mutex mu_;
  absl::flat_hash_map<const Var*, VarUsers> users_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill::engine::internal

#endif  // RILL_ENGINE_PROFILER_H_
