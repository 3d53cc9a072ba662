// Host library plugins (plugins/host_library.h) on a second platform whose
// memory is host memory: the host backend under another id and name
// ("hostmem"), given the plugins with RegisterHostLibraryPlugins. Each
// library computes there against a naive reference; the registry's repeats,
// late registrations and bad input; a device without host-addressable
// memory or host callbacks refused at plugin creation; EnqueueHostWork's
// checks.

#include "rill/plugins/host_library.h"

#include <cmath>
#include <complex>
#include <cstring>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "rill/base/logging.h"
#include "rill/platform/host/host_executor.h"
#include "rill/platform/host/host_platform.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using testing::HasError;
using testing::IsOk;
using testing::Must;

const PlatformIdInfo kHostMemIdInfo{"hostmem"};
const PlatformId kHostMemId = &kHostMemIdInfo;

HostPlatformOptions Options(const PlatformIdInfo* id) {
  HostPlatformOptions options;
  options.name = id->name;
  options.id = id;
  options.device_count = 1;
  options.memory_limit_bytes = 64 << 20;
  return options;
}

// The host backend with Supports() saying no to `missing`: a device whose
// memory is not host memory, or one without host callbacks.
class LimitedExecutor : public HostExecutor {
 public:
  LimitedExecutor(DeviceDescription description, Feature missing)
      : HostExecutor(std::move(description), 64 << 20), missing_(missing) {}
  absl::Status Supports(Feature feature) const override {
    if (feature == missing_) return absl::UnimplementedError("this test device has none");
    return absl::OkStatus();
  }

 private:
  const Feature missing_;
};

class LimitedPlatform : public HostPlatform {
 public:
  LimitedPlatform(const PlatformIdInfo* id, Feature missing)
      : HostPlatform(Options(id)), missing_(missing) {}

 protected:
  absl::StatusOr<std::unique_ptr<StreamExecutorInterface>> CreateExecutorImplementation(
      const StreamExecutorConfig& config) override {
    return std::make_unique<LimitedExecutor>(*DescriptionForDevice(config.ordinal), missing_);
  }

 private:
  const Feature missing_;
};

StreamExecutor* ExecutorOf(PlatformManager& manager, std::string_view name) {
  Platform* platform = Must(manager.PlatformWithName(name), "platform");
  return Must(platform->ExecutorForDevice(0), "executor");
}

// "hostmem", with the host library plugins, for the whole binary.
class HostLibraryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    manager_ = new PlatformManager();
    RILL_CHECK_OK(manager_->RegisterPlatform(std::make_unique<HostPlatform>(Options(kHostMemId))));
    RILL_CHECK_OK(RegisterHostLibraryPlugins(kHostMemId));
  }
  static void TearDownTestSuite() {
    delete manager_;
    manager_ = nullptr;
  }

  void SetUp() override {
    executor_ = ExecutorOf(*manager_, "hostmem");
    host_ = ExecutorOf(PlatformManager::Default(), "host");
    stream_ = Must(executor_->CreateStream());
  }

  template <typename T>
  ScopedDeviceMemory<T> Upload(const std::vector<T>& values) {
    ScopedDeviceMemory<T> memory = Must(executor_->AllocateOwnedArray<T>(values.size()));
    stream_->ThenMemcpy(memory.ptr(), values.data(), values.size() * sizeof(T));
    EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));  // `values` may go next.
    return memory;
  }
  template <typename T>
  std::vector<T> Download(const DeviceMemory<T>& memory) {
    std::vector<T> values(memory.ElementCount());
    stream_->ThenMemcpy(values.data(), memory, memory.size());
    EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    return values;
  }

  static PlatformManager* manager_;
  StreamExecutor* executor_ = nullptr;  // hostmem:0
  StreamExecutor* host_ = nullptr;      // host:0
  std::unique_ptr<Stream> stream_;      // hostmem:0's.
};

PlatformManager* HostLibraryTest::manager_ = nullptr;

// --- The feature.

TEST_F(HostLibraryTest, BothPlatformsDeclareHostAddressableMemory) {
  EXPECT_STREQ(FeatureName(Feature::kHostAddressableMemory), "host-addressable memory");
  EXPECT_TRUE(IsOk(host_->Supports(Feature::kHostAddressableMemory)));
  EXPECT_TRUE(IsOk(executor_->Supports(Feature::kHostAddressableMemory)));
  EXPECT_EQ(executor_->DebugName(), "hostmem:0");
}

