// The FftSupport interface's argument checks (plugins/fft/fft.cc), run
// through the host default ("fftw"): bad plan specs, bad buffers, plans and
// memory of another executor, called directly (the status) and through a
// stream (the stream's status, with the call's context). Needs two host
// devices (RILL_HOST_DEVICES=2 from ctest) for the cross-executor cases.

#include <complex>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "rill/plugins/fft/fft.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using testing::HasError;
using testing::IsOk;
using testing::Must;
using C = std::complex<float>;
constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

class FftCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Platform* host = Must(PlatformManager::Default().PlatformWithName("host"));
    exec_ = Must(host->ExecutorForDevice(0));
    fft_ = exec_->AsFft();
    ASSERT_NE(fft_, nullptr);
    stream_ = Must(exec_->CreateStream());
    if (host->VisibleDeviceCount() > 1) {
      other_ = Must(host->ExecutorForDevice(1));
      other_stream_ = Must(other_->CreateStream());
    }
  }

  template <typename T>
  DeviceMemory<T> Alloc(StreamExecutor* exec, uint64_t n) {
    auto owned = std::make_shared<ScopedDeviceMemory<T>>(Must(exec->AllocateOwnedArray<T>(n)));
    keep_.push_back(owned);
    return **owned;
  }

  absl::Status PlanStatus(const FftPlanSpec& spec) {
    return fft_->CreatePlan(stream_.get(), spec).status();
  }

  std::unique_ptr<FftPlan> Plan(const FftPlanSpec& spec) {
    return Must(fft_->CreatePlan(stream_.get(), spec));
  }

  StreamExecutor* exec_ = nullptr;
  StreamExecutor* other_ = nullptr;
  FftSupport* fft_ = nullptr;
  std::unique_ptr<Stream> stream_, other_stream_;
  std::vector<std::shared_ptr<void>> keep_;
};

FftPlanSpec C2C(std::vector<int64_t> dims, int64_t batch = 1) {
  FftPlanSpec spec;
  spec.dims = std::move(dims);
  spec.batch = batch;
  return spec;
}

TEST_F(FftCheckTest, RankMustBeOneToThree) {
  EXPECT_TRUE(HasError(PlanStatus(C2C({})), kInvalid, {"rank 0", "1, 2 or 3"}));
  EXPECT_TRUE(HasError(PlanStatus(C2C({2, 2, 2, 2})), kInvalid, {"rank 4", "dims=[2,2,2,2]"}));
}

TEST_F(FftCheckTest, SizesMustBePositive) {
  EXPECT_TRUE(HasError(PlanStatus(C2C({8, 0})), kInvalid, {"dims[1]=0", ">= 1"}));
  EXPECT_TRUE(HasError(PlanStatus(C2C({-4})), kInvalid, {"dims[0]=-4"}));
  EXPECT_TRUE(
      HasError(PlanStatus(C2C({int64_t{1} << 40, int64_t{1} << 40})), kInvalid, {"overflows"}));
}

TEST_F(FftCheckTest, BatchMustBePositive) {
  EXPECT_TRUE(HasError(PlanStatus(C2C({8}, 0)), kInvalid, {"batch=0"}));
  EXPECT_TRUE(HasError(PlanStatus(C2C({8}, -2)), kInvalid, {"batch=-2"}));
}

TEST_F(FftCheckTest, RealTransformsHaveAFixedDirection) {
  FftPlanSpec spec = C2C({8});
  spec.type = FftType::kC2R;
  spec.direction = FftDirection::kForward;
  EXPECT_TRUE(HasError(PlanStatus(spec), kInvalid, {"c2r", "always inverse", "not forward"}));
  spec.type = FftType::kR2C;
  spec.direction = FftDirection::kInverse;
  EXPECT_TRUE(HasError(PlanStatus(spec), kInvalid, {"r2c", "always forward", "not inverse"}));
}

TEST_F(FftCheckTest, LayoutsAreChecked) {
  FftPlanSpec spec = C2C({8, 6});
  spec.input.embed = {8, 5};
  EXPECT_TRUE(HasError(PlanStatus(spec), kInvalid, {"input.embed[1]=5", "size 6"}));
  spec.input.embed = {8};
  EXPECT_TRUE(HasError(PlanStatus(spec), kInvalid, {"input.embed has 1 sizes", "rank-2"}));
  spec.input = {};
  spec.output.stride = -1;
  EXPECT_TRUE(HasError(PlanStatus(spec), kInvalid, {"output.stride=-1"}));
  spec.output = {};
  spec.output.distance = -3;
  EXPECT_TRUE(HasError(PlanStatus(spec), kInvalid, {"output.distance=-3"}));
  // r2c's complex side has n/2 + 1 = 4 entries in its last dimension.
  spec = C2C({8, 6});
  spec.type = FftType::kR2C;
  spec.output.embed = {8, 3};
  EXPECT_TRUE(HasError(PlanStatus(spec), kInvalid, {"output.embed[1]=3", "size 4"}));
}

