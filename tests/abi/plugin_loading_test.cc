// Loading run-time plugins through the C ABI (rill/abi/rill_plugin.h): the
// C backend example and its test variants (examples/c_backend), each a
// real shared object built with the C compiler. Every case loads into its
// own PlatformManager, so that destroying it unloads the plugin.

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rill/abi/rill_plugin.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/platform_manager.h"
#include "rill/plugins/blas/blas.h"
#include "rill/stream/event.h"
#include "rill/stream/kernel_spec.h"
#include "rill/stream/stream.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using ::rill::testing::Must;

std::string Plugin(const std::string& file) { return std::string(RILL_PLUGIN_DIR) + "/" + file; }
std::string TestPlugin(const std::string& file) {
  return std::string(RILL_ABI_TEST_PLUGIN_DIR) + "/" + file;
}

// A round trip through a stream of `platform`'s device 0: a copy in, a
// memset of part, a host callback that reads the device memory (host
// addressable), a copy out.
void RoundTrip(PlatformManager& manager, const std::string& platform) {
  Platform* p = Must(manager.PlatformWithName(platform), "platform");
  StreamExecutor* executor = Must(p->ExecutorForDevice(0), "executor");
  constexpr int kN = 1000;
  std::vector<uint32_t> in(kN), out(kN, 0);
  for (int i = 0; i < kN; ++i) in[i] = 3u * i + 1;
  DeviceMemoryBase mem = Must(executor->Allocate(kN * 4), "allocate");
  auto stream = Must(executor->CreateStream(), "stream");
  uint32_t seen = 0;
  DeviceMemoryBase tail = Must(mem.GetByteSlice(500 * 4, 500 * 4), "slice");
  stream->ThenMemcpy(&mem, in.data(), kN * 4)
      .ThenMemset32(&tail, 0xabcdef01u, 500 * 4)
      .ThenDoHostCallback([&] { seen = static_cast<uint32_t*>(HostPointer(mem))[7]; })
      .ThenMemcpy(out.data(), mem, kN * 4);
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  EXPECT_EQ(seen, in[7]);
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(out[i], i < 500 ? in[i] : 0xabcdef01u) << i;
  }
  ASSERT_TRUE(IsOk(executor->Deallocate(&mem)));
}

TEST(PluginLoading, LoadsTheCBackendAndRecordsIt) {
  PlatformManager manager;
  ASSERT_TRUE(IsOk(manager.LoadPlugin(Plugin("librill_c_backend.so"))));
  RoundTrip(manager, "cbackend");
  const std::vector<PlatformManager::PluginInfo> plugins = manager.Plugins();
  ASSERT_EQ(plugins.size(), 1u);
  EXPECT_TRUE(plugins[0].status.ok());
  EXPECT_EQ(plugins[0].abi_major, RILL_PLUGIN_ABI_MAJOR);
  EXPECT_EQ(plugins[0].abi_minor, RILL_PLUGIN_ABI_MINOR);
  EXPECT_EQ(plugins[0].provides,
            (std::vector<std::string>{"platform cbackend", "blas cbackend_blas"}));
  Platform* p = Must(manager.PlatformWithName("cbackend"));
  EXPECT_EQ(p->MoreDevicesHint(), "set CBACKEND_DEVICES=2");  // A minor-1 field.
  StreamExecutor* executor = Must(p->ExecutorForDevice(0));
  EXPECT_TRUE(IsOk(executor->implementation()->Supports(Feature::kHostAddressableMemory)));
}

TEST(PluginLoading, OlderMinorLoadsWithoutItsMissingFields) {
  PlatformManager manager;
  ASSERT_TRUE(IsOk(manager.LoadPlugin(TestPlugin("librill_abi_test_cbackend_minor0.so"))));
  EXPECT_EQ(manager.Plugins()[0].abi_minor, 0u);
  Platform* p = Must(manager.PlatformWithName("cbackend_minor0"));
  // Its RillPlatformFns ends before more_devices_hint: Rill reads nothing past it.
  EXPECT_EQ(p->MoreDevicesHint(), "");
  RoundTrip(manager, "cbackend_minor0");
}

