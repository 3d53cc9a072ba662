#include "rill/stream/verbose.h"

#include <cstdio>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rill/base/mutex.h"
#include "rill/base/status_macros.h"

namespace rill {
namespace {

std::atomic<int> verbose_level{0};

struct Output {
  Mutex mu;
  std::function<void(std::string_view)> sink ABSL_GUARDED_BY(mu);
  std::shared_ptr<StreamListener> listener ABSL_GUARDED_BY(mu);
};

Output& GetOutput() {
  static Output* output = new Output;  // Never destroyed: used at exit.
  return *output;
}

// A field without commas or line breaks; '-' when empty.
std::string Field(std::string_view text) {
  if (text.empty()) return "-";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ',') {
      out += ';';
      if (i + 1 < text.size() && text[i + 1] == ' ') ++i;
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

class VerboseListener : public StreamListener {
 public:
  void OnEnqueued(const StreamOp& op) override {
    if (!op.status.ok()) EmitVerboseLine(FormatVerboseLine("refused", op));
  }
  void OnCompleted(const StreamOp& op) override { EmitVerboseLine(FormatVerboseLine("exec", op)); }
  void OnAllocation(const AllocationEvent& e) override {
    if (verbose_level.load(std::memory_order_relaxed) < 2) return;
    StreamOp op;
    op.device = e.device;
    op.name = e.host_memory ? (e.free ? "HostMemoryDeallocate" : "HostMemoryAllocate")
                            : (e.free ? "Deallocate" : "Allocate");
    op.args = absl::StrFormat("%d bytes, %p", e.bytes, e.address);
    op.status = e.status;
    EmitVerboseLine(FormatVerboseLine(e.free ? "free" : "alloc", op));
  }
};

}  // namespace

std::string FormatVerboseLine(std::string_view kind, const StreamOp& op) {
  const std::string status =
      op.status.ok()
          ? std::string("ok")
          : absl::StrCat(absl::StatusCodeToString(op.status.code()), ": ", op.status.message());
  const std::string device_ms =
      op.has_device_time ? absl::StrFormat("%.4f", (op.device_end_ns - op.device_start_ns) / 1e6)
                         : "-";
  return absl::StrCat("rill_verbose,", AsAbsl(kind), ",", Field(op.device), ",", Field(op.lane),
                      ",", Field(op.name), ",", Field(op.args), ",", Field(op.plugin), ",",
                      Field(op.algorithm), ",", Field(status), ",", device_ms);
}

void EmitVerboseLine(std::string_view line) {
  Output& out = GetOutput();
  MutexLock lock(&out.mu);
  if (out.sink) {
    out.sink(line);
  } else {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  }
}

void SetVerbose(int level) {
  level = std::max(0, std::min(level, 2));
  Output& out = GetOutput();
  std::shared_ptr<StreamListener> add;
  const StreamListener* remove = nullptr;
  {
    MutexLock lock(&out.mu);
    const int old = verbose_level.exchange(level);
    if (level > 0 && out.listener == nullptr) {
      out.listener = add = std::make_shared<VerboseListener>();
    } else if (level == 0 && out.listener != nullptr) {
      remove = out.listener.get();
      out.listener.reset();  // The registry keeps it alive while needed.
    }
    if (old == 0 && level > 0) {
      const std::string header =
          "rill_verbose,kind,device,lane,op,args,plugin,algorithm,status,device_ms";
      if (out.sink) {
        out.sink(header);
      } else {
        std::fprintf(stderr, "%s\n", header.c_str());
      }
    }
  }
  if (add != nullptr) AddStreamListener(std::move(add));
  if (remove != nullptr) RemoveStreamListener(remove);
}

absl::Status SetVerboseFromString(std::string_view level) {
  int value = 0;
  if (!absl::SimpleAtoi(AsAbsl(level), &value) || value < 0 || value > 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("verbose level '", AsAbsl(level), "' is not 0, 1 or 2"));
  }
  SetVerbose(value);
  return absl::OkStatus();
}

int VerboseLevel() { return verbose_level.load(std::memory_order_relaxed); }

void SetVerboseSink(std::function<void(std::string_view line)> sink) {
  Output& out = GetOutput();
  MutexLock lock(&out.mu);
  out.sink = std::move(sink);
}

}  // namespace rill
