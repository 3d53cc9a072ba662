// The cuRAND plugin. Without a GPU (or driver) only the first group runs:
// registration for the cuda platform, the status mapping, and rejecting a
// host executor; the device tests skip with the platform's reason ("no CUDA
// device: ..."). On a GPU, against the host "philox" plugin (the same
// Philox4x32-10 layout, plugins/rng/philox/philox.h) with the same seed,
// offset and sequence of calls: bits and uniforms (float, double) bit for
// bit, normals within a few ulp (the GPU's sin/cos/log differ from glibc's
// in the last bits, as curand.h warns); plus views at an offset,
// determinism after a reseed, and calls on a failed stream.

#include "rill/plugins/rng/curand/curand_rng.h"

#include <curand.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "rill/platform/cuda/cuda_platform.h"
#include "rill/plugins/rng/curand/curand_status.h"
#include "rill/plugins/rng/rng.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using ::rill::testing::Must;

// --- Without a device.

TEST(CuRandRegistryTest, RegisteredAsTheCudaDefault) {
  bool found = false;
  for (const PluginRegistry::Entry& e : PluginRegistry::Default().List()) {
    if (e.platform != kCudaPlatformId || e.kind != PluginKind::kRng || e.name != "curand") continue;
    found = true;
    if (std::getenv("RILL_RNG") == nullptr) {
      EXPECT_TRUE(e.is_default);
    }
  }
  EXPECT_TRUE(found) << "no \"curand\" RNG plugin registered for the cuda platform";
}

TEST(CuRandStatusTest, NamesCodesAndCanonicalCodes) {
  EXPECT_TRUE(IsOk(CuRandStatus(CURAND_STATUS_SUCCESS, "x")));
  EXPECT_TRUE(HasError(
      CuRandStatus(CURAND_STATUS_ALLOCATION_FAILED, "curandGenerate"),
      absl::StatusCode::kResourceExhausted,
      {"curandGenerate: ", "CURAND_STATUS_ALLOCATION_FAILED (102)", "memory allocation failed"}));
  // What curandCreateGenerator returns without a driver (TOOLCHAIN.md §3.3).
  EXPECT_TRUE(HasError(CuRandStatus(CURAND_STATUS_INITIALIZATION_FAILED, "curandCreateGenerator"),
                       absl::StatusCode::kUnavailable,
                       {"CURAND_STATUS_INITIALIZATION_FAILED (203)"}));
  EXPECT_TRUE(HasError(CuRandStatus(CURAND_STATUS_LENGTH_NOT_MULTIPLE, "w"),
                       absl::StatusCode::kInvalidArgument,
                       {"CURAND_STATUS_LENGTH_NOT_MULTIPLE (105)"}));
  EXPECT_TRUE(HasError(CuRandStatus(CURAND_STATUS_OUT_OF_RANGE, "w"),
                       absl::StatusCode::kInvalidArgument, {"CURAND_STATUS_OUT_OF_RANGE (104)"}));
  EXPECT_TRUE(HasError(CuRandStatus(CURAND_STATUS_ARCH_MISMATCH, "w"),
                       absl::StatusCode::kUnimplemented, {"CURAND_STATUS_ARCH_MISMATCH (204)"}));
  EXPECT_TRUE(HasError(CuRandStatus(CURAND_STATUS_LAUNCH_FAILURE, "w"), absl::StatusCode::kInternal,
                       {"CURAND_STATUS_LAUNCH_FAILURE (201)"}));
  EXPECT_TRUE(
      HasError(CuRandStatus(777, "w"), absl::StatusCode::kInternal, {"curandStatus 777 (777)"}));
  EXPECT_EQ(CuRandStatusName(CURAND_STATUS_INTERNAL_ERROR), "CURAND_STATUS_INTERNAL_ERROR");
}

TEST(CuRandStatusTest, LibraryVersionIsTheHeaders) {
  EXPECT_EQ(CuRand::LibraryVersion(), CURAND_VERSION);
}

