// Conformance: streams. In-order execution, cross-stream waits through
// events and streams (also between two devices), host callbacks and the
// first-error contract, event states, timers.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include "rill/conformance/conformance.h"

namespace rill::conformance {
namespace {

using ::rill::testing::Gate;
using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using ::rill::testing::Must;
using ::rill::testing::OpenOnExit;
using ::rill::testing::WithDeadline;

// Long enough that work racing past a missing wait is caught, short enough
// to keep the suite fast.
constexpr auto kSlow = std::chrono::milliseconds(30);

class StreamConformance : public ConformanceTest {
 protected:
  // Enqueues a host callback that sleeps kSlow and then stores `value` into
  // `*flag`: a slow producer.
  void ThenSlowStore(Stream* stream, std::atomic<int>* flag, int value) {
    if (absl::Status s = executor_->Supports(Feature::kHostCallbacks); !s.ok()) return;
    stream->ThenDoHostCallback([flag, value] {
      std::this_thread::sleep_for(kSlow);
      flag->store(value);
    });
  }
  // Skips (returns the reason) on a backend without host callbacks, after
  // checking that a callback is refused with Unimplemented.
  absl::Status RequireCallbacks() {
    return RequireFeature(executor_, Feature::kHostCallbacks, [&] {
      std::unique_ptr<Stream> probe = NewStream();
      probe->ThenDoHostCallback([] {});
      return probe->BlockHostUntilDone();
    });
  }
};

TEST_P(StreamConformance, HostCallbacksRunInEnqueueOrder) {
  if (absl::Status s = RequireCallbacks(); !s.ok()) GTEST_SKIP() << s;
  std::vector<int> order;  // Touched only by the stream's callbacks until done.
  for (int i = 0; i < 2000; ++i) stream_->ThenDoHostCallback([&order, i] { order.push_back(i); });
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  ASSERT_EQ(order.size(), 2000u);
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(order[i], i);
}

// Each round reuses one device word: a reordered copy would read another
// round's value.
TEST_P(StreamConformance, CopiesRunInEnqueueOrder) {
  constexpr int kRounds = 300;
  ScopedDeviceMemory<int32_t> word = Allocate<int32_t>(1);
  ScopedDeviceMemory<int32_t> other = Allocate<int32_t>(1);
  const bool d2d = executor_->Supports(Feature::kDeviceToDeviceCopy).ok();
  std::vector<int32_t> in(kRounds), out(kRounds, -1);
  for (int i = 0; i < kRounds; ++i) {
    in[i] = i * 7 + 1;
    stream_->ThenMemcpy(word.ptr(), &in[i], 4);
    if (d2d) {
      stream_->ThenMemcpy(other.ptr(), *word, 4).ThenMemZero(word.ptr(), 4);
      stream_->ThenMemcpy(&out[i], *other, 4);
    } else {
      stream_->ThenMemcpy(&out[i], *word, 4);
    }
  }
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_EQ(out, in);
}

TEST_P(StreamConformance, EnqueueIsAsynchronous) {
  if (absl::Status s = RequireCallbacks(); !s.ok()) GTEST_SKIP() << s;
  ScopedDeviceMemory<int32_t> word = Allocate<int32_t>(1);
  const int32_t value = 42;
  int32_t out = -1;
  auto gate = Gate::Make(kBoundedWait);
  OpenOnExit open(gate);
  stream_->ThenDoHostCallback([gate] { gate->Wait(); })
      .ThenMemcpy(word.ptr(), &value, 4)
      .ThenMemcpy(&out, *word, 4);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(out, -1) << "work behind a blocked callback ran early";
  EXPECT_TRUE(stream_->ok());
  gate->Open();
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_EQ(out, 42);
}

TEST_P(StreamConformance, WaitForEventOrdersAcrossStreams) {
  if (absl::Status s = RequireCallbacks(); !s.ok()) GTEST_SKIP() << s;
  std::unique_ptr<Stream> producer = NewStream();
  std::unique_ptr<Event> ready = Must(executor_->CreateEvent());
  ScopedDeviceMemory<int32_t> word = Allocate<int32_t>(1);
  const int32_t value = 7;
  int32_t out = -1;
  std::atomic<int> flag{0};
  int seen = -1;

  producer->ThenDoHostCallback([] { std::this_thread::sleep_for(kSlow); })
      .ThenMemcpy(word.ptr(), &value, 4);
  ThenSlowStore(producer.get(), &flag, 1);
  producer->ThenRecordEvent(ready.get());
  stream_->ThenWaitFor(ready.get())
      .ThenDoHostCallback([&] { seen = flag.load(); })
      .ThenMemcpy(&out, *word, 4);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_EQ(seen, 1) << "the consumer ran before the producer's event";
  EXPECT_EQ(out, 7);
  EXPECT_TRUE(IsOk(producer->BlockHostUntilDone()));
}

TEST_P(StreamConformance, WaitForStreamOrdersAcrossStreams) {
  if (absl::Status s = RequireCallbacks(); !s.ok()) GTEST_SKIP() << s;
  std::unique_ptr<Stream> producer = NewStream();
  std::atomic<int> flag{0};
  int seen = -1;
  ThenSlowStore(producer.get(), &flag, 1);
  stream_->ThenWaitFor(producer.get()).ThenDoHostCallback([&] { seen = flag.load(); });
  // Work enqueued on the producer after the wait is not waited for.
  auto gate = Gate::Make(kBoundedWait);
  OpenOnExit open(gate);
  producer->ThenDoHostCallback([gate] { gate->Wait(); });
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_EQ(seen, 1) << "ThenWaitFor(Stream*) did not wait for the producer";
  gate->Open();
  EXPECT_TRUE(IsOk(producer->BlockHostUntilDone()));
  // Waiting for itself is a no-op, not a deadlock.
  stream_->ThenWaitFor(stream_.get());
  EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
}

// Two streams of two different devices take turns: each step waits for the
// other device's previous step.
TEST_P(StreamConformance, StreamsOfTwoDevicesWaitOnEachOther) {
  if (absl::Status s = RequireDevices(2); !s.ok()) GTEST_SKIP() << s.message();
  if (absl::Status s = RequireCallbacks(); !s.ok()) GTEST_SKIP() << s;
  StreamExecutor* peer = Must(
      platform()->ExecutorForDevice((GetParam().ordinal + 1) % platform()->VisibleDeviceCount()));
  ASSERT_NE(peer, executor_);
  std::unique_ptr<Stream> other = NewStreamOn(peer);
  ScopedDeviceMemory<int32_t> mine = Allocate<int32_t>(1);
  ScopedDeviceMemory<int32_t> theirs = Must(peer->AllocateOwnedArray<int32_t>(1));

  // A relay: host value -> my device -> host -> peer device -> host -> ...
  // Every hop is on the other stream than the previous one.
  constexpr int kHops = 6;
  std::vector<int32_t> staging(kHops + 1, -1);
  staging[0] = 1;
  std::vector<std::unique_ptr<Event>> done;
  for (int hop = 0; hop < kHops; ++hop) {
    Stream* s = hop % 2 == 0 ? stream_.get() : other.get();
    StreamExecutor* e = hop % 2 == 0 ? executor_ : peer;
    ScopedDeviceMemory<int32_t>& buffer = hop % 2 == 0 ? mine : theirs;
    if (hop > 0) s->ThenWaitFor(done.back().get());
    s->ThenDoHostCallback([] { std::this_thread::sleep_for(std::chrono::milliseconds(3)); });
    s->ThenMemcpy(buffer.ptr(), &staging[hop], 4)
        .ThenMemcpy(&staging[hop + 1], *buffer, 4)
        .ThenDoHostCallback([&staging, hop] { staging[hop + 1] = staging[hop + 1] * 2 + hop; });
    done.push_back(Must(e->CreateEvent()));
    s->ThenRecordEvent(done.back().get());
  }
  // And once more through ThenWaitFor(Stream*) across the devices.
  other->ThenWaitFor(stream_.get());
  ASSERT_TRUE(IsOk(other->BlockHostUntilDone()));
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  int32_t expected = 1;
  for (int hop = 0; hop < kHops; ++hop) expected = expected * 2 + hop;
  EXPECT_EQ(staging[kHops], expected);
}

TEST_P(StreamConformance, FailingHostCallbackKeepsFirstErrorAndSkipsLaterWork) {
  if (absl::Status s = RequireCallbacks(); !s.ok()) GTEST_SKIP() << s;
  ScopedDeviceMemory<int32_t> word = Allocate<int32_t>(1);
  const int32_t value = 5;
  int32_t out = -1;
  bool before = false, after = false;
  stream_->ThenDoHostCallback([&] { before = true; })
      .ThenDoHostCallbackWithStatus([] { return absl::DataLossError("checksum 0x1234 mismatch"); })
      .ThenDoHostCallback([&] { after = true; })
      .ThenDoHostCallbackWithStatus([] { return absl::AbortedError("second error"); })
      .ThenMemcpy(word.ptr(), &value, 4)
      .ThenMemcpy(&out, *word, 4);
  absl::Status status = stream_->BlockHostUntilDone();
  EXPECT_TRUE(HasError(status, absl::StatusCode::kDataLoss,
                       {"host callback failed", "checksum 0x1234 mismatch"}));
  EXPECT_TRUE(before);
  EXPECT_FALSE(after) << "a callback after the failure ran";
  EXPECT_EQ(out, -1) << "a copy after the failure ran";
  EXPECT_FALSE(stream_->ok());
  EXPECT_EQ(stream_->status(), status);

  // Later calls are skipped and the first error stays.
  bool later = false;
  stream_->ThenDoHostCallback([&] { later = true; }).ThenMemcpy(&out, *word, 4);
  EXPECT_EQ(stream_->BlockHostUntilDone(), status);
  EXPECT_FALSE(later);
  EXPECT_EQ(out, -1);
}

TEST_P(StreamConformance, ThrowingHostCallbackBecomesInternalError) {
  if (absl::Status s = RequireCallbacks(); !s.ok()) GTEST_SKIP() << s;
  bool after = false;
  stream_->ThenDoHostCallback([] { throw std::runtime_error("kaboom at step 3"); })
      .ThenDoHostCallback([&] { after = true; });
  EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), absl::StatusCode::kInternal,
                       {"host callback threw", "kaboom at step 3"}));
  EXPECT_FALSE(after);

  std::unique_ptr<Stream> odd = NewStream();
  odd->ThenDoHostCallback([] { throw 42; });
  EXPECT_TRUE(HasError(odd->BlockHostUntilDone(), absl::StatusCode::kInternal, {"non-standard"}));

  std::unique_ptr<Stream> empty = NewStream();
  empty->ThenDoHostCallbackWithStatus(nullptr);
  EXPECT_TRUE(HasError(empty->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument, {"empty"}));
}

