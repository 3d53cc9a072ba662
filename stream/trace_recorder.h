#ifndef RILL_STREAM_TRACE_RECORDER_H_
#define RILL_STREAM_TRACE_RECORDER_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "rill/base/mutex.h"

namespace rill {

// Spans and dependency arrows, written as Chrome trace JSON (the
// "traceEvents" format that Perfetto and chrome://tracing open): one lane
// (thread track) per name, complete ("X") events for spans, flow events
// ("s" and "f") for arrows, and the process's name and pid. Timestamps are
// absolute: microseconds on the trace clock (base/trace_clock.h,
// nanoseconds since the Unix epoch), so traces of several processes and
// tools line up. Thread-safe.
class TraceRecorder {
 public:
  struct Span {
    std::string lane;  // "host:0 engine stream 1", "engine worker 2".
    std::string name;
    std::string category;  // "stream", "engine", "engine.device".
    int64_t start_ns = 0;
    int64_t end_ns = 0;
    // Non-zero: arrows (AddFlow) attach to this span; of several spans with
    // one key, they attach to the one with the highest `flow_rank` (a
    // function's device span before the host span that enqueued it).
    uint64_t key = 0;
    int flow_rank = 0;
    std::vector<std::pair<std::string, std::string>> args;
  };

  // At most this many spans are kept; later ones are counted as dropped.
  static constexpr size_t kMaxSpans = 2'000'000;

  void Record(Span span);
  // An arrow from the span keyed `from` to the span keyed `to` (the first
  // waited for the second). Arrows whose ends were never recorded are left
  // out of the file.
  void AddFlow(uint64_t from, uint64_t to);
  std::string ToJson() const;
  // Writes ToJson() to `path`; the status names the path and errno's reason.
  absl::Status Write(const std::string& path) const;
  size_t span_count() const;
  void Clear();

  // A range of 2^40 keys no other caller gets: key = base + n.
  static uint64_t NewKeySpace();

 private:
  mutable Mutex mu_;
  std::vector<Span> spans_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<uint64_t, uint64_t>> flows_ ABSL_GUARDED_BY(mu_);
  size_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
};

// The process-wide trace: every stream operation (through a
// StreamListener) and every engine function, in one file. Started by
// RILL_TRACE=<path> or StartTracing; written at StopTracing, or at exit.
// Under an MPI launcher RILL_TRACE names one file per rank ("%r" in the
// path is the rank, else ".rank<r>" goes before the extension).
// FailedPrecondition if tracing is on already.
absl::Status StartTracing(const std::string& path);
// Stops recording and writes the file (what Write returns).
absl::Status StopTracing();
// The recorder while tracing is on, else nullptr.
TraceRecorder* GlobalTrace();

namespace internal {
inline std::atomic<bool> global_tracing{false};
}  // namespace internal

}  // namespace rill

#endif  // RILL_STREAM_TRACE_RECORDER_H_
