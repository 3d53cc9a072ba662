// Bad input to the library plugins' argument checks: size arithmetic that
// used to wrap in 64 bits (issue 22, class 2). The checks sit in the
// plugin interfaces (BlasSupport::Do*, DnnSupport::Do*), so every library
// behind them is covered; these run on the host's defaults (OpenBLAS,
// oneDNN), which crashed inside the library before.

#include <cstdint>
#include <limits>
#include <memory>

#include "gtest/gtest.h"
#include "rill/base/checked_math.h"
#include "rill/plugins/dnn/dnn.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using ::rill::testing::Must;

class PluginBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    exec_ = Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
    stream_ = Must(exec_->CreateStream());
  }
  absl::Status Finish() { return stream_->BlockHostUntilDone(); }

  StreamExecutor* exec_ = nullptr;
  std::unique_ptr<Stream> stream_;
};

TEST_F(PluginBadInput, AVectorSpanThatWrapsIsRefused) {
  // (n - 1) * inc fits in 63 bits; times 8 bytes it wrapped to a size the
  // 72-byte buffer "held", and OpenBLAS read far past it.
  ScopedDeviceMemory<double> x = Must(exec_->AllocateOwnedArray<double>(9));
  ScopedDeviceMemory<double> result = Must(exec_->AllocateOwnedArray<double>(1));
  stream_->ThenBlasAsum<double>(1073807363, *x, 2147352580, result.ptr());
  EXPECT_TRUE(HasError(Finish(), absl::StatusCode::kInvalidArgument,
                       {"ThenBlasAsum", "overflows a 64-bit size"}));
}

TEST_F(PluginBadInput, AVectorStrideProductThatWrapsIsRefused) {
  ScopedDeviceMemory<float> x = Must(exec_->AllocateOwnedArray<float>(16));
  ScopedDeviceMemory<float> y = Must(exec_->AllocateOwnedArray<float>(16));
  stream_->ThenBlasAxpy<float>(int64_t{1} << 40, 1.0f, *x, int64_t{1} << 40, y.ptr(), 1);
  EXPECT_TRUE(HasError(Finish(), absl::StatusCode::kInvalidArgument,
                       {"vector x (n=1099511627776, incx=1099511627776) overflows"}));
}

TEST_F(PluginBadInput, AStridedBatchOfHugeStrideIsRefused) {
  ScopedDeviceMemory<float> a = Must(exec_->AllocateOwnedArray<float>(4));
  ScopedDeviceMemory<float> b = Must(exec_->AllocateOwnedArray<float>(4));
  ScopedDeviceMemory<float> c = Must(exec_->AllocateOwnedArray<float>(8));
  GemmArgs g;
  g.m = g.n = g.k = 2;
  g.a = *a, g.b = *b, g.c = *c;
  g.lda = g.ldb = g.ldc = 2;
  g.batch_count = 2;
  g.stride_a = int64_t{1} << 62;  // (batch - 1) * stride fits; in bytes it wraps.
  g.stride_b = 0;
  g.stride_c = 4;
  stream_->ThenBlasGemm(g);
  EXPECT_TRUE(HasError(Finish(), absl::StatusCode::kInvalidArgument,
                       {"a's", "overflows a 64-bit size", "stride_a=4611686018427387904"}));
}

TEST_F(PluginBadInput, ALeadingDimensionThatWrapsIsRefused) {
  ScopedDeviceMemory<float> m = Must(exec_->AllocateOwnedArray<float>(16));
  GemmArgs g;
  g.m = g.n = g.k = 2;
  g.a = *m, g.b = *m, g.c = *m;
  g.lda = std::numeric_limits<int64_t>::max();  // (cols - 1) * lda + rows wraps.
  g.ldb = g.ldc = 2;
  stream_->ThenBlasGemm(g);
  EXPECT_TRUE(
      HasError(Finish(), absl::StatusCode::kInvalidArgument, {"matrix a (2x2, lda=", "overflows"}));

  GemmArgs c_stride = g;
  c_stride.lda = 2;
  c_stride.ldc = std::numeric_limits<int64_t>::max();
  c_stride.batch_count = 2;
  std::unique_ptr<Stream> second = Must(exec_->CreateStream());
  second->ThenBlasGemm(c_stride);
  EXPECT_TRUE(HasError(second->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"matrix c (2x2, ldc=", "overflows"}));
}

// {n=2^31, c=2^31, h=4, w=1} has 2^64 elements: the product wrapped to 0
// bytes, and pooling and softmax then ran on it.
TensorDescriptor HugeTensor() {
  TensorDescriptor t;
  t.n = int64_t{1} << 31;
  t.c = int64_t{1} << 31;
  t.h = 4;
  t.w = 1;
  return t;
}