TEST(PluginLoading, AnotherMajorIsRefusedNamingBothVersions) {
  PlatformManager manager;
  const std::string path = TestPlugin("librill_abi_test_cbackend_major2.so");
  EXPECT_TRUE(HasError(
      manager.LoadPlugin(path), absl::StatusCode::kFailedPrecondition,
      {path, "ABI 2.", absl::StrCat("ABI ", RILL_PLUGIN_ABI_MAJOR, ".", RILL_PLUGIN_ABI_MINOR),
       "rebuild the plugin"}));
  EXPECT_FALSE(manager.PlatformWithName("cbackend_major2").ok());
  ASSERT_EQ(manager.Plugins().size(), 1u);
  EXPECT_FALSE(manager.Plugins()[0].status.ok());
}

TEST(PluginLoading, EveryMissingMandatoryEntryIsNamedAtOnce) {
  PlatformManager manager;
  EXPECT_TRUE(HasError(
      manager.LoadPlugin(TestPlugin("librill_abi_test_cbackend_missing.so")),
      absl::StatusCode::kFailedPrecondition,
      {"missing mandatory entries", "RillPlatformFns.describe", "RillStreamFns.memset32"}));
}

TEST(PluginLoading, AnEntryReturningNullIsRefused) {
  PlatformManager manager;
  EXPECT_TRUE(HasError(manager.LoadPlugin(TestPlugin("librill_abi_test_cbackend_null.so")),
                       absl::StatusCode::kFailedPrecondition, {"returned NULL"}));
}

TEST(PluginLoading, FilesThatAreNotPluginsGiveClearErrors) {
  PlatformManager manager;
  EXPECT_TRUE(HasError(manager.LoadPlugin(TestPlugin("not_a_plugin.so")),
                       absl::StatusCode::kFailedPrecondition,
                       {"not_a_plugin.so", "shared object"}));
  EXPECT_TRUE(HasError(manager.LoadPlugin(TestPlugin("librill_abi_test_no_entry.so")),
                       absl::StatusCode::kNotFound, {"no entry symbol RillPluginInit"}));
  EXPECT_TRUE(HasError(manager.LoadPlugin(TestPlugin("no_such_file.so")),
                       absl::StatusCode::kNotFound, {"no_such_file.so", "no such file"}));
  // The manager goes on: a good plugin still loads after the bad ones.
  ASSERT_TRUE(IsOk(manager.LoadPlugin(Plugin("librill_c_backend.so"))));
  EXPECT_EQ(manager.Plugins().size(), 4u);
}

TEST(PluginLoading, DuplicatesAreRefused) {
  PlatformManager manager;
  const std::string path = Plugin("librill_c_backend.so");
  ASSERT_TRUE(IsOk(manager.LoadPlugin(path)));
  EXPECT_TRUE(
      HasError(manager.LoadPlugin(path), absl::StatusCode::kAlreadyExists, {"loaded already"}));
  // The same platform name from another file.
  const std::string copy = ::testing::TempDir() + "/librill_c_backend_copy.so";
  std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing);
  EXPECT_TRUE(HasError(manager.LoadPlugin(copy), absl::StatusCode::kAlreadyExists,
                       {"\"cbackend\" is taken"}));
  std::filesystem::remove(copy);
}

// A shared object is initialized once per process: a second manager that
// loads it shares the plugin, and the first one going does not shut it
// down under the second.
TEST(PluginLoading, TwoManagersShareOnePluginInstance) {
  auto first = std::make_unique<PlatformManager>();
  ASSERT_TRUE(IsOk(first->LoadPlugin(Plugin("librill_c_backend.so"))));
  RoundTrip(*first, "cbackend");
  PlatformManager second;
  ASSERT_TRUE(IsOk(second.LoadPlugin(Plugin("librill_c_backend.so"))));
  first.reset();
  RoundTrip(second, "cbackend");
}

TEST(PluginLoading, LoadPluginsFromSkipsFailuresAndGoesOn) {
  PlatformManager manager;
  const int loaded = manager.LoadPluginsFrom(absl::StrCat(TestPlugin("not_a_plugin.so"), ":",
                                                          RILL_ABI_TEST_PLUGIN_DIR, ":",
                                                          Plugin("librill_c_backend.so")));
  // In the test folder: minor0 and failing load; major2, missing, null,
  // needs_gone, no_entry and not_a_plugin (twice) do not.
  EXPECT_EQ(loaded, 3);
  EXPECT_TRUE(manager.PlatformWithName("cbackend").ok());
  EXPECT_TRUE(manager.PlatformWithName("cbackend_minor0").ok());
  int refused = 0;
  for (const auto& info : manager.Plugins()) refused += info.status.ok() ? 0 : 1;
  EXPECT_EQ(refused, 7);
}

