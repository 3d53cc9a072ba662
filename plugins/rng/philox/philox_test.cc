// Philox4x32-10 on the host: the round function against Random123's
// known answers, the output against values captured from cuRAND's host
// generator (so bit-identity is checked even where cuRAND is absent),
// reproducibility under any thread count and on every host device, and the
// distributions.

#include "rill/plugins/rng/philox/philox.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "rill/plugins/rng/philox/philox_rng.h"
#include "rill/plugins/rng/philox/philox_test_util.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using philox_testing::Generate;
using philox_testing::HostExecutor;
using philox_testing::PhiloxOf;
using philox_testing::What;
using testing::IsOk;

// --- The core.

TEST(PhiloxCore, Random123KnownAnswers) {
  // Random123 1.09, kat_vectors: philox4x32 10.
  struct Kat {
    philox::Block ctr;
    uint32_t k0, k1;
    philox::Block expected;
  } kats[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       0xffffffff,
       0xffffffff,
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       0xa4093822,
       0x299f31d0,
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const Kat& kat : kats) {
    philox::Block out = philox::Philox4x32_10(kat.ctr, kat.k0, kat.k1);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out.v[i], kat.expected.v[i]) << "word " << i;
  }
}

TEST(PhiloxCore, UniformConversionEnds) {
  EXPECT_GT(philox::UniformFloat(0), 0.0f);
  EXPECT_EQ(philox::UniformFloat(0xffffffffu), 1.0f);  // (0, 1], as cuRAND.
  EXPECT_GT(philox::UniformDouble(0, 0), 0.0);
  EXPECT_LT(philox::UniformDouble(0xffffffffu, 0xffffffffu), 1.0);
}

// Any split of a call into ranges gives the same values: the basis of the
// parallel fill.
TEST(PhiloxCore, RangesComposeToTheWholeCall) {
  const uint64_t n = 3 * philox::kLanes + 37, seed = 77;
  for (uint64_t offset : {uint64_t{0}, uint64_t{3}, uint64_t{262141}}) {
    std::vector<double> whole(n), parts(n);
    std::vector<uint32_t> wbits(n), pbits(n);
    std::vector<float> wnorm(n), pnorm(n);
    philox::FillUniformDouble(seed, offset, whole.data(), 0, n);
    philox::FillBits(seed, offset, wbits.data(), 0, n);
    philox::FillNormalFloat(seed, offset, 0, 1, wnorm.data(), 0, n);
    for (uint64_t begin = 0; begin < n;) {
      const uint64_t end = std::min(n, begin + 1 + (begin * 7919) % 50021);
      philox::FillUniformDouble(seed, offset, parts.data(), begin, end);
      philox::FillBits(seed, offset, pbits.data(), begin, end);
      philox::FillNormalFloat(seed, offset, 0, 1, pnorm.data(), begin, end);
      begin = end;
    }
    EXPECT_EQ(std::memcmp(whole.data(), parts.data(), n * 8), 0) << "offset " << offset;
    EXPECT_EQ(wbits, pbits) << "offset " << offset;
    EXPECT_EQ(std::memcmp(wnorm.data(), pnorm.data(), n * 4), 0) << "offset " << offset;
  }
}

// --- Values captured from cuRAND 10.4 (CUDA 13.0) with
// curandCreateGeneratorHost(CURAND_RNG_PSEUDO_PHILOX4_32_10), the default
// ordering, by this sequence of calls (bit patterns):
//   seed 0x0123456789abcdef, offset 0: curandGenerate 6, GenerateUniform 5,
//   GenerateNormal 4 (mean 1, stddev 2), Generate 3;
//   offset 262140: GenerateUniformDouble 6, then Generate 2;
//   offset 3: GenerateNormalDouble 4 (mean -1, stddev 0.5);
//   offset 2^40 + 5: Generate 4;
//   seed 42, offset 2^20: GenerateUniform 4.
namespace golden {
constexpr uint32_t kBits6[] = {0xb850222eu, 0xc58cb04bu, 0x14a7a020u,
                               0x7a84fff9u, 0xfa9dff5eu, 0x6c10844bu};
constexpr uint32_t kUniform5[] = {0x3ed2f38eu, 0x3cb21ff0u, 0x3f18e807u, 0x3e899f78u, 0x3f7163aau};
constexpr uint32_t kNormal4[] = {0x3fd58aa6u, 0x4082061eu, 0x3f64cec0u, 0xbebc783cu};
constexpr uint32_t kBits3[] = {0xf08d6a0eu, 0x023ef42au, 0x77b464b5u};
constexpr uint64_t kUniformDouble6[] = {0x3fe57ba48b7ca8a6ull, 0x3fe456f00d47afaaull,
                                        0x3fe26560332d1398ull, 0x3fbc06368eb755fcull,
                                        0x3fd48f823ad428cdull, 0x3fe6533b22a01426ull};
constexpr uint32_t kBitsAfterDouble2[] = {0x65401425u, 0xb299da3fu};
constexpr uint64_t kNormalDouble4[] = {0xbff3e4c61f1b9a31ull, 0xbfed2357c288ebc7ull,
                                       0xbfd65d41ad7162e4ull, 0xbfdf9f0d33679a6eull};
constexpr uint32_t kBitsFar4[] = {0x8cecbcd2u, 0x3a62e97bu, 0x58e9f47fu, 0xa927adf0u};
constexpr uint32_t kSeed42Uniform4[] = {0x3ea72047u, 0x3f56cbafu, 0x3ea53e93u, 0x3e71608au};
}  // namespace golden

