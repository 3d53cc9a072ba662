#include "rill/engine/profiler.h"

#include <algorithm>

#include "rill/base/trace_clock.h"

namespace rill::engine::internal {

int64_t Profiler::NowNs() { return TraceClockNs(); }

void Profiler::Record(const TraceRecorder::Span& span) {
  if (own_enabled_.load(std::memory_order_acquire)) own_.Record(span);
  if (TraceRecorder* global = GlobalTrace(); global != nullptr) global->Record(span);
}

void Profiler::AddFlow(uint64_t from_seq, uint64_t to_seq) {
  if (own_enabled_.load(std::memory_order_acquire)) own_.AddFlow(Key(from_seq), Key(to_seq));
  if (TraceRecorder* global = GlobalTrace(); global != nullptr)
    global->AddFlow(Key(from_seq), Key(to_seq));
}

void Profiler::NoteDeps(uint64_t seq, absl::Span<Var* const> reads, absl::Span<Var* const> writes) {
  std::vector<uint64_t> from;
  {
    MutexLock lock(&mu_);
    for (const Var* v : reads) {
      VarUsers& u = users_[v];
      if (u.writer != 0) from.push_back(u.writer - 1);
      u.readers.push_back(seq + 1);
    }
    for (const Var* v : writes) {
      VarUsers& u = users_[v];
      if (u.writer != 0) from.push_back(u.writer - 1);
      for (uint64_t r : u.readers) {
        if (r != seq + 1) from.push_back(r - 1);
      }
      u.readers.clear();
      u.writer = seq + 1;
    }
  }
  std::sort(from.begin(), from.end());
  from.erase(std::unique(from.begin(), from.end()), from.end());
  for (uint64_t f : from) AddFlow(f, seq);
}

}  // namespace rill::engine::internal
