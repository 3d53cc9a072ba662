// Conformance: kernels. Typed launches with memory and scalar arguments over
// 1-D, 2-D and 3-D grids checked against host references, a grid large
// enough to run in parallel, and every launch error.
//
// Each kernel is written here as a host function; a backend with its own
// format adds its variants through rill/conformance/suite_kernels.h.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/conformance/conformance.h"
#include "rill/conformance/suite_kernels.h"

namespace rill::conformance {
namespace {

using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using ::rill::testing::Must;

// `spec` with the variants the backends under test provide.
KernelSpec WithVariants(KernelSpec spec) {
  return Must(WithBackendVariants(std::move(spec)), "adding the backends' variants");
}

using SaxpyKernel = TypedKernel<float, DeviceMemory<float>, DeviceMemory<float>, uint64_t>;

// y[i] = a * x[i] + y[i] for i < n.
KernelSpec SaxpySpec() {
  KernelSpec spec("saxpy");
  spec.AddHostFunction<float, DeviceMemory<float>, DeviceMemory<float>, uint64_t>(
      [](const HostThread& t, float a, const float* x, float* y, uint64_t n) {
        const int64_t i = t.global_x();
        if (i >= 0 && static_cast<uint64_t>(i) < n) y[i] = a * x[i] + y[i];
      });
  return WithVariants(std::move(spec));
}

// out[(z * height + y) * width + x] = x + 100 * y + 10000 * z + bias over a
// width x height x depth volume; the thread at the origin also writes the
// launch geometry it saw into dims[0..5].
KernelSpec VolumeSpec() {
  KernelSpec spec("volume");
  spec.AddHostFunction<DeviceMemory<int64_t>, DeviceMemory<int64_t>, Dim3, int64_t>(
      [](const HostThread& t, int64_t* out, int64_t* dims, Dim3 extent, int64_t bias) {
        const int64_t x = t.block_idx.x * t.block_dim.x + t.thread_idx.x;
        const int64_t y = t.block_idx.y * t.block_dim.y + t.thread_idx.y;
        const int64_t z = t.block_idx.z * t.block_dim.z + t.thread_idx.z;
        if (x == 0 && y == 0 && z == 0) {
          const int64_t seen[6] = {t.block_dim.x, t.block_dim.y, t.block_dim.z,
                                   t.grid_dim.x,  t.grid_dim.y,  t.grid_dim.z};
          std::copy(seen, seen + 6, dims);
        }
        if (x < extent.x && y < extent.y && z < extent.z) {
          out[(z * extent.y + y) * extent.x + x] = x + 100 * y + 10000 * z + bias;
        }
      });
  return WithVariants(std::move(spec));
}

struct Mixed {
  int16_t a;
  double b;
};

// out[0] = small + wide + mixed.a * mixed.b; scalars of several sizes.
KernelSpec ScalarsSpec() {
  KernelSpec spec("scalars");
  spec.AddHostFunction<int8_t, uint64_t, Mixed, DeviceMemory<double>>(
      [](const HostThread& t, int8_t small, uint64_t wide, Mixed mixed, double* out) {
        if (t.global_x() == 0) out[0] = small + static_cast<double>(wide) + mixed.a * mixed.b;
      });
  return WithVariants(std::move(spec));
}

class KernelConformance : public ConformanceTest {
 protected:
  void SetUp() override {
    ConformanceTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    skip_ = RequireFeature(executor_, Feature::kKernelLaunch, [&] {
      absl::StatusOr<SaxpyKernel> k =
          executor_->LoadKernel<float, DeviceMemory<float>, DeviceMemory<float>, uint64_t>(
              SaxpySpec());
      if (!k.ok()) return k.status();
      ScopedDeviceMemory<float> v = Allocate<float>(1);
      std::unique_ptr<Stream> probe = NewStream();
      probe->ThenLaunch(ThreadDim(1), BlockDim(1), *k, 1.0f, *v, *v, uint64_t{1});
      return probe->BlockHostUntilDone();
    });
  }

