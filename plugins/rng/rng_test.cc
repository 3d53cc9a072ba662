// RngSupport's bad-input checks (rng.cc), through the host default plugin
// (Philox): called directly they return InvalidArgument naming the value;
// through Stream::ThenPopulate* the error lands in the stream's status with
// the call and plugin named.

#include "rill/plugins/rng/rng.h"

#include <memory>

#include "gtest/gtest.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using testing::HasError;
using testing::IsOk;
using testing::Must;

class PhiloxRngBadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Platform* host = Must(PlatformManager::Default().PlatformWithName("host"));
    ASSERT_GE(host->VisibleDeviceCount(), 2);  // RILL_HOST_DEVICES=2 from ctest.
    executor_ = Must(host->ExecutorForDevice(0));
    other_ = Must(host->ExecutorForDevice(1));
    rng_ = executor_->AsRng();
    ASSERT_NE(rng_, nullptr);
    stream_ = Must(executor_->CreateStream());
    floats_ = Must(executor_->AllocateOwnedArray<float>(8));
    doubles_ = Must(executor_->AllocateOwnedArray<double>(8));
    odd_ = Must(executor_->AllocateOwnedArray<float>(7));
  }

  StreamExecutor* executor_ = nullptr;
  StreamExecutor* other_ = nullptr;
  RngSupport* rng_ = nullptr;
  std::unique_ptr<Stream> stream_;
  ScopedDeviceMemory<float> floats_;
  ScopedDeviceMemory<double> doubles_;
  ScopedDeviceMemory<float> odd_;
};

TEST_F(PhiloxRngBadInputTest, StddevMustBePositive) {
  EXPECT_TRUE(HasError(rng_->DoPopulateRandGaussian(stream_.get(), 0.0f, 0.0f, floats_.ptr()),
                       absl::StatusCode::kInvalidArgument, {"stddev 0", "> 0"}));
  EXPECT_TRUE(HasError(rng_->DoPopulateRandGaussian(stream_.get(), 0.0f, -1.5f, floats_.ptr()),
                       absl::StatusCode::kInvalidArgument, {"stddev -1.5"}));
  EXPECT_TRUE(HasError(rng_->DoPopulateRandGaussian(stream_.get(), 0.0, -2.0, doubles_.ptr()),
                       absl::StatusCode::kInvalidArgument, {"stddev -2"}));
  EXPECT_TRUE(
      HasError(rng_->DoPopulateRandGaussian(stream_.get(), 0.0, std::nan(""), doubles_.ptr()),
               absl::StatusCode::kInvalidArgument, {"stddev nan"}));
  EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));  // Direct calls leave the stream alone.
}

TEST_F(PhiloxRngBadInputTest, NormalsComeInPairs) {
  EXPECT_TRUE(HasError(rng_->DoPopulateRandGaussian(stream_.get(), 0.0f, 1.0f, odd_.ptr()),
                       absl::StatusCode::kInvalidArgument, {"element count 7 is odd"}));
  // Uniform and bits take any count.
  EXPECT_TRUE(IsOk(rng_->DoPopulateRandUniform(stream_.get(), odd_.ptr())));
  EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
}

TEST_F(PhiloxRngBadInputTest, NullAndEmptyBuffers) {
  DeviceMemory<float> null_memory;
  EXPECT_TRUE(HasError(rng_->DoPopulateRandUniform(stream_.get(), &null_memory),
                       absl::StatusCode::kInvalidArgument, {"null"}));
  EXPECT_TRUE(HasError(
      rng_->DoPopulateRandUniform(stream_.get(), static_cast<DeviceMemory<float>*>(nullptr)),
      absl::StatusCode::kInvalidArgument, {"null"}));
  DeviceMemory<uint32_t> empty(DeviceMemoryBase(floats_->opaque(), 0));
  EXPECT_TRUE(HasError(rng_->DoPopulateRandBits(stream_.get(), &empty),
                       absl::StatusCode::kInvalidArgument, {"too small"}));
  EXPECT_TRUE(HasError(rng_->DoPopulateRandUniform(nullptr, floats_.ptr()),
                       absl::StatusCode::kInvalidArgument, {"stream is null"}));
}

TEST_F(PhiloxRngBadInputTest, BufferOfAnotherDevice) {
  ScopedDeviceMemory<float> foreign = Must(other_->AllocateOwnedArray<float>(8));
  EXPECT_TRUE(HasError(rng_->DoPopulateRandUniform(stream_.get(), foreign.ptr()),
                       absl::StatusCode::kInvalidArgument, {"is not in an allocation of"}));
}

TEST_F(PhiloxRngBadInputTest, ErrorsLandInTheStreamWithContext) {
  stream_->ThenPopulateRandGaussian(1.0f, -3.0f, floats_.ptr());
  EXPECT_FALSE(stream_->ok());
  EXPECT_TRUE(HasError(stream_->status(), absl::StatusCode::kInvalidArgument,
                       {"ThenPopulateRandGaussian(float)", "philox", "stddev -3"}));
  // Later calls are skipped; the first error stays.
  stream_->ThenPopulateRandUniform(odd_.ptr());
  EXPECT_TRUE(
      HasError(stream_->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument, {"stddev -3"}));

  std::unique_ptr<Stream> odd_stream = Must(executor_->CreateStream());
  odd_stream->ThenPopulateRandGaussian(0.0f, 1.0f, odd_.ptr());
  EXPECT_TRUE(HasError(odd_stream->status(), absl::StatusCode::kInvalidArgument,
                       {"ThenPopulateRandGaussian(float)", "odd"}));

  std::unique_ptr<Stream> foreign_stream = Must(executor_->CreateStream());
  ScopedDeviceMemory<uint32_t> foreign = Must(other_->AllocateOwnedArray<uint32_t>(8));
  foreign_stream->ThenPopulateRandBits(foreign.ptr());
  EXPECT_TRUE(HasError(foreign_stream->status(), absl::StatusCode::kInvalidArgument,
                       {"ThenPopulateRandBits", "is not in an allocation of"}));
}

}  // namespace
}  // namespace rill
