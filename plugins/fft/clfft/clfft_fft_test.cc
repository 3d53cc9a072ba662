// Tests of the "clfft" FftSupport plugin on every OpenCL device (ctest runs
// with POCL_DEVICES="pthread basic": two devices in two contexts):
//  - c2c forward/inverse, r2c, c2r; float and double (double skipped on a
//    device without cl_khr_fp64); 1-D, 2-D, 3-D; batched with strides,
//    distances and embeds; in-place and out-of-place; views at aligned
//    (sub-buffer) and misaligned (bounce copy) byte offsets; all against a
//    naive DFT in double (plugins/fft/fft_test_util.h) AND against the host
//    "fftw" plugin run on the same input;
//  - round trips at large sizes: inverse(forward(x)) = N x (unnormalized);
//  - out-of-place runs leave the input (c2r included) and the output's gaps
//    alone;
//  - bad input: buffers too small, a plan of another executor, a size with
//    the prime factor 17 (Unimplemented), double precision with no fp64;
//  - plan lifetime and one plan run from two streams.
//
// Tolerances, as in the fftw tests (normwise FFT bounds, Higham 24.1), with
// N the transform size and ||.|| the 2-norm over one transform:
//  - each element differs from the naive DFT by at most
//    4 (log2 N + 1) eps(T) ||reference||;
//  - each element differs from fftw's by at most twice that (both are
//    within the bound of the exact result);
//  - a round trip satisfies ||y - N x|| <= 4 (log2 N + 1) eps(T) ||N x||.
// Elements a run must not touch are compared exactly.

#include "rill/plugins/fft/clfft/clfft_fft.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rill/platform/opencl/opencl_plugin.h"
#include "rill/plugins/fft/fft.h"
#include "rill/plugins/fft/fft_test_util.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

// clFFT 2.12 deletes a plan's internal objects through a base pointer
// without a virtual destructor (FFTRepo::deletePlan, inside libclFFT), which
// AddressSanitizer reports as new-delete-type-mismatch on every
// clfftDestroyPlan. Not ours to fix; the check stays on for every other
// binary.
extern "C" const char* __asan_default_options() { return "new_delete_type_mismatch=0"; }

namespace rill {
namespace {

using fft_testing::Cd;
using fft_testing::ElementIndex;
using fft_testing::Product;
using fft_testing::Random;
using fft_testing::RelativeError;
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

// One executor with a stream, and buffers freed with the object.
struct Device {
  StreamExecutor* exec = nullptr;
  std::unique_ptr<Stream> stream;
  std::vector<std::shared_ptr<void>> keep;

  // A buffer holding `host` at byte `offset` of a fresh allocation.
  template <typename T>
  DeviceMemoryBase Upload(const std::vector<T>& host, uint64_t offset = 0) {
    auto owned = std::make_shared<ScopedDeviceMemory<char>>(
        Must(exec->AllocateOwnedArray<char>(host.size() * sizeof(T) + offset)));
    keep.push_back(owned);
    DeviceMemoryBase view = Must((*owned)->GetByteSlice(offset, host.size() * sizeof(T)));
    stream->ThenMemcpy(&view, host.data(), host.size() * sizeof(T));
    EXPECT_TRUE(IsOk(stream->BlockHostUntilDone()));
    return view;
  }

