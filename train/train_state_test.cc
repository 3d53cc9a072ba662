// The training-state file: exact round trips, and every malformed file we
// can craft (truncated, corrupted, hostile sizes) gives the right error
// without crashing or allocating what the header claims.

#include "rill/train/train_state.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rill/base/untrusted_file.h"

namespace rill::train {
namespace {

using ::testing::HasSubstr;

// An encoder written from the format comment in train_state.h, independent
// of the one in train_state.cc.
class Bytes {
 public:
  Bytes& Raw(const std::string& s) {
    s_ += s;
    return *this;
  }
  Bytes& U32(uint32_t v) { return Le(v, 4); }
  Bytes& U64(uint64_t v) { return Le(v, 8); }
  Bytes& Str(const std::string& s) { return U32(static_cast<uint32_t>(s.size())).Raw(s); }
  Bytes& F32(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return U32(u);
  }
  // A header with the given scalars, the magic and version 1.
  Bytes& Header(uint64_t step = 7, uint32_t epoch = 1, uint64_t next_batch = 3,
                uint32_t world_size = 2) {
    return Raw("RILLTRN1").U32(1).U64(42).U64(step).U32(epoch).U64(next_batch).U32(world_size);
  }
  // A tensor record whose byte count matches its data.
  Bytes& Tensor(const std::string& name, const std::vector<int64_t>& shape,
                const std::vector<float>& data) {
    Str(name).U32(static_cast<uint32_t>(shape.size()));
    for (int64_t d : shape) U64(static_cast<uint64_t>(d));
    U64(data.size() * 4);
    for (float f : data) F32(f);
    return *this;
  }
  // The bytes with their FNV-1a 64 checksum appended.
  std::string Sealed() const { return Seal(s_); }
  const std::string& body() const { return s_; }

  static std::string Seal(const std::string& body) {
    uint64_t h = 14695981039346656037ull;
    for (unsigned char c : body) h = (h ^ c) * 1099511628211ull;
    std::string out = body;
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(h >> (8 * i)));
    return out;
  }

 private:
  Bytes& Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) s_.push_back(static_cast<char>(v >> (8 * i)));
    return *this;
  }
  std::string s_;
};

std::vector<std::string>& Created() {
  static auto* paths = new std::vector<std::string>;
  return *paths;
}

// A file of this test in the temporary folder (ctest runs tests in
// parallel), removed when the test ends.
std::string Path(const std::string& name) {
  std::string path = ::testing::TempDir() + "/" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + "." +
                     std::to_string(::getpid()) + "." + name;
  Created().push_back(path);
  return path;
}

class TrainStateTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const std::string& p : Created()) {
      std::error_code ec;
      std::filesystem::remove(p, ec);
      std::filesystem::remove(p + ".tmp", ec);
    }
    Created().clear();
  }
};

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Reads `bytes` back through a file.
absl::StatusOr<TrainState> ReadBytes(const std::string& bytes) {
  const std::string path = Path("crafted.rilltrn");
  WriteFile(path, bytes);
  return ReadTrainState(path);
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TrainState Sample() {
  TrainState s;
  s.seed = 0xfedcba9876543210ull;
  s.step = 1234567890123;
  s.epoch = 3;
  s.next_batch = 57;
  s.world_size = 4;
  s.model = "convnet(c1=8, c2=16, fc=64)";
  s.tensors.push_back({"conv1.weight", {2, 1, 2, 2}, {1, -2, 3.5f, 0.25f, 5, 6, 7, 8}});
  s.tensors.push_back(
      {"conv1.bias",
       {8},
       {std::numeric_limits<float>::quiet_NaN(), FromBits(0x7fa00001), FromBits(0xffc01234),
        std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), -0.0f,
        std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max()}});
  s.tensors.push_back({"adam.mean/conv1.weight", {2, 1, 2, 2}, std::vector<float>(8, 1e-8f)});
  s.tensors.push_back({"adam.var/conv1.bias", {0}, {}});
  s.tensors.push_back({"scalar", {}, {2.5f}});
  return s;
}