TEST(PluginLoading, ErrorsOfThePluginsWorkReachTheStream) {
  PlatformManager manager;
  ASSERT_TRUE(IsOk(manager.LoadPlugin(TestPlugin("librill_abi_test_cbackend_failing.so"))));
  StreamExecutor* executor =
      Must(Must(manager.PlatformWithName("cbackend_failing"))->ExecutorForDevice(0));
  DeviceMemoryBase mem = Must(executor->Allocate(64));
  auto stream = Must(executor->CreateStream());
  auto event = Must(executor->CreateEvent());
  bool ran_after = false;
  stream->ThenMemset32(&mem, 0x12345678u, 64)
      .ThenDoHostCallback([&] { ran_after = true; })
      .ThenRecordEvent(event.get());
  EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kDataLoss,
                       {"injected memset failure"}));
  EXPECT_FALSE(ran_after);  // Work after the failure is skipped.
  // The event record still completes, carrying the error.
  EXPECT_TRUE(
      HasError(event->Synchronize(), absl::StatusCode::kDataLoss, {"injected memset failure"}));
  ASSERT_TRUE(IsOk(executor->Deallocate(&mem)));
}

// A kernel of the plugin's own format, and a KernelSpec host function run
// through its host callbacks.
TEST(PluginLoading, KernelsOfThePluginsFormatAndHostFunctionsRun) {
  PlatformManager manager;
  ASSERT_TRUE(IsOk(manager.LoadPlugin(Plugin("librill_c_backend.so"))));
  Platform* p = Must(manager.PlatformWithName("cbackend"));
  StreamExecutor* executor = Must(p->ExecutorForDevice(0));
  constexpr uint64_t kN = 3000;
  std::vector<float> x(kN), y(kN), out(kN);
  for (uint64_t i = 0; i < kN; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  DeviceMemory<float> dx = Must(executor->AllocateArray<float>(kN));
  DeviceMemory<float> dy = Must(executor->AllocateArray<float>(kN));
  const char kName[] = "saxpy";
  KernelSpec builtin("saxpy");
  builtin.DeclareParams<float, DeviceMemory<float>, DeviceMemory<float>, uint64_t>();
  builtin.AddVariant(p->id(), {"cbackend.builtin", std::vector<uint8_t>(kName, kName + 5)});
  auto saxpy = Must(
      executor->LoadKernel<float, DeviceMemory<float>, DeviceMemory<float>, uint64_t>(builtin));
  KernelSpec host("scale");
  host.AddHostFunction<DeviceMemory<float>, float, uint64_t>(
      [](const HostThread& t, float* v, float s, uint64_t n) {
        if (uint64_t i = t.global_x(); i < n) v[i] *= s;
      });
  auto scale = Must(executor->LoadKernel<DeviceMemory<float>, float, uint64_t>(host));
  auto stream = Must(executor->CreateStream());
  stream->ThenMemcpyH2D<float>(x, &dx)
      .ThenMemcpyH2D<float>(y, &dy)
      .ThenLaunch(ThreadDim(256), BlockDim((kN + 255) / 256), saxpy, 2.0f, dx, dy, kN)
      .ThenLaunch(ThreadDim(128), BlockDim((kN + 127) / 128), scale, dy, 0.5f, kN)
      .ThenMemcpyD2H<float>(dy, absl::MakeSpan(out));
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  for (uint64_t i = 0; i < kN; ++i) ASSERT_FLOAT_EQ(out[i], (2.0f * i + 1.0f) * 0.5f) << i;
  // A format the plugin does not read.
  KernelSpec other("saxpy");
  other.AddVariant(p->id(), {"spirv", {1, 2, 3}});
  EXPECT_TRUE(
      HasError(executor->LoadKernel(other).status(), absl::StatusCode::kUnimplemented, {"spirv"}));
}

// A BLAS library of the plugin's own platform (RILL_LIBRARY_OWN_PLATFORM)
// gets the plugin's stream and enqueues there: a strided-batched,
// transposed sgemm against a naive loop; a double gemm it refuses
// (gemm_supports) fails at the end of a one-plugin chain.
TEST(PluginLoading, AnOwnPlatformLibraryRunsOnThePluginsStreams) {
  PlatformManager manager;
  ASSERT_TRUE(IsOk(manager.LoadPlugin(Plugin("librill_c_backend.so"))));
  StreamExecutor* executor = Must(Must(manager.PlatformWithName("cbackend"))->ExecutorForDevice(0));
  ASSERT_TRUE(IsOk(executor->SetPlugin(PluginKind::kBlas, "cbackend_blas")));
  constexpr int64_t m = 5, n = 4, k = 3, batch = 2;
  const int64_t lda = k, ldb = k, ldc = m;  // A is k x m (transposed), B k x n.
  const int64_t sa = lda * m + 2, sb = ldb * n + 1, sc = ldc * n + 3;
  std::vector<float> a(sa * batch), b(sb * batch), c(sc * batch, 0.5f), out(c.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.125f * static_cast<float>(i % 5) + 0.25f;
  DeviceMemory<float> da = Must(executor->AllocateArray<float>(a.size()));
  DeviceMemory<float> db = Must(executor->AllocateArray<float>(b.size()));
  DeviceMemory<float> dc = Must(executor->AllocateArray<float>(c.size()));
  GemmArgs g;
  g.trans_a = Transpose::kTranspose;
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = 1.5;
  g.beta = -0.5;
  g.a = da;
  g.lda = lda;
  g.b = db;
  g.ldb = ldb;
  g.c = dc;
  g.ldc = ldc;
  g.batch_count = batch;
  g.stride_a = sa;
  g.stride_b = sb;
  g.stride_c = sc;
  auto stream = Must(executor->CreateStream());
  stream->ThenMemcpyH2D<float>(a, &da).ThenMemcpyH2D<float>(b, &db).ThenMemcpyH2D<float>(c, &dc);
  stream->ThenBlasGemm(g).ThenMemcpyD2H<float>(dc, absl::MakeSpan(out));
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  for (int64_t p = 0; p < batch; ++p) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < m; ++i) {
        double sum = 0;
        for (int64_t q = 0; q < k; ++q) sum += a[p * sa + q + i * lda] * b[p * sb + q + j * ldb];
        const double want = 1.5 * sum - 0.5 * c[p * sc + i + j * ldc];
        ASSERT_NEAR(out[p * sc + i + j * ldc], want, 1e-5) << p << " " << i << " " << j;
      }
    }
  }
  BlasSupport* blas = executor->AsBlas();
  ASSERT_NE(blas, nullptr);
  EXPECT_TRUE(HasError(blas->Supports({"gemm", DataType::kDouble, m, n, k}),
                       absl::StatusCode::kUnimplemented, {"float32 gemm only"}));
  for (DeviceMemory<float>* mem : {&da, &db, &dc}) ASSERT_TRUE(IsOk(executor->Deallocate(mem)));
}

