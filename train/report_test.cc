// The report files and the progress line: contents checked by reading them
// back (the PNG through cairo's own decoder).

#include "rill/train/report.h"

#include <cairo.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rill/train/progress.h"

namespace rill::train {
namespace {

using ::testing::HasSubstr;

std::vector<EpochRecord> Records() {
  return {{1, 0.61, 0.78, 0.45, 0.84, 12.5, 4800, false},
          {2, 0.38, 0.86, 0.36, 0.87, 12.1, 4950, false},
          {3, 0.33, 0.88, 0.34, 0.88, 6.0, 4900, true}};
}

TEST(Report, CsvHoldsEveryEpoch) {
  const std::string path = ::testing::TempDir() + "/curve.csv";
  ASSERT_TRUE(WriteCsv(path, Records()).ok());
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  EXPECT_EQ(
      line,
      "epoch,train_loss,train_accuracy,test_loss,test_accuracy,seconds,images_per_second,partial");
  std::getline(f, line);
  EXPECT_EQ(line, "1,0.610000,0.780000,0.450000,0.840000,12.500,4800.0,0");
  std::getline(f, line);
  std::getline(f, line);
  EXPECT_EQ(line, "3,0.330000,0.880000,0.340000,0.880000,6.000,4900.0,1");
  EXPECT_FALSE(std::getline(f, line));
}

TEST(Report, PngIsARealImage) {
  const std::string path = ::testing::TempDir() + "/curve.png";
  ASSERT_TRUE(WriteCurvePng(path, Records(), "test").ok());
  cairo_surface_t* s = cairo_image_surface_create_from_png(path.c_str());
  ASSERT_EQ(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
  EXPECT_EQ(cairo_image_surface_get_width(s), 900);
  EXPECT_EQ(cairo_image_surface_get_height(s), 400);
  // Not blank: some pixels are neither white nor the background.
  cairo_surface_flush(s);
  const unsigned char* data = cairo_image_surface_get_data(s);
  const int stride = cairo_image_surface_get_stride(s);
  int coloured = 0;
  for (int y = 0; y < 400; ++y) {
    for (int x = 0; x < 900; ++x) {
      const unsigned char* p = data + y * stride + 4 * x;
      coloured += p[0] != p[1] || p[1] != p[2];  // red or blue curve pixels
    }
  }
  cairo_surface_destroy(s);
  EXPECT_GT(coloured, 500);
  // One epoch draws too.
  EXPECT_TRUE(WriteCurvePng(path, {Records()[0]}, "one").ok());
}

TEST(Report, ErrorsNameThePath) {
  absl::Status s = WriteCsv("/nonexistent-dir/x.csv", Records());
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("/nonexistent-dir/x.csv"));
  s = WriteCurvePng("/nonexistent-dir/x.png", Records(), "t");
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("/nonexistent-dir/x.png"));
  s = WriteCurvePng(::testing::TempDir() + "/empty.png", {}, "t");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
}

TEST(Report, TableHasOneRowPerEpoch) {
  char buf[4096] = {};
  std::FILE* f = fmemopen(buf, sizeof(buf), "w");
  PrintTable(f, Records());
  std::fclose(f);
  const std::string out(buf);
  EXPECT_THAT(out, HasSubstr("test acc"));
  EXPECT_THAT(out, HasSubstr("0.8700"));
  EXPECT_THAT(out, HasSubstr("(stopped early)"));
}

TEST(Progress, PlainLinesAreThrottledAndTheLastIsAlwaysPrinted) {
  char buf[4096] = {};
  std::FILE* f = fmemopen(buf, sizeof(buf), "w");
  ProgressLine line(f, 3, /*terminal=*/false, /*plain_seconds=*/10);
  Progress p;
  p.epoch = 0;
  p.batches = 100;
  for (int i = 1; i <= 100; ++i) {
    p.batch = i;
    p.images = i * 64;
    p.seconds = i * 0.25;  // 25 s in all: lines at 10 s and 20 s, then the last
    p.loss = 1.0 / i;
    p.done = i == 100;
    line.Update(p);
  }
  std::fclose(f);
  const std::string out(buf);
  int lines = 0;
  for (char c : out) lines += c == '\n';
  EXPECT_EQ(lines, 3) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos);
  EXPECT_THAT(
      out,
      HasSubstr(
          "epoch 1/3 [####################] 100/100 batches    256 img/s  loss 0.0100  time 0:25"));
}

TEST(Progress, TerminalRewritesOneLine) {
  char buf[4096] = {};
  std::FILE* f = fmemopen(buf, sizeof(buf), "w");
  ProgressLine line(f, 1, /*terminal=*/true, 10);
  Progress p;
  p.batches = 4;
  for (int i = 1; i <= 4; ++i) {
    p.batch = i;
    p.images = i * 10;
    p.seconds = i;
    p.done = i == 4;
    line.Update(p);
  }
  std::fclose(f);
  const std::string out(buf);
  int returns = 0, newlines = 0;
  for (char c : out) {
    returns += c == '\r';
    newlines += c == '\n';
  }
  EXPECT_EQ(returns, 4);
  EXPECT_EQ(newlines, 1);
  EXPECT_THAT(out,
              HasSubstr("[##########..........] 2/4 batches     10 img/s  loss 0.0000  ETA 0:02"));
}

}  // namespace
}  // namespace rill::train
