// The mpi plugin below the engine: stream calls against sums computed here,
// the sequence rules of Communicator::Issue, and bad arguments (sizes that
// overflow, short or null buffers, roots out of range, unknown kinds). Run
// directly (one rank; also in the sanitizer builds) and by mpiexec with 2.

#include "rill/plugins/collectives/mpi/mpi_collectives.h"

#include <gtest/gtest.h>

#include <future>
#include <limits>
#include <vector>

#include "rill/executor/stream_executor.h"
#include "rill/platform/platform_manager.h"
#include "rill/stream/stream.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using testing::HasError;
using testing::IsOk;
using testing::Must;

StreamExecutor* Host() {
  return Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
}

std::shared_ptr<Communicator> World() {
  static std::shared_ptr<Communicator>* c =
      new std::shared_ptr<Communicator>(Must(Host()->AsCollectives()->NewCommunicator({})));
  return *c;
}

absl::Status IssueAndWait(Communicator& c, uint64_t seq, CollectiveArgs a) {
  std::promise<absl::Status> p;
  std::future<absl::Status> f = p.get_future();
  c.Issue(seq, std::move(a), nullptr, [&p](absl::Status s) { p.set_value(std::move(s)); });
  return f.get();
}

TEST(MpiCollectives, StreamAllReduceBroadcastGatherScatter) {
  std::shared_ptr<Communicator> w = World();
  const int n = w->size(), me = w->rank();
  StreamExecutor* exec = Host();
  std::unique_ptr<Stream> s = Must(exec->CreateStream());
  constexpr int64_t kCount = 9;
  DeviceMemory<double> buf = Must(exec->AllocateArray<double>(kCount * n));
  DeviceMemory<double> out = Must(exec->AllocateArray<double>(kCount * n));
  std::vector<double> host(kCount * n);
  for (int64_t i = 0; i < kCount * n; ++i) host[i] = (me + 1) * 100.0 + i;
  s->ThenMemcpyH2D<double>(host, &buf);
  DeviceMemory<double> first = Must(buf.GetSlice(0, kCount));
  s->ThenAllReduce(w.get(), first, &first, kCount, ReduceOp::kMax);
  s->ThenAllGather(w.get(), first, &out, kCount);
  std::vector<double> gathered(kCount * n);
  s->ThenMemcpyD2H<double>(out, absl::MakeSpan(gathered));
  ASSERT_TRUE(IsOk(s->BlockHostUntilDone()));
  for (int r = 0; r < n; ++r)
    for (int64_t i = 0; i < kCount; ++i) ASSERT_EQ(gathered[r * kCount + i], n * 100.0 + i);

  s->ThenMemcpyH2D<double>(host, &buf);
  DeviceMemory<double> mine = Must(out.GetSlice(0, kCount));
  s->ThenReduceScatter(w.get(), buf, &mine, kCount, ReduceOp::kAverage);
  std::vector<double> block(kCount);
  s->ThenMemcpyD2H<double>(mine, absl::MakeSpan(block));
  ASSERT_TRUE(IsOk(s->BlockHostUntilDone()));
  for (int64_t i = 0; i < kCount; ++i) {
    double want = 0;
    for (int r = 0; r < n; ++r) want += (r + 1) * 100.0 + me * kCount + i;
    ASSERT_DOUBLE_EQ(block[i], want / n);
  }
  EXPECT_TRUE(IsOk(exec->Deallocate(&buf)));
  EXPECT_TRUE(IsOk(exec->Deallocate(&out)));
}

TEST(MpiCollectives, IssuedOutOfOrderRunInSequence) {
  std::shared_ptr<Communicator> w = World();
  std::vector<float> a(4, 1.f), b(4, 2.f);
  const uint64_t s0 = w->NextSequence(), s1 = w->NextSequence();
  std::promise<absl::Status> p1;
  std::future<absl::Status> f1 = p1.get_future();
  CollectiveArgs later{CollectiveKind::kAllReduce,
                       DataType::kFloat,
                       ReduceOp::kSum,
                       DeviceMemoryBase(b.data(), 16),
                       DeviceMemoryBase(b.data(), 16),
                       4,
                       0,
                       "later"};
  w->Issue(s1, later, nullptr, [&p1](absl::Status s) { p1.set_value(s); });
  EXPECT_EQ(f1.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout)
      << "#" << s1 << " ran before #" << s0 << " was issued";
  CollectiveArgs first = later;
  first.send = first.recv = DeviceMemoryBase(a.data(), 16);
  first.name = "first";
  EXPECT_TRUE(IsOk(IssueAndWait(*w, s0, first)));
  EXPECT_TRUE(IsOk(f1.get()));
  EXPECT_EQ(a[0], w->size());
  EXPECT_EQ(b[0], 2.f * w->size());
  // A number issued twice is refused without touching the communicator.
  EXPECT_TRUE(HasError(IssueAndWait(*w, s0, first), absl::StatusCode::kFailedPrecondition,
                       {"issued twice"}));
  EXPECT_TRUE(IsOk(w->health()));
}