TEST_P(StreamConformance, EnqueueErrorIsKeptBeforeLaterRuntimeErrors) {
  ScopedDeviceMemory<int32_t> word = Allocate<int32_t>(1);
  int32_t host[2] = {1, 2};
  stream_->ThenMemcpy(word.ptr(), host, 8);  // 8 bytes into 4.
  ASSERT_FALSE(stream_->ok()) << "an argument error is reported at enqueue";
  stream_->ThenDoHostCallbackWithStatus([] { return absl::InternalError("must not run"); });
  EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"8 bytes overrun"}));
}

// An argument error takes effect at the bad call's place: the work queued
// before it still runs, and an event recorded or a notification queued
// before it sees no error; what comes after sees it.
TEST_P(StreamConformance, AnEnqueueErrorLetsTheWorkQueuedBeforeItRun) {
  if (absl::Status s = RequireCallbacks(); !s.ok()) GTEST_SKIP() << s;
  ScopedDeviceMemory<int32_t> word = Allocate<int32_t>(1);
  const int32_t value = 41;
  int32_t out = -1, bad[2] = {0, 0};
  bool before = false, after = false;
  absl::Status notified_before = absl::UnknownError("not notified");
  absl::Status notified_after = absl::UnknownError("not notified");
  std::unique_ptr<Event> early = Must(executor_->CreateEvent());
  std::unique_ptr<Event> late = Must(executor_->CreateEvent());
  auto gate = Gate::Make(kBoundedWait);
  {
    OpenOnExit open(gate);
    // Held behind the gate, so everything below is still queued when the
    // bad call is made.
    stream_->ThenDoHostCallback([gate] { gate->Wait(); })
        .ThenMemcpy(word.ptr(), &value, 4)
        .ThenMemcpy(&out, *word, 4)
        .ThenDoHostCallback([&] { before = true; })
        .ThenRecordEvent(early.get())
        .ThenNotify([&](absl::Status s) { notified_before = s; })
        .ThenMemcpy(word.ptr(), bad, 8)  // 8 bytes into 4.
        .ThenDoHostCallback([&] { after = true; })
        .ThenRecordEvent(late.get())
        .ThenNotify([&](absl::Status s) { notified_after = s; });
    EXPECT_FALSE(stream_->ok()) << "the argument error is known at once";
  }
  EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"8 bytes overrun"}));
  EXPECT_EQ(out, value) << "the copies queued before the bad call were skipped";
  EXPECT_TRUE(before) << "a callback queued before the bad call was skipped";
  EXPECT_FALSE(after) << "a callback queued after the bad call ran";
  EXPECT_TRUE(IsOk(early->Synchronize())) << "an event recorded before the bad call failed";
  EXPECT_TRUE(IsOk(notified_before));
  EXPECT_TRUE(
      HasError(late->Synchronize(), absl::StatusCode::kInvalidArgument, {"8 bytes overrun"}));
  EXPECT_TRUE(HasError(notified_after, absl::StatusCode::kInvalidArgument, {"8 bytes overrun"}));

  // A stream that waits for the early event runs; one that waits for the
  // late one fails.
  std::unique_ptr<Stream> first = NewStream();
  std::unique_ptr<Stream> second = NewStream();
  EXPECT_TRUE(IsOk(first->ThenWaitFor(early.get()).BlockHostUntilDone()));
  EXPECT_TRUE(HasError(second->ThenWaitFor(late.get()).BlockHostUntilDone(),
                       absl::StatusCode::kInvalidArgument));
}

