// The framework around kernels: errors that poison outputs and name the op,
// missing kernels and the opt-in host fallback, write requests a kernel does
// not honour itself, allocation past the device limit.
#include "rill/ops/invoke.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rill/executor/stream_executor.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/ops.h"
#include "rill/ops/testing/op_testing.h"
#include "rill/tensor/storage_allocator.h"

namespace rill::ops {
namespace {

using engine::Context;

absl::Status FailingKernel(OpContext& ctx) {
  return absl::InvalidArgumentError("the kernel found a bad value");
}

// y = 2x, honouring only kWriteTo itself; host kernels only.
absl::Status DoubleKernel(OpContext& ctx) {
  const TensorArg x = ctx.in(0), y = ctx.out(0);
  EXPECT_EQ(ctx.req(0), OpReqType::kWriteTo);
  return ctx.RunOnHost([x, y]() -> absl::Status {
    for (int64_t i = 0; i < x.size(); ++i) y.data<float>()[i] = 2 * x.data<float>()[i];
    return absl::OkStatus();
  });
}

void RegisterTestOps() {
  static bool done = [] {
    OpRegistry& r = OpRegistry::Global();
    (void)r.Register(OpDef("test_fail"));
    (void)r.RegisterKernel("test_fail", "host", {FailingKernel});
    (void)r.Register(OpDef("test_double").set_dtypes(DTypeBit(DType::kF32)));
    (void)r.RegisterKernel("test_double", "host", {DoubleKernel, ReqBit(OpReqType::kWriteTo)});
    return true;
  }();
  (void)done;
}

class InvokeTest : public testing::OpTest {
 protected:
  void SetUp() override {
    OpTest::SetUp();
    RegisterTestOps();
  }
};

TEST_P(InvokeTest, AFailedOpPoisonsItsOutputsAndEveryReadNamesIt) {
  auto x = *Tensor::FromHost<float>({1, 2, 3, 4, 5, 6}, {2, 3}, Context::Host(), engine_.get());
  auto y = Invoke("test_fail", {x});
  ASSERT_TRUE(y.ok()) << y.status();  // The error comes when the op runs.
  auto z = ops::Neg((*y)[0]);         // Downstream of the failure.
  ASSERT_TRUE(z.ok());
  for (int read = 0; read < 3; ++read) {
    for (const Tensor& t : {(*y)[0], *z}) {
      absl::Status s = t.WaitToRead();
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
      EXPECT_NE(s.message().find("op 'test_fail' (float32[2, 3] on cpu)"), std::string::npos) << s;
      EXPECT_NE(s.message().find("bad value"), std::string::npos) << s;
      EXPECT_FALSE(t.ToHost<float>().ok());
    }
  }
  // The input is untouched and still usable.
  EXPECT_EQ(*(*ops::Neg(x)).ToHost<float>(), std::vector<float>({-1, -2, -3, -4, -5, -6}));
}

TEST_P(InvokeTest, AMissingKernelSaysWhatItNeedsAndFallbackIsOptIn) {
  if (GetParam().is_host()) GTEST_SKIP() << "the cpu context runs host kernels";
  auto x = *Tensor::FromHost<float>({1, 2, 3}, {3}, GetParam(), engine_.get());
  auto y = Invoke("test_double", {x});
  if (ExecutorFor(GetParam()).value()->platform()->Name() == "host") {
    ASSERT_TRUE(y.ok());
    return;
  }
  ASSERT_EQ(y.status().code(), absl::StatusCode::kUnimplemented) << y.status();
  EXPECT_NE(y.status().message().find("platform 'host'"), std::string::npos) << y.status();
  EXPECT_NE(y.status().message().find(GetParam().ToString()), std::string::npos) << y.status();
  InvokeOptions fallback;
  fallback.host_fallback = true;
  const uint64_t fallbacks = FallbackCount();
  y = Invoke("test_double", {x}, {}, {}, fallback);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(FallbackCount(), fallbacks + 1);
  EXPECT_EQ((*y)[0].context(), GetParam());
  EXPECT_EQ(*(*y)[0].ToHost<float>(), std::vector<float>({2, 4, 6}));
}

// cpu and host:0 share memory, not a context: mixing them is refused with
// a message that says so.
TEST(InvokeContexts, CpuAndHost0AreDifferentContextsOverOneMemory) {
  auto engine = testing::MakeEngine();
  auto host0 = *Context::Device("host", 0);
  auto a = *Tensor::FromHost<float>({1, 2}, {2}, Context::Cpu(), engine.get());
  auto b = *Tensor::FromHost<float>({3, 4}, {2}, host0, engine.get());
  EXPECT_EQ(a.executor(), b.executor());
  EXPECT_EQ(Context::Cpu().ToString(), "cpu");
  auto r = Invoke("add", {a, b});
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("cpu and host:0 share memory but are different contexts"),
            std::string::npos)
      << r.status();
  auto moved = *b.CopyTo(Context::Cpu());
  EXPECT_EQ(*(*ops::Add(a, moved)).ToHost<float>(), std::vector<float>({4, 6}));
}

// The kernel honours only kWriteTo: the framework computes into temp space,
// then adds (kAddTo) or copies (kWriteInplace); kNullOp runs nothing.
TEST_P(InvokeTest, TheFrameworkHonoursRequestsTheKernelDoesNot) {
  if (ExecutorFor(GetParam()).value()->platform()->Name() != "host")
    GTEST_SKIP() << "host kernel only";
  auto x = *Tensor::FromHost<float>({1, 2, 3}, {3}, GetParam(), engine_.get());
  auto acc = *Tensor::FromHost<float>({10, 20, 30}, {3}, GetParam(), engine_.get());
  InvokeOptions add;
  add.reqs = {OpReqType::kAddTo};
  ASSERT_TRUE(Invoke("test_double", {x}, {}, {acc}, add).ok());
  EXPECT_EQ(*acc.ToHost<float>(), std::vector<float>({12, 24, 36}));
  ASSERT_TRUE(Invoke("test_double", {x}, {}, {x}).ok());  // Shares storage: kWriteInplace.
  EXPECT_EQ(*x.ToHost<float>(), std::vector<float>({2, 4, 6}));
  InvokeOptions null;
  null.reqs = {OpReqType::kNullOp};
  const int64_t pushed = engine_->Stats().pushed;
  ASSERT_TRUE(Invoke("test_double", {x}, {}, {acc}, null).ok());
  EXPECT_EQ(engine_->Stats().pushed, pushed);
  EXPECT_EQ(*acc.ToHost<float>(), std::vector<float>({12, 24, 36}));
}

TEST_P(InvokeTest, AllocationPastTheDeviceLimitIsResourceExhaustedWithStatistics) {
  StorageAllocator* alloc = StorageAllocator::For(ExecutorFor(GetParam()).value());
  AllocatorOptions saved = alloc->options();
  AllocatorOptions o = saved;
  o.limit = alloc->Stats().bytes_in_use + alloc->Stats().bytes_cached + (1 << 20);
  alloc->SetOptions(o);
  auto x = *Tensor::Empty({1 << 20}, DType::kF32, GetParam(), engine_.get());  // 4 MiB.
  auto y = ops::Neg(x);
  alloc->SetOptions(saved);
  ASSERT_EQ(y.status().code(), absl::StatusCode::kResourceExhausted) << y.status();
  EXPECT_NE(y.status().message().find("in use"), std::string::npos) << y.status();
  EXPECT_NE(y.status().message().find("limit"), std::string::npos) << y.status();
}

INSTANTIATE_TEST_SUITE_P(AllContexts, InvokeTest, ::testing::ValuesIn(testing::AllContexts()),
                         testing::ContextName);

}  // namespace
}  // namespace rill::ops
