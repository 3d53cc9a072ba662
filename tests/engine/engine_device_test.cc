// Device dispatch (DESIGN.md, "Dispatch"); hang diagnosis and profiling
// are in engine_diagnosis_test.cc.
// Runs with RILL_HOST_DEVICES=2: the host platform's two virtual devices
// stand in for GPUs; their streams are real asynchronous queues, so a
// dependency the engine fails to carry from one stream to another shows up
// as wrong data.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rill/engine/engine.h"
#include "rill/platform/host/host_platform.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"
#include "tests/engine/engine_testing.h"

namespace rill::engine {
namespace {

using ::rill::engine::testing::Kind;
using ::rill::engine::testing::KindName;
using ::rill::engine::testing::Latch;
using ::rill::engine::testing::MakeEngine;
using ::rill::engine::testing::OpenLatchOnExit;
using ::rill::engine::testing::PushHeld;
using ::rill::engine::testing::WaitUntil;
using ::rill::engine::testing::WithDeadline;
using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using ::rill::testing::Must;
using namespace std::chrono_literals;

using U64 = uint64_t;
using AffineKernel = TypedKernel<DeviceMemory<U64>, U64, U64, U64, U64>;

// y[i] = y[i] * mul + add + i * index_coeff, for i < n.
KernelSpec AffineSpec() {
  KernelSpec spec("affine");
  spec.AddHostFunction<DeviceMemory<U64>, U64, U64, U64, U64>(
      [](const HostThread& t, U64* y, U64 mul, U64 add, U64 index_coeff, U64 n) {
        const int64_t i = t.global_x();
        if (i >= 0 && static_cast<U64>(i) < n) {
          y[i] = y[i] * mul + add + static_cast<U64>(i) * index_coeff;
        }
      });
  return spec;
}

class EngineDevices : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    absl::StatusOr<Platform*> host = PlatformManager::Default().PlatformWithName("host");
    ASSERT_TRUE(host.ok()) << host.status();
    if ((*host)->VisibleDeviceCount() < 2) {
      GTEST_SKIP() << "needs RILL_HOST_DEVICES=2 (has " << (*host)->VisibleDeviceCount() << ")";
    }
    for (int i = 0; i < 2; ++i) {
      executors_[i] = Must((*host)->ExecutorForDevice(i), "host executor");
      absl::StatusOr<Context> ctx = Context::Device("host", i);
      ASSERT_TRUE(ctx.ok()) << ctx.status();
      devices_[i] = *ctx;
      kernels_[i] = std::make_unique<AffineKernel>(
          Must(executors_[i]->LoadKernel<DeviceMemory<U64>, U64, U64, U64, U64>(AffineSpec()),
               "load kernel"));
    }
  }

  // Enqueues y = y * mul + add + i * index_coeff on `stream`.
  void Affine(Stream* stream, int device, DeviceMemory<U64>* y, U64 mul, U64 add, U64 index_coeff) {
    const U64 n = y->ElementCount();
    stream->ThenLaunch(ThreadDim(128), BlockDim((n + 127) / 128), *kernels_[device], *y, mul, add,
                       index_coeff, n);
  }

  StreamExecutor* executors_[2] = {nullptr, nullptr};
  Context devices_[2];
  std::unique_ptr<AffineKernel> kernels_[2];
};

INSTANTIATE_TEST_SUITE_P(Kinds, EngineDevices, ::testing::Values(Kind::kNaive, Kind::kThreaded),
                         KindName);