TEST_P(StreamConformance, BlockHostUntilDoneFromItsOwnCallbackIsFailedPrecondition) {
  if (absl::Status s = RequireCallbacks(); !s.ok()) GTEST_SKIP() << s;
  absl::Status inner = absl::UnknownError("the callback did not run");
  bool after = false;
  WithDeadline("BlockHostUntilDone from a callback of its own stream", [&] {
    stream_->ThenDoHostCallback([&] { inner = stream_->BlockHostUntilDone(); })
        .ThenDoHostCallback([&] { after = true; });
    EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), absl::StatusCode::kFailedPrecondition,
                         {"would deadlock"}));
  });
  EXPECT_TRUE(HasError(inner, absl::StatusCode::kFailedPrecondition, {"would deadlock"}));
  EXPECT_FALSE(after) << "the stream failed: later work is skipped";
}

// From a notification too, on every backend; also when a later bad call
// queues the marker that carries its error (a blocking callback on CUDA,
// which waited for the notification's thread).
TEST_P(StreamConformance, BlockHostUntilDoneFromItsOwnNotificationIsFailedPrecondition) {
  if (absl::Status s = RequireCallbacks(); !s.ok()) GTEST_SKIP() << s;
  absl::Status inner = absl::UnknownError("the notification did not run");
  WithDeadline("BlockHostUntilDone from a notification of its own stream", [&] {
    stream_->ThenNotify([&](absl::Status) { inner = stream_->BlockHostUntilDone(); });
    EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), absl::StatusCode::kFailedPrecondition,
                         {"would deadlock"}));
  });
  EXPECT_TRUE(HasError(inner, absl::StatusCode::kFailedPrecondition, {"would deadlock"}));

  std::unique_ptr<Stream> marked = NewStream();
  ScopedDeviceMemory<int32_t> word = Allocate<int32_t>(1);
  int32_t bad[2] = {0, 0};
  absl::Status marked_inner = absl::UnknownError("the notification did not run");
  WithDeadline("the same with a bad call's marker after the notification", [&] {
    marked->ThenNotify([&](absl::Status) { marked_inner = marked->BlockHostUntilDone(); })
        .ThenMemcpy(word.ptr(), bad, 8);  // 8 bytes into 4.
    // Whichever was known first: the bad call's error or the notification's.
    EXPECT_FALSE(marked->BlockHostUntilDone().ok());
  });
  EXPECT_FALSE(marked_inner.ok());
  EXPECT_NE(marked_inner.code(), absl::StatusCode::kUnknown) << marked_inner;
}