// A library plugin written in C++ (rill_plugin_cpp.h): its exceptions
// arrive as the stream's errors, with their codes and messages.
TEST(PluginLoading, ExceptionsOfACppPluginBecomeStreamErrors) {
  PlatformManager manager;
  ASSERT_TRUE(IsOk(manager.RegisterLinkedPlatforms()));  // host, with executors of its own
  absl::Status loaded = manager.LoadPlugin(TestPlugin("cpp/librill_abi_test_throwing_blas.so"));
  ASSERT_TRUE(loaded.ok()) << loaded;
  EXPECT_EQ(manager.Plugins().back().provides, std::vector<std::string>{"blas throwing_blas"});
  StreamExecutor* executor = Must(Must(manager.PlatformWithName("host"))->ExecutorForDevice(0));
  ASSERT_TRUE(IsOk(executor->SetPlugin(PluginKind::kBlas, "throwing_blas")));
  DeviceMemory<float> a = Must(executor->AllocateArray<float>(16));
  GemmArgs gemm;
  gemm.m = gemm.n = gemm.k = 4;
  gemm.a = gemm.b = gemm.c = a;
  gemm.lda = gemm.ldb = gemm.ldc = 4;
  auto stream = Must(executor->CreateStream());
  stream->ThenBlasGemm(gemm);
  EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kInternal,
                       {"throwing_blas gemm", "thrown on purpose for m=4"}));
  GemvArgs gemv;
  gemv.m = gemv.n = 4;
  gemv.a = a;
  gemv.lda = 4;
  gemv.x = gemv.y = DeviceMemoryBase(a.opaque(), 16, 0);
  auto stream2 = Must(executor->CreateStream());
  stream2->ThenBlasGemv(gemv);
  EXPECT_TRUE(HasError(stream2->BlockHostUntilDone(), absl::StatusCode::kResourceExhausted,
                       {"throwing_blas gemv", "out of memory"}));
  ASSERT_TRUE(IsOk(executor->Deallocate(&a)));
}