TEST(MpiCollectives, BadArgumentsAreRefusedNamingTheValue) {
  std::shared_ptr<Communicator> w = World();
  std::vector<float> v(8);
  const DeviceMemoryBase m(v.data(), 32);
  auto check = [&](CollectiveArgs a, std::initializer_list<std::string_view> parts) {
    EXPECT_TRUE(
        HasError(CheckCollectiveArgs(a, w->size()), absl::StatusCode::kInvalidArgument, parts))
        << a.ToString();
  };
  CollectiveArgs ok{CollectiveKind::kAllReduce, DataType::kFloat, ReduceOp::kSum, m, m, 8, 0, ""};
  EXPECT_TRUE(IsOk(CheckCollectiveArgs(ok, w->size())));
  CollectiveArgs a = ok;
  a.count = 9;
  check(a, {"holds 32 bytes, 36 needed"});
  a = ok;
  a.count = -1;
  check(a, {"negative count"});
  a = ok;
  a.count = std::numeric_limits<int64_t>::max();
  check(a, {"overflow"});
  a = ok;
  a.root = w->size();
  check(a, {"root", "is not a rank"});
  a = ok;
  a.send = DeviceMemoryBase();
  check(a, {"send buffer is null"});
  a = ok;
  a.kind = static_cast<CollectiveKind>(42);
  check(a, {"collective kind 42"});
  a = ok;
  a.op = static_cast<ReduceOp>(7);
  check(a, {"reduce op 7"});
  a = ok;
  a.type = static_cast<DataType>(5);
  check(a, {"element type 5"});
  a = ok;
  a.kind = CollectiveKind::kBarrier;
  check(a, {"takes no memory"});
  // Through a stream: refused at the call, the stream fails naming it.
  std::unique_ptr<Stream> s = Must(Host()->CreateStream());
  DeviceMemory<float> buf = Must(Host()->AllocateArray<float>(8));
  s->ThenAllGather(w.get(), buf, &buf, 8);
  if (w->size() > 1) {
    EXPECT_TRUE(HasError(s->status(), absl::StatusCode::kInvalidArgument, {"needed"}));
  }
  EXPECT_TRUE(HasError(Must(Host()->CreateStream())->ThenCollective(nullptr, ok).status(),
                       absl::StatusCode::kInvalidArgument, {"null communicator"}));
  EXPECT_TRUE(IsOk(Host()->Deallocate(&buf)));
  // None of it reached the communicator.
  EXPECT_TRUE(IsOk(w->health()));
}

TEST(MpiCollectives, OptionsFromTheEnvironment) {
  CommunicatorOptions o = Must(ResolveCommunicatorOptions({}));
  EXPECT_GT(o.timeout.count(), 0);
  EXPECT_GT(o.stall_warning.count(), 0);
  setenv("RILL_COLLECTIVE_TIMEOUT", "soon", 1);
  EXPECT_TRUE(HasError(ResolveCommunicatorOptions({}).status(), absl::StatusCode::kInvalidArgument,
                       {"RILL_COLLECTIVE_TIMEOUT='soon'"}));
  setenv("RILL_COLLECTIVE_TIMEOUT", "2.5", 1);
  EXPECT_EQ(Must(ResolveCommunicatorOptions({})).timeout, std::chrono::milliseconds(2500));
  unsetenv("RILL_COLLECTIVE_TIMEOUT");
  EXPECT_TRUE(
      HasError(Host()->AsCollectives()->NewCommunicator({.bootstrap = World().get()}).status(),
               absl::StatusCode::kInvalidArgument, {"takes no bootstrap"}));
}

}  // namespace
}  // namespace rill