TEST_F(PluginBadInput, ATensorWhoseSizeWrapsIsRefusedByPooling) {
  ScopedDeviceMemory<float> x = Must(exec_->AllocateOwnedArray<float>(16));
  ScopedDeviceMemory<float> y = Must(exec_->AllocateOwnedArray<float>(16));
  PoolingDescriptor pool;
  pool.window_h = pool.window_w = 1;
  stream_->ThenPoolForward(pool, HugeTensor(), *x, HugeTensor(), y.ptr());
  EXPECT_TRUE(HasError(Finish(), absl::StatusCode::kInvalidArgument,
                       {"[2147483648, 2147483648, 4, 1]", "byte count overflows a 64-bit size"}));
}

TEST_F(PluginBadInput, ATensorWhoseSizeWrapsIsRefusedBySoftmax) {
  ScopedDeviceMemory<float> x = Must(exec_->AllocateOwnedArray<float>(16));
  ScopedDeviceMemory<float> y = Must(exec_->AllocateOwnedArray<float>(16));
  stream_->ThenSoftmax(HugeTensor(), *x, y.ptr());
  EXPECT_TRUE(HasError(Finish(), absl::StatusCode::kInvalidArgument, {"byte count overflows"}));
}

TEST_F(PluginBadInput, ConvolutionPaddingThatWrapsIsRefused) {
  TensorDescriptor in;
  in.n = in.c = 1;
  in.h = in.w = 4;
  FilterDescriptor f;
  f.output_channels = f.input_channels = 1;
  f.height = f.width = 3;
  ConvolutionDescriptor conv;
  conv.pad_h = std::numeric_limits<int64_t>::max() / 2 + 1;  // in + 2 pad wraps.
  EXPECT_TRUE(HasError(ConvolutionOutput(in, f, conv).status(), absl::StatusCode::kInvalidArgument,
                       {"convolution's padded height", "overflows"}));
  conv.pad_h = 0;
  conv.dilation_w = std::numeric_limits<int64_t>::max();  // (window - 1) * dilation wraps.
  EXPECT_TRUE(HasError(ConvolutionOutput(in, f, conv).status(), absl::StatusCode::kInvalidArgument,
                       {"convolution's width window 3 with dilation", "overflows"}));
  FilterDescriptor huge = f;
  huge.output_channels = huge.input_channels = int64_t{1} << 32;
  EXPECT_TRUE(HasError(CheckFilter("filter", huge), absl::StatusCode::kInvalidArgument,
                       {"filter", "byte count overflows"}));
}

// The helper every check above goes through.
TEST(CheckedMath, OverflowIsReportedNotWrapped) {
  EXPECT_EQ(CheckedMul<int64_t>(int64_t{1} << 31, int64_t{1} << 31), int64_t{1} << 62);
  EXPECT_FALSE(CheckedMul<int64_t>(int64_t{1} << 32, int64_t{1} << 31).has_value());
  EXPECT_FALSE(CheckedAdd<uint64_t>(UINT64_MAX, 1).has_value());
  EXPECT_FALSE(CheckedSub<int64_t>(std::numeric_limits<int64_t>::min(), 1).has_value());
  EXPECT_EQ(CheckedCast<int>(int64_t{5}), 5);
  EXPECT_FALSE(CheckedCast<int>(int64_t{4294967297}).has_value());
  EXPECT_FALSE(CheckedCast<uint64_t>(int64_t{-1}).has_value());

  CheckedInt<int64_t> span = CheckedInt<int64_t>(1073807362) * 2147352580 + 1;
  EXPECT_TRUE(span.ok());
  span *= 8;  // Once poisoned, it stays so.
  EXPECT_FALSE(span.ok());
  span += 0;
  EXPECT_FALSE(span.ok());
  EXPECT_TRUE(HasError(span.Get("x's span").status(), absl::StatusCode::kInvalidArgument,
                       {"x's span overflows a 64-bit size"}));
  EXPECT_TRUE(HasError(CheckedProduct("tensor", {int64_t{1} << 31, int64_t{1} << 31, 4}).status(),
                       absl::StatusCode::kInvalidArgument, {"tensor overflows"}));
  EXPECT_EQ(CheckedProduct("tensor", {2, 3, 4}).value(), 24);
  EXPECT_TRUE(HasError(CheckedProduct("tensor", {2, -3}).status(),
                       absl::StatusCode::kInvalidArgument, {"tensor has a negative factor -3"}));
  // Mixed types: a uint64_t past int64's range poisons instead of wrapping.
  EXPECT_FALSE((CheckedInt<int64_t>(2) * (uint64_t{1} << 63)).ok());
  EXPECT_TRUE((CheckedInt<int64_t>(2) * uint64_t{3}).ok());
}

}  // namespace
}  // namespace rill