  SaxpyKernel LoadSaxpy(StreamExecutor* executor) {
    return Must(executor->LoadKernel<float, DeviceMemory<float>, DeviceMemory<float>, uint64_t>(
                    SaxpySpec()),
                kLoadHint);
  }
  // What a backend that declares launches but cannot load the suite's
  // kernels should do.
  static constexpr const char* kLoadHint =
      "LoadKernel of a suite kernel (a backend that declares kKernelLaunch but does not run host "
      "functions provides its versions of the suite's kernels with RILL_CONFORMANCE_KERNELS, "
      "rill/conformance/suite_kernels.h)";

  // Runs saxpy over n elements with `threads` per block and checks it.
  void RunSaxpy(uint64_t n, int64_t threads) {
    SaxpyKernel saxpy = LoadSaxpy(executor_);
    std::vector<float> x(n), y(n), expected(n);
    for (uint64_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(i % 1000) * 0.25f;
      y[i] = static_cast<float>(i % 7);
      expected[i] = 3.0f * x[i] + y[i];
    }
    ScopedDeviceMemory<float> dx = Allocate<float>(n);
    ScopedDeviceMemory<float> dy = Allocate<float>(n);
    const int64_t blocks = static_cast<int64_t>((n + threads - 1) / threads);
    stream_->ThenMemcpyH2D<float>(x, dx.ptr())
        .ThenMemcpyH2D<float>(y, dy.ptr())
        .ThenLaunch(ThreadDim(threads), BlockDim(blocks), saxpy, 3.0f, *dx, *dy, n)
        .ThenMemcpyD2H<float>(*dy, absl::MakeSpan(y));
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    // Each element must be updated exactly once: twice would add 3x again.
    ASSERT_EQ(y, expected);
  }

  // Expects a launch of saxpy with these dims to fail with InvalidArgument
  // naming `dims_text`, without running.
  void ExpectBadDims(const ThreadDim& threads, const BlockDim& blocks,
                     const std::string& dims_text) {
    SCOPED_TRACE(dims_text);
    SaxpyKernel saxpy = LoadSaxpy(executor_);
    ScopedDeviceMemory<float> v = Allocate<float>(4);
    std::unique_ptr<Stream> stream = NewStream();
    stream->ThenMemZero(v.ptr(), 16).ThenLaunch(threads, blocks, saxpy, 1.0f, *v, *v, uint64_t{4});
    EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                         {"ThenLaunch(\"saxpy\"", dims_text, "outside the device's limits"}));
  }

  absl::Status skip_;
};

TEST_P(KernelConformance, OneDimensionalTypedLaunch) {
  if (!skip_.ok()) GTEST_SKIP() << skip_;
  RunSaxpy(1, 1);
  RunSaxpy(1000, 128);  // A partial last block.
  RunSaxpy(4097, 256);
}

TEST_P(KernelConformance, LargeGridRunsEveryThreadOnce) {
  if (!skip_.ok()) GTEST_SKIP() << skip_;
  RunSaxpy((1 << 20) + 5, 256);  // 4097 blocks: split across the device.
}

TEST_P(KernelConformance, TwoAndThreeDimensionalGrids) {
  if (!skip_.ok()) GTEST_SKIP() << skip_;
  auto volume =
      Must(executor_->LoadKernel<DeviceMemory<int64_t>, DeviceMemory<int64_t>, Dim3, int64_t>(
          VolumeSpec()));
  struct Case {
    Dim3 extent;
    ThreadDim threads;
  };
  const Case cases[] = {{{37, 19, 1}, ThreadDim(8, 4)},
                        {{9, 5, 7}, ThreadDim(4, 2, 2)},
                        {{3, 1, 130}, ThreadDim(1, 1, 16)},
                        {{64, 64, 4}, ThreadDim(16, 16, 1)}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.extent.ToString());
    const BlockDim blocks((c.extent.x + c.threads.x - 1) / c.threads.x,
                          (c.extent.y + c.threads.y - 1) / c.threads.y,
                          (c.extent.z + c.threads.z - 1) / c.threads.z);
    const int64_t count = c.extent.product();
    std::vector<int64_t> expected(count), got(count, -1), dims(6, -1);
    for (int64_t z = 0; z < c.extent.z; ++z)
      for (int64_t y = 0; y < c.extent.y; ++y)
        for (int64_t x = 0; x < c.extent.x; ++x)
          expected[(z * c.extent.y + y) * c.extent.x + x] = x + 100 * y + 10000 * z - 5;
    ScopedDeviceMemory<int64_t> out = Allocate<int64_t>(count);
    ScopedDeviceMemory<int64_t> seen = Allocate<int64_t>(6);
    stream_->ThenMemset32(out.ptr(), 0xFFFFFFFF, count * 8)
        .ThenLaunch(c.threads, blocks, volume, *out, *seen, c.extent, int64_t{-5})
        .ThenMemcpyD2H<int64_t>(*out, absl::MakeSpan(got))
        .ThenMemcpyD2H<int64_t>(*seen, absl::MakeSpan(dims));
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    EXPECT_EQ(got, expected);
    EXPECT_EQ(dims, (std::vector<int64_t>{c.threads.x, c.threads.y, c.threads.z, blocks.x, blocks.y,
                                          blocks.z}));
  }
}