// The contract: the handle plus the offset is a host address, which a host
// callback of the stream reads after earlier work wrote it.
TEST_F(HostLibraryTest, MemoryIsHostMemoryThatHostCallbacksSee) {
  ScopedDeviceMemory<int> memory = Upload(std::vector<int>{1, 2, 3, 4});
  DeviceMemory<int> tail = Must(memory->GetSlice(2, 2));
  EXPECT_EQ(Must(executor_->HostAddress(tail)), HostPointer(tail));
  EXPECT_EQ(HostPointer(tail), static_cast<char*>(memory->opaque()) + 2 * sizeof(int));
  int seen = 0;
  stream_->ThenMemset32(&tail, 7, 8).ThenDoHostCallback([&] {
    seen = static_cast<int*>(HostPointer(tail))[1];
    static_cast<int*>(HostPointer(tail))[0] = 9;  // The host writes; a later copy reads it.
  });
  EXPECT_EQ(Download(*memory), (std::vector<int>{1, 2, 9, 7}));
  EXPECT_EQ(seen, 7);
}

// --- Each library on hostmem, with the host's defaults.

TEST_F(HostLibraryTest, DefaultsAreTheHosts) {
  for (PluginKind kind : kAllPluginKinds) {
    SCOPED_TRACE(PluginKindName(kind));
    EXPECT_EQ(Must(PluginRegistry::Default().DefaultName(kHostMemId, kind)),
              Must(PluginRegistry::Default().DefaultName(kHostPlatformId, kind)));
  }
}

#ifdef RILL_HAVE_OPENBLAS
TEST_F(HostLibraryTest, GemmThroughOpenBlas) {
  ASSERT_NE(executor_->AsBlas(), nullptr);
  EXPECT_EQ(executor_->AsBlas()->Name(), "openblas");
  const int m = 5, n = 7, k = 3;  // Column-major: A m x k, B k x n, C m x n.
  std::vector<float> a(m * k), b(k * n), c(m * n, 1.0f);
  for (int i = 0; i < m * k; ++i) a[i] = 0.5f * static_cast<float>(i % 7) - 1;
  for (int i = 0; i < k * n; ++i) b[i] = 0.25f * static_cast<float>(i % 5) + 0.5f;
  ScopedDeviceMemory<float> da = Upload(a), db = Upload(b), dc = Upload(c);
  stream_->ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, m, n, k, 2.0f, *da, m,
                        *db, k, 0.5f, dc.ptr(), m);
  const std::vector<float> got = Download(*dc);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double want = 0.5 * c[i + j * m];
      for (int l = 0; l < k; ++l) want += 2.0 * a[i + l * m] * b[l + j * k];
      // A few roundings of terms below 10 in magnitude.
      EXPECT_NEAR(got[i + j * m], want, 1e-5 * (k + 2) * 10) << "C(" << i << ", " << j << ")";
    }
  }
}
#endif

#ifdef RILL_HAVE_FFTW
TEST_F(HostLibraryTest, FftThroughFftw) {
  FftSupport* fft = executor_->AsFft();
  ASSERT_NE(fft, nullptr);
  EXPECT_EQ(fft->Name(), "fftw");
  const int n = 12, batch = 2;
  std::vector<std::complex<float>> x(n * batch);
  for (int i = 0; i < n * batch; ++i) x[i] = {std::sin(0.7f * i), 0.1f * static_cast<float>(i)};
  ScopedDeviceMemory<std::complex<float>> in = Upload(x);
  ScopedDeviceMemory<std::complex<float>> out =
      Must(executor_->AllocateOwnedArray<std::complex<float>>(n * batch));
  FftPlanSpec spec;  // c2c forward float by default.
  spec.dims = {n};
  spec.batch = batch;
  std::unique_ptr<FftPlan> plan = Must(fft->CreatePlan(stream_.get(), spec));
  stream_->ThenFft(plan.get(), *in, out.ptr());
  const std::vector<std::complex<float>> got = Download(*out);
  for (int t = 0; t < batch; ++t) {
    for (int f = 0; f < n; ++f) {
      std::complex<double> want = 0;  // Naive DFT, unnormalized, e^(-2 pi i f j / n).
      for (int j = 0; j < n; ++j) {
        want +=
            std::complex<double>(x[t * n + j]) * std::polar(1.0, -2 * std::numbers::pi * f * j / n);
      }
      EXPECT_NEAR(got[t * n + f].real(), want.real(), 1e-4) << "batch " << t << " bin " << f;
      EXPECT_NEAR(got[t * n + f].imag(), want.imag(), 1e-4) << "batch " << t << " bin " << f;
    }
  }
}
#endif

