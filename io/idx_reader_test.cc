#include "rill/io/idx_reader.h"

#include <sys/stat.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rill/base/untrusted_file.h"
#include "rill/io/testing/idx_testing.h"

namespace rill::io {
namespace {

using ::rill::io::testing::Bytes;
using ::rill::io::testing::IdxBytes;
using ::rill::io::testing::ReadBytes;
using ::rill::io::testing::TempDir;
using ::rill::io::testing::WriteGzip;
using ::rill::io::testing::WriteIdx;
using ::rill::io::testing::WriteRaw;
using ::testing::HasSubstr;

// The status must have `code`, and its message must name `path` and contain `what`.
void ExpectError(const absl::StatusOr<IdxArray>& got, absl::StatusCode code,
                 const std::string& path, const std::string& what) {
  ASSERT_FALSE(got.ok()) << "read " << path << " without error";
  EXPECT_EQ(got.status().code(), code) << got.status();
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("'" + path + "'"));
  EXPECT_THAT(std::string(got.status().message()), HasSubstr(what));
}

Bytes Iota(size_t n, int step = 7) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(i * step + 3);
  return b;
}

// Every case runs on a raw file and on a gzip-compressed one.
class IdxReaderTest : public ::testing::TestWithParam<bool> {
 protected:
  bool gzip() const { return GetParam(); }
  std::string Write(const Bytes& bytes) {
    const std::string path = dir_.File(gzip() ? "f-idx.gz" : "f-idx");
    WriteIdx(path, bytes, gzip());
    return path;
  }
  TempDir dir_;
};

TEST_P(IdxReaderTest, ReadsDimsAndPayload) {
  const Bytes payload = Iota(3 * 2 * 4);
  absl::StatusOr<IdxArray> got = ReadIdx(Write(IdxBytes({3, 2, 4}, payload)));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->dims, (std::vector<int64_t>{3, 2, 4}));
  EXPECT_EQ(got->data, payload);
}

TEST_P(IdxReaderTest, ReadsOneToFourDims) {
  const std::vector<uint32_t> all{5, 3, 2, 2};
  for (size_t nd = 1; nd <= 4; ++nd) {
    const std::vector<uint32_t> dims(all.begin(), all.begin() + nd);
    size_t n = 1;
    for (uint32_t d : dims) n *= d;
    const Bytes payload = Iota(n, 11);
    absl::StatusOr<IdxArray> got = ReadIdx(Write(IdxBytes(dims, payload)));
    ASSERT_TRUE(got.ok()) << nd << " dims: " << got.status();
    EXPECT_EQ(got->dims, std::vector<int64_t>(dims.begin(), dims.end()));
    EXPECT_EQ(got->data, payload);
  }
}

// Regression (issue 39, class 2): zero-row images were accepted.
TEST_P(IdxReaderTest, ZeroDimensionIsRefused) {
  std::string path = Write(IdxBytes({0, 28, 28}, {}));
  ExpectError(ReadIdx(path), absl::StatusCode::kInvalidArgument, path,
              "dimension 0 of [0, 28, 28] is 0");
  path = Write(IdxBytes({5, 0, 28}, {}));
  ExpectError(ReadIdx(path), absl::StatusCode::kInvalidArgument, path,
              "dimension 1 of [5, 0, 28] is 0");
}

TEST_P(IdxReaderTest, LargePayloadSpanningChunks) {
  Bytes payload((3 << 20) + 17);
  std::mt19937 rng(5);
  for (uint8_t& b : payload) b = static_cast<uint8_t>(rng());
  absl::StatusOr<IdxArray> got =
      ReadIdx(Write(IdxBytes({static_cast<uint32_t>(payload.size())}, payload)));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->data, payload);
}

TEST_P(IdxReaderTest, WrongMagic) {
  Bytes b = IdxBytes({2}, {1, 2});
  b[0] = 1;
  std::string path = Write(b);
  ExpectError(ReadIdx(path), absl::StatusCode::kInvalidArgument, path, "wrong magic 01 00 08 01");
  b[0] = 0;
  b[1] = 0x42;
  path = Write(b);
  ExpectError(ReadIdx(path), absl::StatusCode::kInvalidArgument, path, "wrong magic 00 42 08 01");
}

TEST_P(IdxReaderTest, UnsupportedType) {
  const std::string path = Write(IdxBytes({1}, {0, 0, 0, 0}, /*type=*/0x0D));
  ExpectError(ReadIdx(path), absl::StatusCode::kInvalidArgument, path,
              "unsupported element type 0x0d (float32)");
}

TEST_P(IdxReaderTest, ZeroDims) {
  const std::string path = Write(IdxBytes({}, {}));
  ExpectError(ReadIdx(path), absl::StatusCode::kInvalidArgument, path, "0 dimensions: 1 to 4");
}