TEST(EngineContext, NamesAndLookup) {
  EXPECT_TRUE(Context::Host().is_host());
  EXPECT_EQ(Context::Host().ToString(), "cpu");
  absl::StatusOr<Context> dev = Context::Device("host", 1);
  ASSERT_TRUE(dev.ok()) << dev.status();
  EXPECT_FALSE(dev->is_host());
  EXPECT_EQ(dev->ordinal, 1);
  EXPECT_EQ(dev->platform, kHostPlatformId);
  EXPECT_EQ(dev->ToString(), "host:1");
  EXPECT_EQ(*dev, Context::Device(kHostPlatformId, 1));
  EXPECT_TRUE(
      HasError(Context::Device("no_such_platform", 0).status(), absl::StatusCode::kNotFound));
  // Parse is ToString's inverse.
  EXPECT_EQ(*Context::Parse("cpu"), Context::Host());
  EXPECT_EQ(*Context::Parse("host:1"), *dev);
  for (const char* bad : {"", "host", "host:", ":1", "host:-1", "host:1x", "cpu:0x"}) {
    EXPECT_TRUE(HasError(Context::Parse(bad).status(), absl::StatusCode::kInvalidArgument)) << bad;
  }
  EXPECT_TRUE(HasError(Context::Parse("no_such_platform:0").status(), absl::StatusCode::kNotFound));
}

// A host function gets no stream; a device function gets a stream of that
// very device (platform and ordinal), for compute and copy properties.
TEST_P(EngineDevices, FunctionsGetAStreamOfTheirDevice) {
  auto engine = MakeEngine(GetParam());
  struct Seen {
    std::atomic<bool> ran{false};
    Context ctx;
    Stream* stream = nullptr;
    StreamExecutor* parent = nullptr;
  };
  Seen host_seen, seen[2][3];
  VarHandle v = engine->NewVariable();
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext rc) {
        host_seen.ctx = rc.ctx;
        host_seen.stream = rc.stream;
        host_seen.ran = true;
        return absl::OkStatus();
      },
      Context::Host(), {}, {v})));
  const FnProperty props[3] = {FnProperty::kNormal, FnProperty::kCopyToDevice,
                               FnProperty::kCopyFromDevice};
  for (int d = 0; d < 2; ++d) {
    for (int p = 0; p < 3; ++p) {
      Seen* s = &seen[d][p];
      ASSERT_TRUE(IsOk(engine->PushSync(
          [s](RunContext rc) {
            s->ctx = rc.ctx;
            s->stream = rc.stream;
            s->parent = rc.stream != nullptr ? rc.stream->parent() : nullptr;
            s->ran = true;
            return absl::OkStatus();
          },
          devices_[d], {v}, {}, props[p], 0, "device_fn")));
    }
  }
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  ASSERT_TRUE(host_seen.ran.load());
  EXPECT_TRUE(host_seen.ctx.is_host());
  EXPECT_EQ(host_seen.stream, nullptr);
  for (int d = 0; d < 2; ++d) {
    for (int p = 0; p < 3; ++p) {
      SCOPED_TRACE("device " + std::to_string(d) + " property " + std::to_string(p));
      ASSERT_TRUE(seen[d][p].ran.load());
      EXPECT_EQ(seen[d][p].ctx, devices_[d]);
      ASSERT_NE(seen[d][p].stream, nullptr);
      EXPECT_EQ(seen[d][p].parent, executors_[d]);
      EXPECT_EQ(seen[d][p].parent->device_ordinal(), d);
      EXPECT_EQ(seen[d][p].parent->platform()->Name(), "host");
    }
  }
}

