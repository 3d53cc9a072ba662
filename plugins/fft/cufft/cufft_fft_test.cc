// Tests of the "cufft" FftSupport plugin. The status mapping runs
// everywhere; the transforms run on every CUDA device and skip with the
// reason ("no CUDA device: ...") where there is none (no GPU or driver):
//  - c2c forward/inverse, r2c, c2r; float and double; 1-D, 2-D, 3-D;
//    batched with strides, distances and embeds; in-place and out-of-place;
//    against a naive DFT in double (plugins/fft/fft_test_util.h);
//  - out-of-place runs leave the input (c2r included: cuFFT overwrites it,
//    the plugin transforms a copy) and the output's gaps alone;
//  - round trips at large sizes: inverse(forward(x)) = N x;
//  - bad input and plan lifetime.
//
// Tolerances (normwise FFT bounds, Higham 24.1), N the transform size:
// each element within 4 (log2 N + 1) eps(T) ||reference|| of the naive DFT;
// a round trip within 4 (log2 N + 1) eps(T) ||N x||.

#include "rill/plugins/fft/cufft/cufft_fft.h"

#include <cufft.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rill/platform/cuda/cuda_platform.h"
#include "rill/plugins/fft/cufft/cufft_status.h"
#include "rill/plugins/fft/fft.h"
#include "rill/plugins/fft/fft_test_util.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using fft_testing::Cd;
using fft_testing::ElementIndex;
using fft_testing::Product;
using fft_testing::Random;
using fft_testing::SideDims;
using fft_testing::Spec;
using fft_testing::Tolerance;
using testing::HasError;
using testing::IsOk;
using testing::Must;

constexpr auto kFwd = FftDirection::kForward;
constexpr auto kInv = FftDirection::kInverse;
constexpr auto kIn = FftPlacement::kInPlace;
constexpr auto kOut = FftPlacement::kOutOfPlace;
constexpr auto kC2C = FftType::kC2C;
constexpr auto kR2C = FftType::kR2C;
constexpr auto kC2R = FftType::kC2R;

TEST(CuFftStatusTest, NamesCodesAndCanonicalCodes) {
  EXPECT_TRUE(IsOk(CuFftStatus(0, "x")));
  EXPECT_TRUE(HasError(CuFftStatus(8, "cufftMakePlanMany64"), absl::StatusCode::kInvalidArgument,
                       {"cufftMakePlanMany64", "CUFFT_INVALID_SIZE (8)"}));
  EXPECT_TRUE(
      HasError(CuFftStatus(2, "w"), absl::StatusCode::kResourceExhausted, {"CUFFT_ALLOC_FAILED"}));
  EXPECT_TRUE(
      HasError(CuFftStatus(14, "w"), absl::StatusCode::kUnimplemented, {"CUFFT_NOT_IMPLEMENTED"}));
  EXPECT_TRUE(HasError(CuFftStatus(5, "w"), absl::StatusCode::kInternal, {"CUFFT_INTERNAL_ERROR"}));
  EXPECT_TRUE(HasError(CuFftStatus(999, "w"), absl::StatusCode::kInternal, {"cufftResult 999"}));
  EXPECT_EQ(CuFftResultName(CUFFT_INVALID_DEVICE), "CUFFT_INVALID_DEVICE");
  EXPECT_EQ(CuFft::LibraryVersion(), CUFFT_VERSION);
}

TEST(CuFftRegistryTest, RegisteredAsTheCudaDefault) {
  bool found = false;
  for (const PluginRegistry::Entry& e : PluginRegistry::Default().List()) {
    if (e.platform != kCudaPlatformId || e.kind != PluginKind::kFft || e.name != "cufft") continue;
    found = true;
    if (std::getenv("RILL_FFT") == nullptr) {
      EXPECT_TRUE(e.is_default);
    }
  }
  EXPECT_TRUE(found) << "no \"cufft\" FFT plugin registered for the cuda platform";
}

