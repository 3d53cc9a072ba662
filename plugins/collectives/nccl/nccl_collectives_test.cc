// Tests of the "nccl" collectives plugin. Loading libnccl, the error text,
// registration, the bootstrap rules and the unique-id exchange (through a
// fake bootstrap communicator, and through the "mpi" plugin where it is
// built) run everywhere. The collectives run on CUDA device 0 with a
// one-rank communicator and skip with the reason ("no CUDA device: ...")
// where there is none: every kind, reduce op and element type against
// values computed here, out-of-order Issue calls, a Stream::Then* call
// that must wait for an unissued lower number, and the watchdog.

#include "rill/plugins/collectives/nccl/nccl_collectives.h"

#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rill/platform/cuda/cuda_platform.h"
#include "rill/plugins/collectives/collectives.h"
#include "rill/plugins/collectives/nccl/nccl_communicator.h"
#include "rill/plugins/collectives/nccl/nccl_library.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using nccl_collectives::ExchangeUniqueId;
using nccl_collectives::LoadNccl;
using nccl_collectives::NcclApi;
using nccl_collectives::NcclCommunicator;
using nccl_collectives::NcclStatus;
using testing::HasError;
using testing::IsOk;
using testing::Must;

constexpr size_t kIdBytes = NCCL_UNIQUE_ID_BYTES;

// A host communicator that answers the unique-id broadcast as told.
class FakeBootstrap final : public Communicator {
 public:
  enum class Answer {
    kLoopback,  // Rank 0 of 1: the buffer stays as it is.
    kRootSent,  // The root's id arrives: `root_bytes` and `root_flag`.
    kFail,      // done(Unavailable("peer gone")).
    kNever,     // done is kept and called (OK) only when destroyed.
  };
  FakeBootstrap(int rank, int size, Answer answer) : Communicator(rank, size), answer_(answer) {}
  ~FakeBootstrap() override {
    if (held_) std::move(held_)(absl::OkStatus());
  }

  std::string Name() const override { return "fake"; }
  std::string Version() const override { return "fake 1"; }
  std::vector<std::string> Devices() const override { return {"host"}; }
  std::string Algorithm() const override { return "fake"; }
  bool HostMemory() const override { return host_memory; }
  absl::Status health() const override { return absl::OkStatus(); }
  CommunicatorStats stats() const override { return {}; }
  uint64_t NextSequence() override { return next_++; }
  void Issue(uint64_t seq, CollectiveArgs args, Stream* stream, CollectiveDone done) override {
    issued.push_back(args);
    seqs.push_back(seq);
    auto* p = static_cast<unsigned char*>(HostPointer(args.recv));
    sent.assign(p, p + args.recv.size());  // What this rank put in.
    switch (answer_) {
      case Answer::kLoopback:
        std::move(done)(absl::OkStatus());
        return;
      case Answer::kRootSent:
        std::memcpy(p, root_bytes.data(), kIdBytes);
        std::memcpy(p + args.recv.size() - sizeof(float), &root_flag, sizeof(float));
        std::move(done)(absl::OkStatus());
        return;
      case Answer::kFail:
        std::move(done)(absl::UnavailableError("peer gone"));
        return;
      case Answer::kNever:
        held_ = std::move(done);
        return;
    }
  }

  bool host_memory = true;
  std::vector<unsigned char> root_bytes = std::vector<unsigned char>(kIdBytes, 0);
  float root_flag = 1.0f;
  std::vector<CollectiveArgs> issued;
  std::vector<uint64_t> seqs;
  std::vector<unsigned char> sent;

 private:
  const Answer answer_;
  uint64_t next_ = 0;
  CollectiveDone held_;
};

std::vector<unsigned char> Pattern(int salt) {
  std::vector<unsigned char> v(kIdBytes);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<unsigned char>(i * 7 + salt);
  return v;
}

// --- Everywhere.

TEST(NcclLibraryTest, LoadsAndReportsItsVersion) {
  const NcclApi* api = Must(LoadNccl());
  EXPECT_EQ(api->version_code, NCCL_VERSION_CODE);
  EXPECT_EQ(nccl_collectives::LibraryVersion(),
            absl::StrCat("NCCL ", NCCL_MAJOR, ".", NCCL_MINOR, ".", NCCL_PATCH));
}

