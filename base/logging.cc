#include "rill/base/logging.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "rill/base/env_settings.h"

namespace rill::logging {
namespace {

// RILL_LOG_LEVEL through the table of settings; a bad value keeps the
// default (WARNING), says so once, and stops the tools and the default
// engine at start (rill::ValidateEnvironment).
int Threshold() {
  static const int threshold = [] {
    const absl::StatusOr<std::optional<int64_t>> level = EnvInt("RILL_LOG_LEVEL");
    if (!level.ok()) {
      const std::string text = absl::StrCat("[rill E logging.cc] ", level.status().message(),
                                            "; logging WARNING and up\n");
      std::fwrite(text.data(), 1, text.size(), stderr);
      return 1;
    }
    return level->has_value() ? static_cast<int>(**level) : 1;
  }();
  return threshold;
}

const char* Letter(Severity s) {
  switch (s) {
    case Severity::INFO:
      return "I";
    case Severity::WARNING:
      return "W";
    case Severity::ERROR:
      return "E";
    case Severity::FATAL:
      return "F";
  }
  return "?";
}

}  // namespace

bool IsEnabled(Severity severity) {
  return severity == Severity::FATAL || static_cast<int>(severity) >= Threshold();
}

LogMessage::LogMessage(const char* file, int line, Severity severity) : severity_(severity) {
  const char* base = std::strrchr(file, '/');
  stream_ << "[rill " << Letter(severity) << " " << (base ? base + 1 : file) << ":" << line << "] ";
}

LogMessage::~LogMessage() {
  stream_ << '\n';
  const std::string text = stream_.str();
  std::fwrite(text.data(), 1, text.size(), stderr);
  if (severity_ == Severity::FATAL) {
    std::fflush(stderr);
    std::abort();
  }
}

}  // namespace rill::logging
