// The dependency engine dispatching to an OpenCL device with no engine
// changes: functions pushed with an "opencl" context get an OpenCL stream,
// and data flows OpenCL -> host platform device -> OpenCL -> CPU through
// vars only. Each device step starts with a slow host callback on its
// stream, so a consumer the engine fails to order behind its producer's
// stream reads stale data.

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "rill/engine/engine.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"
#include "tests/engine/engine_testing.h"

namespace rill::engine {
namespace {

using ::rill::engine::testing::Kind;
using ::rill::engine::testing::KindName;
using ::rill::engine::testing::MakeEngine;
using ::rill::testing::IsOk;
using ::rill::testing::Must;
using U64 = uint64_t;
using namespace std::chrono_literals;

KernelSpec AffineSpec() {
  KernelSpec spec("affine");
  spec.AddOpenClSource(R"CL(
__kernel void affine(__global ulong* y, ulong mul, ulong add, ulong n) {
  const size_t i = get_global_id(0);
  if (i < n) y[i] = y[i] * mul + add + i;
})CL");
  spec.AddHostFunction<DeviceMemory<U64>, U64, U64, U64>(
      [](const HostThread& t, U64* y, U64 mul, U64 add, U64 n) {
        const U64 i = static_cast<U64>(t.global_x());
        if (i < n) y[i] = y[i] * mul + add + i;
      });
  return spec;
}
using AffineKernel = TypedKernel<DeviceMemory<U64>, U64, U64, U64>;

class OpenClEngineTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    Platform* cl = Must(PlatformManager::Default().PlatformWithName("opencl"));
    if (cl->VisibleDeviceCount() == 0) GTEST_SKIP() << cl->Availability();
    cl_ = Must(cl->ExecutorForDevice(0));
    host_ = Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
    cl_ctx_ = Must(Context::Device("opencl", 0));
    host_ctx_ = Must(Context::Device("host", 0));
    cl_kernel_ = Must(cl_->LoadKernel<DeviceMemory<U64>, U64, U64, U64>(AffineSpec()));
    host_kernel_ = Must(host_->LoadKernel<DeviceMemory<U64>, U64, U64, U64>(AffineSpec()));
  }
  StreamExecutor* cl_ = nullptr;
  StreamExecutor* host_ = nullptr;
  Context cl_ctx_, host_ctx_;
  AffineKernel cl_kernel_, host_kernel_;
};

INSTANTIATE_TEST_SUITE_P(Kinds, OpenClEngineTest, ::testing::Values(Kind::kNaive, Kind::kThreaded),
                         KindName);

//   opencl: A <- H2D(input); A = 3A + 1 + i; stage <- D2H(A)
//   opencl: A <- 0 after the read (write after read, maybe on another stream)
//   host:0: B <- H2D(stage); B = B + 5 + i; result <- D2H(B)
//   cpu   : sum <- sum(result)
TEST_P(OpenClEngineTest, ChainThroughOpenClAndHostDevices) {
  EngineOptions options;
  options.streams_per_device = 2;
  options.cpu_workers = 2;
  auto engine = MakeEngine(GetParam(), options);
  constexpr U64 kN = 1024;
  ScopedDeviceMemory<U64> a = Must(cl_->AllocateOwnedArray<U64>(kN));
  ScopedDeviceMemory<U64> b = Must(host_->AllocateOwnedArray<U64>(kN));
  std::vector<U64> input(kN), stage(kN, 0), result(kN, 0);
  U64 sum = 0;
  VarHandle v_in = engine->NewVariable(), v_a = engine->NewVariable(),
            v_stage = engine->NewVariable();
  VarHandle v_result = engine->NewVariable(), v_sum = engine->NewVariable();
  auto slow = [](Stream* s) { s->ThenDoHostCallback([] { std::this_thread::sleep_for(10ms); }); };
  for (U64 round = 0; round < 3; ++round) {
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&, round](RunContext) {
          for (U64 i = 0; i < kN; ++i) input[i] = i * 7 + round;
          return absl::OkStatus();
        },
        Context::Host(), {}, {v_in}, FnProperty::kNormal, 0, "fill")));
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext rc) {
          EXPECT_EQ(rc.stream->parent(), cl_);
          slow(rc.stream);
          rc.stream->ThenMemcpyH2D<U64>(input, a.ptr())
              .ThenLaunch(ThreadDim(64), BlockDim(kN / 64), cl_kernel_, *a, U64{3}, U64{1}, kN);
          return absl::OkStatus();
        },
        cl_ctx_, {v_in}, {v_a}, FnProperty::kCopyToDevice, 0, "opencl_affine")));
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext rc) {
          slow(rc.stream);
          rc.stream->ThenMemcpyD2H<U64>(*a, absl::MakeSpan(stage));
          return absl::OkStatus();
        },
        cl_ctx_, {v_a}, {v_stage}, FnProperty::kCopyFromDevice, 0, "opencl_d2h")));
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext rc) {
          rc.stream->ThenMemZero(a.ptr(), kN * sizeof(U64));
          return absl::OkStatus();
        },
        cl_ctx_, {}, {v_a}, FnProperty::kNormal, 0, "opencl_zero")));
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext rc) {
          slow(rc.stream);
          rc.stream->ThenMemcpyH2D<U64>(stage, b.ptr())
              .ThenLaunch(ThreadDim(64), BlockDim(kN / 64), host_kernel_, *b, U64{1}, U64{5}, kN)
              .ThenMemcpyD2H<U64>(*b, absl::MakeSpan(result));
          return absl::OkStatus();
        },
        host_ctx_, {v_stage}, {v_result}, FnProperty::kNormal, 0, "host_device_step")));
    ASSERT_TRUE(IsOk(engine->PushSync(
        [&](RunContext) {
          sum = 0;
          for (U64 r : result) sum += r;
          return absl::OkStatus();
        },
        Context::Host(), {v_result}, {v_sum}, FnProperty::kNormal, 0, "sum")));
    ASSERT_TRUE(IsOk(engine->WaitForVar(v_sum)));
    U64 expected = 0;
    for (U64 i = 0; i < kN; ++i) expected += ((i * 7 + round) * 3 + 1 + i) + 5 + i;
    EXPECT_EQ(sum, expected) << "round " << round;
  }
  ASSERT_TRUE(IsOk(engine->WaitForAll()));
  std::vector<U64> zeros(kN, 1);
  ASSERT_TRUE(IsOk(cl_->SynchronousMemcpy(zeros.data(), *a, kN * sizeof(U64))));
  EXPECT_EQ(zeros, std::vector<U64>(kN, 0)) << "the write after read ran";
}

// A failing OpenCL step poisons its var; the dependent host step is skipped.
TEST_P(OpenClEngineTest, DeviceErrorPoisonsVars) {
  auto engine = MakeEngine(GetParam());
  VarHandle v = engine->NewVariable(), w = engine->NewVariable();
  bool ran = false;
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext rc) {
        rc.stream->ThenDoHostCallbackWithStatus(
            [] { return absl::DataLossError("opencl step broke"); });
        return absl::OkStatus();
      },
      cl_ctx_, {}, {v}, FnProperty::kNormal, 0, "bad")));
  ASSERT_TRUE(IsOk(engine->PushSync(
      [&](RunContext) {
        ran = true;
        return absl::OkStatus();
      },
      Context::Host(), {v}, {w}, FnProperty::kNormal, 0, "after")));
  EXPECT_FALSE(engine->WaitForVar(w).ok());
  EXPECT_FALSE(ran);
  (void)engine->WaitForAll();
}

}  // namespace
}  // namespace rill::engine
