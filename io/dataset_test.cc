#include "rill/io/dataset.h"

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rill/io/testing/idx_testing.h"

namespace rill::io {
namespace {

using ::rill::io::testing::Bytes;
using ::rill::io::testing::IdxBytes;
using ::rill::io::testing::TempDir;
using ::rill::io::testing::WriteGzip;
using ::rill::io::testing::WriteRaw;
using ::testing::HasSubstr;

// n examples of rows x cols; pixel p of example i is (i * 13 + p) % 256,
// label i % 10.
struct Files {
  Bytes images, labels;
};
Files MakeFiles(uint32_t n, uint32_t rows, uint32_t cols) {
  Bytes px(n * rows * cols), lb(n);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t p = 0; p < rows * cols; ++p)
      px[i * rows * cols + p] = static_cast<uint8_t>(i * 13 + p);
    lb[i] = static_cast<uint8_t>(i % 10);
  }
  return {IdxBytes({n, rows, cols}, px), IdxBytes({n}, lb)};
}

void ExpectMessage(const absl::Status& s, absl::StatusCode code,
                   const std::vector<std::string>& parts) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), code) << s;
  for (const std::string& p : parts) EXPECT_THAT(std::string(s.message()), HasSubstr(p));
}

class DatasetTest : public ::testing::Test {
 protected:
  TempDir dir_;
  const std::string images_ = dir_.File("images.gz");
  const std::string labels_ = dir_.File("labels.gz");
};

TEST_F(DatasetTest, LoadsImagesAndLabels) {
  const Files f = MakeFiles(12, 3, 2);
  WriteGzip(images_, f.images);
  WriteRaw(labels_, f.labels);  // Raw and gzip mix.
  absl::StatusOr<Dataset> d = LoadIdxDataset(images_, labels_);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->size, 12);
  EXPECT_EQ(d->rows, 3);
  EXPECT_EQ(d->cols, 2);
  EXPECT_EQ(d->num_classes, 10);
  EXPECT_EQ(d->images, Bytes(f.images.begin() + 16, f.images.end()));
  EXPECT_EQ(d->labels, Bytes(f.labels.begin() + 8, f.labels.end()));
}

TEST_F(DatasetTest, LimitKeepsTheFirstExamples) {
  const Files f = MakeFiles(12, 3, 2);
  WriteGzip(images_, f.images);
  WriteGzip(labels_, f.labels);
  absl::StatusOr<Dataset> d = LoadIdxDataset(images_, labels_, 5);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->size, 5);
  EXPECT_EQ(d->images, Bytes(f.images.begin() + 16, f.images.begin() + 16 + 5 * 6));
  EXPECT_EQ(d->labels, Bytes(f.labels.begin() + 8, f.labels.begin() + 8 + 5));
  absl::StatusOr<Dataset> all = LoadIdxDataset(images_, labels_, 100);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size, 12);
  ExpectMessage(LoadIdxDataset(images_, labels_, -1).status(), absl::StatusCode::kInvalidArgument,
                {"limit -1"});
}

TEST_F(DatasetTest, CountMismatchNamesBothFilesAndCounts) {
  WriteGzip(images_, MakeFiles(12, 3, 2).images);
  WriteGzip(labels_, MakeFiles(11, 3, 2).labels);
  ExpectMessage(LoadIdxDataset(images_, labels_).status(), absl::StatusCode::kInvalidArgument,
                {images_, labels_, "has 12 examples", "has 11"});
}

TEST_F(DatasetTest, LabelOutOfRangeNamesFileIndexAndValue) {
  Files f = MakeFiles(12, 3, 2);
  f.labels[8 + 7] = 10;
  WriteGzip(images_, f.images);
  WriteGzip(labels_, f.labels);
  ExpectMessage(LoadIdxDataset(images_, labels_).status(), absl::StatusCode::kInvalidArgument,
                {labels_, "label 10 at index 7", "num_classes 10"});
  // With more classes the same file loads.
  EXPECT_TRUE(LoadIdxDataset(images_, labels_, 0, 11).ok());
  f.labels[8 + 3] = 255;
  WriteGzip(labels_, f.labels);
  ExpectMessage(LoadIdxDataset(images_, labels_).status(), absl::StatusCode::kInvalidArgument,
                {labels_, "label 255 at index 3"});
}