TEST(NcclLibraryTest, ErrorsNameTheCallAndNcclsText) {
  const NcclApi* api = Must(LoadNccl());
  EXPECT_TRUE(IsOk(NcclStatus(*api, ncclSuccess, "ncclAllReduce")));
  // A real failure: NCCL's last-error text comes with it.
  const ncclResult_t r =
      api->AllReduce(nullptr, nullptr, 1, ncclFloat32, ncclSum, nullptr, nullptr);
  ASSERT_EQ(r, ncclInvalidArgument);
  EXPECT_TRUE(HasError(NcclStatus(*api, r, "ncclAllReduce"), absl::StatusCode::kInvalidArgument,
                       {"NCCL: ncclAllReduce failed: invalid argument", "comm argument is NULL"}));
  EXPECT_TRUE(HasError(NcclStatus(*api, ncclRemoteError, "ncclBroadcast"),
                       absl::StatusCode::kUnavailable, {"ncclBroadcast", "remote process"}));
  EXPECT_TRUE(HasError(NcclStatus(*api, ncclInternalError, "x"), absl::StatusCode::kInternal,
                       {"NCCL: x failed: internal error"}));
}

TEST(NcclRegistryTest, RegisteredAsTheCudaDefault) {
  bool found = false;
  for (const PluginRegistry::Entry& e : PluginRegistry::Default().List()) {
    if (e.platform != kCudaPlatformId || e.kind != PluginKind::kCollectives || e.name != "nccl")
      continue;
    found = true;
    if (std::getenv("RILL_COLLECTIVES") == nullptr) {
      EXPECT_TRUE(e.is_default);
    }
  }
  EXPECT_TRUE(found) << "no \"nccl\" collectives plugin registered for the cuda platform";
}

TEST(NcclCreateTest, RejectsAHostExecutorAndNull) {
  StreamExecutor* host =
      Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
  EXPECT_TRUE(HasError(NcclCollectives::Create(host).status(), absl::StatusCode::kInvalidArgument,
                       {"not a CUDA executor"}));
  EXPECT_TRUE(HasError(NcclCollectives::Create(nullptr).status(),
                       absl::StatusCode::kInvalidArgument, {"null"}));
}

TEST(NcclCommunicatorTest, NeedsABootstrap) {
  EXPECT_TRUE(HasError(NcclCommunicator::Create(0, CommunicatorOptions{}).status(),
                       absl::StatusCode::kInvalidArgument,
                       {"needs a bootstrap communicator", "CommunicatorOptions::bootstrap"}));
}

TEST(NcclCommunicatorTest, NeedsAHostMemoryBootstrap) {
  FakeBootstrap fake(0, 1, FakeBootstrap::Answer::kLoopback);
  fake.host_memory = false;
  CommunicatorOptions o;
  o.bootstrap = &fake;
  EXPECT_TRUE(HasError(NcclCommunicator::Create(0, o).status(), absl::StatusCode::kInvalidArgument,
                       {"host memory", "'fake'"}));
  EXPECT_TRUE(fake.issued.empty());
}

TEST(NcclUniqueIdTest, GoesOutAsOneBroadcastOfTheRoot) {
  FakeBootstrap fake(1, 2, FakeBootstrap::Answer::kRootSent);
  fake.root_bytes = Pattern(3);
  std::vector<unsigned char> id(kIdBytes, 0);
  ASSERT_TRUE(IsOk(
      ExchangeUniqueId(&fake, absl::OkStatus(), std::chrono::seconds(5), id.data(), id.size())));
  EXPECT_EQ(id, Pattern(3));
  ASSERT_EQ(fake.issued.size(), 1u);
  const CollectiveArgs& a = fake.issued[0];
  EXPECT_EQ(a.kind, CollectiveKind::kBroadcast);
  EXPECT_EQ(a.type, DataType::kFloat);
  EXPECT_EQ(a.count, 33);  // 128 bytes of id and a flag.
  EXPECT_EQ(a.root, 0);
  EXPECT_EQ(a.name, "nccl unique id");
  EXPECT_EQ(a.send, a.recv);
  EXPECT_EQ(a.recv.size(), 33 * sizeof(float));
  EXPECT_TRUE(IsOk(CheckCollectiveArgs(a, 2)));
  EXPECT_EQ(fake.seqs, std::vector<uint64_t>{0});
}