TEST_P(IdxReaderTest, FiveDims) {
  const std::string path = Write(IdxBytes({1, 1, 1, 1, 1}, {9}));
  ExpectError(ReadIdx(path), absl::StatusCode::kInvalidArgument, path, "5 dimensions: 1 to 4");
}

TEST_P(IdxReaderTest, DimsProductOverflows) {
  const std::string path = Write(IdxBytes({0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 2}, {}));
  ExpectError(ReadIdx(path), absl::StatusCode::kInvalidArgument, path, "overflow");
}

TEST_P(IdxReaderTest, EmptyFile) {
  const std::string path = Write({});
  ExpectError(ReadIdx(path), absl::StatusCode::kDataLoss, path,
              "truncated header: 0 of 4 magic bytes");
}

TEST_P(IdxReaderTest, TruncatedMagic) {
  const std::string path = Write({0, 0, 8});
  ExpectError(ReadIdx(path), absl::StatusCode::kDataLoss, path,
              "truncated header: 3 of 4 magic bytes");
}

TEST_P(IdxReaderTest, TruncatedDims) {
  Bytes b = IdxBytes({2, 3, 4}, {});
  b.resize(10);  // Magic, the first dimension, half the second.
  const std::string path = Write(b);
  ExpectError(ReadIdx(path), absl::StatusCode::kDataLoss, path, "truncated header: 10 of 16 bytes");
}

TEST_P(IdxReaderTest, TruncatedPayload) {
  const std::string path = Write(IdxBytes({2, 5}, Iota(7)));
  if (gzip()) {
    ExpectError(ReadIdx(path), absl::StatusCode::kDataLoss, path,
                "truncated payload: 7 of 10 bytes");
  } else {  // Checked against the file's length before reading.
    ExpectError(ReadIdx(path), absl::StatusCode::kInvalidArgument, path,
                "the payload of dimensions [2, 5] claims 10 x 1 bytes, but only 7 bytes");
  }
}

// A raw file's claim is checked against its length; a compressed one's
// against the allocation cap (4 GiB by default): neither is allocated.
TEST_P(IdxReaderTest, HugeClaimIsRefusedBeforeAllocation) {
  const std::string path = Write(IdxBytes({0xFFFFFFFF, 0xFFFF}, Iota(10)));
  if (gzip()) {
    ExpectError(ReadIdx(path), absl::StatusCode::kResourceExhausted, path,
                "would make Rill allocate 281470681677825 bytes");
    EXPECT_THAT(std::string(ReadIdx(path).status().message()), HasSubstr("RILL_MAX_FILE_BYTES"));
  } else {
    ExpectError(ReadIdx(path), absl::StatusCode::kInvalidArgument, path,
                "claims 281470681677825 x 1 bytes, but only 10 bytes");
  }
}

TEST_P(IdxReaderTest, TrailingBytes) {
  const std::string path = Write(IdxBytes({4}, Iota(6)));
  ExpectError(ReadIdx(path), absl::StatusCode::kDataLoss, path,
              "2 trailing bytes after the 4-byte payload");
}

INSTANTIATE_TEST_SUITE_P(RawAndGzip, IdxReaderTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "gzip" : "raw";
                         });

// Regression (issue 39, class 2): a small gzip file that claims (and
// inflates to) more than the cap ended in std::bad_alloc.
TEST(IdxReader, GzipBombIsRefusedAtTheCap) {
  TempDir dir;
  const std::string path = dir.File("bomb-idx.gz");
  // Claims 8 GiB; the 1 MiB of zeros that follow compress to about 1 KB.
  WriteGzip(path, IdxBytes({65536, 65536, 2}, Bytes(1 << 20)));
  ASSERT_LT(ReadBytes(path).size(), 20000u);
  ExpectError(ReadIdx(path), absl::StatusCode::kResourceExhausted, path,
              "would make Rill allocate 8589934592 bytes");
  ExpectError(ReadIdx(path), absl::StatusCode::kResourceExhausted, path,
              "past the cap of 4294967296 bytes");
  ExpectError(ReadIdx(path), absl::StatusCode::kResourceExhausted, path, "RILL_MAX_FILE_BYTES");

  // A bomb that does inflate to what it claims, past a lowered cap.
  const std::string real = dir.File("real-bomb-idx.gz");
  WriteGzip(real, IdxBytes({4 << 20}, Bytes(4 << 20)));
  SetFileAllocationCap(1 << 20);
  absl::StatusOr<IdxArray> got = ReadIdx(real);
  SetFileAllocationCap(0);
  ExpectError(got, absl::StatusCode::kResourceExhausted, real, "past the cap of 1048576 bytes");
  ASSERT_TRUE(ReadIdx(real).ok());  // Under the default cap it is a valid file.
}