// Philox's numbers depend on the seed and offset only: hostmem gives the
// host's, and uniform floats lie in (0, 1].
TEST_F(HostLibraryTest, PhiloxGivesTheHostsNumbers) {
  ASSERT_NE(executor_->AsRng(), nullptr);
  EXPECT_EQ(executor_->AsRng()->Name(), "philox");
  auto generate = [](StreamExecutor* executor) {
    const uint64_t count = 1000;
    ScopedDeviceMemory<float> out = Must(executor->AllocateOwnedArray<float>(count));
    std::unique_ptr<Stream> stream = Must(executor->CreateStream());
    EXPECT_TRUE(IsOk(executor->AsRng()->SetSeed(77)));
    std::vector<float> values(count);
    stream->ThenPopulateRandUniform(out.ptr()).ThenMemcpy(values.data(), *out, count * 4);
    EXPECT_TRUE(IsOk(stream->BlockHostUntilDone()));
    return values;
  };
  const std::vector<float> mine = generate(executor_);
  EXPECT_EQ(mine, generate(host_));
  for (float v : mine) {
    EXPECT_GT(v, 0.0f);
    EXPECT_LE(v, 1.0f);
  }
}

#ifdef RILL_HAVE_ONEDNN
TEST_F(HostLibraryTest, ReluThroughOneDnn) {
  ASSERT_NE(executor_->AsDnn(), nullptr);
  EXPECT_EQ(executor_->AsDnn()->Name(), "onednn");
  const TensorDescriptor desc{.n = 2, .c = 3, .h = 4, .w = 5};
  std::vector<float> x(desc.ElementCount());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 9) - 4);
  ScopedDeviceMemory<float> dx = Upload(x);
  ScopedDeviceMemory<float> dy = Must(executor_->AllocateOwnedArray<float>(x.size()));
  stream_->ThenActivate(ActivationDescriptor{.mode = ActivationMode::kRelu}, desc, *dx, dy.ptr());
  const std::vector<float> y = Download(*dy);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], x[i] > 0 ? x[i] : 0.0f) << i;
}
#endif

// --- Registration.

TEST_F(HostLibraryTest, RegisteringTwiceIsHarmless) {
  const size_t before = PluginRegistry::Default().List().size();
  EXPECT_TRUE(IsOk(RegisterHostLibraryPlugins(kHostMemId)));
  EXPECT_TRUE(IsOk(RegisterHostLibraryPlugins(kHostMemId)));
  EXPECT_EQ(PluginRegistry::Default().List().size(), before);

  // A fresh registry gets exactly the host's host library plugins, once.
  const PlatformIdInfo other_info{"other"};
  PluginRegistry registry;
  EXPECT_TRUE(IsOk(RegisterHostLibraryPlugins(&other_info, registry)));
  EXPECT_TRUE(IsOk(RegisterHostLibraryPlugins(&other_info, registry)));
  std::vector<std::string> mine, hosts;
  for (const PluginRegistry::Entry& e : registry.List()) {
    mine.push_back(absl::StrCat(PluginKindName(e.kind), ":", e.name, e.is_default ? "*" : ""));
  }
  for (const PluginRegistry::Entry& e : PluginRegistry::Default().List()) {
    if (e.platform != kHostMemId) continue;
    hosts.push_back(absl::StrCat(PluginKindName(e.kind), ":", e.name, e.is_default ? "*" : ""));
  }
  EXPECT_FALSE(mine.empty());
  EXPECT_EQ(mine, hosts);
}

