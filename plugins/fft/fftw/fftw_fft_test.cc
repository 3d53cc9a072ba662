// Tests of the "fftw" FftSupport plugin on every host device
// (RILL_HOST_DEVICES=2 from ctest):
//  - every transform kind (c2c forward/inverse, r2c, c2r), float and double,
//    1-D, 2-D, 3-D, batched with strides, distances and embeds, in-place and
//    out-of-place, on misaligned views too, against a naive DFT in double
//    (plugins/fft/fft_test_util.h);
//  - round trips at large sizes: inverse(forward(x)) = N x;
//  - planning leaves user memory alone; out-of-place runs leave the input
//    (c2r included) and the output's gaps alone;
//  - the plan cache, plan lifetime, concurrent use and concurrent planning.
//
// Tolerances (normwise bounds for FFTs, e.g. Higham, "Accuracy and Stability
// of Numerical Algorithms", 24.1): with N the transform size and ||.|| the
// 2-norm over one transform,
//  - each element of a result differs from the reference by at most
//    4 (log2 N + 1) eps(T) ||reference||;
//  - a round trip satisfies ||y - N x|| <= 4 (log2 N + 1) eps(T) ||N x||.
// Elements a run must not touch are compared exactly.

#include "rill/plugins/fft/fft.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "rill/plugins/fft/fft_test_util.h"
#include "rill/plugins/fft/fftw/fftw_fft.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

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
using testing::IsOk;
using testing::Must;

// Runs `plan` on views of the given types.
template <typename T>
Stream& Enqueue(Stream* s, FftPlan* plan, FftType type, const DeviceMemoryBase& in,
                const DeviceMemoryBase& out) {
  using C = std::complex<T>;
  switch (type) {
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

class FftwTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    Platform* host = Must(PlatformManager::Default().PlatformWithName("host"));
    if (GetParam() >= host->VisibleDeviceCount()) {
      GTEST_SKIP() << "host device " << GetParam() << " is not visible (RILL_HOST_DEVICES)";
    }
    exec_ = Must(host->ExecutorForDevice(GetParam()));
    ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kFft, "fftw")));
    fft_ = exec_->AsFft();
    ASSERT_NE(fft_, nullptr);
    stream_ = Must(exec_->CreateStream());
  }

  // A device buffer of `n` scalars holding `host`, freed with the test.
  template <typename T>
  DeviceMemoryBase Upload(const std::vector<T>& host, uint64_t extra_bytes = 0) {
    auto owned = std::make_shared<ScopedDeviceMemory<char>>(
        Must(exec_->AllocateOwnedArray<char>(host.size() * sizeof(T) + extra_bytes)));
    keep_.push_back(owned);
    DeviceMemoryBase view = Must((*owned)->GetByteSlice(extra_bytes, host.size() * sizeof(T)));
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

  // Plans `spec`, runs it once on random data (Hermitian for c2r) laid out
  // as the spec says, with garbage in the layout's gaps, and checks the
  // result against the naive DFT. `misalign` shifts both buffers by that
  // many bytes from the allocation's 64-byte alignment.
  template <typename T>
  void Check(const FftPlanSpec& spec, uint32_t seed, uint64_t misalign = 0);

  template <typename T>
  void RoundTripC2C(const std::vector<int64_t>& dims, FftPlacement inverse_placement);
  template <typename T>
  void RoundTripReal(const std::vector<int64_t>& dims);

  StreamExecutor* exec_ = nullptr;
  FftSupport* fft_ = nullptr;
  std::unique_ptr<Stream> stream_;
  std::vector<std::shared_ptr<void>> keep_;
};

