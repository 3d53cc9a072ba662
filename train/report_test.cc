// The report files and the progress line: contents checked by reading them
// back (the PNG through cairo's own decoder).

#include "rill/train/report.h"

#include <cairo.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

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

// 10 steps per epoch for the 3 epochs of Records(), a record every 2 steps,
// the loss falling with some noise.
std::vector<StepRecord> Steps() {
  std::vector<StepRecord> out;
  for (int64_t step = 2; step <= 30; step += 2) {
    out.push_back({step, static_cast<int>((step - 1) / 10) + 1,
                   0.3 + 0.5 / std::sqrt(static_cast<double>(step)) + (step % 4 == 0 ? 0.02 : 0)});
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// The file starts with the PNG signature and an IHDR chunk of width x height.
void ExpectPngHeader(const std::string& path, uint32_t width, uint32_t height) {
  const std::string bytes = ReadFile(path);
  ASSERT_GE(bytes.size(), 24u) << path;
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << path;
  EXPECT_EQ(bytes.substr(12, 4), "IHDR") << path;
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
    return v;
  };
  EXPECT_EQ(be32(16), width) << path;
  EXPECT_EQ(be32(20), height) << path;
}

// The RGB24 pixels of a PNG decoded by cairo (empty when it does not decode).
std::vector<uint32_t> DecodePng(const std::string& path, int* width, int* height) {
  cairo_surface_t* s = cairo_image_surface_create_from_png(path.c_str());
  std::vector<uint32_t> pixels;
  if (cairo_surface_status(s) == CAIRO_STATUS_SUCCESS) {
    cairo_surface_flush(s);
    *width = cairo_image_surface_get_width(s);
    *height = cairo_image_surface_get_height(s);
    const unsigned char* data = cairo_image_surface_get_data(s);
    const int stride = cairo_image_surface_get_stride(s);
    for (int y = 0; y < *height; ++y) {
      const uint32_t* row = reinterpret_cast<const uint32_t*>(data + y * stride);
      pixels.insert(pixels.end(), row, row + *width);
    }
  }
  cairo_surface_destroy(s);
  return pixels;
}

TEST(Report, StepCsvHoldsEveryStepExactly) {
  const std::string path = ::testing::TempDir() + "/steps.csv";
  ASSERT_TRUE(WriteStepCsv(path, {{50, 1, 0.9}, {100, 1, 0.61234567}, {150, 2, 0.4}}).ok());
  EXPECT_EQ(ReadFile(path),
            "step,epoch,loss\n"
            "50,1,0.900000\n"
            "100,1,0.612346\n"
            "150,2,0.400000\n");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  ASSERT_TRUE(WriteStepCsv(path, {}).ok());
  EXPECT_EQ(ReadFile(path), "step,epoch,loss\n");
}

TEST(Report, StepPngIsARealImageThatDrawsTheSteps) {
  const std::string dir = ::testing::TempDir();
  ASSERT_TRUE(WriteCurvePng(dir + "/steps.png", Records(), Steps(), "steps").ok());
  ASSERT_TRUE(WriteCurvePng(dir + "/epochs.png", Records(), "steps").ok());
  ExpectPngHeader(dir + "/steps.png", 900, 400);
  ExpectPngHeader(dir + "/epochs.png", 900, 400);
  int w = 0, h = 0;
  const std::vector<uint32_t> with_steps = DecodePng(dir + "/steps.png", &w, &h);
  ASSERT_EQ(with_steps.size(), 900u * 400u);
  EXPECT_EQ(w, 900);
  EXPECT_EQ(h, 400);
  const std::vector<uint32_t> without = DecodePng(dir + "/epochs.png", &w, &h);
  ASSERT_EQ(without.size(), 900u * 400u);
  // The loss panel (left half) changes; the accuracy panel (right half,
  // without the title line at the bottom) is the same per-epoch drawing.
  int left_diff = 0, right_diff = 0, red = 0;
  for (int y = 0; y < 385; ++y) {
    for (int x = 0; x < 900; ++x) {
      const size_t i = static_cast<size_t>(y) * 900 + x;
      (x < 450 ? left_diff : right_diff) += with_steps[i] != without[i];
      const uint32_t p = with_steps[i];
      const int r = (p >> 16) & 0xff, g = (p >> 8) & 0xff, b = p & 0xff;
      red += x < 450 && r > 150 && g < 120 && b < 120;  // the loss curve's colour
    }
  }
  EXPECT_GT(left_diff, 500);
  EXPECT_EQ(right_diff, 0);
  EXPECT_GT(red, 300);
  // Steps alone, a non-finite loss, and a single step draw too.
  std::vector<StepRecord> steps = Steps();
  steps[3].loss = NAN;
  EXPECT_TRUE(WriteCurvePng(dir + "/steps.png", {}, steps, "no epochs").ok());
  EXPECT_TRUE(WriteCurvePng(dir + "/steps.png", Records(), {Steps()[0]}, "one step").ok());
  ExpectPngHeader(dir + "/steps.png", 900, 400);
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
  s = WriteStepCsv("/nonexistent-dir/steps.csv", Steps());
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("/nonexistent-dir/steps.csv"));
  s = WriteCurvePng("/nonexistent-dir/steps.png", Records(), Steps(), "t");
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("/nonexistent-dir/steps.png"));
  s = WriteCurvePng(::testing::TempDir() + "/empty.png", {}, {}, "t");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("empty.png"));
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