TEST(NcclUniqueIdTest, TheRootSendsItsIdAndAFlag) {
  FakeBootstrap fake(0, 2, FakeBootstrap::Answer::kLoopback);
  std::vector<unsigned char> id = Pattern(5);
  ASSERT_TRUE(IsOk(
      ExchangeUniqueId(&fake, absl::OkStatus(), std::chrono::seconds(5), id.data(), id.size())));
  ASSERT_EQ(fake.sent.size(), 33 * sizeof(float));
  EXPECT_TRUE(std::equal(id.begin(), id.end(), fake.sent.begin()));
  float flag = 0;
  std::memcpy(&flag, fake.sent.data() + kIdBytes, sizeof flag);
  EXPECT_EQ(flag, 1.0f);

  // A root without an id still takes part (flag 0) and returns its error.
  FakeBootstrap failed(0, 2, FakeBootstrap::Answer::kLoopback);
  EXPECT_TRUE(HasError(ExchangeUniqueId(&failed, absl::InternalError("no id here"),
                                        std::chrono::seconds(5), id.data(), id.size()),
                       absl::StatusCode::kInternal, {"no id here"}));
  ASSERT_EQ(failed.issued.size(), 1u);
  std::memcpy(&flag, failed.sent.data() + kIdBytes, sizeof flag);
  EXPECT_EQ(flag, 0.0f);
}

TEST(NcclUniqueIdTest, ARankWhoseRootHadNoIdFails) {
  FakeBootstrap fake(1, 2, FakeBootstrap::Answer::kRootSent);
  fake.root_flag = 0.0f;
  CommunicatorOptions o;
  o.bootstrap = &fake;
  EXPECT_TRUE(HasError(NcclCommunicator::Create(0, o).status(),
                       absl::StatusCode::kFailedPrecondition, {"rank 0 could not make"}));
}

TEST(NcclUniqueIdTest, ABootstrapErrorIsReturned) {
  FakeBootstrap fake(1, 2, FakeBootstrap::Answer::kFail);
  CommunicatorOptions o;
  o.bootstrap = &fake;
  EXPECT_TRUE(HasError(NcclCommunicator::Create(0, o).status(), absl::StatusCode::kUnavailable,
                       {"NCCL unique id", "(fake)", "peer gone"}));
}

TEST(NcclUniqueIdTest, ABootstrapThatNeverAnswersTimesOut) {
  auto fake = std::make_unique<FakeBootstrap>(1, 2, FakeBootstrap::Answer::kNever);
  CommunicatorOptions o;
  o.bootstrap = fake.get();
  o.timeout = std::chrono::milliseconds(100);
  EXPECT_TRUE(HasError(NcclCommunicator::Create(0, o).status(), absl::StatusCode::kDeadlineExceeded,
                       {"did not arrive", "within 0.1 s"}));
  fake.reset();  // Answers now, into memory the exchange left alive.
}

// Where there is no CUDA device, everything up to the device is reachable:
// the exchange runs and the device's error comes back.
TEST(NcclCommunicatorTest, WithoutADeviceTheDevicesErrorComesBack) {
  absl::StatusOr<Platform*> cuda = PlatformManager::Default().PlatformWithName("cuda");
  if (cuda.ok() && (*cuda)->VisibleDeviceCount() > 0) GTEST_SKIP() << "there is a CUDA device";
  FakeBootstrap fake(0, 1, FakeBootstrap::Answer::kLoopback);
  CommunicatorOptions o;
  o.bootstrap = &fake;
  absl::Status s = NcclCommunicator::Create(0, o).status();
  EXPECT_TRUE(HasError(s, absl::StatusCode::kUnavailable, {"cudaSetDevice(0)"}));
  EXPECT_EQ(fake.issued.size(), 1u);  // The id went out first.
}

#ifdef RILL_HAVE_MPI
// The "mpi" plugin's communicator as the bootstrap: a program not launched
// by MPI is one rank.
std::shared_ptr<Communicator> MpiWorld() {
  static std::shared_ptr<Communicator>* world = [] {
    StreamExecutor* host =
        Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
    CollectivesSupport* c = host->AsCollectives();
    if (c == nullptr) return new std::shared_ptr<Communicator>();
    return new std::shared_ptr<Communicator>(Must(c->NewCommunicator(CommunicatorOptions{})));
  }();
  return *world;
}