  template <typename T>
  std::vector<T> Download(const DeviceMemoryBase& memory) {
    std::vector<T> host(memory.size() / sizeof(T));
    stream->ThenMemcpy(host.data(), memory, memory.size());
    EXPECT_TRUE(IsOk(stream->BlockHostUntilDone()));
    return host;
  }
};

// Runs `plan` on views of the given types.
template <typename T>
Stream& Enqueue(Stream* s, FftPlan* plan, const DeviceMemoryBase& in, const DeviceMemoryBase& out) {
  using C = std::complex<T>;
  switch (plan->spec().type) {
    case FftType::kC2C: {
      DeviceMemory<C> o(out);
      return s->ThenFft(plan, DeviceMemory<C>(in), &o);
    }
    case FftType::kR2C: {
      DeviceMemory<C> o(out);
      return s->ThenFft(plan, DeviceMemory<T>(in), &o);
    }
    case FftType::kC2R: {
      DeviceMemory<T> o(out);
      return s->ThenFft(plan, DeviceMemory<C>(in), &o);
    }
  }
  return *s;
}

// Runs `spec` once on `d` from the input image `in_img` (scalars) into an
// output image of `out_scalars` scalars filled with 777, both at byte
// `offset` of their allocations; returns the output image. Checks that an
// out-of-place run left its input alone.
template <typename T>
std::vector<T> RunOnce(Device& d, const FftPlanSpec& spec, const std::vector<T>& in_img,
                       size_t out_scalars, uint64_t offset) {
  const DeviceMemoryBase in = d.Upload(in_img, offset);
  const DeviceMemoryBase out =
      spec.placement == kIn ? in : d.Upload(std::vector<T>(out_scalars, T(777)), offset);
  FftPlan* plan = Must(d.exec->AsFft()->GetOrCreateCachedPlan(d.stream.get(), spec));
  Enqueue<T>(d.stream.get(), plan, in, out);
  EXPECT_TRUE(IsOk(d.stream->BlockHostUntilDone()));
  if (spec.placement == kOut) {
    EXPECT_EQ(d.Download<T>(in), in_img) << "an out-of-place run changed its input";
  }
  return d.Download<T>(out);
}

class ClFftTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    Platform* cl = Must(PlatformManager::Default().PlatformWithName("opencl"));
    if (cl->VisibleDeviceCount() == 0) {
      GTEST_SKIP() << "the opencl platform has no device: " << cl->Availability();
    }
    if (GetParam() >= cl->VisibleDeviceCount()) {
      GTEST_SKIP() << "OpenCL device " << GetParam() << " is not there ("
                   << cl->VisibleDeviceCount()
                   << " device(s); ctest sets POCL_DEVICES=\"pthread basic\" for two)";
    }
    cl_.exec = Must(cl->ExecutorForDevice(GetParam()));
    ASSERT_TRUE(IsOk(cl_.exec->SetPlugin(PluginKind::kFft, "clfft")));
    fft_ = static_cast<ClFft*>(cl_.exec->AsFft());
    ASSERT_NE(fft_, nullptr);
    cl_.stream = Must(cl_.exec->CreateStream());
    base_align_ = Must(AsOpenClExecutor(cl_.exec))->info().base_align;

    Platform* host_platform = Must(PlatformManager::Default().PlatformWithName("host"));
    host_.exec = Must(host_platform->ExecutorForDevice(0));
    ASSERT_TRUE(IsOk(host_.exec->SetPlugin(PluginKind::kFft, "fftw")));
    host_.stream = Must(host_.exec->CreateStream());
  }

  // Skips the rest of a test on a device without double precision.
  bool NoDouble() { return !fft_->SupportsDouble(); }

  template <typename T>
  void Check(const FftPlanSpec& spec, uint32_t seed, uint64_t offset = 0);
  template <typename T>
  void RoundTripC2C(const std::vector<int64_t>& dims, FftPlacement inverse_placement);
  template <typename T>
  void RoundTripReal(const std::vector<int64_t>& dims);

  Device cl_, host_;
  ClFft* fft_ = nullptr;
  uint64_t base_align_ = 0;
};

template <typename T>
void ClFftTest::Check(const FftPlanSpec& spec, uint32_t seed, uint64_t offset) {
  SCOPED_TRACE(spec.ToString() + (offset ? " at byte offset " + std::to_string(offset) : ""));
  const FftPlanSpec r = Must(ResolveFftPlanSpec(spec));
  const bool real_in = r.type == kR2C, real_out = r.type == kC2R;
  const bool in_place = r.placement == kIn;
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
      const std::vector<Cd> signal(re.begin(), re.end());
      x = fft_testing::HalfSpectrum(fft_testing::NaiveDft(signal, r.dims, true), r.dims);
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

  const std::vector<T> got = RunOnce<T>(cl_, spec, in_img, out_scalars, offset);
  const std::vector<T> fftw = RunOnce<T>(host_, spec, in_img, out_scalars, 0);
  ASSERT_EQ(got.size(), fftw.size());
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
      const Cd host = real_out ? Cd(fftw[at], 0) : Cd(fftw[at], fftw[at + 1]);
      const Cd ref = real_out ? Cd(refs[b][k].real(), 0) : refs[b][k];
      ASSERT_LE(std::abs(value - ref), tol)
          << "batch " << b << " element " << k << ": got " << value << ", naive DFT " << ref;
      ASSERT_LE(std::abs(value - host), 2 * tol)
          << "batch " << b << " element " << k << ": got " << value << ", fftw " << host;
    }
  }
  if (!in_place) {
    for (size_t i = 0; i < got.size(); ++i) {
      if (!written[i]) {
        ASSERT_EQ(got[i], T(777)) << "scalar " << i << " is in a gap of the output layout";
      }
    }
  }
}