// A pipeline across two devices with data dependencies carried only by
// vars. Each step's device work is slow to start (a host callback sleeps on
// its stream before the real work), so a consumer that does not wait for the
// producer's stream -- on another stream, another device or the host --
// reads stale data.
//
//   dev0: A <- H2D(input); A = 3A + 1            (copy-to-device + kernel)
//   dev0: stage <- D2H(A)                         (reads A)
//   dev0: A <- 0                                  (write after read of A)
//   dev1: B <- H2D(stage); B = B + 5 + 2i         (reads stage)
//   dev1: result <- D2H(B)                        (reads B)
//   cpu : sum <- sum(result)                      (host after device)
TEST_P(EngineDevices, ChainAcrossStreamsAndDevicesCarriesData) {
  EngineOptions options;
  options.streams_per_device = 2;
  options.cpu_workers = 2;
  auto engine = MakeEngine(GetParam(), options);
  constexpr U64 kN = 4096;
  ScopedDeviceMemory<U64> a = Must(executors_[0]->AllocateOwnedArray<U64>(kN), "alloc A");
  ScopedDeviceMemory<U64> b = Must(executors_[1]->AllocateOwnedArray<U64>(kN), "alloc B");
  std::vector<U64> input(kN), stage(kN, 0), result(kN, 0);
  U64 sum = 0;
  VarHandle v_in = engine->NewVariable(), v_a = engine->NewVariable(),
            v_stage = engine->NewVariable();
  VarHandle v_b = engine->NewVariable(), v_result = engine->NewVariable(),
            v_sum = engine->NewVariable();
  auto slow = [](Stream* s, std::chrono::milliseconds delay) {
    s->ThenDoHostCallback([delay] { std::this_thread::sleep_for(delay); });
  };
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&, round](RunContext) {
          for (U64 i = 0; i < kN; ++i) input[i] = i * 7 + static_cast<U64>(round);
          return absl::OkStatus();
        },
        Context::Host(), {}, {v_in}, FnProperty::kNormal, 0, "fill_input")));
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext rc) {
          slow(rc.stream, 15ms);
          rc.stream->ThenMemcpy(a.ptr(), input.data(), kN * sizeof(U64));
          return absl::OkStatus();
        },
        devices_[0], {v_in}, {v_a}, FnProperty::kCopyToDevice, 0, "h2d_a")));
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext rc) {
          slow(rc.stream, 10ms);
          Affine(rc.stream, 0, a.ptr(), 3, 1, 0);
          return absl::OkStatus();
        },
        devices_[0], {}, {v_a}, FnProperty::kNormal, 0, "scale_a")));
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext rc) {
          slow(rc.stream, 10ms);
          rc.stream->ThenMemcpy(stage.data(), *a, kN * sizeof(U64));
          return absl::OkStatus();
        },
        devices_[0], {v_a}, {v_stage}, FnProperty::kCopyFromDevice, 0, "d2h_stage")));
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext rc) {
          rc.stream->ThenMemZero(a.ptr(), kN * sizeof(U64));
          return absl::OkStatus();
        },
        devices_[0], {}, {v_a}, FnProperty::kNormal, 0, "zero_a")));
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext rc) {
          slow(rc.stream, 5ms);
          rc.stream->ThenMemcpy(b.ptr(), stage.data(), kN * sizeof(U64));
          Affine(rc.stream, 1, b.ptr(), 1, 5, 2);
          return absl::OkStatus();
        },
        devices_[1], {v_stage}, {v_b}, FnProperty::kNormal, 0, "h2d_add_b")));
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext rc) {
          slow(rc.stream, 5ms);
          rc.stream->ThenMemcpy(result.data(), *b, kN * sizeof(U64));
          return absl::OkStatus();
        },
        devices_[1], {v_b}, {v_result}, FnProperty::kCopyFromDevice, 0, "d2h_result")));
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext) {
          sum = std::accumulate(result.begin(), result.end(), U64{0});
          return absl::OkStatus();
        },
        Context::Host(), {v_result}, {v_sum}, FnProperty::kNormal, 0, "sum")));

    ASSERT_TRUE(IsOk(engine->WaitForVar(v_sum)));
    U64 expected_sum = 0;
    for (U64 i = 0; i < kN; ++i) {
      const U64 expected = (i * 7 + static_cast<U64>(round)) * 3 + 1 + 5 + 2 * i;
      ASSERT_EQ(result[i], expected) << "element " << i;
      expected_sum += expected;
    }
    EXPECT_EQ(sum, expected_sum);
    ASSERT_TRUE(IsOk(engine->WaitForVar(v_a)));
    std::vector<U64> a_back(kN, 1);
    ASSERT_TRUE(IsOk(executors_[0]->SynchronousMemcpy(a_back.data(), *a, kN * sizeof(U64))));
    EXPECT_EQ(a_back, std::vector<U64>(kN, 0)) << "the write after read of A did not run";
  }
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
}