TEST(NcclMpiBootstrapTest, TheIdGoesThroughMpi) {
  std::shared_ptr<Communicator> mpi = MpiWorld();
  ASSERT_NE(mpi, nullptr) << "the host executor has no collectives plugin";
  ASSERT_EQ(mpi->Name(), "mpi");
  const int64_t before = mpi->stats().collectives;
  CommunicatorOptions o;
  o.bootstrap = mpi.get();
  absl::StatusOr<std::shared_ptr<NcclCommunicator>> c = NcclCommunicator::Create(0, o);
  EXPECT_EQ(mpi->stats().collectives, before + 1);
  EXPECT_TRUE(IsOk(mpi->health()));
  absl::StatusOr<Platform*> cuda = PlatformManager::Default().PlatformWithName("cuda");
  if (cuda.ok() && (*cuda)->VisibleDeviceCount() > 0) {
    ASSERT_TRUE(IsOk(c.status()));
    EXPECT_EQ((*c)->size(), mpi->size());
    EXPECT_EQ((*c)->rank(), mpi->rank());
  } else {
    EXPECT_TRUE(HasError(c.status(), absl::StatusCode::kUnavailable));
  }
}
#endif

// --- On CUDA device 0.

class NcclDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Platform*> cuda = PlatformManager::Default().PlatformWithName("cuda");
    if (!cuda.ok()) GTEST_SKIP() << "no CUDA platform: " << cuda.status();
    if ((*cuda)->VisibleDeviceCount() == 0)
      GTEST_SKIP() << (*cuda)->Availability().message();  // "no CUDA device: ..."
    exec_ = Must((*cuda)->ExecutorForDevice(0));
    ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kCollectives, "nccl")));
    plugin_ = exec_->AsCollectives();
    ASSERT_NE(plugin_, nullptr);
    stream_ = Must(exec_->CreateStream());
    comm_ = NewComm(CommunicatorOptions{});
    ASSERT_NE(comm_, nullptr);
  }

  // A communicator of this process's ranks: over MPI where built (one rank
  // unless launched by mpirun), else a one-rank loopback bootstrap.
  std::shared_ptr<Communicator> NewComm(CommunicatorOptions o) {
#ifdef RILL_HAVE_MPI
    bootstrap_ = MpiWorld();
#endif
    if (bootstrap_ == nullptr)
      bootstrap_ = std::make_shared<FakeBootstrap>(0, 1, FakeBootstrap::Answer::kLoopback);
    o.bootstrap = bootstrap_.get();
    return Must(plugin_->NewCommunicator(o));
  }

  template <typename T>
  DeviceMemory<T> Upload(const std::vector<T>& host) {
    auto owned = std::make_shared<ScopedDeviceMemory<T>>(
        Must(exec_->AllocateOwnedArray<T>(std::max<size_t>(host.size(), 1))));
    keep_.push_back(owned);
    DeviceMemory<T> view = *owned->ptr();
    if (!host.empty()) {
      DeviceMemoryBase b = view;
      stream_->ThenMemcpy(&b, host.data(), host.size() * sizeof(T));
    }
    EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    return view;
  }

  template <typename T>
  std::vector<T> Download(const DeviceMemory<T>& memory) {
    std::vector<T> host(memory.size() / sizeof(T));
    stream_->ThenMemcpy(host.data(), memory, memory.size());
    EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    return host;
  }

  template <typename T>
  static std::vector<T> Values(size_t n, int salt) {
    std::vector<T> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = static_cast<T>((static_cast<int>(i) * 37 + salt) % 101) / 4;
    return v;
  }

  // Every rank of this test holds the same values: the reduction over
  // `size` ranks of x.
  template <typename T>
  static T Reduce(T x, ReduceOp op, int size) {
    switch (op) {
      case ReduceOp::kSum:
        return x * size;
      case ReduceOp::kAverage:
      case ReduceOp::kMax:
      case ReduceOp::kMin:
        return x;
    }
    return x;
  }

  template <typename T>
  void CheckAllKinds();

  StreamExecutor* exec_ = nullptr;
  CollectivesSupport* plugin_ = nullptr;
  std::unique_ptr<Stream> stream_;
  std::shared_ptr<Communicator> bootstrap_;
  std::shared_ptr<Communicator> comm_;
  std::vector<std::shared_ptr<void>> keep_;
};