TEST(CuFftCreateTest, RejectsAHostExecutor) {
  StreamExecutor* host =
      Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
  EXPECT_TRUE(HasError(CuFft::Create(host).status(), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(
      HasError(CuFft::Create(nullptr).status(), absl::StatusCode::kInvalidArgument, {"null"}));
}

class CuFftTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Platform*> cuda = PlatformManager::Default().PlatformWithName("cuda");
    if (!cuda.ok()) GTEST_SKIP() << "no CUDA platform: " << cuda.status();
    if ((*cuda)->VisibleDeviceCount() == 0) GTEST_SKIP() << (*cuda)->Availability();
    exec_ = Must((*cuda)->ExecutorForDevice(0));
    ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kFft, "cufft")));
    fft_ = exec_->AsFft();
    ASSERT_NE(fft_, nullptr);
    stream_ = Must(exec_->CreateStream());
  }

  template <typename T>
  DeviceMemoryBase Upload(const std::vector<T>& host) {
    auto owned =
        std::make_shared<ScopedDeviceMemory<T>>(Must(exec_->AllocateOwnedArray<T>(host.size())));
    keep_.push_back(owned);
    DeviceMemoryBase view = *owned->ptr();
    stream_->ThenMemcpy(&view, host.data(), host.size() * sizeof(T));
    EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    return view;
  }

  template <typename T>
  std::vector<T> Download(const DeviceMemoryBase& memory) {
    std::vector<T> host(memory.size() / sizeof(T));
    stream_->ThenMemcpy(host.data(), memory, memory.size());
    EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    return host;
  }

  template <typename T>
  void Run(FftPlan* plan, const DeviceMemoryBase& in, const DeviceMemoryBase& out) {
    using C = std::complex<T>;
    switch (plan->spec().type) {
      case kC2C: {
        DeviceMemory<C> o(out);
        stream_->ThenFft(plan, DeviceMemory<C>(in), &o);
        break;
      }
      case kR2C: {
        DeviceMemory<C> o(out);
        stream_->ThenFft(plan, DeviceMemory<T>(in), &o);
        break;
      }
      case kC2R: {
        DeviceMemory<T> o(out);
        stream_->ThenFft(plan, DeviceMemory<C>(in), &o);
        break;
      }
    }
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  }

  template <typename T>
  void Check(const FftPlanSpec& spec, uint32_t seed);

  StreamExecutor* exec_ = nullptr;
  FftSupport* fft_ = nullptr;
  std::unique_ptr<Stream> stream_;
  std::vector<std::shared_ptr<void>> keep_;
};