// Two functions on one device, the second reading what the first wrote, get
// the data although the engine may give them different streams: many
// independent pairs pushed at once so both streams of the pool are in use.
TEST_P(EngineDevices, ProducerConsumerOnOneDeviceAcrossItsStreams) {
  EngineOptions options;
  options.streams_per_device = 2;
  options.workers_per_device = 2;
  auto engine = MakeEngine(GetParam(), options);
  constexpr int kPairs = 16;
  constexpr U64 kN = 1024;
  std::vector<ScopedDeviceMemory<U64>> x, y;
  std::vector<std::vector<U64>> out(kPairs, std::vector<U64>(kN, 0));
  std::vector<VarHandle> vx, vy, vout;
  for (int p = 0; p < kPairs; ++p) {
    x.push_back(Must(executors_[0]->AllocateOwnedArray<U64>(kN), "alloc x"));
    y.push_back(Must(executors_[0]->AllocateOwnedArray<U64>(kN), "alloc y"));
    vx.push_back(engine->NewVariable());
    vy.push_back(engine->NewVariable());
    vout.push_back(engine->NewVariable());
  }
  for (int p = 0; p < kPairs; ++p) {
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&, p](RunContext rc) {
          rc.stream->ThenDoHostCallback([] { std::this_thread::sleep_for(3ms); });
          rc.stream->ThenMemset32(x[p].ptr(), static_cast<uint32_t>(p + 1), kN * sizeof(U64));
          return absl::OkStatus();
        },
        devices_[0], {}, {vx[p]}, FnProperty::kNormal, 0, "produce")));
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&, p](RunContext rc) {
          rc.stream->ThenMemcpy(y[p].ptr(), *x[p], kN * sizeof(U64));
          Affine(rc.stream, 0, y[p].ptr(), 2, 0, 0);
          rc.stream->ThenMemcpy(out[p].data(), *y[p], kN * sizeof(U64));
          return absl::OkStatus();
        },
        devices_[0], {vx[p]}, {vy[p], vout[p]}, FnProperty::kNormal, 0, "consume")));
  }
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  for (int p = 0; p < kPairs; ++p) {
    const U64 word = static_cast<U64>(p + 1);
    const U64 expected = ((word << 32) | word) * 2;
    EXPECT_EQ(out[p], std::vector<U64>(kN, expected)) << "pair " << p;
  }
}

// A device function whose stream work fails poisons its written vars like a
// host failure. A dependent device function may already have been issued
// (its body runs once the producer's work is enqueued, DESIGN.md: dependents
// on a device are chained on the device, not by a host wait), so the rule
// is enforced on the device: its device work does not run, and its written
// vars inherit the error. A dependent host function is not run at all.
TEST_P(EngineDevices, AFailureOnTheStreamPoisonsTheWrittenVarsAndSkipsDownstream) {
  auto engine = MakeEngine(GetParam());
  VarHandle bad = engine->NewVariable(), downstream = engine->NewVariable();
  std::atomic<bool> downstream_ran{false};
  ASSERT_TRUE(IsOk(engine->PushSync(
      [](RunContext rc) {
        rc.stream->ThenDoHostCallbackWithStatus(
            [] { return absl::DataLossError("device work failed"); });
        return absl::OkStatus();
      },
      devices_[1], {}, {bad}, FnProperty::kNormal, 0, "failing_device_fn")));
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext rc) {
        rc.stream->ThenDoHostCallback([&] { downstream_ran = true; });
        return absl::OkStatus();
      },
      devices_[1], {bad}, {downstream}, FnProperty::kNormal, 0, "downstream")));
  VarHandle host_downstream = engine->NewVariable();
  std::atomic<bool> host_downstream_ran{false};
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        host_downstream_ran = true;
        return absl::OkStatus();
      },
      Context::Host(), {bad}, {host_downstream}, FnProperty::kNormal, 0, "host_downstream")));
  EXPECT_TRUE(
      HasError(engine->WaitForVar(bad), absl::StatusCode::kDataLoss, {"device work failed"}));
  EXPECT_TRUE(HasError(engine->WaitForVar(downstream), absl::StatusCode::kDataLoss));
  EXPECT_FALSE(downstream_ran.load()) << "device work reading a var poisoned on a stream ran";
  EXPECT_TRUE(HasError(engine->WaitForVar(host_downstream), absl::StatusCode::kDataLoss));
  EXPECT_FALSE(host_downstream_ran.load()) << "a host function reading a poisoned var ran";
  EXPECT_TRUE(HasError(engine->WaitForAll(), absl::StatusCode::kDataLoss));
}