template <typename T>
void FftwTest::Check(const FftPlanSpec& spec, uint32_t seed, uint64_t misalign) {
  SCOPED_TRACE(spec.ToString() + (misalign ? " misaligned by " + std::to_string(misalign) : ""));
  const FftPlanSpec r = Must(ResolveFftPlanSpec(spec));
  const bool real_in = r.type == FftType::kR2C, real_out = r.type == FftType::kC2R;
  const bool in_place = r.placement == FftPlacement::kInPlace;
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
    if (r.type == FftType::kC2R) {  // A Hermitian input: the spectrum of real data.
      const std::vector<double> re = Random<double>(n, seed + 1000 * static_cast<uint32_t>(b));
      const std::vector<Cd> signal(re.begin(), re.end());
      x = fft_testing::HalfSpectrum(fft_testing::NaiveDft(signal, r.dims, true), r.dims);
      for (int64_t j = 0; j < in_count; ++j) {
        const int64_t at = scalar(false, ElementIndex(r.input, in_dims, b, j));
        in_img[at] = static_cast<T>(x[j].real());
        in_img[at + 1] = static_cast<T>(x[j].imag());
        x[j] = Cd(in_img[at], in_img[at + 1]);
      }
    } else {
      for (int64_t j = 0; j < in_count; ++j) {
        const int64_t at = scalar(real_in, ElementIndex(r.input, in_dims, b, j));
        x[j] = real_in ? Cd(in_img[at], 0) : Cd(in_img[at], in_img[at + 1]);
      }
    }
    if (r.type == FftType::kC2R) {
      refs[b] = fft_testing::NaiveDft(fft_testing::HermitianExtend(x, r.dims), r.dims, false);
    } else {
      refs[b] = fft_testing::NaiveDft(x, r.dims, r.direction == FftDirection::kForward);
      if (r.type == FftType::kR2C) refs[b] = fft_testing::HalfSpectrum(refs[b], r.dims);
    }
  }

  const std::vector<T> out_init(out_scalars, T(777));
  const DeviceMemoryBase in = Upload(in_img, misalign);
  const DeviceMemoryBase out = in_place ? in : Upload(out_init, misalign);
  FftPlan* plan = Must(fft_->GetOrCreateCachedPlan(stream_.get(), spec));
  Enqueue<T>(stream_.get(), plan, r.type, in, out);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));

  const std::vector<T> got = Download<T>(out);
  std::vector<bool> written(got.size());
  for (int64_t b = 0; b < r.batch; ++b) {
    double norm = 0;
    for (const Cd& v : refs[b]) norm += std::norm(v);
    const double tol = Tolerance<T>(n, std::sqrt(norm));
    for (int64_t k = 0; k < out_count; ++k) {
      const int64_t at = scalar(real_out, ElementIndex(r.output, out_dims, b, k));
      written[at] = true;
      const Cd value = real_out ? Cd(got[at], 0) : Cd(got[at], got[at + 1]);
      const Cd ref = real_out ? Cd(refs[b][k].real(), 0) : refs[b][k];
      if (!real_out) written[at + 1] = true;
      ASSERT_LE(std::abs(value - ref), tol)
          << "batch " << b << " element " << k << ": got " << value << ", reference " << ref;
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

// The small cases every precision runs through Check.
std::vector<FftPlanSpec> SmallCases() {
  const auto kFwd = FftDirection::kForward, kInv = FftDirection::kInverse;
  const auto kIn = FftPlacement::kInPlace, kOut = FftPlacement::kOutOfPlace;
  const auto kC2C = FftType::kC2C, kR2C = FftType::kR2C, kC2R = FftType::kC2R;
  return {
      // c2c: sizes with radices 2, 3, 5, 7 and a prime; 1-D, 2-D, 3-D.
      Spec(kC2C, kFwd, {16}),
      Spec(kC2C, kInv, {15}, 3),
      Spec(kC2C, kFwd, {13}, 2, kIn),
      Spec(kC2C, kFwd, {6, 8}),
      Spec(kC2C, kInv, {5, 7}, 2, kIn),
      Spec(kC2C, kFwd, {4, 5, 6}, 2),
      Spec(kC2C, kInv, {3, 4, 4}, 1, kIn),
      // c2c with strides, distances and embeds: strided input, interleaved output.
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
      // c2r: rank 1 preserves its input through FFTW, ranks 2-3 by a copy.
      Spec(kC2R, kInv, {16}),
      Spec(kC2R, kInv, {9}, 3, kIn),
      Spec(kC2R, kInv, {6, 10}),
      Spec(kC2R, kInv, {4, 6, 5}, 2, kOut, {{4, 7, 4}, 1, 120}, {{5, 6, 6}, 2, 0}),
      Spec(kC2R, kInv, {5, 4}, 1, kIn),
  };
}

TEST_P(FftwTest, IsTheHostDefault) {
  Platform* host = Must(PlatformManager::Default().PlatformWithName("host"));
  StreamExecutor* exec = Must(host->ExecutorForDevice(GetParam()));
  EXPECT_EQ(Must(exec->PluginName(PluginKind::kFft)), "fftw");
  EXPECT_NE(FftwFft::LibraryVersion().find("fftw-3"), std::string::npos)
      << FftwFft::LibraryVersion();
}

TEST_P(FftwTest, FloatMatchesNaiveDft) {
  uint32_t seed = 1;
  for (const FftPlanSpec& spec : SmallCases()) Check<float>(spec, seed++);
}

TEST_P(FftwTest, DoubleMatchesNaiveDft) {
  uint32_t seed = 100;
  for (FftPlanSpec spec : SmallCases()) {
    spec.precision = DataType::kDouble;
    Check<double>(spec, seed++);
  }
}

// Views at odd offsets from the allocation's alignment take FFTW's
// unaligned plan.
TEST_P(FftwTest, MisalignedViews) {
  for (FftPlanSpec spec :
       {Spec(FftType::kC2C, FftDirection::kForward, {32}, 2),
        Spec(FftType::kR2C, FftDirection::kForward, {8, 6}),
        Spec(FftType::kC2R, FftDirection::kInverse, {6, 8}),
        Spec(FftType::kC2C, FftDirection::kInverse, {8, 8}, 1, FftPlacement::kInPlace)}) {
    Check<float>(spec, 7, /*misalign=*/4);
    spec.precision = DataType::kDouble;
    Check<double>(spec, 8, /*misalign=*/8);
  }
}

template <typename T>
void FftwTest::RoundTripC2C(const std::vector<int64_t>& dims, FftPlacement inverse_placement) {
  using C = std::complex<T>;
  const int64_t n = Product(dims);
  const FftPlanSpec fwd = Spec(FftType::kC2C, FftDirection::kForward, dims, 1,
                               FftPlacement::kOutOfPlace, {}, {}, DataTypeOf<T>());
  const FftPlanSpec inv = Spec(FftType::kC2C, FftDirection::kInverse, dims, 1, inverse_placement,
                               {}, {}, DataTypeOf<T>());
  SCOPED_TRACE(fwd.ToString());
  const std::vector<T> x = Random<T>(2 * n, 42);
  DeviceMemory<C> in(Upload(x)), mid(Upload(std::vector<T>(2 * n))),
      out(Upload(std::vector<T>(2 * n)));
  std::unique_ptr<FftPlan> f = Must(fft_->CreatePlan(stream_.get(), fwd));
  std::unique_ptr<FftPlan> i = Must(fft_->CreatePlan(stream_.get(), inv));
  stream_->ThenFft(f.get(), in, &mid);
  if (inverse_placement == FftPlacement::kInPlace) {
    stream_->ThenFft(i.get(), mid, &mid);
    out = mid;
  } else {
    stream_->ThenFft(i.get(), mid, &out);
  }
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_LE(RelativeError(Download<T>(out), x, static_cast<double>(n)), Tolerance<T>(n, 1));
}

template <typename T>
void FftwTest::RoundTripReal(const std::vector<int64_t>& dims) {
  using C = std::complex<T>;
  const int64_t n = Product(dims), half = n / dims.back() * (dims.back() / 2 + 1);
  const FftPlanSpec fwd = Spec(FftType::kR2C, FftDirection::kForward, dims, 1,
                               FftPlacement::kOutOfPlace, {}, {}, DataTypeOf<T>());
  const FftPlanSpec inv = Spec(FftType::kC2R, FftDirection::kInverse, dims, 1,
                               FftPlacement::kOutOfPlace, {}, {}, DataTypeOf<T>());
  SCOPED_TRACE(fwd.ToString());
  const std::vector<T> x = Random<T>(n, 43);
  DeviceMemory<T> in(Upload(x)), out(Upload(std::vector<T>(n)));
  DeviceMemory<C> mid(Upload(std::vector<T>(2 * half)));
  std::unique_ptr<FftPlan> f = Must(fft_->CreatePlan(stream_.get(), fwd));
  std::unique_ptr<FftPlan> i = Must(fft_->CreatePlan(stream_.get(), inv));
  stream_->ThenFft(f.get(), in, &mid).ThenFft(i.get(), mid, &out);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_LE(RelativeError(Download<T>(out), x, static_cast<double>(n)), Tolerance<T>(n, 1));
}

TEST_P(FftwTest, LargeRoundTripsC2C) {
  RoundTripC2C<float>({1 << 16}, FftPlacement::kOutOfPlace);
  RoundTripC2C<double>({1 << 16}, FftPlacement::kInPlace);
  RoundTripC2C<float>({3 * 5 * 7 * 64}, FftPlacement::kInPlace);
  RoundTripC2C<float>({256, 256}, FftPlacement::kOutOfPlace);
  RoundTripC2C<double>({32, 32, 32}, FftPlacement::kInPlace);
}

TEST_P(FftwTest, LargeRoundTripsReal) {
  RoundTripReal<float>({1 << 16});
  RoundTripReal<double>({256, 256});
  RoundTripReal<float>({32, 32, 32});
}

// Planning (FFTW_MEASURE by default) runs trial transforms: they must hit
// scratch arrays, never the user's buffers.
TEST_P(FftwTest, PlanningDoesNotTouchUserData) {
  const int64_t n = 4096;
  const std::vector<float> x = Random<float>(2 * n, 5), y = Random<float>(2 * n, 6);
  const DeviceMemoryBase a = Upload(x), b = Upload(y);
  for (FftType type : {FftType::kC2C, FftType::kR2C, FftType::kC2R}) {
    for (FftPlacement placement : {FftPlacement::kOutOfPlace, FftPlacement::kInPlace}) {
      const FftDirection dir =
          type == FftType::kC2R ? FftDirection::kInverse : FftDirection::kForward;
      ASSERT_TRUE(
          IsOk(fft_->CreatePlan(stream_.get(), Spec(type, dir, {n / 2}, 1, placement)).status()));
      ASSERT_TRUE(
          IsOk(fft_->CreatePlan(stream_.get(), Spec(type, dir, {64, 32}, 1, placement)).status()));
    }
  }
  EXPECT_EQ(Download<float>(a), x);
  EXPECT_EQ(Download<float>(b), y);
}

TEST_P(FftwTest, PlanCacheSharesPlansByShape) {
  const size_t before = fft_->CachedPlanCount();
  FftPlanSpec spec = Spec(FftType::kC2C, FftDirection::kForward, {64, 32}, 4);
  FftPlan* a = Must(fft_->GetOrCreateCachedPlan(stream_.get(), spec));
  FftPlan* b = Must(fft_->GetOrCreateCachedPlan(stream_.get(), spec));
  EXPECT_EQ(a, b);
  // The same shape with its defaults spelled out is the same plan.
  spec.input = {{64, 32}, 1, 64 * 32};
  spec.output = {{64, 32}, 1, 0};
  EXPECT_EQ(Must(fft_->GetOrCreateCachedPlan(stream_.get(), spec)), a);
  EXPECT_EQ(fft_->CachedPlanCount(), before + 1);
  // Another direction, precision or batch is another plan.
  spec.direction = FftDirection::kInverse;
  FftPlan* c = Must(fft_->GetOrCreateCachedPlan(stream_.get(), spec));
  spec.precision = DataType::kDouble;
  FftPlan* d = Must(fft_->GetOrCreateCachedPlan(stream_.get(), spec));
  spec.batch = 3;
  FftPlan* e = Must(fft_->GetOrCreateCachedPlan(stream_.get(), spec));
  EXPECT_NE(c, a);
  EXPECT_NE(d, c);
  EXPECT_NE(e, d);
  EXPECT_EQ(fft_->CachedPlanCount(), before + 4);
  EXPECT_EQ(a->spec(),
            Must(ResolveFftPlanSpec(Spec(FftType::kC2C, FftDirection::kForward, {64, 32}, 4))));
  EXPECT_EQ(a->plugin_name(), "fftw");
  EXPECT_EQ(a->executor(), exec_);
  EXPECT_NE(a->native_handle(), nullptr);
}

// A plan may be destroyed right after its last ThenFft: the enqueued run
// keeps FFTW's plan alive.
TEST_P(FftwTest, PlanMayDieBeforeItsRunsFinish) {
  using C = std::complex<float>;
  const int64_t n = 256;
  const std::vector<float> x = Random<float>(2 * n, 9);
  DeviceMemory<C> in(Upload(x)), out(Upload(std::vector<float>(2 * n)));
  auto gate = testing::Gate::Make();
  testing::OpenOnExit open(gate);
  stream_->ThenDoHostCallback([gate] { gate->Wait(); });
  {
    std::unique_ptr<FftPlan> plan =
        Must(fft_->CreatePlan(stream_.get(), Spec(FftType::kC2C, FftDirection::kForward, {n})));
    stream_->ThenFft(plan.get(), in, &out);
  }
  gate->Open();
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  const std::vector<float> got = Download<float>(out);
  double sum_re = 0, sum_im = 0;  // Element 0 of a forward DFT is the sum.
  for (int64_t i = 0; i < n; ++i) sum_re += x[2 * i], sum_im += x[2 * i + 1];
  EXPECT_NEAR(got[0], sum_re, Tolerance<float>(n, 2 * n));
  EXPECT_NEAR(got[1], sum_im, Tolerance<float>(n, 2 * n));
}

// One plan run from two streams at once, and plans made from two threads at
// once (FFTW's planner is serialized by the plugin).
TEST_P(FftwTest, ConcurrentStreamsAndPlanning) {
  using C = std::complex<float>;
  const int64_t n = 1024;
  const FftPlanSpec spec = Spec(FftType::kC2C, FftDirection::kForward, {n});
  FftPlan* plan = Must(fft_->GetOrCreateCachedPlan(stream_.get(), spec));
  const std::vector<float> x = Random<float>(2 * n, 11);
  DeviceMemory<C> in(Upload(x)), out(Upload(std::vector<float>(2 * n)));
  stream_->ThenFft(plan, in, &out);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  const std::vector<float> expected = Download<float>(out);

  std::vector<DeviceMemory<C>> outs;
  for (int i = 0; i < 2; ++i) outs.emplace_back(Upload(std::vector<float>(2 * n)));
  std::unique_ptr<Stream> other = Must(exec_->CreateStream());
  std::thread planner([&] {
    std::unique_ptr<Stream> s = Must(exec_->CreateStream());
    for (int64_t size = 16; size <= 2048; size *= 2) {
      EXPECT_TRUE(
          IsOk(fft_->CreatePlan(s.get(), Spec(FftType::kR2C, FftDirection::kForward, {size, 8}))
                   .status()));
    }
  });
  for (int rep = 0; rep < 50; ++rep) {
    stream_->ThenFft(plan, in, &outs[0]);
    other->ThenFft(plan, in, &outs[1]);
  }
  for (int64_t size = 16; size <= 2048; size *= 2) {
    EXPECT_TRUE(
        IsOk(fft_->CreatePlan(stream_.get(), Spec(FftType::kC2R, FftDirection::kInverse, {8, size}))
                 .status()));
  }
  planner.join();
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  ASSERT_TRUE(IsOk(other->BlockHostUntilDone()));
  EXPECT_EQ(Download<float>(outs[0]), expected);
  EXPECT_EQ(Download<float>(outs[1]), expected);
}

INSTANTIATE_TEST_SUITE_P(Devices, FftwTest, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "host" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace rill
