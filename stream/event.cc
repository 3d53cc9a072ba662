#include "rill/stream/event.h"

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"

namespace rill {

Event::Event(StreamExecutor* parent, std::unique_ptr<EventInterface> impl)
    : parent_(parent),
      alive_(parent->liveness()),
      device_(parent->DebugName()),
      impl_(std::move(impl)) {}

absl::Status Event::CheckAlive() const {
  if (alive_->load(std::memory_order_acquire)) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("event of ", device_, " used after its executor was destroyed"));
}

Event::~Event() = default;

Event::Status Event::PollForStatus() {
  if (!recorded()) return Status::kUnrecorded;
  if (!CheckAlive().ok()) return Status::kError;
  switch (impl_->Poll()) {
    case EventInterface::State::kPending:
      return Status::kPending;
    case EventInterface::State::kComplete:
      return Status::kComplete;
    case EventInterface::State::kError:
      return Status::kError;
  }
  return Status::kError;
}

absl::Status Event::Synchronize() {
  if (!recorded()) {
    return absl::FailedPreconditionError("Event::Synchronize: the event was never recorded");
  }
  RILL_RETURN_IF_ERROR(CheckAlive());
  return impl_->Synchronize();
}

void* Event::native_handle() const { return impl_->native_handle(); }

}  // namespace rill