TEST_F(DatasetTest, WrongRanks) {
  const Files f = MakeFiles(4, 3, 2);
  WriteGzip(images_, IdxBytes({4, 6}, Bytes(24)));
  WriteGzip(labels_, f.labels);
  ExpectMessage(LoadIdxDataset(images_, labels_).status(), absl::StatusCode::kInvalidArgument,
                {images_, "2 dimensions [4, 6]", "want 3"});
  WriteGzip(images_, f.images);
  WriteGzip(labels_, IdxBytes({4, 1}, Bytes(4)));
  ExpectMessage(LoadIdxDataset(images_, labels_).status(), absl::StatusCode::kInvalidArgument,
                {labels_, "2 dimensions [4, 1]", "want 1"});
}

// Regression (issue 39, class 2): an images file of zero-row images loaded.
TEST_F(DatasetTest, ZeroRowImagesAreRefused) {
  WriteGzip(images_, IdxBytes({4, 0, 2}, {}));
  WriteGzip(labels_, MakeFiles(4, 3, 2).labels);
  ExpectMessage(LoadIdxDataset(images_, labels_).status(), absl::StatusCode::kInvalidArgument,
                {images_, "dimension 1 of [4, 0, 2] is 0"});
  WriteRaw(images_, IdxBytes({0, 28, 28}, {}));
  WriteGzip(labels_, IdxBytes({0}, {}));
  ExpectMessage(LoadIdxDataset(images_, labels_).status(), absl::StatusCode::kInvalidArgument,
                {images_, "dimension 0 of [0, 28, 28] is 0"});
}

TEST_F(DatasetTest, ReaderErrorsPassThrough) {
  WriteGzip(images_, MakeFiles(4, 3, 2).images);
  ExpectMessage(LoadIdxDataset(images_, labels_).status(), absl::StatusCode::kNotFound, {labels_});
  WriteRaw(labels_, {0, 0, 8});
  ExpectMessage(LoadIdxDataset(images_, labels_).status(), absl::StatusCode::kDataLoss,
                {labels_, "truncated header"});
}

TEST_F(DatasetTest, FashionMnistFileNames) {
  const Files train = MakeFiles(20, 4, 4), test = MakeFiles(6, 4, 4);
  WriteGzip(dir_.File("train-images-idx3-ubyte.gz"), train.images);
  WriteGzip(dir_.File("train-labels-idx1-ubyte.gz"), train.labels);
  WriteGzip(dir_.File("t10k-images-idx3-ubyte.gz"), test.images);
  WriteGzip(dir_.File("t10k-labels-idx1-ubyte.gz"), test.labels);
  absl::StatusOr<Dataset> tr = LoadFashionMnist(dir_.path(), "train");
  ASSERT_TRUE(tr.ok()) << tr.status();
  EXPECT_EQ(tr->size, 20);
  absl::StatusOr<Dataset> te = LoadFashionMnist(dir_.path() + "/", "test", 4);
  ASSERT_TRUE(te.ok()) << te.status();
  EXPECT_EQ(te->size, 4);
  ExpectMessage(LoadFashionMnist(dir_.path(), "validation").status(),
                absl::StatusCode::kInvalidArgument, {"split 'validation'"});
  ExpectMessage(LoadFashionMnist(dir_.File("nowhere"), "train").status(),
                absl::StatusCode::kNotFound,
                {dir_.File("nowhere") + "/train-images-idx3-ubyte.gz"});
}

TEST(FashionMnist, RealFiles) {
  if (!std::filesystem::is_directory(kFashionMnistDir)) {
    GTEST_SKIP() << kFashionMnistDir << " is absent (Debian package dataset-fashion-mnist)";
  }
  for (const auto& [split, size] :
       {std::pair<std::string, int64_t>{"train", 60000}, {"test", 10000}}) {
    absl::StatusOr<Dataset> d = LoadFashionMnist(kFashionMnistDir, split);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->size, size) << split;
    EXPECT_EQ(d->rows, 28);
    EXPECT_EQ(d->cols, 28);
    EXPECT_EQ(d->images.size(), static_cast<size_t>(size * 28 * 28));
    std::vector<int64_t> per_class(10);
    for (uint8_t l : d->labels) ++per_class[l];
    EXPECT_EQ(per_class, std::vector<int64_t>(10, size / 10)) << split;
    int64_t nonzero = 0;
    for (uint8_t p : d->images) nonzero += p != 0;
    EXPECT_GT(nonzero, size * 28 * 28 / 4) << split << ": images look empty";
  }
  absl::StatusOr<Dataset> few = LoadFashionMnist(kFashionMnistDir, "test", 100);
  ASSERT_TRUE(few.ok()) << few.status();
  EXPECT_EQ(few->size, 100);
  EXPECT_EQ(few->images.size(), 100u * 28 * 28);
}

}  // namespace
}  // namespace rill::io