// WaitForAll returns only after a device function has been finished in
// full: its error is the one returned, and it is counted as completed.
// (The stream's notification could retire it before the worker had.)
TEST_P(EngineDevices, WaitForAllSeesTheErrorOfADeviceFunctionEveryTime) {
  auto engine = MakeEngine(GetParam());
  const int rounds = ::rill::engine::testing::kUnderTsan ? 300 : 2000;
  for (int i = 0; i < rounds; ++i) {
    VarHandle v = engine->NewVariable();
    ASSERT_TRUE(
        IsOk(engine->PushSync([](RunContext) { return absl::InvalidArgumentError("bad shape"); },
                              devices_[0], {}, {v}, FnProperty::kNormal, 0, "fails")));
    absl::Status waited = engine->WaitForAll();
    const EngineStats stats = engine->Stats();
    ASSERT_TRUE(HasError(waited, absl::StatusCode::kInvalidArgument, {"bad shape"}))
        << "round " << i;
    ASSERT_EQ(stats.completed, stats.pushed) << "round " << i;
    ASSERT_TRUE(IsOk(engine->DeleteVariable(nullptr, Context::Host(), v)));
    ASSERT_TRUE(IsOk(engine->WaitForAll())) << "round " << i;
  }
}

// Device work that read a var and failed poisons the var for its next
// writer -- also when so many readers follow that the finished readers'
// records are pruned before that writer comes.
TEST_P(EngineDevices, AFailedDeviceReaderPoisonsTheVarHoweverManyReadersFollow) {
  for (const int later_readers : {3, 40}) {
    SCOPED_TRACE(absl::StrCat(later_readers, " later readers"));
    auto engine = MakeEngine(GetParam());
    VarHandle v = engine->NewVariable(), x = engine->NewVariable();
    ASSERT_TRUE(IsOk(engine->PushSync(
        [](RunContext rc) {
          rc.stream->ThenDoHostCallbackWithStatus(
              [] { return absl::DataLossError("reader failed"); });
          return absl::OkStatus();
        },
        devices_[0], {v}, {x}, FnProperty::kNormal, 0, "failing_reader")));
    // Its device work has finished (failed) once x is ready.
    EXPECT_TRUE(HasError(engine->WaitForVar(x), absl::StatusCode::kDataLoss));
    for (int i = 0; i < later_readers; ++i) {
      ASSERT_TRUE(IsOk(engine->PushSync(
          [](RunContext rc) {
            rc.stream->ThenDoHostCallback([] {});
            return absl::OkStatus();
          },
          devices_[i % 2], {v}, {}, FnProperty::kNormal, 0, "reader")));
    }
    std::atomic<bool> writer_ran{false};
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext) {
          writer_ran = true;
          return absl::OkStatus();
        },
        Context::Host(), {}, {v}, FnProperty::kNormal, 0, "writer")));
    EXPECT_TRUE(HasError(engine->WaitForVar(v), absl::StatusCode::kDataLoss, {"reader failed"}));
    EXPECT_FALSE(writer_ran.load()) << "a writer ran after a failed device read of its var";
    EXPECT_FALSE(engine->WaitForAll().ok());
  }
}

