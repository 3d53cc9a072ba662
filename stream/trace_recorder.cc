#include "rill/stream/trace_recorder.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rill/stream/stream_listener.h"

namespace rill {
namespace {

std::string JsonEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out;
}

std::string Micros(int64_t ns) { return absl::StrFormat("%d.%03d", ns / 1000, ns % 1000); }

std::string ProcessName() {
  std::ifstream comm("/proc/self/comm");
  std::string name;
  std::getline(comm, name);
  return absl::StrCat("rill: ", name.empty() ? "process" : name);
}

}  // namespace

uint64_t TraceRecorder::NewKeySpace() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed) << 40;
}

void TraceRecorder::Record(Span span) {
  MutexLock lock(&mu_);
  if (spans_.size() >= kMaxSpans) {
    ++dropped_;
    return;
  }
  spans_.push_back(std::move(span));
}

void TraceRecorder::AddFlow(uint64_t from, uint64_t to) {
  if (from == 0 || to == 0) return;
  MutexLock lock(&mu_);
  flows_.emplace_back(from, to);
}

size_t TraceRecorder::span_count() const {
  MutexLock lock(&mu_);
  return spans_.size();
}

void TraceRecorder::Clear() {
  MutexLock lock(&mu_);
  spans_.clear();
  flows_.clear();
  dropped_ = 0;
}

std::string TraceRecorder::ToJson() const {
  MutexLock lock(&mu_);
  const int pid = static_cast<int>(getpid());
  // Lanes sorted by name, so a device's streams sit together.
  std::map<std::string, int> lanes;
  for (const Span& s : spans_) lanes.emplace(s.lane, 0);
  int tid = 0;
  for (auto& [name, id] : lanes) id = ++tid;
  std::string json =
      "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock\":\"trace clock: microseconds since the "
      "Unix epoch\"";
  if (dropped_ > 0) absl::StrAppend(&json, ",\"dropped_spans\":", dropped_);
  absl::StrAppend(&json, "},\"traceEvents\":[\n");
  absl::StrAppend(&json,
                  absl::StrFormat("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,"
                                  "\"args\":{\"name\":\"%s\"}}",
                                  pid, JsonEscape(ProcessName())));
  for (const auto& [name, id] : lanes) {
    absl::StrAppend(
        &json, absl::StrFormat(",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
                               "\"args\":{\"name\":\"%s\"}}",
                               pid, id, JsonEscape(name)));
    absl::StrAppend(
        &json,
        absl::StrFormat(",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%d,"
                        "\"args\":{\"sort_index\":%d}}",
                        pid, id, id));
  }
  // Where each key's arrows attach: the span of highest rank.
  std::unordered_map<uint64_t, const Span*> anchors;
  for (const Span& s : spans_) {
    if (s.key == 0) continue;
    const Span*& a = anchors[s.key];
    if (a == nullptr || s.flow_rank > a->flow_rank) a = &s;
  }
  for (const Span& s : spans_) {
    absl::StrAppend(
        &json,
        absl::StrFormat(",\n{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,"
                        "\"ts\":%s,\"dur\":%s,\"args\":{",
                        JsonEscape(s.name.empty() ? "(unnamed)" : s.name), JsonEscape(s.category),
                        pid, lanes[s.lane], Micros(s.start_ns),
                        Micros(std::max<int64_t>(0, s.end_ns - s.start_ns))));
    bool first = true;
    for (const auto& [k, v] : s.args) {
      absl::StrAppend(&json, first ? "" : ",", "\"", JsonEscape(k), "\":\"", JsonEscape(v), "\"");
      first = false;
    }
    json += "}}";
  }
  // Arrows: "s" inside the source span (at its end), "f" binding to the
  // span that encloses its timestamp (the target's start).
  uint64_t flow_id = 0;
  for (const auto& [from, to] : flows_) {
    auto a = anchors.find(from);
    auto b = anchors.find(to);
    if (a == anchors.end() || b == anchors.end()) continue;
    const Span& src = *a->second;
    const Span& dst = *b->second;
    ++flow_id;
    const int64_t out_ns = src.end_ns - std::min<int64_t>(500, (src.end_ns - src.start_ns) / 2);
    absl::StrAppend(
        &json,
        absl::StrFormat(",\n{\"ph\":\"s\",\"name\":\"waits for\",\"cat\":\"dependency\",\"id\":%d,"
                        "\"pid\":%d,\"tid\":%d,\"ts\":%s}",
                        flow_id, pid, lanes[src.lane], Micros(out_ns)));
    absl::StrAppend(
        &json, absl::StrFormat(
                   ",\n{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"waits for\",\"cat\":\"dependency\","
                   "\"id\":%d,\"pid\":%d,\"tid\":%d,\"ts\":%s}",
                   flow_id, pid, lanes[dst.lane], Micros(dst.start_ns)));
  }
  json += "\n]}\n";
  return json;
}