TEST_P(StreamConformance, EventStates) {
  if (absl::Status s = RequireCallbacks(); !s.ok()) GTEST_SKIP() << s;
  std::unique_ptr<Event> event = Must(executor_->CreateEvent());
  EXPECT_FALSE(event->recorded());
  EXPECT_EQ(event->PollForStatus(), Event::Status::kUnrecorded);
  EXPECT_TRUE(
      HasError(event->Synchronize(), absl::StatusCode::kFailedPrecondition, {"never recorded"}));

  auto gate = Gate::Make(kBoundedWait);
  OpenOnExit open(gate);
  stream_->ThenDoHostCallback([gate] { gate->Wait(); }).ThenRecordEvent(event.get());
  EXPECT_TRUE(event->recorded());
  EXPECT_EQ(event->PollForStatus(), Event::Status::kPending);
  gate->Open();
  EXPECT_TRUE(IsOk(event->Synchronize()));
  EXPECT_EQ(event->PollForStatus(), Event::Status::kComplete);

  // Re-recording moves the point.
  auto gate2 = Gate::Make(kBoundedWait);
  OpenOnExit open2(gate2);
  stream_->ThenDoHostCallback([gate2] { gate2->Wait(); }).ThenRecordEvent(event.get());
  EXPECT_EQ(event->PollForStatus(), Event::Status::kPending);
  gate2->Open();
  EXPECT_TRUE(IsOk(event->Synchronize()));
  EXPECT_EQ(event->PollForStatus(), Event::Status::kComplete);
  EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
}

