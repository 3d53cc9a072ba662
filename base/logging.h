#ifndef RILL_BASE_LOGGING_H_
#define RILL_BASE_LOGGING_H_

#include <sstream>

// A minimal logging and invariant-checking facility (Abseil 20220623 has no
// absl/log).
//
//   RILL_LOG(INFO) << "created " << n << " streams";
//   RILL_LOG(WARNING) << ...;  RILL_LOG(ERROR) << ...;
//   RILL_CHECK(ptr != nullptr) << "why it cannot be null";
//   RILL_CHECK_OK(status);
//
// Messages go to stderr. RILL_CHECK is for internal invariants only: it
// aborts with the message. User input must never reach a RILL_CHECK; it gets
// an absl::Status instead. The environment variable RILL_LOG_LEVEL sets the
// least severity printed: 0 INFO, 1 WARNING (the default), 2 ERROR, 3 FATAL
// only. Any other value keeps WARNING (rill::ValidateEnvironment refuses it).
// Thread-safe: each message is written with one call.

namespace rill::logging {

enum class Severity { INFO = 0, WARNING = 1, ERROR = 2, FATAL = 3 };

// Whether messages of `severity` are printed.
bool IsEnabled(Severity severity);

class LogMessage {
 public:
  LogMessage(const char* file, int line, Severity severity);
  ~LogMessage();  // Writes the message; aborts if FATAL.
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  Severity severity_;
  std::ostringstream stream_;
};

// Swallows the stream expression of a disabled or passing log statement.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace rill::logging

#define RILL_LOG(severity)                                                                       \
  !::rill::logging::IsEnabled(::rill::logging::Severity::severity)                               \
      ? (void)0                                                                                  \
      : ::rill::logging::Voidify() &                                                             \
            ::rill::logging::LogMessage(__FILE__, __LINE__, ::rill::logging::Severity::severity) \
                .stream()

#define RILL_CHECK(condition)                                                                 \
  (condition)                                                                                 \
      ? (void)0                                                                               \
      : ::rill::logging::Voidify() &                                                          \
            ::rill::logging::LogMessage(__FILE__, __LINE__, ::rill::logging::Severity::FATAL) \
                    .stream()                                                                 \
                << "Check failed: " #condition " "

#define RILL_CHECK_OK(expr)                                               \
  do {                                                                    \
    ::absl::Status rill_check_status_ = (expr);                           \
    RILL_CHECK(rill_check_status_.ok()) << rill_check_status_.ToString(); \
  } while (false)

#endif  // RILL_BASE_LOGGING_H_