// A function skipped because it reads a poisoned var did not wait for the
// device work still writing its other vars: that work stays what the next
// users wait for. WaitForVar returns, and DeleteVariable's function (which
// would free the buffer) runs, only after the device write has finished.
TEST_P(EngineDevices, ASkippedFunctionLeavesRunningDeviceWorkToBeWaitedFor) {
  auto engine = MakeEngine(GetParam());
  VarHandle poisoned = engine->NewVariable(), v = engine->NewVariable();
  std::atomic<bool> device_write_done{false};
  ASSERT_TRUE(
      IsOk(engine->PushSync([](RunContext) { return absl::InternalError("poison"); },
                            Context::Host(), {}, {poisoned}, FnProperty::kNormal, 0, "poisoner")));
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext rc) {
        rc.stream->ThenDoHostCallback([&] {
          std::this_thread::sleep_for(200ms);
          device_write_done = true;
        });
        return absl::OkStatus();
      },
      devices_[0], {}, {v}, FnProperty::kNormal, 0, "slow_device_write")));
  std::atomic<bool> skipped_ran{false};
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        skipped_ran = true;
        return absl::OkStatus();
      },
      Context::Host(), {poisoned}, {v}, FnProperty::kNormal, 0, "skipped_writer")));
  // v is poisoned by the skipped writer, and WaitForVar waited for the device.
  EXPECT_TRUE(HasError(engine->WaitForVar(v), absl::StatusCode::kInternal, {"poison"}));
  EXPECT_TRUE(device_write_done.load()) << "WaitForVar returned while device work wrote the var";
  EXPECT_FALSE(skipped_ran.load());
  std::atomic<int> deleted_early{-1};
  ASSERT_TRUE(IsOk(engine->DeleteVariable(
      [&](RunContext) {
        deleted_early = device_write_done.load() ? 0 : 1;
        return absl::OkStatus();
      },
      Context::Host(), v)));
  EXPECT_TRUE(HasError(engine->WaitForAll(), absl::StatusCode::kInternal));
  EXPECT_EQ(deleted_early.load(), 0) << "DeleteVariable ran while device work wrote the var";
}

// After a stream failure, independent work on the same device runs and
// succeeds: the failed stream does not stay in the pool and fail everything
// after it. Several rounds, so every stream of the pool is used.
TEST_P(EngineDevices, ADeviceKeepsWorkingAfterAStreamFailure) {
  auto engine = MakeEngine(GetParam());
  VarHandle bad = engine->NewVariable(), good = engine->NewVariable();
  ASSERT_TRUE(IsOk(engine->PushSync(
      [](RunContext rc) {
        rc.stream->ThenDoHostCallbackWithStatus(
            [] { return absl::DataLossError("device work failed"); });
        return absl::OkStatus();
      },
      devices_[1], {}, {bad}, FnProperty::kNormal, 0, "failing_device_fn")));
  EXPECT_TRUE(
      HasError(engine->WaitForVar(bad), absl::StatusCode::kDataLoss, {"device work failed"}));
  ScopedDeviceMemory<U64> m = Must(executors_[1]->AllocateOwnedArray<U64>(64), "alloc");
  std::vector<U64> back(64, 0);
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext rc) {
          rc.stream->ThenMemZero(m.ptr(), 64 * sizeof(U64));
          Affine(rc.stream, 1, m.ptr(), 1, 9, 0);
          rc.stream->ThenMemcpy(back.data(), *m, 64 * sizeof(U64));
          return absl::OkStatus();
        },
        devices_[1], {}, {good}, FnProperty::kNormal, 0, "after_failure")));
    const absl::Status status = engine->WaitForVar(good);
    EXPECT_TRUE(IsOk(status)) << "round " << i;
    if (!status.ok()) break;
    EXPECT_EQ(back, std::vector<U64>(64, 9));
  }
  EXPECT_TRUE(HasError(engine->WaitForAll(), absl::StatusCode::kDataLoss));
  EXPECT_TRUE(IsOk(engine->WaitForAll()));
}