absl::Status TraceRecorder::Write(const std::string& path) const {
  const std::string json = ToJson();
  // errno names the cause, and sets the code (a missing folder: NotFound).
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr)
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot write the trace to ", path));
  const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  const int write_errno = errno;
  if (std::fclose(f) != 0 || !ok) {
    return absl::ErrnoToStatus(ok ? errno : write_errno,
                               absl::StrCat("writing the trace to ", path, " failed"));
  }
  return absl::OkStatus();
}

// --- The process-wide trace --------------------------------------------------

namespace {

// Stream work as device spans on the stream's lane; without device time,
// the enqueue span.
class TraceListener : public StreamListener {
 public:
  explicit TraceListener(TraceRecorder* recorder) : recorder_(recorder) {}
  void OnEnqueued(const StreamOp& op) override {
    if (op.status.ok()) return;
    Record(op, op.enqueue_start_ns, op.enqueue_end_ns, "refused at enqueue");
  }
  void OnCompleted(const StreamOp& op) override {
    if (op.has_device_time) {
      Record(op, op.device_start_ns, op.device_end_ns, "");
    } else {
      Record(op, op.enqueue_start_ns, op.enqueue_end_ns,
             "enqueue time (the backend has no timers)");
    }
  }

 private:
  void Record(const StreamOp& op, int64_t start, int64_t end, const char* note) {
    TraceRecorder::Span span{op.lane, op.name, "stream", start, end, 0, 0, {}};
    span.args = {{"args", op.args}, {"device", op.device}};
    if (!op.plugin.empty()) span.args.emplace_back("plugin", op.plugin);
    if (!op.algorithm.empty()) span.args.emplace_back("algorithm", op.algorithm);
    if (!op.status.ok()) span.args.emplace_back("status", op.status.ToString());
    if (*note != '\0') span.args.emplace_back("note", note);
    span.args.emplace_back("enqueue_us", Micros(op.enqueue_end_ns - op.enqueue_start_ns));
    recorder_->Record(std::move(span));
  }
  TraceRecorder* recorder_;
};

struct Global {
  Mutex mu;
  TraceRecorder recorder;
  std::string path ABSL_GUARDED_BY(mu);
  const StreamListener* listener ABSL_GUARDED_BY(mu) = nullptr;
  bool at_exit_registered ABSL_GUARDED_BY(mu) = false;
};

Global& GetGlobal() {
  static Global* global = new Global;  // Never destroyed: engines may record at exit.
  return *global;
}

void WriteAtExit() {
  if (!internal::global_tracing.load()) return;
  absl::Status status = StopTracing();
  if (!status.ok()) std::fprintf(stderr, "rill: %s\n", status.ToString().c_str());
}

}  // namespace

absl::Status StartTracing(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("StartTracing: the path is empty");
  Global& g = GetGlobal();
  auto listener = std::make_shared<TraceListener>(&g.recorder);
  {
    MutexLock lock(&g.mu);
    if (internal::global_tracing.load()) {
      return absl::FailedPreconditionError(absl::StrCat("tracing is on already, to ", g.path));
    }
    g.recorder.Clear();
    g.path = path;
    g.listener = listener.get();
    if (!g.at_exit_registered) {
      std::atexit(WriteAtExit);
      g.at_exit_registered = true;
    }
    internal::global_tracing.store(true);
  }
  AddStreamListener(std::move(listener));
  return absl::OkStatus();
}

absl::Status StopTracing() {
  Global& g = GetGlobal();
  std::string path;
  const StreamListener* listener = nullptr;
  {
    MutexLock lock(&g.mu);
    if (!internal::global_tracing.exchange(false)) {
      return absl::FailedPreconditionError("StopTracing: tracing is off");
    }
    path = g.path;
    listener = g.listener;
    g.listener = nullptr;
  }
  RemoveStreamListener(listener);
  absl::Status status = g.recorder.Write(path);
  g.recorder.Clear();
  return status;
}

TraceRecorder* GlobalTrace() {
  return internal::global_tracing.load(std::memory_order_acquire) ? &GetGlobal().recorder : nullptr;
}

}  // namespace rill
