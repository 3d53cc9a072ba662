// Rill's Philox against cuRAND's own host generator
// (curandCreateGeneratorHost(CURAND_RNG_PSEUDO_PHILOX4_32_10), default
// ordering), which runs without a GPU: the same seed, offset and sequence of
// calls must give the same bytes. Built only when the toolkit's cuRAND is
// found.
//
// cuRAND keeps the offset when the seed changes; RngSupport::SetSeed
// restarts at 0. So every reset here sets seed and offset on both.

#include <curand.h>

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rill/plugins/rng/philox/philox.h"
#include "rill/plugins/rng/philox/philox_rng.h"
#include "rill/plugins/rng/philox/philox_test_util.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using philox_testing::Generate;
using philox_testing::HostExecutor;
using philox_testing::PhiloxOf;
using philox_testing::What;
using testing::IsOk;

enum class Kind { kBits, kUniform, kUniformDouble, kNormal, kNormalDouble };

std::string KindName(Kind kind) {
  switch (kind) {
    case Kind::kBits:
      return "bits";
    case Kind::kUniform:
      return "uniform";
    case Kind::kUniformDouble:
      return "uniform double";
    case Kind::kNormal:
      return "normal";
    case Kind::kNormalDouble:
      return "normal double";
  }
  return "?";
}

class PhiloxCurandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(curandCreateGeneratorHost(&curand_, CURAND_RNG_PSEUDO_PHILOX4_32_10),
              CURAND_STATUS_SUCCESS);
    executor_ = HostExecutor(0);
    rng_ = PhiloxOf(executor_);
    ASSERT_NE(rng_, nullptr);
  }
  void TearDown() override { curandDestroyGenerator(curand_); }

  void Reset(uint64_t seed, uint64_t offset) {
    ASSERT_EQ(curandSetPseudoRandomGeneratorSeed(curand_, seed), CURAND_STATUS_SUCCESS);
    ASSERT_EQ(curandSetGeneratorOffset(curand_, offset), CURAND_STATUS_SUCCESS);
    ASSERT_TRUE(IsOk(rng_->SetSeed(seed)));
    ASSERT_TRUE(IsOk(rng_->SetOffset(offset)));
  }

  // Generates n values of `kind` with both; returns how many differ (bit
  // patterns) and records the first few in `detail`.
  size_t Compare(Kind kind, uint64_t n, double mean = 0, double stddev = 1) {
    std::vector<char> theirs, ours;
    size_t width = 4;
    switch (kind) {
      case Kind::kBits: {
        std::vector<uint32_t> c(n);
        EXPECT_EQ(curandGenerate(curand_, c.data(), n), CURAND_STATUS_SUCCESS);
        Bytes(c, &theirs);
        Bytes(Generate<uint32_t>(executor_, rng_, What::kBits, n), &ours);
        break;
      }
      case Kind::kUniform: {
        std::vector<float> c(n);
        EXPECT_EQ(curandGenerateUniform(curand_, c.data(), n), CURAND_STATUS_SUCCESS);
        Bytes(c, &theirs);
        Bytes(Generate<float>(executor_, rng_, What::kUniform, n), &ours);
        break;
      }
      case Kind::kNormal: {
        std::vector<float> c(n);
        EXPECT_EQ(curandGenerateNormal(curand_, c.data(), n, mean, stddev), CURAND_STATUS_SUCCESS);
        Bytes(c, &theirs);
        Bytes(Generate<float>(executor_, rng_, What::kNormal, n, mean, stddev), &ours);
        break;
      }
      case Kind::kUniformDouble: {
        width = 8;
        std::vector<double> c(n);
        EXPECT_EQ(curandGenerateUniformDouble(curand_, c.data(), n), CURAND_STATUS_SUCCESS);
        Bytes(c, &theirs);
        Bytes(Generate<double>(executor_, rng_, What::kUniform, n), &ours);
        break;
      }
      case Kind::kNormalDouble: {
        width = 8;
        std::vector<double> c(n);
        EXPECT_EQ(curandGenerateNormalDouble(curand_, c.data(), n, mean, stddev),
                  CURAND_STATUS_SUCCESS);
        Bytes(c, &theirs);
        Bytes(Generate<double>(executor_, rng_, What::kNormal, n, mean, stddev), &ours);
        break;
      }
    }
    size_t differ = 0;
    first_differences_.clear();
    for (uint64_t i = 0; i < n; ++i) {
      if (std::memcmp(&theirs[i * width], &ours[i * width], width) != 0) {
        if (differ++ < 4) first_differences_.push_back(i);
      }
    }
    return differ;
  }

  template <typename T>
  static void Bytes(const std::vector<T>& v, std::vector<char>* out) {
    out->resize(v.size() * sizeof(T));
    std::memcpy(out->data(), v.data(), out->size());
  }

  std::string Where() const {
    std::string s = "first differing elements:";
    for (uint64_t i : first_differences_) s.append(" ").append(std::to_string(i));
    return s;
  }

  curandGenerator_t curand_ = nullptr;
  StreamExecutor* executor_ = nullptr;
  PhiloxRng* rng_ = nullptr;
  std::vector<uint64_t> first_differences_;
};