TEST_F(FftCheckTest, NullStreamAndStreamOfAnotherExecutor) {
  EXPECT_TRUE(HasError(fft_->CreatePlan(nullptr, C2C({8})).status(), kInvalid, {"stream is null"}));
  if (other_ == nullptr) GTEST_SKIP() << "needs RILL_HOST_DEVICES=2";
  EXPECT_TRUE(HasError(fft_->CreatePlan(other_stream_.get(), C2C({8})).status(), kInvalid,
                       {"host:1", "host:0", "AsFft()"}));
  EXPECT_TRUE(HasError(fft_->GetOrCreateCachedPlan(other_stream_.get(), C2C({8})).status(),
                       kInvalid, {"host:1"}));
}

TEST_F(FftCheckTest, BuffersTooSmall) {
  auto plan = Plan(C2C({16}, 2));  // 32 complex values = 256 bytes each side.
  DeviceMemory<C> big = Alloc<C>(exec_, 32), small = Alloc<C>(exec_, 31), out = Alloc<C>(exec_, 32);
  EXPECT_TRUE(HasError(fft_->DoFft(stream_.get(), plan.get(), small, &out), kInvalid,
                       {"input", "too small", "needs 256 bytes"}));
  DeviceMemory<C> small_out = Alloc<C>(exec_, 20);
  EXPECT_TRUE(HasError(fft_->DoFft(stream_.get(), plan.get(), big, &small_out), kInvalid,
                       {"output", "too small", "needs 256 bytes"}));
  // Strides widen the span: 16 values 3 apart, 2 batches 50 apart = 96 values.
  FftPlanSpec strided = C2C({16}, 2);
  strided.input = {{16}, 3, 50};
  auto plan2 = Plan(strided);
  DeviceMemory<C> span95 = Alloc<C>(exec_, 95);
  EXPECT_TRUE(HasError(fft_->DoFft(stream_.get(), plan2.get(), span95, &out), kInvalid,
                       {"needs 768 bytes"}));
  EXPECT_TRUE(IsOk(fft_->DoFft(stream_.get(), plan2.get(), Alloc<C>(exec_, 96), &out)));
  EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
}

TEST_F(FftCheckTest, NullBuffersAndPlans) {
  auto plan = Plan(C2C({8}));
  DeviceMemory<C> in = Alloc<C>(exec_, 8), out = Alloc<C>(exec_, 8), null;
  EXPECT_TRUE(
      HasError(fft_->DoFft(stream_.get(), plan.get(), null, &out), kInvalid, {"input is null"}));
  EXPECT_TRUE(
      HasError(fft_->DoFft(stream_.get(), plan.get(), in, &null), kInvalid, {"output is null"}));
  EXPECT_TRUE(
      HasError(fft_->DoFft(stream_.get(), plan.get(), in, static_cast<DeviceMemory<C>*>(nullptr)),
               kInvalid, {"FFT output is null"}));
  EXPECT_TRUE(HasError(fft_->DoFft(stream_.get(), nullptr, in, &out), kInvalid, {"plan is null"}));
}

TEST_F(FftCheckTest, ElementTypesMustBeThePlans) {
  auto c2c = Plan(C2C({8}));
  DeviceMemory<C> cin = Alloc<C>(exec_, 8), cout = Alloc<C>(exec_, 8);
  DeviceMemory<float> rin = Alloc<float>(exec_, 8), rout = Alloc<float>(exec_, 8);
  EXPECT_TRUE(HasError(fft_->DoFft(stream_.get(), c2c.get(), rin, &cout), kInvalid,
                       {"the plan is c2c float", "those of r2c float"}));
  EXPECT_TRUE(HasError(fft_->DoFft(stream_.get(), c2c.get(), cin, &rout), kInvalid,
                       {"those of c2r float"}));
  DeviceMemory<std::complex<double>> zin = Alloc<std::complex<double>>(exec_, 8),
                                     zout = Alloc<std::complex<double>>(exec_, 8);
  EXPECT_TRUE(HasError(fft_->DoFft(stream_.get(), c2c.get(), zin, &zout), kInvalid,
                       {"those of c2c double"}));
  FftPlanSpec c2r_spec = C2C({8});
  c2r_spec.type = FftType::kC2R;
  c2r_spec.direction = FftDirection::kInverse;
  auto c2r = Plan(c2r_spec);
  EXPECT_TRUE(HasError(fft_->DoFft(stream_.get(), c2r.get(), rin, &cout), kInvalid,
                       {"the plan is c2r float", "those of r2c float"}));
}

