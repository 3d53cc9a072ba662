#include "rill/base/untrusted_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rill {
namespace {

using ::testing::HasSubstr;

std::string WriteTemp(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(UntrustedFile, ReadsARegularFileWhole) {
  const std::string path = WriteTemp("untrusted_ok.bin", std::string("abc\0def", 7));
  absl::StatusOr<std::string> got = ReadUntrustedFile("test file", path);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, std::string("abc\0def", 7));
}

TEST(UntrustedFile, RefusesWhatIsNotARegularFile) {
  absl::StatusOr<std::string> dir = ReadUntrustedFile("ONNX model", ::testing::TempDir());
  EXPECT_EQ(dir.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dir.status().message(), HasSubstr("is a directory"));
  absl::StatusOr<std::string> dev = ReadUntrustedFile("ONNX model", "/dev/zero");
  EXPECT_EQ(dev.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dev.status().message(), HasSubstr("'/dev/zero' is not a regular file"));
  absl::StatusOr<std::string> missing = ReadUntrustedFile("ONNX model", "/no/such/model.onnx");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  const std::string fifo = ::testing::TempDir() + "untrusted_fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A FIFO with no writer would block a plain open(); it is refused at once.
  EXPECT_EQ(ReadUntrustedFile("IDX file", fifo).status().code(),
            absl::StatusCode::kInvalidArgument);
  ::unlink(fifo.c_str());
}

TEST(UntrustedFile, AnEmptyFileIsMalformedUnlessAllowed) {
  const std::string path = WriteTemp("untrusted_empty.bin", "");
  absl::StatusOr<std::string> got = ReadUntrustedFile("ONNX model", path);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(got.status().message(), HasSubstr("is empty"));
  EXPECT_TRUE(ReadUntrustedFile("cache", path, /*allow_empty=*/true).ok());
}

TEST(UntrustedFile, TheCapBoundsWhatOneFileMayMakeUsAllocate) {
  const std::string path = WriteTemp("untrusted_big.bin", std::string(4096, 'x'));
  SetFileAllocationCap(1024);
  absl::StatusOr<std::string> got = ReadUntrustedFile("checkpoint", path);
  SetFileAllocationCap(0);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(got.status().message(), HasSubstr("past the cap of 1024 bytes"));
  EXPECT_THAT(got.status().message(), HasSubstr("RILL_MAX_FILE_BYTES"));
  EXPECT_TRUE(ReadUntrustedFile("checkpoint", path).ok());

  FileBudget budget("IDX file", "x.gz", 100);
  EXPECT_TRUE(budget.Take("the header", 60).ok());
  EXPECT_EQ(budget.Take("the payload", 41).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(budget.Take("a wrapping payload", UINT64_MAX).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(budget.Take("the rest", 40).ok());
  EXPECT_EQ(budget.used(), 100u);
}

TEST(UntrustedFile, TheCapVariableIsParsedStrictly) {
  EXPECT_EQ(*ParseFileAllocationCap("1048576"), 1048576u);
  EXPECT_EQ(*ParseFileAllocationCap("512M"), uint64_t{512} << 20);
  EXPECT_EQ(*ParseFileAllocationCap("8g"), uint64_t{8} << 30);
  for (const char* bad :
       {"", "abc", "0", "-5", "12Q", "1.5G", "99999999999999999999", "16777216T"}) {
    absl::StatusOr<uint64_t> got = ParseFileAllocationCap(bad);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(got.status().message(), HasSubstr("RILL_MAX_FILE_BYTES")) << bad;
  }
}

TEST(UntrustedFile, AClaimedPayloadMustFitInTheFile) {
  EXPECT_TRUE(CheckFitsInFile("IDX file", "a", "the images", 10, 4, 40).ok());
  absl::Status s = CheckFitsInFile("IDX file", "a", "the images", 11, 4, 40);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("claims 11 x 4 bytes, but only 40 bytes"));
  EXPECT_EQ(CheckFitsInFile("IDX file", "a", "x", UINT64_MAX, 8, 40).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rill
