#include "rill/base/slow_notice.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "rill/base/logging.h"

namespace rill {
namespace {

void Log(const SourcePlace& where, const std::string& text) {
  if (!logging::IsEnabled(logging::Severity::WARNING)) return;
  logging::LogMessage(where.file_name(), static_cast<int>(where.line()), logging::Severity::WARNING)
          .stream()
      << text;
}

// The shared timer: pending notices ordered by deadline, and one thread that
// logs each notice whose deadline passes before it is cancelled. std::mutex
// rather than rill::Mutex: the wait needs a deadline, which CondVar lacks.
class Watchdog {
 public:
  static Watchdog& Get() {
    static Watchdog* const watchdog = new Watchdog();  // Never destroyed.
    return *watchdog;
  }

  uint64_t Arm(absl::Time deadline, std::string message, SourcePlace where) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_) {
      std::thread([this] { Loop(); }).detach();
      started_ = true;
    }
    const uint64_t id = next_id_++;
    pending_.emplace(std::make_pair(deadline, id), Pending{std::move(message), where});
    if (pending_.begin()->first.second == id) cv_.notify_one();  // A new earliest deadline.
    return id;
  }

  // Cancels notice `id`; returns whether it was already logged (and forgets it).
  bool Disarm(absl::Time deadline, uint64_t id, std::string* message, SourcePlace* where) {
    std::lock_guard<std::mutex> lock(mu_);
    auto fired = fired_.find(id);
    if (fired == fired_.end()) {
      pending_.erase(std::make_pair(deadline, id));
      return false;
    }
    *message = std::move(fired->second.message);
    *where = fired->second.where;
    fired_.erase(fired);
    return true;
  }

 private:
  struct Pending {
    std::string message;
    SourcePlace where;
  };

  Watchdog() = default;

  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (pending_.empty()) {
        cv_.wait(lock);
        continue;
      }
      const absl::Time deadline = pending_.begin()->first.first;
      if (absl::Now() < deadline) {
        cv_.wait_until(lock, absl::ToChronoTime(deadline));
        continue;
      }
      auto node = pending_.extract(pending_.begin());
      // Logged under the lock so that a notice's "done" line cannot come first.
      Log(node.mapped().where, node.mapped().message);
      fired_.emplace(node.key().second, std::move(node.mapped()));
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;
  uint64_t next_id_ = 0;
  std::map<std::pair<absl::Time, uint64_t>, Pending> pending_;  // (deadline, id)
  std::map<uint64_t, Pending> fired_;                           // Logged, not yet destroyed.
};

}  // namespace

SlowWorkNotice::SlowWorkNotice(std::string message, absl::Duration delay, SourcePlace where)
    : start_(absl::Now()), deadline_(start_ + delay) {
  id_ = Watchdog::Get().Arm(deadline_, std::move(message), where);
}

SlowWorkNotice::~SlowWorkNotice() {
  std::string message;
  SourcePlace where;
  if (!Watchdog::Get().Disarm(deadline_, id_, &message, &where)) return;
  Log(where,
      absl::StrFormat("%s done in %.1f s", message, absl::ToDoubleSeconds(absl::Now() - start_)));
}

}  // namespace rill