// The small cases every precision runs through Check.
std::vector<FftPlanSpec> SmallCases() {
  return {
      // c2c: radices 2, 3, 5, 7, 11, 13; 1-D, 2-D, 3-D.
      Spec(kC2C, kFwd, {16}),
      Spec(kC2C, kInv, {15}, 3),
      Spec(kC2C, kFwd, {13}, 2, kIn),
      Spec(kC2C, kInv, {11}),
      Spec(kC2C, kFwd, {6, 8}),
      Spec(kC2C, kInv, {5, 7}, 2, kIn),
      Spec(kC2C, kFwd, {4, 5, 6}, 2),
      Spec(kC2C, kInv, {3, 4, 4}, 1, kIn),
      // c2c with strides, distances and embeds.
      Spec(kC2C, kFwd, {10}, 3, kOut, {{12}, 2, 25}, {{10}, 3, 1}),
      Spec(kC2C, kInv, {4, 6}, 2, kOut, {{5, 8}, 1, 45}, {{4, 7}, 2, 60}),
      Spec(kC2C, kFwd, {3, 4, 5}, 2, kOut, {{3, 5, 6}, 1, 0}, {{4, 4, 5}, 1, 0}),
      // r2c.
      Spec(kR2C, kFwd, {16}),
      Spec(kR2C, kFwd, {15}, 2, kIn),
      Spec(kR2C, kFwd, {6, 8}),
      Spec(kR2C, kFwd, {4, 4, 6}, 1, kIn),
      Spec(kR2C, kFwd, {5, 6}, 3, kOut, {{6, 7}, 1, 50}, {}),
      Spec(kR2C, kFwd, {9}, 2, kOut, {{}, 2, 20}, {{}, 2, 0}),
      // c2r.
      Spec(kC2R, kInv, {16}),
      Spec(kC2R, kInv, {9}, 3, kIn),
      Spec(kC2R, kInv, {6, 10}),
      Spec(kC2R, kInv, {4, 6, 5}, 2, kOut, {{4, 7, 4}, 1, 120}, {{5, 6, 6}, 2, 0}),
      Spec(kC2R, kInv, {5, 4}, 1, kIn),
      Spec(kC2R, kInv, {8, 8, 8}, 2),
  };
}

TEST_P(ClFftTest, IsTheOpenClDefault) {
  Platform* cl = Must(PlatformManager::Default().PlatformWithName("opencl"));
  StreamExecutor* exec = Must(cl->ExecutorForDevice(GetParam()));
  EXPECT_EQ(Must(exec->PluginName(PluginKind::kFft)), "clfft");
  EXPECT_EQ(ClFft::LibraryVersion().rfind("2.", 0), 0u) << ClFft::LibraryVersion();
}

TEST_P(ClFftTest, FloatMatchesNaiveDftAndFftw) {
  uint32_t seed = 1;
  for (const FftPlanSpec& spec : SmallCases()) Check<float>(spec, seed++);
}

TEST_P(ClFftTest, DoubleMatchesNaiveDftAndFftw) {
  if (NoDouble()) GTEST_SKIP() << cl_.exec->DebugName() << " has no cl_khr_fp64";
  uint32_t seed = 100;
  for (FftPlanSpec spec : SmallCases()) {
    spec.precision = DataType::kDouble;
    Check<double>(spec, seed++);
  }
}