template <typename T>
void CuFftTest::Check(const FftPlanSpec& spec, uint32_t seed) {
  SCOPED_TRACE(spec.ToString());
  const FftPlanSpec r = Must(ResolveFftPlanSpec(spec));
  const bool real_in = r.type == kR2C, real_out = r.type == kC2R, in_place = r.placement == kIn;
  const std::vector<int64_t> in_dims = SideDims(r, real_in), out_dims = SideDims(r, real_out);
  const int64_t n = Product(r.dims), in_count = Product(in_dims), out_count = Product(out_dims);
  const size_t in_scalars = FftInputBytes(r) / sizeof(T),
               out_scalars = FftOutputBytes(r) / sizeof(T);
  std::vector<T> in_img =
      Random<T>(in_place ? std::max(in_scalars, out_scalars) : in_scalars, seed);
  auto scalar = [](bool real, int64_t element) { return real ? element : 2 * element; };
  std::vector<std::vector<Cd>> refs(r.batch);
  for (int64_t b = 0; b < r.batch; ++b) {
    std::vector<Cd> x(in_count);
    if (r.type == kC2R) {  // A Hermitian input: the spectrum of real data.
      const std::vector<double> re = Random<double>(n, seed + 1000 * static_cast<uint32_t>(b));
      x = fft_testing::HalfSpectrum(
          fft_testing::NaiveDft(std::vector<Cd>(re.begin(), re.end()), r.dims, true), r.dims);
      for (int64_t j = 0; j < in_count; ++j) {
        const int64_t at = scalar(false, ElementIndex(r.input, in_dims, b, j));
        in_img[at] = static_cast<T>(x[j].real());
        in_img[at + 1] = static_cast<T>(x[j].imag());
        x[j] = Cd(in_img[at], in_img[at + 1]);
      }
      refs[b] = fft_testing::NaiveDft(fft_testing::HermitianExtend(x, r.dims), r.dims, false);
    } else {
      for (int64_t j = 0; j < in_count; ++j) {
        const int64_t at = scalar(real_in, ElementIndex(r.input, in_dims, b, j));
        x[j] = real_in ? Cd(in_img[at], 0) : Cd(in_img[at], in_img[at + 1]);
      }
      refs[b] = fft_testing::NaiveDft(x, r.dims, r.direction == kFwd);
      if (r.type == kR2C) refs[b] = fft_testing::HalfSpectrum(refs[b], r.dims);
    }
  }
  const DeviceMemoryBase in = Upload(in_img);
  const DeviceMemoryBase out = in_place ? in : Upload(std::vector<T>(out_scalars, T(777)));
  Run<T>(Must(fft_->GetOrCreateCachedPlan(stream_.get(), spec)), in, out);
  const std::vector<T> got = Download<T>(out);
  std::vector<bool> written(got.size());
  for (int64_t b = 0; b < r.batch; ++b) {
    double norm = 0;
    for (const Cd& v : refs[b]) norm += std::norm(v);
    const double tol = Tolerance<T>(n, std::sqrt(norm));
    for (int64_t k = 0; k < out_count; ++k) {
      const int64_t at = scalar(real_out, ElementIndex(r.output, out_dims, b, k));
      written[at] = true;
      if (!real_out) written[at + 1] = true;
      const Cd value = real_out ? Cd(got[at], 0) : Cd(got[at], got[at + 1]);
      const Cd ref = real_out ? Cd(refs[b][k].real(), 0) : refs[b][k];
      ASSERT_LE(std::abs(value - ref), tol)
          << "batch " << b << " element " << k << ": got " << value << ", naive DFT " << ref;
    }
  }
  if (!in_place) {
    EXPECT_EQ(Download<T>(in), in_img) << "an out-of-place run changed its input";
    for (size_t i = 0; i < got.size(); ++i) {
      if (!written[i]) {
        ASSERT_EQ(got[i], T(777)) << "scalar " << i << " is in a gap of the output layout";
      }
    }
  }
}

std::vector<FftPlanSpec> SmallCases() {
  return {
      Spec(kC2C, kFwd, {16}),
      Spec(kC2C, kInv, {15}, 3),
      Spec(kC2C, kFwd, {17}, 2, kIn),
      Spec(kC2C, kFwd, {6, 8}),
      Spec(kC2C, kInv, {5, 7}, 2, kIn),
      Spec(kC2C, kFwd, {4, 5, 6}, 2),
      Spec(kC2C, kFwd, {10}, 3, kOut, {{12}, 2, 25}, {{10}, 3, 1}),
      Spec(kC2C, kInv, {4, 6}, 2, kOut, {{5, 8}, 1, 45}, {{4, 7}, 2, 60}),
      Spec(kR2C, kFwd, {16}),
      Spec(kR2C, kFwd, {15}, 2, kIn),
      Spec(kR2C, kFwd, {6, 8}),
      Spec(kR2C, kFwd, {5, 6}, 3, kOut, {{6, 7}, 1, 50}, {}),
      Spec(kC2R, kInv, {16}),
      Spec(kC2R, kInv, {9}, 3, kIn),
      Spec(kC2R, kInv, {6, 10}),
      Spec(kC2R, kInv, {4, 6, 5}, 2, kOut, {{4, 7, 4}, 1, 120}, {{5, 6, 6}, 2, 0}),
  };
}

TEST_F(CuFftTest, IsTheCudaDefault) {
  EXPECT_EQ(Must(exec_->PluginName(PluginKind::kFft)), "cufft");
}

TEST_F(CuFftTest, FloatMatchesNaiveDft) {
  uint32_t seed = 1;
  for (const FftPlanSpec& spec : SmallCases()) Check<float>(spec, seed++);
}

