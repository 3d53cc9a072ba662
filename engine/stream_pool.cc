#include "rill/engine/stream_pool.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/stream/stream_listener.h"

namespace rill::engine::internal {

// --- Fence -------------------------------------------------------------------

void Fence::OnDone(absl::AnyInvocable<void(absl::Status) &&> fn) {
  absl::Status status;
  {
    MutexLock lock(&mu_);
    if (!done_.load(std::memory_order_relaxed)) {
      waiters_.push_back(std::move(fn));
      return;
    }
    status = status_;
  }
  std::move(fn)(status);
}

void Fence::Complete(absl::Status status) {
  std::vector<absl::AnyInvocable<void(absl::Status) &&>> waiters;
  {
    MutexLock lock(&mu_);
    status_ = status;
    done_.store(true, std::memory_order_release);
    waiters.swap(waiters_);
  }
  for (auto& w : waiters) std::move(w)(status);
}

absl::Status Fence::status() const {
  MutexLock lock(&mu_);
  return status_;
}

// --- StreamPool --------------------------------------------------------------

StreamPool::~StreamPool() {
  MutexLock lock(&mu_);
  for (Entry& e : entries_) (void)e.stream->BlockHostUntilDone();
}

StreamPool::Entry* StreamPool::FindLocked(Stream* stream) {
  for (Entry& e : entries_) {
    if (e.stream.get() == stream) return &e;
  }
  return nullptr;
}

absl::StatusOr<Stream*> StreamPool::Acquire(const Fence* after) {
  MutexLock lock(&mu_);
  Entry* pick = nullptr;
  if (after != nullptr) {
    Entry* e = FindLocked(after->stream);
    if (e != nullptr && e->usable() && e->last == after) pick = e;  // In order: no wait.
  }
  int usable = 0;
  Entry* least = nullptr;  // The usable stream with the least unfinished work.
  for (Entry& e : entries_) {
    if (!e.stream->ok()) continue;
    ++usable;
    if (e.enqueuing) continue;
    if (e.pending == 0 && pick == nullptr) pick = &e;
    if (least == nullptr || e.pending < least->pending) least = &e;
  }
  if (pick == nullptr && usable >= max_streams_) pick = least;
  if (pick == nullptr) {
    RILL_ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream, executor_->CreateStream());
    const int n = static_cast<int>(entries_.size()) + 1;
    SetStreamLabel(stream.get(),
                   copy_ ? (max_streams_ == 1 && n == 1
                                ? absl::StrCat(executor_->DebugName(), " engine copy stream")
                                : absl::StrCat(executor_->DebugName(), " engine copy stream ", n))
                         : absl::StrCat(executor_->DebugName(), " engine stream ", n));
    entries_.push_back(Entry{std::move(stream)});
    pick = &entries_.back();
  }
  pick->enqueuing = true;
  return pick->stream.get();
}

void StreamPool::Release(Stream* stream, const Fence* fence) {
  MutexLock lock(&mu_);
  Entry* e = FindLocked(stream);
  e->enqueuing = false;
  ++e->pending;
  e->last = fence;
}

int StreamPool::stream_count() {
  MutexLock lock(&mu_);
  return static_cast<int>(entries_.size());
}

void StreamPool::WorkDone(Stream* stream) {
  MutexLock lock(&mu_);
  --FindLocked(stream)->pending;
}

}  // namespace rill::engine::internal