// clFFT takes no buffer offsets: views at a multiple of the base address
// alignment become sub-buffers, others bounce copies.
TEST_P(ClFftTest, ViewsAtOffsets) {
  for (uint64_t offset : {base_align_, uint64_t{8}, base_align_ + 24}) {
    for (FftPlanSpec spec :
         {Spec(kC2C, kFwd, {32}, 2), Spec(kR2C, kFwd, {8, 6}), Spec(kC2R, kInv, {6, 8}),
          Spec(kC2C, kInv, {8, 8}, 1, kIn), Spec(kR2C, kFwd, {12}, 2, kIn)}) {
      Check<float>(spec, 7, offset);
      if (NoDouble()) continue;
      spec.precision = DataType::kDouble;
      Check<double>(spec, 8, offset);
    }
  }
}

template <typename T>
void ClFftTest::RoundTripC2C(const std::vector<int64_t>& dims, FftPlacement inverse_placement) {
  using C = std::complex<T>;
  const int64_t n = Product(dims);
  const FftPlanSpec fwd = Spec(kC2C, kFwd, dims, 1, kOut, {}, {}, DataTypeOf<T>());
  const FftPlanSpec inv = Spec(kC2C, kInv, dims, 1, inverse_placement, {}, {}, DataTypeOf<T>());
  SCOPED_TRACE(fwd.ToString());
  const std::vector<T> x = Random<T>(2 * n, 42);
  DeviceMemory<C> in(cl_.Upload(x)), mid(cl_.Upload(std::vector<T>(2 * n))),
      out(cl_.Upload(std::vector<T>(2 * n)));
  std::unique_ptr<FftPlan> f = Must(fft_->CreatePlan(cl_.stream.get(), fwd));
  std::unique_ptr<FftPlan> i = Must(fft_->CreatePlan(cl_.stream.get(), inv));
  cl_.stream->ThenFft(f.get(), in, &mid);
  if (inverse_placement == kIn) {
    cl_.stream->ThenFft(i.get(), mid, &mid);
    out = mid;
  } else {
    cl_.stream->ThenFft(i.get(), mid, &out);
  }
  ASSERT_TRUE(IsOk(cl_.stream->BlockHostUntilDone()));
  EXPECT_LE(RelativeError(cl_.Download<T>(out), x, static_cast<double>(n)), Tolerance<T>(n, 1));
}

template <typename T>
void ClFftTest::RoundTripReal(const std::vector<int64_t>& dims) {
  using C = std::complex<T>;
  const int64_t n = Product(dims), half = n / dims.back() * (dims.back() / 2 + 1);
  const FftPlanSpec fwd = Spec(kR2C, kFwd, dims, 1, kOut, {}, {}, DataTypeOf<T>());
  const FftPlanSpec inv = Spec(kC2R, kInv, dims, 1, kOut, {}, {}, DataTypeOf<T>());
  SCOPED_TRACE(fwd.ToString());
  const std::vector<T> x = Random<T>(n, 43);
  DeviceMemory<T> in(cl_.Upload(x)), out(cl_.Upload(std::vector<T>(n)));
  DeviceMemory<C> mid(cl_.Upload(std::vector<T>(2 * half)));
  std::unique_ptr<FftPlan> f = Must(fft_->CreatePlan(cl_.stream.get(), fwd));
  std::unique_ptr<FftPlan> i = Must(fft_->CreatePlan(cl_.stream.get(), inv));
  cl_.stream->ThenFft(f.get(), in, &mid);
  const std::vector<T> spectrum = cl_.Download<T>(mid);
  cl_.stream->ThenFft(i.get(), mid, &out);
  ASSERT_TRUE(IsOk(cl_.stream->BlockHostUntilDone()));
  EXPECT_LE(RelativeError(cl_.Download<T>(out), x, static_cast<double>(n)), Tolerance<T>(n, 1));
  EXPECT_EQ(cl_.Download<T>(mid), spectrum) << "the out-of-place c2r changed its input";
}