TEST(CuRandCreateTest, RejectsAHostExecutor) {
  StreamExecutor* host =
      Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
  EXPECT_TRUE(HasError(CuRand::Create(host).status(), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(
      HasError(CuRand::Create(nullptr).status(), absl::StatusCode::kInvalidArgument, {"null"}));
}

// --- On a device.

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
void ExpectSameBits(const std::vector<T>& gpu, const std::vector<T>& host, const char* what) {
  ASSERT_EQ(gpu.size(), host.size());
  for (size_t i = 0; i < gpu.size(); ++i) {
    ASSERT_EQ(std::memcmp(&gpu[i], &host[i], sizeof(T)), 0)
        << what << " element " << i << ": " << gpu[i] << " vs host " << host[i];
  }
}

template <typename T>
void ExpectUlpClose(const std::vector<T>& gpu, const std::vector<T>& host, double rel,
                    const char* what) {
  ASSERT_EQ(gpu.size(), host.size());
  for (size_t i = 0; i < gpu.size(); ++i) {
    ASSERT_LE(std::fabs(double{gpu[i]} - double{host[i]}), rel * (1 + std::fabs(double{host[i]})))
        << what << " element " << i << ": " << gpu[i] << " vs host " << host[i];
  }
}

class CuRandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Platform*> cuda = PlatformManager::Default().PlatformWithName("cuda");
    if (!cuda.ok()) GTEST_SKIP() << "no CUDA platform: " << cuda.status();
    if ((*cuda)->VisibleDeviceCount() == 0) GTEST_SKIP() << (*cuda)->Availability();
    gpu_ = Must((*cuda)->ExecutorForDevice(0));
    host_ = Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
    ASSERT_NE(gpu_->AsRng(), nullptr);
    ASSERT_EQ(gpu_->AsRng()->Name(), "curand");
    ASSERT_NE(host_->AsRng(), nullptr);
    ASSERT_EQ(host_->AsRng()->Name(), "philox") << "the reference is the host philox plugin";
  }
  void Reset(uint64_t seed, uint64_t offset = 0) {
    ASSERT_TRUE(IsOk(gpu_->AsRng()->SetSeed(seed)));
    ASSERT_TRUE(IsOk(host_->AsRng()->SetSeed(seed)));
    if (offset != 0) {
      ASSERT_TRUE(IsOk(gpu_->AsRng()->SetOffset(offset)));
      ASSERT_TRUE(IsOk(host_->AsRng()->SetOffset(offset)));
    }
  }
  StreamExecutor* gpu_ = nullptr;
  StreamExecutor* host_ = nullptr;
};

TEST_F(CuRandTest, BitsAndUniformsMatchTheHostPlugin) {
  for (uint64_t seed : {uint64_t{0}, uint64_t{42}, uint64_t{0xdeadbeefcafef00dull}}) {
    for (uint64_t n : {uint64_t{1}, uint64_t{3}, uint64_t{1000}, uint64_t{(1 << 20) + 1}}) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << ", n " << n);
      Reset(seed);
      ExpectSameBits(Generate<uint32_t>(gpu_, What::kBits, n),
                     Generate<uint32_t>(host_, What::kBits, n), "bits");
      Reset(seed);
      ExpectSameBits(Generate<float>(gpu_, What::kUniform, n),
                     Generate<float>(host_, What::kUniform, n), "uniform float");
      Reset(seed);
      ExpectSameBits(Generate<double>(gpu_, What::kUniform, n),
                     Generate<double>(host_, What::kUniform, n), "uniform double");
    }
  }
}

// Odd counts, so later calls start inside a Philox block; the offset counts
// values across kinds.
TEST_F(CuRandTest, SequenceOfCallsMatchesTheHostPlugin) {
  Reset(0x123456789abcdef0ull);
  ExpectSameBits(Generate<uint32_t>(gpu_, What::kBits, 1001),
                 Generate<uint32_t>(host_, What::kBits, 1001), "bits");
  ExpectSameBits(Generate<float>(gpu_, What::kUniform, 517, 3),
                 Generate<float>(host_, What::kUniform, 517), "uniform float at a view offset");
  ExpectUlpClose(Generate<float>(gpu_, What::kNormal, 258, 0, 1.0, 2.0),
                 Generate<float>(host_, What::kNormal, 258, 0, 1.0, 2.0), 1e-5, "normal float");
  ExpectSameBits(Generate<double>(gpu_, What::kUniform, 333, 1),
                 Generate<double>(host_, What::kUniform, 333), "uniform double");
  ExpectSameBits(Generate<uint32_t>(gpu_, What::kBits, 7),
                 Generate<uint32_t>(host_, What::kBits, 7), "bits after doubles");
  ExpectUlpClose(Generate<double>(gpu_, What::kNormal, 100, 0, -1.0, 0.5),
                 Generate<double>(host_, What::kNormal, 100, 0, -1.0, 0.5), 1e-12, "normal double");
}