constexpr Kind kAllKinds[] = {Kind::kBits, Kind::kUniform, Kind::kUniformDouble, Kind::kNormal,
                              Kind::kNormalDouble};

TEST_F(PhiloxCurandTest, EverySeedSizeAndKind) {
  for (uint64_t seed : {uint64_t{0}, uint64_t{42}, uint64_t{0xdeadbeefcafef00dull}}) {
    for (Kind kind : kAllKinds) {
      const bool normal = kind == Kind::kNormal || kind == Kind::kNormalDouble;
      for (uint64_t n : {1, 3, 4, 5, 1000, 1 << 20}) {
        if (normal && n % 2 != 0) continue;  // Normals come in pairs.
        Reset(seed, 0);
        EXPECT_EQ(Compare(kind, n, 0.5, 2.5), 0u)
            << KindName(kind) << ", seed " << seed << ", n " << n << "; " << Where();
      }
    }
  }
}

// A sequence of 32-bit calls of sizes that are not multiples of 4 continues
// exactly as cuRAND does: its offset counts values, whatever the kind.
TEST_F(PhiloxCurandTest, SplitCallsInSequence) {
  struct Call {
    Kind kind;
    uint64_t n;
  } calls[] = {{Kind::kBits, 3},        {Kind::kUniform, 5},      {Kind::kNormal, 6},
               {Kind::kBits, 1},        {Kind::kUniform, 7},      {Kind::kBits, 1000003},
               {Kind::kUniform, 13},    {Kind::kNormal, 2},       {Kind::kBits, (1 << 20) + 1},
               {Kind::kNormal, 262146}, {Kind::kUniform, 262143}, {Kind::kBits, 10},
               {Kind::kBits, 6}};
  for (uint64_t seed : {uint64_t{7}, uint64_t{0x123456789ull}}) {
    Reset(seed, 0);
    int index = 0;
    for (const Call& call : calls) {
      EXPECT_EQ(Compare(call.kind, call.n, -1.0, 0.75), 0u)
          << "call " << index << ": " << KindName(call.kind) << " n " << call.n << "; " << Where();
      ++index;
    }
  }
}

// curandSetGeneratorOffset and RngSupport::SetOffset mean the same position.
TEST_F(PhiloxCurandTest, SetOffset) {
  for (uint64_t offset : {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{5}, uint64_t{262143},
                          uint64_t{262145}, (uint64_t{1} << 32) + 7, (uint64_t{1} << 42) + 1}) {
    for (Kind kind : kAllKinds) {
      for (uint64_t n : {uint64_t{2}, uint64_t{1000}, uint64_t{300002}}) {
        Reset(99, offset);
        EXPECT_EQ(Compare(kind, n, 1.0, 3.0), 0u)
            << KindName(kind) << ", offset " << offset << ", n " << n << "; " << Where();
      }
    }
  }
}

// After a double call the offset advances as cuRAND's does, and later calls
// match while they stay within 4 * 65536 positions of where the double call
// started (see philox.h).
TEST_F(PhiloxCurandTest, CallsAfterDoubleCalls) {
  for (uint64_t offset : {uint64_t{0}, uint64_t{3}, uint64_t{1000}}) {
    Reset(5, offset);
    EXPECT_EQ(Compare(Kind::kUniformDouble, 6), 0u) << Where();
    EXPECT_EQ(Compare(Kind::kBits, 10), 0u) << Where();
    EXPECT_EQ(Compare(Kind::kNormal, 4), 0u) << Where();
    EXPECT_EQ(Compare(Kind::kNormalDouble, 8, 2.0, 0.5), 0u) << Where();
    EXPECT_EQ(Compare(Kind::kUniform, 1001), 0u) << Where();
  }
  // Large double calls advance the offset by more than the count.
  for (uint64_t n : {uint64_t{262143}, uint64_t{262144}, uint64_t{300000}}) {
    Reset(5, 1);
    EXPECT_EQ(Compare(Kind::kUniformDouble, n), 0u) << "n " << n << "; " << Where();
    Reset(5, rng_->offset());  // Clears cuRAND's per-lane state; keeps the offset.
    EXPECT_EQ(Compare(Kind::kBits, 8), 0u) << "after n " << n << "; " << Where();
  }
}

// The one known difference, pinned: cuRAND's lane 0 served four doubles
// (two counters) and runs one counter ahead when it serves again one round
// (4 * 65536 values) later; Rill's layout is stateless.
TEST_F(PhiloxCurandTest, KnownDifferenceAfterADoubleCall) {
  Reset(5, 0);
  EXPECT_EQ(Compare(Kind::kUniformDouble, 4), 0u);
  EXPECT_EQ(Compare(Kind::kBits, 300000), 4u);
  EXPECT_EQ(first_differences_, (std::vector<uint64_t>{262140, 262141, 262142, 262143}));
}

}  // namespace
}  // namespace rill