// An async device function completed from a foreign thread after its stream
// work: the dependent host function sees the result.
TEST_P(EngineDevices, AsyncDeviceFunctionCompletedFromAForeignThread) {
  auto engine = MakeEngine(GetParam());
  constexpr U64 kN = 256;
  ScopedDeviceMemory<U64> m = Must(executors_[0]->AllocateOwnedArray<U64>(kN), "alloc");
  std::vector<U64> back(kN, 0);
  VarHandle v = engine->NewVariable();
  std::mutex completer_mu;  // The handle is set on a worker, joined here.
  std::thread completer;
  U64 total = 0;
  ASSERT_TRUE(IsOk(engine->PushAsync(
      [&](RunContext rc, Completion done) {
        rc.stream->ThenMemZero(m.ptr(), kN * sizeof(U64));
        Affine(rc.stream, 0, m.ptr(), 1, 0, 1);
        rc.stream->ThenMemcpy(back.data(), *m, kN * sizeof(U64));
        Stream* stream = rc.stream;
        std::lock_guard<std::mutex> lock(completer_mu);
        completer = std::thread([stream, done] { done(stream->BlockHostUntilDone()); });
      },
      devices_[0], {}, {v}, FnProperty::kAsync, 0, "async_device")));
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        total = std::accumulate(back.begin(), back.end(), U64{0});
        return absl::OkStatus();
      },
      Context::Host(), {v}, {}, FnProperty::kNormal, 0, "sum")));
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  {
    std::lock_guard<std::mutex> lock(completer_mu);
    completer.join();
  }
  EXPECT_EQ(total, kN * (kN - 1) / 2);
}

// Device completion is observed through events or stream callbacks: no
// worker blocks on device work. With one worker per device, while a
// producer's stream is busy for 400 ms, (1) an independent function on the
// same device and (2) a consumer on the other device -- whose stream must
// wait for the producer through an event, not the host -- both have their
// functions run at once; the consumer's data is still right.
class ThreadedEngineDevices : public EngineDevices {};

TEST_F(ThreadedEngineDevices, DeviceWorkIsAwaitedThroughEventsNotByBlockingWorkers) {
  EngineOptions options;
  options.workers_per_device = 1;
  options.copy_workers_per_device = 1;
  options.streams_per_device = 2;
  auto engine = MakeEngine(Kind::kThreaded, options);
  constexpr U64 kN = 512;
  ScopedDeviceMemory<U64> x = Must(executors_[0]->AllocateOwnedArray<U64>(kN), "alloc x");
  ScopedDeviceMemory<U64> y = Must(executors_[1]->AllocateOwnedArray<U64>(kN), "alloc y");
  std::vector<U64> stage(kN, 0), out(kN, 0);
  VarHandle v_stage = engine->NewVariable(), v_out = engine->NewVariable(),
            v_other = engine->NewVariable();
  using Clock = std::chrono::steady_clock;
  std::atomic<int64_t> independent_ms{-1}, consumer_ms{-1};
  const Clock::time_point start = Clock::now();
  auto since_start = [start] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  };
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext rc) {
        rc.stream->ThenDoHostCallback([] { std::this_thread::sleep_for(400ms); });
        rc.stream->ThenMemset32(x.ptr(), 0x5a5a5a5a, kN * sizeof(U64));
        rc.stream->ThenMemcpy(stage.data(), *x, kN * sizeof(U64));
        return absl::OkStatus();
      },
      devices_[0], {}, {v_stage}, FnProperty::kNormal, 0, "slow_producer")));
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        independent_ms = since_start();
        return absl::OkStatus();
      },
      devices_[0], {}, {v_other}, FnProperty::kNormal, 0, "independent")));
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext rc) {
        consumer_ms = since_start();
        rc.stream->ThenMemcpy(y.ptr(), stage.data(), kN * sizeof(U64));
        rc.stream->ThenMemcpy(out.data(), *y, kN * sizeof(U64));
        return absl::OkStatus();
      },
      devices_[1], {v_stage}, {v_out}, FnProperty::kNormal, 0, "consumer")));
  ASSERT_TRUE(IsOk(engine->WaitForVar(v_out)));
  EXPECT_EQ(out, std::vector<U64>(kN, 0x5a5a5a5a5a5a5a5aull));
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  EXPECT_GE(independent_ms.load(), 0);
  EXPECT_LT(independent_ms.load(), 200) << "a device worker blocked on device work";
  EXPECT_GE(consumer_ms.load(), 0);
  EXPECT_LT(consumer_ms.load(), 200)
      << "the consumer on another device waited on the host instead of an event";
}

}  // namespace
}  // namespace rill::engine