TEST_P(StreamConformance, EventRecordedOnFailedStreamCarriesTheError) {
  if (absl::Status s = RequireCallbacks(); !s.ok()) GTEST_SKIP() << s;
  std::unique_ptr<Event> event = Must(executor_->CreateEvent());
  stream_->ThenDoHostCallbackWithStatus([] { return absl::UnavailableError("link down"); })
      .ThenRecordEvent(event.get());
  EXPECT_TRUE(HasError(event->Synchronize(), absl::StatusCode::kUnavailable, {"link down"}));
  EXPECT_EQ(event->PollForStatus(), Event::Status::kError);

  // A stream waiting on it fails too and skips its later work.
  std::unique_ptr<Stream> waiter = NewStream();
  bool ran = false;
  waiter->ThenWaitFor(event.get()).ThenDoHostCallback([&] { ran = true; });
  EXPECT_TRUE(
      HasError(waiter->BlockHostUntilDone(), absl::StatusCode::kUnavailable, {"link down"}));
  EXPECT_FALSE(ran);

  // So does a stream waiting on the failed stream itself.
  std::unique_ptr<Stream> stream_waiter = NewStream();
  stream_waiter->ThenWaitFor(stream_.get()).ThenDoHostCallback([&] { ran = true; });
  EXPECT_TRUE(
      HasError(stream_waiter->BlockHostUntilDone(), absl::StatusCode::kUnavailable, {"link down"}));
  EXPECT_FALSE(ran);
}