template <typename T>
void NcclDeviceTest::CheckAllKinds() {
  const int size = comm_->size(), rank = comm_->rank();
  const size_t n = 1000;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMax, ReduceOp::kMin}) {
    SCOPED_TRACE(ReduceOpName(op));
    const std::vector<T> x = Values<T>(n, 1);
    DeviceMemory<T> send = Upload(x), recv = Upload(std::vector<T>(n, T(-7)));
    stream_->ThenAllReduce(comm_.get(), send, &recv, n, op);
    std::vector<T> got = Download(recv);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], Reduce(x[i], op, size)) << i;
    EXPECT_EQ(Download(send), x);                             // Out of place: the input stays.
    stream_->ThenAllReduce(comm_.get(), send, &send, n, op);  // In place.
    got = Download(send);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], Reduce(x[i], op, size)) << i;

    DeviceMemory<T> big = Upload(Values<T>(n * size, 2)), block = Upload(std::vector<T>(n, T(0)));
    const std::vector<T> all = Values<T>(n * size, 2);
    stream_->ThenReduceScatter(comm_.get(), big, &block, n, op);
    got = Download(block);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], Reduce(all[rank * n + i], op, size)) << i;
  }
  {
    const std::vector<T> x = Values<T>(n, 3);
    DeviceMemory<T> buf = Upload(x);
    stream_->ThenBroadcast(comm_.get(), &buf, n, 0);
    EXPECT_EQ(Download(buf), x);
  }
  {
    const std::vector<T> x = Values<T>(n, 4);
    DeviceMemory<T> send = Upload(x), recv = Upload(std::vector<T>(n * size, T(0)));
    stream_->ThenAllGather(comm_.get(), send, &recv, n);
    const std::vector<T> got = Download(recv);
    for (int r = 0; r < size; ++r)
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[r * n + i], x[i]) << r << " " << i;
  }
  stream_->ThenBarrier(comm_.get());
  EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
}

TEST_F(NcclDeviceTest, DescribesItself) {
  EXPECT_EQ(plugin_->Name(), "nccl");
  EXPECT_EQ(plugin_->Version(), nccl_collectives::LibraryVersion());
  EXPECT_EQ(comm_->Name(), "nccl");
  EXPECT_EQ(comm_->Version(), nccl_collectives::LibraryVersion());
  EXPECT_EQ(comm_->Devices(), std::vector<std::string>{"cuda:0"});
  EXPECT_FALSE(comm_->HostMemory());
  EXPECT_EQ(comm_->size(), bootstrap_->size());
  EXPECT_EQ(comm_->rank(), bootstrap_->rank());
  EXPECT_TRUE(IsOk(comm_->health()));
}

TEST_F(NcclDeviceTest, FloatCollectives) { CheckAllKinds<float>(); }
TEST_F(NcclDeviceTest, DoubleCollectives) { CheckAllKinds<double>(); }

TEST_F(NcclDeviceTest, CountsWhatItRan) {
  const std::vector<float> x = Values<float>(256, 5);
  DeviceMemory<float> buf = Upload(x);
  const CommunicatorStats before = comm_->stats();
  for (int i = 0; i < 3; ++i) stream_->ThenAllReduce(comm_.get(), buf, &buf, x.size());
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  const CommunicatorStats after = comm_->stats();
  EXPECT_EQ(after.collectives, before.collectives + 3);
  EXPECT_EQ(after.bytes, before.bytes + 3 * 256 * sizeof(float));
  EXPECT_GT(after.transfer_seconds, before.transfer_seconds);
}

TEST_F(NcclDeviceTest, IssueRunsInSequenceOrder) {
  const size_t n = 512;
  const std::vector<float> x = Values<float>(n, 6);
  DeviceMemory<float> a = Upload(x), b = Upload(x);
  auto issue = [&](uint64_t seq, DeviceMemory<float> m, std::promise<absl::Status>* p) {
    CollectiveArgs args{CollectiveKind::kAllReduce,
                        DataType::kFloat,
                        ReduceOp::kSum,
                        m,
                        m,
                        static_cast<int64_t>(n),
                        0,
                        absl::StrCat("#", seq)};
    comm_->Issue(seq, args, stream_.get(), [p](absl::Status s) { p->set_value(s); });
  };
  const uint64_t first = comm_->NextSequence(), second = comm_->NextSequence();
  std::promise<absl::Status> p1, p2;
  std::future<absl::Status> f1 = p1.get_future(), f2 = p2.get_future();
  issue(second, b, &p2);  // Waits for `first`.
  EXPECT_EQ(f2.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  std::thread t([&] { issue(first, a, &p1); });  // Enqueues both, in order.
  t.join();
  EXPECT_TRUE(IsOk(f1.get()));
  EXPECT_TRUE(IsOk(f2.get()));
  const int size = comm_->size();
  for (const DeviceMemory<float>& m : {a, b}) {
    const std::vector<float> got = Download(m);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], x[i] * size) << i;
  }
}

