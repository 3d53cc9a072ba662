#include "engine/profiler.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rill::engine::internal {
namespace {

std::string JsonEscape(const std::string& s) {
  std::string out;
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

}  // namespace

int64_t Profiler::NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Profiler::Record(Span span) {
  MutexLock lock(&mu_);
  spans_.push_back(std::move(span));
}

absl::Status Profiler::Write(const std::string& path) const {
  std::string json = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  {
    MutexLock lock(&mu_);
    std::map<std::string, int> lanes;  // Lane name -> tid.
    int64_t origin = spans_.empty() ? 0 : spans_.front().start_ns;
    for (const Span& s : spans_) origin = std::min(origin, s.start_ns);
    bool first = true;
    for (const Span& s : spans_) {
      auto [it, inserted] = lanes.emplace(s.lane, static_cast<int>(lanes.size()) + 1);
      if (inserted) {
        absl::StrAppend(&json, first ? "" : ",\n",
                        absl::StrFormat("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":%d,"
                                        "\"args\":{\"name\":\"%s\"}}",
                                        it->second, JsonEscape(s.lane)));
        first = false;
      }
      absl::StrAppend(&json, first ? "" : ",\n",
                      absl::StrFormat("{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":1,"
                                      "\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"context\":\"%s\"}}",
                                      JsonEscape(s.name.empty() ? "(unnamed)" : s.name),
                                      JsonEscape(s.context), it->second,
                                      (s.start_ns - origin) / 1e3,
                                      std::max<int64_t>(0, s.end_ns - s.start_ns) / 1e3,
                                      JsonEscape(s.context)));
      first = false;
    }
  }
  json += "\n]}\n";
  // errno names the cause, and sets the code (a missing folder: NotFound).
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return absl::ErrnoToStatus(errno, absl::StrCat("cannot write the trace to ", path));
  const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  const int write_errno = errno;
  if (std::fclose(f) != 0 || !ok) {
    return absl::ErrnoToStatus(ok ? errno : write_errno, absl::StrCat("writing the trace to ", path, " failed"));
  }
  return absl::OkStatus();
}

}  // namespace rill::engine::internal