// A plugin recorded after a platform was given the host library plugins
// reaches it too (load-time registration has no set order across files).
TEST_F(HostLibraryTest, APluginRecordedLaterReachesEveryPlatform) {
  auto factory = [](StreamExecutor*) -> absl::StatusOr<std::unique_ptr<PluginInterface>> {
    return absl::UnimplementedError("never built in this test");
  };
  ASSERT_TRUE(IsOk(RegisterHostLibraryPlugin(PluginKind::kFft, "late_fft", factory, false)));
  EXPECT_TRUE(IsOk(RegisterHostLibraryPlugin(PluginKind::kFft, "late_fft", factory, false)));
  EXPECT_TRUE(
      IsOk(PluginRegistry::Default().CheckRegistered(kHostMemId, PluginKind::kFft, "late_fft")));
  EXPECT_TRUE(IsOk(
      PluginRegistry::Default().CheckRegistered(kHostPlatformId, PluginKind::kFft, "late_fft")));
  // Not a default: the host's stays.
  EXPECT_NE(Must(PluginRegistry::Default().DefaultName(kHostMemId, PluginKind::kFft)), "late_fft");
}

TEST(HostLibraryRegistration, BadInput) {
  auto factory = [](StreamExecutor*) -> absl::StatusOr<std::unique_ptr<PluginInterface>> {
    return absl::UnimplementedError("unused");
  };
  EXPECT_TRUE(
      HasError(RegisterHostLibraryPlugins(nullptr), absl::StatusCode::kInvalidArgument, {"null"}));
  EXPECT_TRUE(HasError(RegisterHostLibraryPlugin(PluginKind::kBlas, "", factory, false),
                       absl::StatusCode::kInvalidArgument, {"blas", "name and factory"}));
  EXPECT_TRUE(HasError(RegisterHostLibraryPlugin(PluginKind::kBlas, "x", nullptr, false),
                       absl::StatusCode::kInvalidArgument, {"\"x\"", "name and factory"}));
  EXPECT_TRUE(HasError(RegisterHostLibraryPlugin(static_cast<PluginKind>(42), "x", factory, false),
                       absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(HasError(CheckHostLibraryPlatform(nullptr, "openblas"),
                       absl::StatusCode::kInvalidArgument, {"openblas", "null"}));
}

// --- Refusal: a device without host-addressable memory or host callbacks.

struct Refusal {
  const PlatformIdInfo* id;
  Feature missing;
};
const PlatformIdInfo kNoHostMemInfo{"nohostmem"};
const PlatformIdInfo kNoCallbacksInfo{"nocallbacks"};

class HostLibraryRefusalTest : public ::testing::TestWithParam<Refusal> {};

TEST_P(HostLibraryRefusalTest, EveryPluginRefusesAtCreation) {
  PlatformManager manager;
  ASSERT_TRUE(IsOk(manager.RegisterPlatform(
      std::make_unique<LimitedPlatform>(GetParam().id, GetParam().missing))));
  // Registered anyway (a backend's mistake): each Create says no.
  ASSERT_TRUE(IsOk(RegisterHostLibraryPlugins(GetParam().id)));
  StreamExecutor* executor = ExecutorOf(manager, GetParam().id->name);
  const std::string device = executor->DebugName();
  EXPECT_TRUE(HasError(CheckHostLibraryPlatform(executor, "mine"),
                       absl::StatusCode::kFailedPrecondition,
                       {"mine computes on the host: " + device + " lacks " +
                        FeatureName(GetParam().missing) + ": this test device has none"}));
  int plugins = 0;
  for (const PluginRegistry::Entry& e : PluginRegistry::Default().List()) {
    if (e.platform != GetParam().id || e.name == "late_fft") continue;
    SCOPED_TRACE(e.name);
    ++plugins;
    EXPECT_TRUE(HasError(executor->GetPlugin(e.kind, e.name).status(),
                         absl::StatusCode::kFailedPrecondition,
                         {e.name + " computes on the host: " + device + " lacks " +
                          FeatureName(GetParam().missing)}));
  }
  EXPECT_GT(plugins, 0);
  EXPECT_EQ(executor->AsBlas(), nullptr);
  std::unique_ptr<Stream> stream = Must(executor->CreateStream());
  ScopedDeviceMemory<float> x = Must(executor->AllocateOwnedArray<float>(4));
  stream->ThenPopulateRandUniform(x.ptr());
  EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kFailedPrecondition,
                       {"philox computes on the host: " + device + " lacks"}));
}

INSTANTIATE_TEST_SUITE_P(
    Missing, HostLibraryRefusalTest,
    ::testing::Values(Refusal{&kNoHostMemInfo, Feature::kHostAddressableMemory},
                      Refusal{&kNoCallbacksInfo, Feature::kHostCallbacks}),
    [](const ::testing::TestParamInfo<Refusal>& info) { return std::string(info.param.id->name); });