// A gzip stream that inflates on and on after a small payload is refused
// after one buffer, not inflated to its end.
TEST(IdxReader, EndlessTrailingBytesAreNotInflated) {
  TempDir dir;
  const std::string path = dir.File("trailing-idx.gz");
  Bytes b = IdxBytes({4}, Iota(4));
  b.resize(b.size() + (64 << 20));
  WriteGzip(path, b);
  ExpectError(ReadIdx(path), absl::StatusCode::kDataLoss, path,
              "at least 4096 trailing bytes after the 4-byte payload");
}

TEST(IdxReader, PipeIsRefusedWithoutBlocking) {
  TempDir dir;
  const std::string path = dir.File("fifo-idx");
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  ExpectError(ReadIdx(path), absl::StatusCode::kInvalidArgument, path, "not a regular file");
}

TEST(IdxReader, MissingFile) {
  TempDir dir;
  const std::string path = dir.File("no-such-file.gz");
  ExpectError(ReadIdx(path), absl::StatusCode::kNotFound, path, "not found");
  const std::string nested = dir.File("no-dir/file");
  ExpectError(ReadIdx(nested), absl::StatusCode::kNotFound, nested, "not found");
}

TEST(IdxReader, Directory) {
  TempDir dir;
  ExpectError(ReadIdx(dir.path()), absl::StatusCode::kInvalidArgument, dir.path(),
              "is a directory");
}

// A valid gzip file of a 2000-byte IDX payload, and its bytes.
class GzipCorruption : public ::testing::Test {
 protected:
  void SetUp() override {
    Bytes payload(2000);
    std::mt19937 rng(11);
    for (uint8_t& b : payload)
      b = static_cast<uint8_t>(rng() % 16);  // Compressible, not trivially.
    WriteGzip(good_, IdxBytes({20, 100}, payload));
    gz_ = ReadBytes(good_);
    ASSERT_GT(gz_.size(), 100u);
    ASSERT_EQ(gz_[0], 0x1f);
    ASSERT_EQ(gz_[1], 0x8b);
    ASSERT_TRUE(ReadIdx(good_).ok());
  }
  std::string WriteBad(const Bytes& b) {
    WriteRaw(bad_, b);
    return bad_;
  }
  TempDir dir_;
  const std::string good_ = dir_.File("good.gz");
  const std::string bad_ = dir_.File("bad.gz");
  Bytes gz_;
};

TEST_F(GzipCorruption, GarbageAfterGzipHeader) {
  Bytes b(gz_.begin(), gz_.begin() + 10);  // The 10-byte gzip header (no name: gzopen writes none).
  b.resize(200, 0xFF);                     // A final block of reserved type 3, then junk.
  const std::string path = WriteBad(b);
  ExpectError(ReadIdx(path), absl::StatusCode::kDataLoss, path,
              "corrupt gzip stream in the header");
}

TEST_F(GzipCorruption, WrongCrc) {
  Bytes b = gz_;
  b[b.size() - 8] ^= 0x01;  // The CRC-32 of the trailer: found after the whole payload.
  const std::string path = WriteBad(b);
  ExpectError(ReadIdx(path), absl::StatusCode::kDataLoss, path, "corrupt gzip stream");
  EXPECT_THAT(std::string(ReadIdx(path).status().message()), HasSubstr("incorrect data check"));
}

TEST_F(GzipCorruption, FlippedBytesInTheCompressedData) {
  // Wherever a flip lands, the file must fail with DataLoss (or, if it hits
  // the magic, InvalidArgument), never read as good.
  int failures = 0;
  for (size_t at = 10; at + 8 < gz_.size(); at += 7) {
    Bytes b = gz_;
    b[at] ^= 0x5a;
    const std::string path = WriteBad(b);
    absl::StatusOr<IdxArray> got = ReadIdx(path);
    ASSERT_FALSE(got.ok()) << "flip at " << at << " read as good";
    EXPECT_THAT(std::string(got.status().message()), HasSubstr("'" + path + "'"));
    EXPECT_TRUE(got.status().code() == absl::StatusCode::kDataLoss ||
                got.status().code() == absl::StatusCode::kInvalidArgument)
        << got.status();
    ++failures;
  }
  EXPECT_GT(failures, 10);
}

TEST_F(GzipCorruption, CutGzipStream) {
  Bytes b(gz_.begin(), gz_.begin() + gz_.size() / 2);
  const std::string path = WriteBad(b);
  ExpectError(ReadIdx(path), absl::StatusCode::kDataLoss, path, "truncated gzip stream");
}

}  // namespace
}  // namespace rill::io