TEST_F(FftCheckTest, PlacementMustMatchThePlan) {
  auto out_of_place = Plan(C2C({8}));
  FftPlanSpec spec = C2C({8});
  spec.placement = FftPlacement::kInPlace;
  auto in_place = Plan(spec);
  DeviceMemory<C> a = Alloc<C>(exec_, 8), b = Alloc<C>(exec_, 8);
  EXPECT_TRUE(HasError(fft_->DoFft(stream_.get(), out_of_place.get(), a, &a), kInvalid,
                       {"out-of-place", "same memory", "kInPlace"}));
  EXPECT_TRUE(HasError(fft_->DoFft(stream_.get(), in_place.get(), a, &b), kInvalid,
                       {"in-place", "differ"}));
}

// Issue 22, class 7: partly overlapping views of one allocation.
TEST_F(FftCheckTest, OutOfPlaceViewsOfOneAllocationMustNotOverlap) {
  auto plan = Plan(C2C({8}));  // 8 complex floats = 64 bytes each side.
  DeviceMemory<C> buf = Alloc<C>(exec_, 24);
  DeviceMemory<C> in = Must(buf.GetSlice(0, 8)), shifted = Must(buf.GetSlice(4, 8)),
                  next = Must(buf.GetSlice(8, 8)), tail = Must(buf.GetSlice(16, 8));
  EXPECT_TRUE(HasError(fft_->DoFft(stream_.get(), plan.get(), in, &shifted), kInvalid,
                       {"input bytes [0, 64)", "output bytes [32, 96)", "overlap"}));
  EXPECT_TRUE(
      HasError(fft_->DoFft(stream_.get(), plan.get(), shifted, &in), kInvalid, {"overlap"}));
  // Adjacent and distant views of the same allocation are fine.
  EXPECT_TRUE(IsOk(fft_->DoFft(stream_.get(), plan.get(), in, &next)));
  EXPECT_TRUE(IsOk(fft_->DoFft(stream_.get(), plan.get(), tail, &in)));
  // Through a stream: the error lands in the stream's status.
  stream_->ThenFft(plan.get(), in, &shifted);
  EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), kInvalid, {"overlap"}));
}

TEST_F(FftCheckTest, PlansAndMemoryOfAnotherExecutor) {
  if (other_ == nullptr) GTEST_SKIP() << "needs RILL_HOST_DEVICES=2";
  auto plan = Plan(C2C({8}));
  DeviceMemory<C> in = Alloc<C>(exec_, 8), out = Alloc<C>(exec_, 8);
  DeviceMemory<C> other_in = Alloc<C>(other_, 8), other_out = Alloc<C>(other_, 8);
  // A plan of host:0 on a stream of host:1 (through host:1's plugin).
  EXPECT_TRUE(
      HasError(other_->AsFft()->DoFft(other_stream_.get(), plan.get(), other_in, &other_out),
               absl::StatusCode::kFailedPrecondition, {"plan was made", "host:0", "host:1"}));
  // A stream of host:1 given to host:0's plugin.
  EXPECT_TRUE(HasError(fft_->DoFft(other_stream_.get(), plan.get(), other_in, &other_out), kInvalid,
                       {"the stream belongs to host:1"}));
  // Memory of host:1 on host:0.
  EXPECT_TRUE(HasError(fft_->DoFft(stream_.get(), plan.get(), other_in, &out), kInvalid,
                       {"input", "is not in an allocation of"}));
  EXPECT_TRUE(HasError(fft_->DoFft(stream_.get(), plan.get(), in, &other_out), kInvalid,
                       {"output", "is not in an allocation of"}));
}

// Through a stream: the first error lands in status() with the call's
// context; later calls are skipped.
TEST_F(FftCheckTest, StreamKeepsTheFirstErrorWithContext) {
  auto plan = Plan(C2C({16}));
  DeviceMemory<C> small = Alloc<C>(exec_, 4), out = Alloc<C>(exec_, 16);
  DeviceMemory<float> rin = Alloc<float>(exec_, 16);
  stream_->ThenFft(plan.get(), small, &out).ThenFft(plan.get(), rin, &out);
  EXPECT_FALSE(stream_->ok());
  EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), kInvalid,
                       {"ThenFft(c2c forward float [16] x1", "[fftw]", "input", "too small"}));
  if (other_ == nullptr) return;
  // A plan of host:0 used on host:1's stream.
  DeviceMemory<C> other_in = Alloc<C>(other_, 16), other_out = Alloc<C>(other_, 16);
  other_stream_->ThenFft(plan.get(), other_in, &other_out);
  EXPECT_TRUE(HasError(other_stream_->BlockHostUntilDone(), absl::StatusCode::kFailedPrecondition,
                       {"ThenFft(", "host:0"}));
}

}  // namespace
}  // namespace rill
