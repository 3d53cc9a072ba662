#include "stream/event.h"

#include "executor/stream_executor_interface.h"

namespace rill {

Event::Event(StreamExecutor* parent, std::unique_ptr<EventInterface> impl)
    : parent_(parent), impl_(std::move(impl)) {}

Event::~Event() = default;

Event::Status Event::PollForStatus() {
  if (!recorded()) return Status::kUnrecorded;
  switch (impl_->Poll()) {
    case EventInterface::State::kPending: return Status::kPending;
    case EventInterface::State::kComplete: return Status::kComplete;
    case EventInterface::State::kError: return Status::kError;
  }
  return Status::kError;
}

absl::Status Event::Synchronize() {
  if (!recorded()) {
    return absl::FailedPreconditionError("Event::Synchronize: the event was never recorded");
  }
  return impl_->Synchronize();
}

void* Event::native_handle() const { return impl_->native_handle(); }

}  // namespace rill