TEST_P(ClFftTest, LargeRoundTrips) {
  RoundTripC2C<float>({1 << 16}, kOut);
  RoundTripC2C<float>({3 * 5 * 7 * 64}, kIn);
  RoundTripC2C<float>({256, 256}, kOut);
  RoundTripReal<float>({1 << 14});
  RoundTripReal<float>({128, 128});
  RoundTripReal<float>({32, 32, 32});
  RoundTripReal<float>({4096});
  RoundTripReal<float>({1 << 20});
  RoundTripReal<float>({1024, 256});
  if (NoDouble()) return;
  RoundTripC2C<double>({1 << 16}, kIn);
  RoundTripC2C<double>({32, 32, 32}, kIn);
  RoundTripReal<double>({256, 256});
}

TEST_P(ClFftTest, BadInput) {
  using C = std::complex<float>;
  // Sizes clFFT has no kernels for are Unimplemented at planning, naming the size.
  EXPECT_TRUE(HasError(fft_->CreatePlan(cl_.stream.get(), Spec(kC2C, kFwd, {17})).status(),
                       absl::StatusCode::kUnimplemented, {"size 17", "prime factor 17"}));
  EXPECT_TRUE(HasError(fft_->CreatePlan(cl_.stream.get(), Spec(kR2C, kFwd, {8, 34})).status(),
                       absl::StatusCode::kUnimplemented, {"size 34", "prime factor 17"}));
  EXPECT_TRUE(
      HasError(fft_->CreatePlan(cl_.stream.get(), Spec(kC2C, kFwd, {4, 4 * 19 * 19})).status(),
               absl::StatusCode::kUnimplemented, {"size 1444", "prime factor 19"}));
  // In-place c2c with two layouts.
  EXPECT_TRUE(HasError(
      fft_->CreatePlan(cl_.stream.get(), Spec(kC2C, kFwd, {8}, 2, kIn, {{}, 1, 8}, {{}, 1, 10}))
          .status(),
      absl::StatusCode::kUnimplemented, {"same layout"}));

  // Buffers too small for the plan.
  std::unique_ptr<FftPlan> plan =
      Must(fft_->CreatePlan(cl_.stream.get(), Spec(kC2C, kFwd, {64}, 2)));
  DeviceMemory<C> small(cl_.Upload(std::vector<float>(2 * 64))),
      big(cl_.Upload(std::vector<float>(4 * 64)));
  DeviceMemory<C> out(cl_.Upload(std::vector<float>(4 * 64)));
  EXPECT_TRUE(HasError(fft_->DoFft(cl_.stream.get(), plan.get(), small, &out),
                       absl::StatusCode::kInvalidArgument, {"input"}));
  EXPECT_TRUE(HasError(fft_->DoFft(cl_.stream.get(), plan.get(), big, &small),
                       absl::StatusCode::kInvalidArgument, {"output"}));
  // Wrong element types for the plan.
  DeviceMemory<float> real_out(cl_.Upload(std::vector<float>(4 * 64)));
  EXPECT_TRUE(HasError(fft_->DoFft(cl_.stream.get(), plan.get(), big, &real_out),
                       absl::StatusCode::kInvalidArgument, {"c2c"}));

  // A plan of another executor: the host's fftw plan, and (with two OpenCL
  // devices) the other device's clfft plan.
  std::unique_ptr<FftPlan> host_plan =
      Must(host_.exec->AsFft()->CreatePlan(host_.stream.get(), Spec(kC2C, kFwd, {64}, 2)));
  EXPECT_TRUE(HasError(fft_->DoFft(cl_.stream.get(), host_plan.get(), big, &out),
                       absl::StatusCode::kFailedPrecondition, {"fftw"}));
  Platform* cl = Must(PlatformManager::Default().PlatformWithName("opencl"));
  if (cl->VisibleDeviceCount() > 1) {
    Device other;
    other.exec = Must(cl->ExecutorForDevice(1 - GetParam() % 2));
    other.stream = Must(other.exec->CreateStream());
    std::unique_ptr<FftPlan> other_plan =
        Must(other.exec->AsFft()->CreatePlan(other.stream.get(), Spec(kC2C, kFwd, {64}, 2)));
    EXPECT_TRUE(HasError(fft_->DoFft(cl_.stream.get(), other_plan.get(), big, &out),
                         absl::StatusCode::kFailedPrecondition, {"clfft"}));
    // A stream of the other executor.
    EXPECT_TRUE(HasError(fft_->DoFft(other.stream.get(), plan.get(), big, &out),
                         absl::StatusCode::kInvalidArgument, {"AsFft()"}));
  }
  // None of that reached the stream.
  EXPECT_TRUE(IsOk(cl_.stream->BlockHostUntilDone()));
  if (NoDouble()) {
    EXPECT_TRUE(HasError(fft_->CreatePlan(cl_.stream.get(), Spec(kC2C, kFwd, {64}, 1, kOut, {}, {},
                                                                 DataType::kDouble))
                             .status(),
                         absl::StatusCode::kUnimplemented, {"cl_khr_fp64"}));
  }
}