template <typename T, typename G, size_t N>
void ExpectBits(const std::vector<T>& got, const G (&want)[N], const char* what) {
  static_assert(sizeof(T) == sizeof(G));
  ASSERT_EQ(got.size(), N) << what;
  for (size_t i = 0; i < N; ++i) {
    G bits;
    std::memcpy(&bits, &got[i], sizeof(G));
    EXPECT_EQ(bits, want[i]) << what << "[" << i << "] = " << got[i];
  }
}

TEST(PhiloxRng, MatchesValuesCapturedFromCurand) {
  StreamExecutor* executor = HostExecutor(0);
  PhiloxRng* rng = PhiloxOf(executor);
  ASSERT_NE(rng, nullptr);
  ASSERT_TRUE(IsOk(rng->SetSeed(0x0123456789abcdefull)));
  ExpectBits(Generate<uint32_t>(executor, rng, What::kBits, 6), golden::kBits6, "bits");
  ExpectBits(Generate<float>(executor, rng, What::kUniform, 5), golden::kUniform5, "uniform");
  ExpectBits(Generate<float>(executor, rng, What::kNormal, 4, 1.0, 2.0), golden::kNormal4,
             "normal");
  ExpectBits(Generate<uint32_t>(executor, rng, What::kBits, 3), golden::kBits3, "bits");
  ASSERT_TRUE(IsOk(rng->SetOffset(262140)));
  ExpectBits(Generate<double>(executor, rng, What::kUniform, 6), golden::kUniformDouble6,
             "uniform double");
  ExpectBits(Generate<uint32_t>(executor, rng, What::kBits, 2), golden::kBitsAfterDouble2,
             "bits after doubles");
  ASSERT_TRUE(IsOk(rng->SetOffset(3)));
  ExpectBits(Generate<double>(executor, rng, What::kNormal, 4, -1.0, 0.5), golden::kNormalDouble4,
             "normal double");
  ASSERT_TRUE(IsOk(rng->SetOffset((uint64_t{1} << 40) + 5)));
  ExpectBits(Generate<uint32_t>(executor, rng, What::kBits, 4), golden::kBitsFar4, "far bits");
  ASSERT_TRUE(IsOk(rng->SetSeed(42)));
  ASSERT_TRUE(IsOk(rng->SetOffset(1 << 20)));
  ExpectBits(Generate<float>(executor, rng, What::kUniform, 4), golden::kSeed42Uniform4,
             "seed 42 uniform");
}

TEST(PhiloxRng, IsTheHostDefaultAndCountsTheOffset) {
  StreamExecutor* executor = HostExecutor(0);
  PhiloxRng* rng = PhiloxOf(executor);
  ASSERT_NE(rng, nullptr);
  EXPECT_EQ(executor->AsRng(), rng);
  ASSERT_TRUE(IsOk(rng->SetSeed(5)));
  Generate<uint32_t>(executor, rng, What::kBits, 10);
  EXPECT_EQ(rng->offset(), 10u);
  Generate<float>(executor, rng, What::kUniform, 6);
  EXPECT_EQ(rng->offset(), 16u);
  ASSERT_TRUE(IsOk(rng->SetSeed(6)));
  EXPECT_EQ(rng->offset(), 0u);  // RngSupport: a new seed restarts at 0.
}

// 10 then 6 values equal 16 at once, for every 32-bit kind.
TEST(PhiloxRng, SplitCallsContinueTheSequence) {
  StreamExecutor* executor = HostExecutor(0);
  PhiloxRng* rng = PhiloxOf(executor);
  ASSERT_TRUE(IsOk(rng->SetSeed(9)));
  std::vector<float> whole = Generate<float>(executor, rng, What::kUniform, 16);
  ASSERT_TRUE(IsOk(rng->SetSeed(9)));
  std::vector<float> split = Generate<float>(executor, rng, What::kUniform, 10);
  std::vector<float> rest = Generate<float>(executor, rng, What::kUniform, 6);
  split.insert(split.end(), rest.begin(), rest.end());
  EXPECT_EQ(std::memcmp(whole.data(), split.data(), 16 * sizeof(float)), 0);
}

