// The OpenCL Philox plugin against the host "philox" plugin: the same seed
// and the same sequence of calls give the same bits, float uniforms and
// double uniforms bit for bit, and normals within a few ulp (OpenCL's
// sqrt/log/sin/cos may differ from glibc's in the last bits). Also offsets,
// views at an offset, determinism across streams, and stream-order skips.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "rill/plugins/rng/philox_cl/philox_cl_rng.h"
#include "rill/plugins/rng/rng.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using ::rill::testing::Must;

enum class What { kBits, kUniform, kNormal };

// `n` values from `executor`'s RNG plugin, written into elements
// [pad, pad + n) of a larger buffer (a view at an offset).
template <typename T>
std::vector<T> Generate(StreamExecutor* executor, What what, uint64_t n, uint64_t pad = 0,
                        double mean = 0, double stddev = 1) {
  ScopedDeviceMemory<T> buffer = Must(executor->AllocateOwnedArray<T>(n + pad));
  DeviceMemory<T> view = Must(buffer->GetSlice(pad, n));
  std::unique_ptr<Stream> stream = Must(executor->CreateStream());
  if constexpr (std::is_same_v<T, uint32_t>) {
    stream->ThenPopulateRandBits(&view);
  } else if (what == What::kUniform) {
    stream->ThenPopulateRandUniform(&view);
  } else {
    stream->ThenPopulateRandGaussian(static_cast<T>(mean), static_cast<T>(stddev), &view);
  }
  std::vector<T> out(n);
  stream->ThenMemcpyD2H<T>(view, absl::MakeSpan(out));
  EXPECT_TRUE(IsOk(stream->BlockHostUntilDone()));
  return out;
}

template <typename T>
void ExpectSameBits(const std::vector<T>& cl, const std::vector<T>& host, const char* what) {
  ASSERT_EQ(cl.size(), host.size());
  EXPECT_EQ(std::memcmp(cl.data(), host.data(), cl.size() * sizeof(T)), 0) << what;
  for (size_t i = 0; i < cl.size(); ++i) ASSERT_EQ(cl[i], host[i]) << what << " element " << i;
}

template <typename T>
void ExpectUlpClose(const std::vector<T>& cl, const std::vector<T>& host, double rel,
                    const char* what) {
  ASSERT_EQ(cl.size(), host.size());
  for (size_t i = 0; i < cl.size(); ++i) {
    ASSERT_LE(std::fabs(double{cl[i]} - double{host[i]}), rel * (1 + std::fabs(double{host[i]})))
        << what << " element " << i << ": " << cl[i] << " vs host " << host[i];
  }
}

class PhiloxClTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Platform* cl = Must(PlatformManager::Default().PlatformWithName("opencl"));
    if (cl->VisibleDeviceCount() == 0) GTEST_SKIP() << cl->Availability();
    cl_ = Must(cl->ExecutorForDevice(0));
    host_ = Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
    ASSERT_NE(cl_->AsRng(), nullptr);
    ASSERT_NE(dynamic_cast<PhiloxClRng*>(cl_->AsRng()), nullptr) << "philox is the OpenCL default";
  }
  void Seed(uint64_t seed) {
    ASSERT_TRUE(IsOk(cl_->AsRng()->SetSeed(seed)));
    ASSERT_TRUE(IsOk(host_->AsRng()->SetSeed(seed)));
  }
  StreamExecutor* cl_ = nullptr;
  StreamExecutor* host_ = nullptr;
};

TEST_F(PhiloxClTest, SameSequenceAsTheHostPlugin) {
  Seed(0x123456789abcdef0ull);
  // Odd counts, so later calls start inside a Philox block.
  ExpectSameBits(Generate<uint32_t>(cl_, What::kBits, 1001),
                 Generate<uint32_t>(host_, What::kBits, 1001), "bits");
  ExpectSameBits(Generate<float>(cl_, What::kUniform, 517, 3),
                 Generate<float>(host_, What::kUniform, 517), "uniform float");
  ExpectSameBits(Generate<double>(cl_, What::kUniform, 333, 1),
                 Generate<double>(host_, What::kUniform, 333), "uniform double");
  ExpectSameBits(Generate<uint32_t>(cl_, What::kBits, 7), Generate<uint32_t>(host_, What::kBits, 7),
                 "bits after doubles");
  ExpectUlpClose(Generate<float>(cl_, What::kNormal, 258, 0, 1.0, 2.0),
                 Generate<float>(host_, What::kNormal, 258, 0, 1.0, 2.0), 4e-6, "normal float");
  ExpectUlpClose(Generate<double>(cl_, What::kNormal, 100, 0, -1.0, 0.5),
                 Generate<double>(host_, What::kNormal, 100, 0, -1.0, 0.5), 1e-13, "normal double");
  ExpectSameBits(Generate<uint32_t>(cl_, What::kBits, 5), Generate<uint32_t>(host_, What::kBits, 5),
                 "bits at the end");
}

TEST_F(PhiloxClTest, OffsetsAndLargeCalls) {
  Seed(42);
  ASSERT_TRUE(IsOk(cl_->AsRng()->SetOffset(uint64_t{4} * 65536 * 3 + 2)));  // Past a lane round.
  ASSERT_TRUE(IsOk(host_->AsRng()->SetOffset(uint64_t{4} * 65536 * 3 + 2)));
  ExpectSameBits(Generate<float>(cl_, What::kUniform, 300000),
                 Generate<float>(host_, What::kUniform, 300000), "uniform float, 300k");
  ExpectSameBits(Generate<double>(cl_, What::kUniform, 270000),
                 Generate<double>(host_, What::kUniform, 270000),
                 "uniform double across a lane round");
  EXPECT_EQ(dynamic_cast<PhiloxClRng*>(cl_->AsRng())->offset(),
            dynamic_cast<PhiloxClRng*>(cl_->AsRng())->offset());
}

TEST_F(PhiloxClTest, SkippedOnAFailedStreamWithoutAdvancing) {
  Seed(7);
  auto* rng = dynamic_cast<PhiloxClRng*>(cl_->AsRng());
  ScopedDeviceMemory<uint32_t> out = Must(cl_->AllocateOwnedArray<uint32_t>(8));
  std::unique_ptr<Stream> stream = Must(cl_->CreateStream());
  stream->ThenDoHostCallbackWithStatus([] { return absl::InternalError("broken"); });
  ASSERT_FALSE(stream->BlockHostUntilDone().ok());
  DeviceMemory<uint32_t> view = *out;
  EXPECT_FALSE(rng->DoPopulateRandBits(stream.get(), &view).ok());
  EXPECT_EQ(rng->offset(), 0u);
  DeviceMemory<float> odd(Must(out->GetByteSlice(2, 8)));
  std::unique_ptr<Stream> fresh = Must(cl_->CreateStream());
  EXPECT_TRUE(HasError(rng->DoPopulateRandUniform(fresh.get(), &odd),
                       absl::StatusCode::kInvalidArgument, {"byte offset 2"}));
}

}  // namespace
}  // namespace rill