TEST_P(KernelConformance, ScalarArgumentsOfSeveralSizes) {
  if (!skip_.ok()) GTEST_SKIP() << skip_;
  auto scalars =
      Must(executor_->LoadKernel<int8_t, uint64_t, Mixed, DeviceMemory<double>>(ScalarsSpec()));
  ScopedDeviceMemory<double> out = Allocate<double>(1);
  double got = 0;
  const uint64_t wide = (uint64_t{1} << 40) + 3;
  stream_->ThenLaunch(ThreadDim(1), BlockDim(1), scalars, int8_t{-7}, wide, Mixed{-3, 2.5}, *out)
      .ThenMemcpy(&got, *out, sizeof(double));
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_EQ(got, -7.0 + static_cast<double>(wide) - 7.5);
}

TEST_P(KernelConformance, LaunchesOnSeveralStreamsAtOnce) {
  if (!skip_.ok()) GTEST_SKIP() << skip_;
  SaxpyKernel saxpy = LoadSaxpy(executor_);
  constexpr uint64_t kN = 5000;
  std::vector<std::unique_ptr<Stream>> streams;
  std::vector<ScopedDeviceMemory<float>> buffers;
  std::vector<std::vector<float>> results(4, std::vector<float>(kN));
  const std::vector<float> ones(kN, 1.0f);
  for (int s = 0; s < 4; ++s) {
    streams.push_back(NewStream());
    buffers.push_back(Allocate<float>(kN));
  }
  for (int s = 0; s < 4; ++s) {
    // y = 1, then y = (s+1) * 1 + y, twice.
    streams[s]->ThenMemcpyH2D<float>(ones, buffers[s].ptr());
    for (int r = 0; r < 2; ++r) {
      streams[s]->ThenLaunch(ThreadDim(64), BlockDim((kN + 63) / 64), saxpy,
                             static_cast<float>(s + 1), *buffers[s], *buffers[s], kN);
    }
    streams[s]->ThenMemcpyD2H<float>(*buffers[s], absl::MakeSpan(results[s]));
  }
  for (int s = 0; s < 4; ++s) {
    ASSERT_TRUE(IsOk(streams[s]->BlockHostUntilDone()));
    // y1 = (s+1)*1 + 1 = s+2; y2 = (s+1)*(s+2) + (s+2) = (s+2)^2.
    EXPECT_EQ(results[s], std::vector<float>(kN, static_cast<float>((s + 2) * (s + 2))));
  }
}