// The same bytes whatever the thread count, on both host devices.
TEST(PhiloxRng, ReproducibleUnderAnyThreadCountAndOnEveryDevice) {
  const uint64_t n = (1 << 20) + 7;
  std::vector<uint32_t> reference_bits;
  std::vector<double> reference_normal;
  for (int device : {0, 1}) {
    StreamExecutor* executor = HostExecutor(device);
    PhiloxRng* rng = PhiloxOf(executor);
    ASSERT_NE(rng, nullptr);
    for (int threads : {1, 2, 3, 0}) {
      SCOPED_TRACE(::testing::Message() << "device " << device << ", max_threads " << threads);
      rng->set_max_threads(threads);
      ASSERT_TRUE(IsOk(rng->SetSeed(1234)));
      ASSERT_TRUE(IsOk(rng->SetOffset(13)));
      std::vector<uint32_t> bits = Generate<uint32_t>(executor, rng, What::kBits, n);
      std::vector<double> normal = Generate<double>(executor, rng, What::kNormal, n - 1, 2.0, 3.0);
      if (reference_bits.empty()) {
        reference_bits = bits;
        reference_normal = normal;
        continue;
      }
      EXPECT_TRUE(bits == reference_bits);
      EXPECT_EQ(std::memcmp(normal.data(), reference_normal.data(), normal.size() * 8), 0);
    }
    rng->set_max_threads(0);
  }
}

// Chained on one stream, in stream order; the generator's position is taken
// when each call is made.
TEST(PhiloxRng, ChainedOnOneStreamInOrder) {
  StreamExecutor* executor = HostExecutor(1);
  PhiloxRng* rng = PhiloxOf(executor);
  ASSERT_TRUE(IsOk(rng->SetSeed(3)));
  std::vector<uint32_t> expected = Generate<uint32_t>(executor, rng, What::kBits, 300000);
  ASSERT_TRUE(IsOk(rng->SetSeed(3)));
  ScopedDeviceMemory<uint32_t> a = testing::Must(executor->AllocateOwnedArray<uint32_t>(200000));
  ScopedDeviceMemory<uint32_t> b = testing::Must(executor->AllocateOwnedArray<uint32_t>(100000));
  std::unique_ptr<Stream> stream = testing::Must(executor->CreateStream());
  std::vector<uint32_t> got(300000);
  stream->ThenPopulateRandBits(a.ptr())
      .ThenPopulateRandBits(b.ptr())
      .ThenMemcpy(got.data(), *a, 200000 * 4)
      .ThenMemcpy(got.data() + 200000, *b, 100000 * 4);
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  EXPECT_TRUE(got == expected);
}

// --- Distributions.

template <typename T>
void MeanAndStddev(const std::vector<T>& v, double* mean, double* stddev) {
  double sum = 0, sum2 = 0;
  for (T x : v) sum += x;
  *mean = sum / v.size();
  for (T x : v) sum2 += (x - *mean) * (x - *mean);
  *stddev = std::sqrt(sum2 / (v.size() - 1));
}

TEST(PhiloxRng, UniformIsUniformInZeroOne) {
  StreamExecutor* executor = HostExecutor(0);
  PhiloxRng* rng = PhiloxOf(executor);
  ASSERT_TRUE(IsOk(rng->SetSeed(11)));
  const uint64_t n = 1 << 20;
  std::vector<float> f = Generate<float>(executor, rng, What::kUniform, n);
  std::vector<double> d = Generate<double>(executor, rng, What::kUniform, n);
  for (float x : f) ASSERT_TRUE(x > 0.0f && x <= 1.0f) << x;
  for (double x : d) ASSERT_TRUE(x > 0.0 && x <= 1.0) << x;
  double mean, stddev;
  // The standard error of the mean is 0.29 / 1024 = 2.8e-4; allow 5 of them.
  MeanAndStddev(f, &mean, &stddev);
  EXPECT_NEAR(mean, 0.5, 1.5e-3);
  EXPECT_NEAR(stddev * stddev, 1.0 / 12, 1e-3);
  MeanAndStddev(d, &mean, &stddev);
  EXPECT_NEAR(mean, 0.5, 1.5e-3);
  EXPECT_NEAR(stddev * stddev, 1.0 / 12, 1e-3);
  // Ten bins, each within 2% of n / 10.
  std::vector<int> bins(10);
  for (float x : f) ++bins[std::min(9, static_cast<int>(x * 10))];
  for (int b : bins) EXPECT_NEAR(b, n / 10.0, n / 500.0);
}

TEST(PhiloxRng, NormalHasTheRequestedMeanAndStddev) {
  StreamExecutor* executor = HostExecutor(0);
  PhiloxRng* rng = PhiloxOf(executor);
  ASSERT_TRUE(IsOk(rng->SetSeed(12)));
  const uint64_t n = 1 << 20;
  double mean, stddev;
  MeanAndStddev(Generate<float>(executor, rng, What::kNormal, n, 3.0, 2.0), &mean, &stddev);
  EXPECT_NEAR(mean, 3.0, 5 * 2.0 / 1024);
  EXPECT_NEAR(stddev, 2.0, 0.01);
  MeanAndStddev(Generate<double>(executor, rng, What::kNormal, n, -1.5, 0.25), &mean, &stddev);
  EXPECT_NEAR(mean, -1.5, 5 * 0.25 / 1024);
  EXPECT_NEAR(stddev, 0.25, 0.01 * 0.25);
}

}  // namespace
}  // namespace rill
