#include "rill/train/report.h"

#include <cairo.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rill::train {

void PrintTable(std::FILE* out, const std::vector<EpochRecord>& epochs) {
  std::fprintf(out, "%5s  %10s  %9s  %9s  %9s  %8s  %8s\n", "epoch", "train loss", "train acc",
               "test loss", "test acc", "time s", "img/s");
  for (const EpochRecord& e : epochs) {
    std::fprintf(out, "%5d  %10.4f  %9.4f  %9.4f  %9.4f  %8.1f  %8.0f%s\n", e.epoch, e.train_loss,
                 e.train_accuracy, e.test_loss, e.test_accuracy, e.seconds, e.images_per_second,
                 e.partial ? "  (stopped early)" : "");
  }
}

absl::Status WriteCsv(const std::string& path, const std::vector<EpochRecord>& epochs) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) return absl::ErrnoToStatus(errno, absl::StrCat("cannot write ", tmp));
    f << "epoch,train_loss,train_accuracy,test_loss,test_accuracy,seconds,images_per_second,"
         "partial\n";
    for (const EpochRecord& e : epochs) {
      f << absl::StrFormat("%d,%.6f,%.6f,%.6f,%.6f,%.3f,%.1f,%d\n", e.epoch, e.train_loss,
                           e.train_accuracy, e.test_loss, e.test_accuracy, e.seconds,
                           e.images_per_second, e.partial ? 1 : 0);
    }
    if (!f.flush()) return absl::DataLossError(absl::StrCat("writing ", tmp, " failed"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

namespace {

struct Series {
  const char* name;
  double r, g, b;
  bool dashed;
  std::function<double(const EpochRecord&)> value;
};

// One panel: axes with ticks, a grid, the series as lines with markers and
// a legend, inside the rectangle (x0, y0, w, h).
void DrawPanel(cairo_t* cr, double x0, double y0, double w, double h, const char* title,
               const std::vector<EpochRecord>& epochs, const std::vector<Series>& series,
               bool legend_top) {
  double lo = INFINITY, hi = -INFINITY;
  for (const Series& s : series) {
    for (const EpochRecord& e : epochs) {
      lo = std::min(lo, s.value(e));
      hi = std::max(hi, s.value(e));
    }
  }
  if (!(hi > lo)) {
    lo -= 0.5;
    hi += 0.5;
  }
  const double pad = (hi - lo) * 0.08;
  lo -= pad;
  hi += pad;
  const double left = x0 + 55, right = x0 + w - 10, top = y0 + 30, bottom = y0 + h - 40;
  const int n = static_cast<int>(epochs.size());
  const double first = epochs.front().epoch,
               last = std::max<double>(epochs.back().epoch, first + 1);
  auto X = [&](double epoch) { return left + (epoch - first) / (last - first) * (right - left); };
  auto Y = [&](double v) { return bottom - (v - lo) / (hi - lo) * (bottom - top); };

  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
  cairo_set_font_size(cr, 13);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_text_extents_t te;
  cairo_text_extents(cr, title, &te);
  cairo_move_to(cr, (left + right - te.width) / 2, y0 + 18);
  cairo_show_text(cr, title);

  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, 11);
  cairo_set_line_width(cr, 1);
  for (int i = 0; i <= 5; ++i) {  // y grid and labels
    const double v = lo + (hi - lo) * i / 5;
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_move_to(cr, left, Y(v));
    cairo_line_to(cr, right, Y(v));
    cairo_stroke(cr);
    const std::string label = absl::StrFormat("%.3f", v);
    cairo_text_extents(cr, label.c_str(), &te);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    cairo_move_to(cr, left - te.width - 6, Y(v) + te.height / 2);
    cairo_show_text(cr, label.c_str());
  }
  const int step = std::max(1, n / 10);
  for (int i = 0; i < n; i += step) {  // x ticks: epochs
    const std::string label = absl::StrCat(epochs[i].epoch);
    cairo_text_extents(cr, label.c_str(), &te);
    cairo_move_to(cr, X(epochs[i].epoch) - te.width / 2, bottom + 15);
    cairo_show_text(cr, label.c_str());
  }
  cairo_text_extents(cr, "epoch", &te);
  cairo_move_to(cr, (left + right - te.width) / 2, bottom + 32);
  cairo_show_text(cr, "epoch");
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_rectangle(cr, left, top, right - left, bottom - top);
  cairo_stroke(cr);

  double legend_y = legend_top ? top + 16 : bottom - 16.0 * static_cast<double>(series.size()) + 4;
  for (const Series& s : series) {
    cairo_set_source_rgb(cr, s.r, s.g, s.b);
    cairo_set_line_width(cr, 2);
    const double dash[] = {6, 4};
    cairo_set_dash(cr, dash, s.dashed ? 2 : 0, 0);
    for (int i = 0; i < n; ++i) {
      const double px = X(epochs[i].epoch), py = Y(s.value(epochs[i]));
      if (i == 0)
        cairo_move_to(cr, px, py);
      else
        cairo_line_to(cr, px, py);
    }
    cairo_stroke(cr);
    cairo_move_to(cr, right - 120, legend_y);
    cairo_line_to(cr, right - 95, legend_y);
    cairo_stroke(cr);
    cairo_set_dash(cr, nullptr, 0, 0);
    for (int i = 0; i < n; ++i) {
      cairo_arc(cr, X(epochs[i].epoch), Y(s.value(epochs[i])), 3, 0, 2 * M_PI);
      cairo_fill(cr);
    }
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_move_to(cr, right - 90, legend_y + 4);
    cairo_show_text(cr, s.name);
    legend_y += 16;
  }
}

}  // namespace

absl::Status WriteCurvePng(const std::string& path, const std::vector<EpochRecord>& epochs,
                           const std::string& title) {
  if (epochs.empty())
    return absl::FailedPreconditionError(absl::StrCat("no epochs to draw into ", path));
  constexpr int kW = 900, kH = 400;
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, kW, kH);
  cairo_t* cr = cairo_create(surface);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, 12);
  cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
  cairo_move_to(cr, 10, kH - 6);
  cairo_show_text(cr, title.c_str());
  DrawPanel(cr, 0, 0, kW / 2.0, kH - 10, "loss", epochs,
            {{"train", 0.85, 0.2, 0.1, false, [](const EpochRecord& e) { return e.train_loss; }},
             {"test", 0.85, 0.2, 0.1, true, [](const EpochRecord& e) { return e.test_loss; }}},
            /*legend_top=*/true);
  DrawPanel(
      cr, kW / 2.0, 0, kW / 2.0, kH - 10, "accuracy", epochs,
      {{"train", 0.1, 0.35, 0.8, false, [](const EpochRecord& e) { return e.train_accuracy; }},
       {"test", 0.1, 0.35, 0.8, true, [](const EpochRecord& e) { return e.test_accuracy; }}},
      /*legend_top=*/false);
  cairo_destroy(cr);
  const std::string tmp = path + ".tmp";
  const cairo_status_t st = cairo_surface_write_to_png(surface, tmp.c_str());
  cairo_surface_destroy(surface);
  if (st != CAIRO_STATUS_SUCCESS) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write ", path, ": ", cairo_status_to_string(st)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

}  // namespace rill::train