TEST_P(KernelConformance, LaunchDimsOutsideTheDeviceLimitsAreInvalidArgument) {
  if (!skip_.ok()) GTEST_SKIP() << skip_;
  const DeviceDescription& d = executor_->GetDeviceDescription();
  ExpectBadDims(ThreadDim(0), BlockDim(1), "thread dims (0, 1, 1)");
  ExpectBadDims(ThreadDim(1, 1, -2), BlockDim(1), "thread dims (1, 1, -2)");
  ExpectBadDims(ThreadDim(1), BlockDim(1, 0, 1), "block dims (1, 0, 1)");
  ExpectBadDims(ThreadDim(1), BlockDim(-1), "block dims (-1, 1, 1)");
  ExpectBadDims(ThreadDim(d.max_block_dims.x + 1), BlockDim(1),
                absl::StrCat("thread dims (", d.max_block_dims.x + 1, ", 1, 1)"));
  ExpectBadDims(ThreadDim(1, 1, d.max_block_dims.z + 1), BlockDim(1),
                absl::StrCat("thread dims (1, 1, ", d.max_block_dims.z + 1, ")"));
  ExpectBadDims(ThreadDim(1), BlockDim(1, d.max_grid_dims.y + 1),
                absl::StrCat("block dims (1, ", d.max_grid_dims.y + 1, ", 1)"));
  ExpectBadDims(ThreadDim(1), BlockDim(1, 1, d.max_grid_dims.z + 1),
                absl::StrCat("block dims (1, 1, ", d.max_grid_dims.z + 1, ")"));
  // Each dimension within its limit, but too many threads per block.
  const int64_t tx = std::min(d.max_block_dims.x, d.max_threads_per_block);
  const int64_t ty = d.max_threads_per_block / tx + 1;
  if (ty <= d.max_block_dims.y) {
    ExpectBadDims(ThreadDim(tx, ty), BlockDim(1),
                  absl::StrCat("thread dims (", tx, ", ", ty, ", 1)"));
  }
}

TEST_P(KernelConformance, LaunchArgumentErrorsAreInvalidArgument) {
  if (!skip_.ok()) GTEST_SKIP() << skip_;
  SaxpyKernel saxpy = LoadSaxpy(executor_);
  ScopedDeviceMemory<float> v = Allocate<float>(4);

  std::unique_ptr<Stream> untyped = NewStream();
  KernelArgs three = {PackKernelArg(1.0f), PackKernelArg(*v), PackKernelArg(*v)};
  untyped->ThenLaunch(ThreadDim(4), BlockDim(1), saxpy.kernel(), three);
  EXPECT_TRUE(HasError(untyped->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"takes 4 argument(s), got 3"}));

  std::unique_ptr<Stream> null_arg = NewStream();
  null_arg->ThenLaunch(ThreadDim(4), BlockDim(1), saxpy, 1.0f, *v, DeviceMemory<float>(),
                       uint64_t{4});
  EXPECT_TRUE(HasError(null_arg->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"argument 2 is null device memory"}));

  std::unique_ptr<Stream> unloaded = NewStream();
  unloaded->ThenLaunch(ThreadDim(4), BlockDim(1), SaxpyKernel(), 1.0f, *v, *v, uint64_t{4});
  EXPECT_TRUE(
      HasError(unloaded->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument, {"not loaded"}));
}

TEST_P(KernelConformance, LoadErrors) {
  if (!skip_.ok()) GTEST_SKIP() << skip_;
  EXPECT_TRUE(HasError(executor_->LoadKernel(KernelSpec("no_variants")).status(),
                       absl::StatusCode::kUnimplemented, {"no_variants"}));
  // Declared (float, DeviceMemory<float>, DeviceMemory<float>, uint64_t).
  EXPECT_TRUE(HasError(
      executor_->LoadKernel<double, DeviceMemory<float>, DeviceMemory<float>, uint64_t>(SaxpySpec())
          .status(),
      absl::StatusCode::kInvalidArgument, {"saxpy", "differ"}));
  EXPECT_TRUE(HasError(executor_->LoadKernel<float, DeviceMemory<float>>(SaxpySpec()).status(),
                       absl::StatusCode::kInvalidArgument, {"saxpy"}));
}

TEST_P(KernelConformance, KernelOfAnotherExecutorIsInvalidArgument) {
  if (!skip_.ok()) GTEST_SKIP() << skip_;
  if (absl::Status s = RequireDevices(2); !s.ok()) GTEST_SKIP() << s.message();
  StreamExecutor* peer = Must(
      platform()->ExecutorForDevice((GetParam().ordinal + 1) % platform()->VisibleDeviceCount()));
  SaxpyKernel foreign = LoadSaxpy(peer);
  ScopedDeviceMemory<float> v = Allocate<float>(4);
  stream_->ThenLaunch(ThreadDim(4), BlockDim(1), foreign, 1.0f, *v, *v, uint64_t{4});
  EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"saxpy", peer->DebugName(), executor_->DebugName()}));
}

INSTANTIATE_TEST_SUITE_P(AllDevices, KernelConformance, ::testing::ValuesIn(AllDevices()),
                         DeviceTestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(KernelConformance);

}  // namespace
}  // namespace rill::conformance