// The CUDA backend as a module (lib/rill/plugins/librill_cuda.so), in a
// program that links no CUDA: where the CUDA libraries are, it loads and
// registers "cuda" -- with its devices, or with none and the reason; a
// module whose libraries are missing is skipped saying which.
TEST(PluginLoading, TheCudaModuleLoadsAndSaysWhyItHasNoDevice) {
#ifndef RILL_CUDA_MODULE
  GTEST_SKIP() << "built without the CUDA toolkit: no CUDA module";
#else
  PlatformManager manager;
  const char* moved = std::getenv("RILL_CUDA_MODULE_PATH");  // scripts/gpu-bundle.sh's copy
  absl::Status loaded = manager.LoadPlugin(moved ? moved : RILL_CUDA_MODULE);
  ASSERT_TRUE(loaded.ok()) << loaded;
  Platform* cuda = Must(manager.PlatformWithName("cuda"));
  if (cuda->VisibleDeviceCount() == 0) {
    EXPECT_TRUE(HasError(cuda->Availability(), absl::StatusCode::kUnavailable, {"CUDA"}));
    GTEST_SKIP() << "no CUDA device here: " << cuda->Availability();
  }
  StreamExecutor* executor = Must(cuda->ExecutorForDevice(0));
  constexpr int kN = 4096;
  std::vector<uint32_t> in(kN), out(kN, 0);
  for (int i = 0; i < kN; ++i) in[i] = 7u * i;
  DeviceMemoryBase mem = Must(executor->Allocate(kN * 4));
  DeviceMemoryBase half = Must(mem.GetByteSlice(kN * 2, kN * 2));
  auto stream = Must(executor->CreateStream());
  bool ran = false;
  stream->ThenMemcpy(&mem, in.data(), kN * 4)
      .ThenMemset32(&half, 0x5a5a5a5au, kN * 2)
      .ThenDoHostCallback([&] { ran = true; })
      .ThenMemcpy(out.data(), mem, kN * 4);
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  EXPECT_TRUE(ran);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(out[i], i < kN / 2 ? in[i] : 0x5a5a5a5au) << i;
  ASSERT_TRUE(IsOk(executor->Deallocate(&mem)));
#endif
}

TEST(PluginLoading, AModuleWhoseLibraryIsMissingIsSkippedNamingIt) {
  PlatformManager manager;
  EXPECT_TRUE(HasError(manager.LoadPlugin(TestPlugin("librill_abi_test_needs_gone.so")),
                       absl::StatusCode::kFailedPrecondition,
                       {"librill_abi_test_gone.so", "cannot open shared object file"}));
}

// Load, use, unload, again: under AddressSanitizer (scripts/test.sh
// --asan) a leak or a use after dlclose fails the run.
TEST(PluginLoading, LoadUseUnloadCycles) {
  for (int cycle = 0; cycle < 4; ++cycle) {
    PlatformManager manager;
    ASSERT_TRUE(IsOk(manager.LoadPlugin(Plugin("librill_c_backend.so"))));
    RoundTrip(manager, "cbackend");
    StreamExecutor* executor =
        Must(Must(manager.PlatformWithName("cbackend"))->ExecutorForDevice(0));
    auto stream = Must(executor->CreateStream());
    auto event = Must(executor->CreateEvent());
    DeviceMemoryBase leaked = Must(executor->Allocate(256));  // Freed when the device closes.
    (void)leaked;
    stream->ThenRecordEvent(event.get());
    ASSERT_TRUE(IsOk(event->Synchronize()));
  }
}

}  // namespace
}  // namespace rill
