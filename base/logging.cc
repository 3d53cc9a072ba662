#include "rill/base/logging.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace rill::logging {
namespace {

int Threshold() {
  static const int threshold = [] {
    const char* env = std::getenv("RILL_LOG_LEVEL");
    return env != nullptr && *env != '\0' ? std::atoi(env) : 1;
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