void ExpectSame(const TrainState& a, const TrainState& b) {
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_EQ(a.next_batch, b.next_batch);
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.model, b.model);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(a.tensors[i].shape, b.tensors[i].shape) << a.tensors[i].name;
    ASSERT_EQ(a.tensors[i].data.size(), b.tensors[i].data.size()) << a.tensors[i].name;
    for (size_t j = 0; j < a.tensors[i].data.size(); ++j) {
      EXPECT_EQ(Bits(a.tensors[i].data[j]), Bits(b.tensors[i].data[j]))
          << a.tensors[i].name << "[" << j << "]";
    }
  }
}

// A small valid file from the independent encoder.
std::string SmallFile() {
  return Bytes()
      .Header()
      .Str("m")
      .U32(2)
      .Tensor("w", {2}, {1.5f, -0.0f})
      .Tensor("adam.mean/w", {2}, {0.1f, 0.2f})
      .Sealed();
}

TEST_F(TrainStateTest, RoundTripIsBitExact) {
  const std::string path = Path("roundtrip.rilltrn");
  const TrainState s = Sample();
  ASSERT_TRUE(WriteTrainState(path, s).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  absl::StatusOr<TrainState> back = ReadTrainState(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSame(s, *back);
}

TEST_F(TrainStateTest, WriterFollowsTheDocumentedFormat) {
  TrainState s;
  s.seed = 42;
  s.step = 7;
  s.epoch = 1;
  s.next_batch = 3;
  s.world_size = 2;
  s.model = "m";
  s.tensors.push_back({"w", {2}, {1.5f, -0.0f}});
  s.tensors.push_back({"adam.mean/w", {2}, {0.1f, 0.2f}});
  const std::string path = Path("format.rilltrn");
  ASSERT_TRUE(WriteTrainState(path, s).ok());
  EXPECT_EQ(ReadFile(path), SmallFile());
}

TEST_F(TrainStateTest, EmptyStateAndEmptyTensor) {
  const std::string path = Path("empty.rilltrn");
  TrainState s;
  ASSERT_TRUE(WriteTrainState(path, s).ok());
  absl::StatusOr<TrainState> back = ReadTrainState(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSame(s, *back);

  s.tensors.push_back({"none", {0}, {}});
  s.tensors.push_back({"also_none", {3, 0, 5}, {}});
  ASSERT_TRUE(WriteTrainState(path, s).ok());  // Replaces the file.
  back = ReadTrainState(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSame(s, *back);
}

TEST_F(TrainStateTest, MissingFileIsNotFoundNamingThePath) {
  const std::string path = Path("does-not-exist.rilltrn");
  absl::StatusOr<TrainState> r = ReadTrainState(path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr(path));
}

TEST_F(TrainStateTest, DirectoryIsRejected) {
  absl::StatusOr<TrainState> r = ReadTrainState(::testing::TempDir());
  EXPECT_FALSE(r.ok());
}

// Regression (issue 39, class 5): the reader opened a FIFO with fopen and
// blocked; an untrusted file that is not a regular file is refused first.
TEST_F(TrainStateTest, PipeIsRefusedWithoutBlocking) {
  const std::string path = Path("fifo.rilltrn");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  absl::StatusOr<TrainState> r = ReadTrainState(path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr(path));
  EXPECT_THAT(r.status().message(), HasSubstr("not a regular file"));
}

// Regression (issue 39, class 5): what a state file makes the reader
// allocate is counted against the cap one file may make Rill allocate.
TEST_F(TrainStateTest, TensorsPastTheAllocationCapAreResourceExhausted) {
  TrainState s;
  s.tensors.push_back({"big", {1024}, std::vector<float>(1024, 1.0f)});
  const std::string path = Path("capped.rilltrn");
  ASSERT_TRUE(WriteTrainState(path, s).ok());
  SetFileAllocationCap(1000);
  absl::StatusOr<TrainState> r = ReadTrainState(path);
  SetFileAllocationCap(0);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr(path));
  EXPECT_THAT(r.status().message(), HasSubstr("tensor 'big''s data"));
  EXPECT_THAT(r.status().message(), HasSubstr("past the cap of 1000 bytes"));
  EXPECT_THAT(r.status().message(), HasSubstr("RILL_MAX_FILE_BYTES"));
  EXPECT_TRUE(ReadTrainState(path).ok());
}

TEST_F(TrainStateTest, BadMagic) {
  std::string bytes = SmallFile();
  bytes[4] = 'X';
  absl::StatusOr<TrainState> r = ReadBytes(bytes);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("not a Rill training state file"));
  EXPECT_THAT(r.status().message(), HasSubstr("crafted.rilltrn"));

  r = ReadBytes("PK\x03\x04 an ONNX or zip file, say, of some length");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(TrainStateTest, UnknownVersionIsUnimplemented) {
  std::string bytes = SmallFile();
  bytes[8] = 2;
  absl::StatusOr<TrainState> r = ReadBytes(bytes);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(r.status().message(), HasSubstr("version 2"));
}

TEST_F(TrainStateTest, EveryTruncationIsDataLoss) {
  const std::string bytes = SmallFile();
  for (size_t len = 0; len < bytes.size(); ++len) {
    absl::StatusOr<TrainState> r = ReadBytes(bytes.substr(0, len));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << "length " << len;
  }
}

// Truncated bodies resealed with a correct checksum reach the parser: every
// one must fail cleanly (this is what a hostile file can do).
TEST_F(TrainStateTest, EveryResealedTruncationIsRejected) {
  const std::string body = SmallFile().substr(0, SmallFile().size() - 8);
  for (size_t len = 12; len < body.size(); ++len) {
    absl::StatusOr<TrainState> r = ReadBytes(Bytes::Seal(body.substr(0, len)));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << "length " << len << ": " << r.status();
  }
  absl::StatusOr<TrainState> r = ReadBytes(Bytes::Seal(body + "x"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("unexpected bytes"));
}

TEST_F(TrainStateTest, EveryFlippedByteAfterTheVersionIsDataLoss) {
  const std::string bytes = SmallFile();
  for (size_t i = 12; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    absl::StatusOr<TrainState> r = ReadBytes(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << "byte " << i;
  }
  std::string bad = bytes;
  bad[bytes.size() - 8 - 1] ^= 1;  // The last data byte.
  absl::StatusOr<TrainState> r = ReadBytes(bad);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr("checksum"));
}

TEST_F(TrainStateTest, HugeElementCountIsRejectedWithoutAllocating) {
  const auto start = std::chrono::steady_clock::now();
  // 2^60 elements, 2^62 bytes, consistently declared.
  const std::string bytes = Bytes()
                                .Header()
                                .Str("m")
                                .U32(1)
                                .Str("huge")
                                .U32(2)
                                .U64(1ull << 30)
                                .U64(1ull << 30)
                                .U64(1ull << 62)
                                .F32(1)
                                .Sealed();
  absl::StatusOr<TrainState> r = ReadBytes(bytes);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("'huge'"));
  EXPECT_THAT(r.status().message(), HasSubstr("1152921504606846976 elements"));
  EXPECT_THAT(r.status().message(), HasSubstr("4 bytes remain"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(TrainStateTest, OverflowingShapeIsRejected) {
  const std::string bytes = Bytes()
                                .Header()
                                .Str("m")
                                .U32(1)
                                .Str("w")
                                .U32(3)
                                .U64(1ull << 40)
                                .U64(1ull << 40)
                                .U64(1ull << 40)
                                .U64(0)
                                .Sealed();
  absl::StatusOr<TrainState> r = ReadBytes(bytes);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("'w'"));
  EXPECT_THAT(r.status().message(), HasSubstr("overflows"));
}

TEST_F(TrainStateTest, ByteCountMustMatchShape) {
  const std::string bytes =
      Bytes().Header().Str("m").U32(1).Str("w").U32(1).U64(3).U64(8).F32(1).F32(2).Sealed();
  absl::StatusOr<TrainState> r = ReadBytes(bytes);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("'w' has a byte count of 8"));
}

TEST_F(TrainStateTest, DuplicateNamesAreRejected) {
  const std::string bytes =
      Bytes().Header().Str("m").U32(2).Tensor("w", {1}, {1}).Tensor("w", {1}, {2}).Sealed();
  absl::StatusOr<TrainState> r = ReadBytes(bytes);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("'w' appears twice"));

  TrainState s;
  s.tensors.push_back({"w", {1}, {1}});
  s.tensors.push_back({"w", {1}, {2}});
  const std::string path = Path("dup.rilltrn");
  absl::Status w = WriteTrainState(path, s);
  EXPECT_EQ(w.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(w.message(), HasSubstr(path));
}

TEST_F(TrainStateTest, HostileHeaderLimits) {
  struct Case {
    std::string what;
    std::string bytes;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"model too long", Bytes().Header().U32(4097).Sealed(), "4097"},
      {"model past the end", Bytes().Header().U32(4000).Raw("ab").Sealed(), "model description"},
      {"too many tensors", Bytes().Header().Str("m").U32(100001).Sealed(), "100001"},
      {"count past the end", Bytes().Header().Str("m").U32(100000).Sealed(), "tensor #0"},
      {"empty name", Bytes().Header().Str("m").U32(1).U32(0).Sealed(), "tensor #0"},
      {"long name", Bytes().Header().Str("m").U32(1).U32(1025).Sealed(), "1025"},
      {"rank 9", Bytes().Header().Str("m").U32(1).Str("w").U32(9).Sealed(), "9 dimensions"},
      {"negative dim", Bytes().Header().Str("m").U32(1).Str("w").U32(1).U64(~0ull).U64(0).Sealed(),
       "negative"},
      {"negative step", Bytes().Header(~0ull).Str("m").U32(0).Sealed(), "step -1"},
      {"negative epoch", Bytes().Header(1, 0x80000000u).Str("m").U32(0).Sealed(), "epoch"},
      {"negative next_batch", Bytes().Header(1, 1, ~0ull).Str("m").U32(0).Sealed(), "next_batch"},
      {"world size 0", Bytes().Header(1, 1, 1, 0).Str("m").U32(0).Sealed(), "world_size 0"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<TrainState> r = ReadBytes(c.bytes);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << c.what << ": " << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr(c.message)) << c.what;
  }
}

TEST_F(TrainStateTest, UnwritablePathNamesThePath) {
  const std::string path = Path("no-such-dir/state.rilltrn");
  absl::Status s = WriteTrainState(path, Sample());
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("No such file or directory"));
}

TEST_F(TrainStateTest, WriterRejectsInconsistentState) {
  const std::string path = Path("inconsistent.rilltrn");
  std::filesystem::remove(path);
  TrainState s;
  s.tensors.push_back({"w", {2, 3}, {1, 2, 3}});
  absl::Status st = WriteTrainState(path, s);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("'w'"));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  s.tensors = {{"", {1}, {1}}};
  EXPECT_EQ(WriteTrainState(path, s).code(), absl::StatusCode::kInvalidArgument);
  s.tensors.clear();
  s.world_size = 0;
  EXPECT_EQ(WriteTrainState(path, s).code(), absl::StatusCode::kInvalidArgument);
  s.world_size = 1;
  s.model = std::string(4097, 'm');
  EXPECT_EQ(WriteTrainState(path, s).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rill::train