TEST_F(CuRandTest, OffsetsMatchTheHostPlugin) {
  for (uint64_t offset : {uint64_t{1}, uint64_t{3}, uint64_t{262145}, (uint64_t{1} << 32) + 7}) {
    SCOPED_TRACE(::testing::Message() << "offset " << offset);
    Reset(99, offset);
    ExpectSameBits(Generate<uint32_t>(gpu_, What::kBits, 300002),
                   Generate<uint32_t>(host_, What::kBits, 300002), "bits");
    Reset(99, offset);
    ExpectSameBits(Generate<float>(gpu_, What::kUniform, 1000),
                   Generate<float>(host_, What::kUniform, 1000), "uniform float");
    Reset(99, offset);
    ExpectSameBits(Generate<double>(gpu_, What::kUniform, 300000),
                   Generate<double>(host_, What::kUniform, 300000), "uniform double");
  }
}

TEST_F(CuRandTest, ReseedingRepeatsTheSequence) {
  ASSERT_TRUE(IsOk(gpu_->AsRng()->SetSeed(5)));
  const std::vector<uint32_t> first = Generate<uint32_t>(gpu_, What::kBits, 4096);
  EXPECT_NE(Generate<uint32_t>(gpu_, What::kBits, 4096), first) << "the generator did not advance";
  ASSERT_TRUE(IsOk(gpu_->AsRng()->SetSeed(5)));
  EXPECT_EQ(Generate<uint32_t>(gpu_, What::kBits, 4096), first);
}

// Calls on two streams, enqueued back to back without waiting, take their
// numbers in call order: together they are the host's one sequence.
TEST_F(CuRandTest, CallsOnTwoStreamsAreOrderedByCall) {
  Reset(11);
  const uint64_t n = 300001;  // Odd: the second call starts inside a block.
  ScopedDeviceMemory<uint32_t> a = Must(gpu_->AllocateOwnedArray<uint32_t>(n));
  ScopedDeviceMemory<uint32_t> b = Must(gpu_->AllocateOwnedArray<uint32_t>(n));
  std::unique_ptr<Stream> s1 = Must(gpu_->CreateStream()), s2 = Must(gpu_->CreateStream());
  s1->ThenPopulateRandBits(a.ptr());
  s2->ThenPopulateRandBits(b.ptr());
  std::vector<uint32_t> got(2 * n);
  s1->ThenMemcpyD2H<uint32_t>(*a, absl::MakeSpan(got).subspan(0, n));
  s2->ThenMemcpyD2H<uint32_t>(*b, absl::MakeSpan(got).subspan(n, n));
  ASSERT_TRUE(IsOk(s1->BlockHostUntilDone()));
  ASSERT_TRUE(IsOk(s2->BlockHostUntilDone()));
  ExpectSameBits(got, Generate<uint32_t>(host_, What::kBits, 2 * n), "bits from two streams");
}

TEST_F(CuRandTest, SkippedOnAFailedStreamWithoutAdvancing) {
  Reset(7);
  RngSupport* rng = gpu_->AsRng();
  ScopedDeviceMemory<uint32_t> out = Must(gpu_->AllocateOwnedArray<uint32_t>(8));
  std::unique_ptr<Stream> stream = Must(gpu_->CreateStream());
  stream->ThenDoHostCallbackWithStatus([] { return absl::InternalError("broken"); });
  ASSERT_FALSE(stream->BlockHostUntilDone().ok());
  DeviceMemory<uint32_t> view = *out;
  EXPECT_TRUE(HasError(rng->DoPopulateRandBits(stream.get(), &view), absl::StatusCode::kInternal,
                       {"broken"}));
  // Nothing was drawn: the next numbers are the sequence's first.
  ExpectSameBits(Generate<uint32_t>(gpu_, What::kBits, 16),
                 Generate<uint32_t>(host_, What::kBits, 16), "bits after the skipped call");

  DeviceMemory<float> odd(Must(out->GetByteSlice(2, 8)));
  std::unique_ptr<Stream> fresh = Must(gpu_->CreateStream());
  EXPECT_TRUE(HasError(rng->DoPopulateRandUniform(fresh.get(), &odd),
                       absl::StatusCode::kInvalidArgument, {"byte offset 2"}));
  // A stream of another executor.
  std::unique_ptr<Stream> host_stream = Must(host_->CreateStream());
  EXPECT_FALSE(rng->DoPopulateRandBits(host_stream.get(), &view).ok());
}

}  // namespace
}  // namespace rill