TEST_F(CuFftTest, DoubleMatchesNaiveDft) {
  uint32_t seed = 100;
  for (FftPlanSpec spec : SmallCases()) {
    spec.precision = DataType::kDouble;
    Check<double>(spec, seed++);
  }
}

TEST_F(CuFftTest, LargeRoundTrips) {
  using C = std::complex<float>;
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{1 << 20}, {512, 512}, {64, 64, 64}}) {
    SCOPED_TRACE(dims.size());
    const int64_t n = Product(dims);
    const std::vector<float> x = Random<float>(2 * n, 42);
    DeviceMemory<C> in(Upload(x)), mid(Upload(std::vector<float>(2 * n))),
        out(Upload(std::vector<float>(2 * n)));
    std::unique_ptr<FftPlan> f = Must(fft_->CreatePlan(stream_.get(), Spec(kC2C, kFwd, dims)));
    std::unique_ptr<FftPlan> i = Must(fft_->CreatePlan(stream_.get(), Spec(kC2C, kInv, dims)));
    stream_->ThenFft(f.get(), in, &mid).ThenFft(i.get(), mid, &out);
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    const std::vector<float> y = Download<float>(out);
    double err = 0, norm = 0;
    for (size_t k = 0; k < x.size(); ++k) {
      err += (y[k] - n * x[k]) * (y[k] - n * x[k]);
      norm += n * x[k] * n * x[k];
    }
    EXPECT_LE(std::sqrt(err / norm), Tolerance<float>(n, 1));
  }
}

TEST_F(CuFftTest, BadInput) {
  using C = std::complex<float>;
  std::unique_ptr<FftPlan> plan = Must(fft_->CreatePlan(stream_.get(), Spec(kC2C, kFwd, {64}, 2)));
  DeviceMemory<C> small(Upload(std::vector<float>(2 * 64))),
      big(Upload(std::vector<float>(4 * 64)));
  EXPECT_TRUE(HasError(fft_->DoFft(stream_.get(), plan.get(), small, &big),
                       absl::StatusCode::kInvalidArgument, {"input"}));
  EXPECT_TRUE(HasError(fft_->DoFft(stream_.get(), plan.get(), big, &small),
                       absl::StatusCode::kInvalidArgument, {"output"}));
  // A plan of another executor (the host's fftw plan if it is linked).
  Platform* host = Must(PlatformManager::Default().PlatformWithName("host"));
  StreamExecutor* host_exec = Must(host->ExecutorForDevice(0));
  std::unique_ptr<Stream> host_stream = Must(host_exec->CreateStream());
  if (FftSupport* host_fft = host_exec->AsFft(); host_fft != nullptr) {
    std::unique_ptr<FftPlan> host_plan =
        Must(host_fft->CreatePlan(host_stream.get(), Spec(kC2C, kFwd, {64}, 2)));
    DeviceMemory<C> out(Upload(std::vector<float>(4 * 64)));
    EXPECT_TRUE(HasError(fft_->DoFft(stream_.get(), host_plan.get(), big, &out),
                         absl::StatusCode::kFailedPrecondition));
  }
  EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
}

// A plan may be destroyed right after its last ThenFft.
TEST_F(CuFftTest, PlanMayDieBeforeItsRunsFinish) {
  using C = std::complex<float>;
  const int64_t n = 1 << 16;
  const std::vector<float> x = Random<float>(2 * n, 9);
  DeviceMemory<C> in(Upload(x)), out(Upload(std::vector<float>(2 * n)));
  {
    std::unique_ptr<FftPlan> plan = Must(fft_->CreatePlan(stream_.get(), Spec(kC2C, kFwd, {n})));
    stream_->ThenFft(plan.get(), in, &out);
  }
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  const std::vector<float> got = Download<float>(out);
  double sum_re = 0;  // Element 0 of a forward DFT is the sum.
  for (int64_t i = 0; i < n; ++i) sum_re += x[2 * i];
  EXPECT_NEAR(got[0], sum_re, Tolerance<float>(n, 2 * n));
}

}  // namespace
}  // namespace rill