// A plan may be destroyed right after its last ThenFft; the run keeps the
// clFFT plan alive.
TEST_P(ClFftTest, PlanMayDieBeforeItsRunsFinish) {
  using C = std::complex<float>;
  const int64_t n = 256;
  const std::vector<float> x = Random<float>(2 * n, 9);
  DeviceMemory<C> in(cl_.Upload(x)), out(cl_.Upload(std::vector<float>(2 * n)));
  auto gate = testing::Gate::Make();
  testing::OpenOnExit open(gate);
  cl_.stream->ThenDoHostCallback([gate] { gate->Wait(); });
  {
    std::unique_ptr<FftPlan> plan = Must(fft_->CreatePlan(cl_.stream.get(), Spec(kC2C, kFwd, {n})));
    cl_.stream->ThenFft(plan.get(), in, &out);
  }
  gate->Open();
  ASSERT_TRUE(IsOk(cl_.stream->BlockHostUntilDone()));
  const std::vector<float> got = cl_.Download<float>(out);
  double sum_re = 0, sum_im = 0;  // Element 0 of a forward DFT is the sum.
  for (int64_t i = 0; i < n; ++i) sum_re += x[2 * i], sum_im += x[2 * i + 1];
  EXPECT_NEAR(got[0], sum_re, Tolerance<float>(n, 2 * n));
  EXPECT_NEAR(got[1], sum_im, Tolerance<float>(n, 2 * n));
}

// One plan run from two streams at once: runs are serialized per plan and
// give the same numbers.
TEST_P(ClFftTest, OnePlanOnTwoStreams) {
  using C = std::complex<float>;
  const int64_t n = 1024;
  FftPlan* plan = Must(fft_->GetOrCreateCachedPlan(cl_.stream.get(), Spec(kC2C, kFwd, {n}, 4)));
  const std::vector<float> x = Random<float>(8 * n, 11);
  DeviceMemory<C> in(cl_.Upload(x)), out(cl_.Upload(std::vector<float>(8 * n)));
  cl_.stream->ThenFft(plan, in, &out);
  ASSERT_TRUE(IsOk(cl_.stream->BlockHostUntilDone()));
  const std::vector<float> expected = cl_.Download<float>(out);

  std::vector<DeviceMemory<C>> outs;
  for (int i = 0; i < 2; ++i) outs.emplace_back(cl_.Upload(std::vector<float>(8 * n)));
  std::unique_ptr<Stream> other = Must(cl_.exec->CreateStream());
  for (int rep = 0; rep < 20; ++rep) {
    cl_.stream->ThenFft(plan, in, &outs[0]);
    other->ThenFft(plan, in, &outs[1]);
  }
  ASSERT_TRUE(IsOk(cl_.stream->BlockHostUntilDone()));
  ASSERT_TRUE(IsOk(other->BlockHostUntilDone()));
  EXPECT_EQ(cl_.Download<float>(outs[0]), expected);
  EXPECT_EQ(cl_.Download<float>(outs[1]), expected);
  EXPECT_NE(plan->native_handle(), nullptr);
  EXPECT_EQ(plan->plugin_name(), "clfft");
}

INSTANTIATE_TEST_SUITE_P(Devices, ClFftTest, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "opencl" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace rill
