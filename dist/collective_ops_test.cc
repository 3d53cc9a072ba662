// The collectives on tensors and streams, run by mpiexec with 1, 2 and 3
// ranks (dist/CMakeLists.txt): every rank runs the same cases in the same
// order, and each checks its result against values computed here from
// every rank's input. The failure cases come last, each on a communicator
// of its own (a failure breaks a communicator for good).

#include "rill/dist/collective_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "rill/executor/stream_executor.h"
#include "rill/platform/platform_manager.h"
#include "rill/stream/stream.h"
#include "rill/testing/status_testing.h"

namespace rill::dist {
namespace {

using testing::HasError;
using testing::IsOk;
using testing::Must;

// Rank r's element i: small integers, exact in float sums.
double Input(int r, int64_t i) { return (r + 1) * static_cast<double>(i % 13 + 1) - r; }

std::shared_ptr<Communicator> WorldOrDie() { return Must(World()); }

template <typename T>
Tensor Filled(int64_t n, int rank, engine::Context ctx = engine::Context::Host()) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<T>(Input(rank, i));
  return Must(Tensor::FromHost<T>(absl::MakeConstSpan(v), Shape{n}, ctx));
}

// Sizes: empty, one, odd, and past a fusion bucket of the dist store.
const int64_t kSizes[] = {0, 1, 7, 1'000'003};

template <typename T>
void CheckAllReduce(ReduceOp op) {
  std::shared_ptr<Communicator> world = WorldOrDie();
  const int n = world->size(), me = world->rank();
  for (int64_t size : kSizes) {
    Tensor t = Filled<T>(size, me);
    ASSERT_TRUE(IsOk(AllReduce(*world, t, t, {.op = op, .name = "allreduce test"})));
    std::vector<T> got = Must(t.ToHost<T>());
    for (int64_t i = 0; i < size; ++i) {
      double want = op == ReduceOp::kMin ? 1e300 : op == ReduceOp::kMax ? -1e300 : 0;
      for (int r = 0; r < n; ++r) {
        const double x = Input(r, i);
        want = op == ReduceOp::kMin   ? std::min(want, x)
               : op == ReduceOp::kMax ? std::max(want, x)
                                      : want + x;
      }
      if (op == ReduceOp::kAverage) want /= n;
      ASSERT_NEAR(got[i], want, 1e-5 * std::abs(want)) << "element " << i << " of " << size;
    }
  }
}

TEST(Collectives, AllReduceFloatSum) { CheckAllReduce<float>(ReduceOp::kSum); }
TEST(Collectives, AllReduceDoubleAverage) { CheckAllReduce<double>(ReduceOp::kAverage); }
TEST(Collectives, AllReduceFloatMax) { CheckAllReduce<float>(ReduceOp::kMax); }
TEST(Collectives, AllReduceDoubleMin) { CheckAllReduce<double>(ReduceOp::kMin); }

TEST(Collectives, AllReduceIntoAnotherTensor) {
  std::shared_ptr<Communicator> world = WorldOrDie();
  Tensor in = Filled<float>(7, world->rank());
  Tensor out = Must(Tensor::Empty(Shape{7}, DType::kF32, engine::Context::Host()));
  ASSERT_TRUE(IsOk(AllReduce(*world, in, out)));
  std::vector<float> got = Must(out.ToHost<float>()), kept = Must(in.ToHost<float>());
  for (int64_t i = 0; i < 7; ++i) {
    double want = 0;
    for (int r = 0; r < world->size(); ++r) want += Input(r, i);
    EXPECT_EQ(got[i], want);
    EXPECT_EQ(kept[i], Input(world->rank(), i));
  }
}

TEST(Collectives, BroadcastFromEveryRoot) {
  std::shared_ptr<Communicator> world = WorldOrDie();
  for (int root = 0; root < world->size(); ++root) {
    for (int64_t size : kSizes) {
      Tensor t = Filled<double>(size, world->rank());
      ASSERT_TRUE(IsOk(Broadcast(*world, t, {.root = root})));
      std::vector<double> got = Must(t.ToHost<double>());
      for (int64_t i = 0; i < size; ++i) ASSERT_EQ(got[i], Input(root, i)) << i;
    }
  }
}

TEST(Collectives, AllGatherAndReduceScatter) {
  std::shared_ptr<Communicator> world = WorldOrDie();
  const int n = world->size(), me = world->rank();
  for (int64_t size : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{100'001}}) {
    Tensor in = Filled<float>(size, me);
    Tensor all = Must(Tensor::Empty(Shape{size * n}, DType::kF32, engine::Context::Host()));
    ASSERT_TRUE(IsOk(AllGather(*world, in, all)));
    std::vector<float> got = Must(all.ToHost<float>());
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < size; ++i) ASSERT_EQ(got[r * size + i], Input(r, i));

    // Reduce-scatter of a [n * size] input whose element j is Input(rank, j).
    Tensor big = Filled<float>(size * n, me);
    Tensor mine = Must(Tensor::Empty(Shape{size}, DType::kF32, engine::Context::Host()));
    ASSERT_TRUE(IsOk(ReduceScatter(*world, big, mine)));
    std::vector<float> block = Must(mine.ToHost<float>());
    for (int64_t i = 0; i < size; ++i) {
      double want = 0;
      for (int r = 0; r < n; ++r) want += Input(r, me * size + i);
      ASSERT_EQ(block[i], want) << i;
    }
  }
}

TEST(Collectives, ManyInFlightKeepTheirOrder) {
  // Pushed back to back without waiting; priorities reverse the engine's
  // preference, but the communicator runs them in push order on every rank.
  std::shared_ptr<Communicator> world = WorldOrDie();
  std::vector<Tensor> ts;
  for (int k = 0; k < 40; ++k) {
    ts.push_back(Filled<float>(1 + 97 * k, world->rank()));
    ASSERT_TRUE(IsOk(AllReduce(*world, ts.back(), ts.back(), {.priority = k})));
  }
  for (int k = 0; k < 40; ++k) {
    std::vector<float> got = Must(ts[k].ToHost<float>());
    double want = 0;
    for (int r = 0; r < world->size(); ++r) want += Input(r, 97 * k);
    ASSERT_EQ(got.back(), want) << k;
  }
  Tensor token = Must(Tensor::Empty(Shape{1}, DType::kF32, engine::Context::Host()));
  ASSERT_TRUE(IsOk(Barrier(*world, token)));
  EXPECT_TRUE(IsOk(token.WaitToWrite()));
}

TEST(Collectives, StreamCalls) {
  std::shared_ptr<Communicator> world = WorldOrDie();
  StreamExecutor* exec =
      Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
  ASSERT_NE(exec->AsCollectives(), nullptr);
  EXPECT_EQ(exec->AsCollectives()->Name(), "mpi");
  std::unique_ptr<Stream> stream = Must(exec->CreateStream());
  std::vector<float> host(5);
  for (int i = 0; i < 5; ++i) host[i] = static_cast<float>(Input(world->rank(), i));
  DeviceMemory<float> buf = Must(exec->AllocateArray<float>(5));
  stream->ThenMemcpyH2D<float>(host, &buf)
      .ThenAllReduce(world.get(), buf, &buf, 5)
      .ThenBarrier(world.get());
  stream->ThenMemcpyD2H<float>(buf, absl::MakeSpan(host));
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  for (int i = 0; i < 5; ++i) {
    double want = 0;
    for (int r = 0; r < world->size(); ++r) want += Input(r, i);
    EXPECT_EQ(host[i], want);
  }
  // A bad call fails the stream at once, naming the value.
  stream->ThenAllReduce(world.get(), buf, &buf, 6);
  EXPECT_TRUE(HasError(stream->status(), absl::StatusCode::kInvalidArgument,
                       {"buffer holds 20 bytes, 24 needed"}));
  EXPECT_TRUE(IsOk(exec->Deallocate(&buf)));
}

TEST(Collectives, BadArgumentsPushNothing) {
  std::shared_ptr<Communicator> world = WorldOrDie();
  Tensor f = Filled<float>(4, 0), d = Filled<double>(4, 0), three = Filled<float>(3, 0);
  Tensor ints = Must(Tensor::Empty(Shape{4}, DType::kI32, engine::Context::Host()));
  EXPECT_TRUE(HasError(AllReduce(*world, f, d), absl::StatusCode::kInvalidArgument, {"dtype"}));
  EXPECT_TRUE(HasError(AllReduce(*world, f, three), absl::StatusCode::kInvalidArgument,
                       {"must hold 4 elements"}));
  EXPECT_TRUE(HasError(AllReduce(*world, ints, ints), absl::StatusCode::kInvalidArgument,
                       {"not float32 or float64"}));
  EXPECT_TRUE(HasError(Broadcast(*world, f, {.root = world->size()}),
                       absl::StatusCode::kInvalidArgument, {"root"}));
  EXPECT_TRUE(
      HasError(AllGather(*world, f, three), absl::StatusCode::kInvalidArgument, {"must hold"}));
  // Views of one tensor that overlap in part (MPI takes in place or disjoint).
  Tensor eight = Filled<float>(8, 0);
  EXPECT_TRUE(HasError(AllReduce(*world, Must(eight.Slice(0, 4)), Must(eight.Slice(2, 6))),
                       absl::StatusCode::kInvalidArgument, {"overlap in part"}));
  // The communicator still works: nothing was numbered.
  ASSERT_TRUE(IsOk(AllReduce(*world, f, f)));
  EXPECT_TRUE(IsOk(f.WaitToRead()));
}

TEST(CollectiveFailures, DifferentCollectivesAcrossRanksAreNamed) {
  StreamExecutor* exec =
      Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
  CommunicatorOptions o;
  o.timeout = std::chrono::seconds(20);
  std::shared_ptr<Communicator> c = Must(exec->AsCollectives()->NewCommunicator(o));
  if (c->size() < 2) GTEST_SKIP() << "needs 2 ranks (run by mpiexec -n 2)";
  // Rank 1 reduces one element more: no data moves, both ranks fail.
  Tensor t = Filled<float>(c->rank() == 1 ? 11 : 10, c->rank());
  ASSERT_TRUE(IsOk(AllReduce(*c, t, t, {.name = "grads"})));
  absl::Status s = t.WaitToRead();
  EXPECT_TRUE(HasError(s, absl::StatusCode::kFailedPrecondition,
                       {"different collectives as #0", "float x10 'grads'", "float x11 'grads'"}))
      << s;
  EXPECT_EQ(c->health().code(), absl::StatusCode::kFailedPrecondition);
  // Later collectives fail at once with the same error.
  Tensor u = Filled<float>(2, c->rank());
  ASSERT_TRUE(IsOk(AllReduce(*c, u, u)));
  EXPECT_TRUE(HasError(u.WaitToRead(), absl::StatusCode::kFailedPrecondition, {"different"}));
}

TEST(CollectiveFailures, MissingRankTimesOutNamingIt) {
  StreamExecutor* exec =
      Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
  CommunicatorOptions o;
  o.timeout = std::chrono::milliseconds(1500);
  o.stall_warning = std::chrono::milliseconds(500);
  std::shared_ptr<Communicator> c = Must(exec->AsCollectives()->NewCommunicator(o));
  if (c->size() < 2) GTEST_SKIP() << "needs 2 ranks (run by mpiexec -n 2)";
  // The last rank never joins this collective.
  if (c->rank() == c->size() - 1) return;
  Tensor t = Filled<float>(3, c->rank());
  ASSERT_TRUE(IsOk(AllReduce(*c, t, t, {.name = "never joined"})));
  absl::Status s = t.WaitToRead();
  EXPECT_TRUE(HasError(s, absl::StatusCode::kDeadlineExceeded,
                       {absl::StrCat("rank ", c->size() - 1, " did not join"), "'never joined'"}))
      << s;
}

TEST(CollectiveFailures, AnInputPoisonedOnOneRankFailsEveryRankWithoutWaiting) {
  StreamExecutor* exec =
      Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
  CommunicatorOptions o;
  o.timeout = std::chrono::seconds(60);  // Far longer than the test may take.
  std::shared_ptr<Communicator> c = Must(exec->AsCollectives()->NewCommunicator(o));
  if (c->size() < 2) GTEST_SKIP() << "needs 2 ranks (run by mpiexec -n 2)";
  Tensor t = Filled<float>(5, c->rank());
  if (c->rank() == 1) {
    // The producer of rank 1's input fails: the engine skips the collective.
    ASSERT_TRUE(IsOk(t.engine()->PushSync(
        [](engine::RunContext) { return absl::InternalError("the producer failed"); },
        engine::Context::Host(), {}, {t.var()})));
  }
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(IsOk(AllReduce(*c, t, t, {.name = "after a failure"})));
  absl::Status s = t.WaitToRead();
  if (c->rank() == 1) {
    EXPECT_TRUE(HasError(s, absl::StatusCode::kInternal, {"the producer failed"})) << s;
  } else {
    EXPECT_TRUE(HasError(s, absl::StatusCode::kFailedPrecondition,
                         {"rank 1 issued a collective whose arguments it refused"}))
        << s;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

}  // namespace
}  // namespace rill::dist