TEST_F(NcclDeviceTest, AThenCallWaitsForAnUnissuedLowerNumber) {
  const size_t n = 512;
  const std::vector<float> x = Values<float>(n, 7);
  DeviceMemory<float> a = Upload(x), b = Upload(x);
  std::unique_ptr<Stream> other = Must(exec_->CreateStream());
  const uint64_t first = comm_->NextSequence();  // Issued later, from another thread.
  // Numbered after `first`: runs once `first` is issued, and `stream_` waits.
  stream_->ThenAllReduce(comm_.get(), b, &b, n, ReduceOp::kSum);
  std::vector<float> got(n, -1);
  stream_->ThenMemcpy(got.data(), b, n * sizeof(float));
  std::promise<absl::Status> p;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CollectiveArgs args{CollectiveKind::kAllReduce,
                        DataType::kFloat,
                        ReduceOp::kSum,
                        a,
                        a,
                        static_cast<int64_t>(n),
                        0,
                        "first"};
    comm_->Issue(first, args, other.get(), [&p](absl::Status s) { p.set_value(s); });
  });
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  t.join();
  EXPECT_TRUE(IsOk(p.get_future().get()));
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], x[i] * comm_->size()) << i;
  ASSERT_TRUE(IsOk(other->BlockHostUntilDone()));
}

TEST_F(NcclDeviceTest, ANumberNeverIssuedTimesOutAndFailsTheCommunicator) {
  CommunicatorOptions o;
  o.timeout = std::chrono::milliseconds(300);
  o.stall_warning = std::chrono::milliseconds(200);
  std::shared_ptr<Communicator> comm = NewComm(o);
  DeviceMemory<float> buf = Upload(Values<float>(16, 8));
  const uint64_t lost = comm->NextSequence();
  std::promise<absl::Status> p;
  comm->Issue(comm->NextSequence(),
              {CollectiveKind::kAllReduce, DataType::kFloat, ReduceOp::kSum, buf, buf, 16, 0, ""},
              stream_.get(), [&p](absl::Status s) { p.set_value(s); });
  std::future<absl::Status> f = p.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_TRUE(HasError(f.get(), absl::StatusCode::kDeadlineExceeded,
                       {absl::StrCat("collective #", lost), "not issued"}));
  EXPECT_TRUE(HasError(comm->health(), absl::StatusCode::kDeadlineExceeded));
  // Failed for good: the late one and any later one fail at once.
  std::promise<absl::Status> late;
  comm->Issue(lost, {CollectiveKind::kBarrier, DataType::kFloat, ReduceOp::kSum, {}, {}, 0, 0, ""},
              stream_.get(), [&late](absl::Status s) { late.set_value(s); });
  EXPECT_TRUE(HasError(late.get_future().get(), absl::StatusCode::kDeadlineExceeded));
  stream_->ThenBarrier(comm.get());
  EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), absl::StatusCode::kDeadlineExceeded));
}

TEST_F(NcclDeviceTest, RefusesOtherCommunicatorsAndBadArguments) {
  FakeBootstrap fake(0, 1, FakeBootstrap::Answer::kLoopback);
  CollectiveArgs barrier{
      CollectiveKind::kBarrier, DataType::kFloat, ReduceOp::kSum, {}, {}, 0, 0, ""};
  EXPECT_TRUE(HasError(plugin_->Run(stream_.get(), &fake, barrier),
                       absl::StatusCode::kInvalidArgument, {"'fake' communicator"}));
  DeviceMemory<float> small = Upload(std::vector<float>(4, 1.0f));
  CollectiveArgs too_big{
      CollectiveKind::kAllReduce, DataType::kFloat, ReduceOp::kSum, small, small, 100, 0, ""};
  EXPECT_TRUE(HasError(plugin_->Run(stream_.get(), comm_.get(), too_big),
                       absl::StatusCode::kInvalidArgument, {"bytes"}));
  EXPECT_TRUE(IsOk(comm_->health()));  // Nothing was numbered.
  stream_->ThenBarrier(comm_.get());
  EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
}

TEST_F(NcclDeviceTest, AnIssueWithoutAStreamFailsTheCommunicator) {
  std::shared_ptr<Communicator> comm = NewComm(CommunicatorOptions{});
  std::promise<absl::Status> p;
  comm->Issue(comm->NextSequence(),
              {CollectiveKind::kBarrier, DataType::kFloat, ReduceOp::kSum, {}, {}, 0, 0, ""},
              nullptr, [&p](absl::Status s) { p.set_value(s); });
  EXPECT_TRUE(HasError(p.get_future().get(), absl::StatusCode::kInvalidArgument, {"stream"}));
  EXPECT_TRUE(HasError(comm->health(), absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace rill