// A real device whose memory is not host memory.
TEST(HostLibraryOpenCl, IsRefusedWithTheReason) {
#ifndef RILL_HAVE_OPENCL
  GTEST_SKIP() << "the OpenCL backend is not built";
#else
  absl::StatusOr<Platform*> opencl = PlatformManager::Default().PlatformWithName("opencl");
  if (!opencl.ok() || (*opencl)->VisibleDeviceCount() == 0) {
    GTEST_SKIP() << "no OpenCL device here";
  }
  StreamExecutor* executor = Must((*opencl)->ExecutorForDevice(0));
  EXPECT_TRUE(HasError(executor->Supports(Feature::kHostAddressableMemory),
                       absl::StatusCode::kUnimplemented, {"opencl:0 lacks", "not host memory"}));
  EXPECT_TRUE(HasError(CheckHostLibraryPlatform(executor, "openblas"),
                       absl::StatusCode::kFailedPrecondition,
                       {"openblas computes on the host: opencl:0 lacks host-addressable memory: "
                        "an OpenCL buffer (cl_mem) is not host memory"}));
#endif
}

// --- EnqueueHostWork.

TEST_F(HostLibraryTest, EnqueueHostWorkRunsInStreamOrder) {
  ScopedDeviceMemory<int> memory = Must(executor_->AllocateOwnedArray<int>(2));
  const std::vector<int> values = {5, 6};
  int* p = static_cast<int*>(HostPointer(*memory));
  stream_->ThenDoHostCallback([] { absl::SleepFor(absl::Milliseconds(20)); })
      .ThenMemcpy(memory.ptr(), values.data(), 8);
  // Runs after the copy, which runs after the sleep.
  EXPECT_TRUE(IsOk(
      EnqueueHostWork(executor_, stream_.get(), "mine", "AsMine()", [p] { p[1] = p[0] * 10; })));
  EXPECT_EQ(Download(*memory), (std::vector<int>{5, 50}));
}

TEST_F(HostLibraryTest, EnqueueHostWorkErrorFailsTheStream) {
  bool later_ran = false;
  EXPECT_TRUE(IsOk(EnqueueHostWork(executor_, stream_.get(), "mine", "AsMine()",
                                   [] { return absl::DataLossError("mine broke"); })));
  EXPECT_TRUE(IsOk(EnqueueHostWork(executor_, stream_.get(), "mine", "AsMine()",
                                   [&later_ran] { later_ran = true; })));
  EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), absl::StatusCode::kDataLoss, {"mine broke"}));
  EXPECT_FALSE(later_ran);
}

TEST_F(HostLibraryTest, EnqueueHostWorkChecksTheStream) {
  auto work = [] {};
  EXPECT_TRUE(HasError(EnqueueHostWork(executor_, nullptr, "mine", "AsMine()", work),
                       absl::StatusCode::kInvalidArgument, {"stream is null"}));
  std::unique_ptr<Stream> host_stream = Must(host_->CreateStream());
  EXPECT_TRUE(HasError(
      EnqueueHostWork(executor_, host_stream.get(), "mine", "AsMine()", work),
      absl::StatusCode::kInvalidArgument,
      {"the stream belongs to host:0, but this mine plugin serves hostmem:0: use that executor's "
       "AsMine()"}));

  // Through a library: hostmem's philox with host's stream and memory.
  RngSupport* rng = executor_->AsRng();
  ScopedDeviceMemory<float> host_memory = Must(host_->AllocateOwnedArray<float>(4));
  DeviceMemory<float> view = *host_memory;
  EXPECT_TRUE(HasError(rng->DoPopulateRandUniform(host_stream.get(), &view),
                       absl::StatusCode::kInvalidArgument,
                       {"belongs to host:0", "philox plugin serves hostmem:0", "AsRng()"}));

  // A stream whose executor is gone.
  auto manager = std::make_unique<PlatformManager>();
  const PlatformIdInfo gone_info{"gone"};
  ASSERT_TRUE(IsOk(manager->RegisterPlatform(std::make_unique<HostPlatform>(Options(&gone_info)))));
  std::unique_ptr<Stream> detached = Must(ExecutorOf(*manager, "gone")->CreateStream());
  manager.reset();
  EXPECT_TRUE(HasError(EnqueueHostWork(nullptr, detached.get(), "mine", "AsMine()", work),
                       absl::StatusCode::kFailedPrecondition, {"detached"}));
}

}  // namespace
}  // namespace rill