TEST_P(StreamConformance, WaitingOnNeverRecordedEventIsFailedPrecondition) {
  std::unique_ptr<Event> event = Must(executor_->CreateEvent());
  bool ran = false;
  stream_->ThenWaitFor(event.get());
  if (executor_->Supports(Feature::kHostCallbacks).ok()) {
    stream_->ThenDoHostCallback([&] { ran = true; });
  }
  EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), absl::StatusCode::kFailedPrecondition,
                       {"ThenWaitFor(event)", "never recorded"}));
  EXPECT_FALSE(ran);

  std::unique_ptr<Stream> null_wait = NewStream();
  null_wait->ThenWaitFor(static_cast<Event*>(nullptr));
  EXPECT_TRUE(HasError(null_wait->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument));
  std::unique_ptr<Stream> null_stream = NewStream();
  null_stream->ThenWaitFor(static_cast<Stream*>(nullptr));
  EXPECT_TRUE(HasError(null_stream->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument));
  std::unique_ptr<Stream> null_record = NewStream();
  null_record->ThenRecordEvent(nullptr);
  EXPECT_TRUE(HasError(null_record->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument));
}

TEST_P(StreamConformance, EventMayBeDestroyedWhileAWaitIsPending) {
  if (absl::Status s = RequireCallbacks(); !s.ok()) GTEST_SKIP() << s;
  std::unique_ptr<Stream> producer = NewStream();
  auto gate = Gate::Make(kBoundedWait);
  OpenOnExit open(gate);
  std::atomic<int> flag{0};
  int seen = -1;
  {
    std::unique_ptr<Event> event = Must(executor_->CreateEvent());
    producer->ThenDoHostCallback([gate] { gate->Wait(); })
        .ThenDoHostCallback([&] { flag = 1; })
        .ThenRecordEvent(event.get());
    stream_->ThenWaitFor(event.get()).ThenDoHostCallback([&] { seen = flag.load(); });
  }
  gate->Open();
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_EQ(seen, 1);
  EXPECT_TRUE(IsOk(producer->BlockHostUntilDone()));
}

TEST_P(StreamConformance, TimerMeasuresWorkBetweenStartAndStop) {
  if (absl::Status s = RequireFeature(executor_, Feature::kTimers,
                                      [&] { return Timer::Create(executor_).status(); });
      !s.ok()) {
    GTEST_SKIP() << s;
  }
  if (absl::Status s = RequireCallbacks(); !s.ok()) GTEST_SKIP() << s;
  std::unique_ptr<Timer> timer = Must(Timer::Create(executor_));
  EXPECT_TRUE(HasError(timer->Elapsed().status(), absl::StatusCode::kFailedPrecondition,
                       {"ThenStartTimer"}));
  stream_->ThenStartTimer(timer.get())
      .ThenDoHostCallback([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); })
      .ThenStopTimer(timer.get());
  absl::StatusOr<absl::Duration> elapsed = timer->Elapsed();  // Waits for the stop.
  ASSERT_TRUE(elapsed.ok()) << elapsed.status();
  // A device timer reads the device's clock, not the host's steady clock the
  // sleep used: PoCL's markers once measured 19.98 ms for it.
  EXPECT_GE(*elapsed, absl::Milliseconds(19));
  EXPECT_LT(*elapsed, absl::Seconds(10));

  // A stream that fails between start and stop makes Elapsed fail.
  std::unique_ptr<Timer> failed = Must(Timer::Create(executor_));
  std::unique_ptr<Stream> bad = NewStream();
  bad->ThenStartTimer(failed.get())
      .ThenDoHostCallbackWithStatus([] { return absl::InternalError("device fault 9"); })
      .ThenStopTimer(failed.get());
  EXPECT_TRUE(
      HasError(failed->Elapsed().status(), absl::StatusCode::kInternal, {"device fault 9"}));

  std::unique_ptr<Stream> null_timer = NewStream();
  null_timer->ThenStartTimer(nullptr);
  EXPECT_TRUE(HasError(null_timer->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(HasError(Timer::Create(nullptr).status(), absl::StatusCode::kInvalidArgument));
}

INSTANTIATE_TEST_SUITE_P(AllDevices, StreamConformance, ::testing::ValuesIn(AllDevices()),
                         DeviceTestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(StreamConformance);

}  // namespace
}  // namespace rill::conformance
