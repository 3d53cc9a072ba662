#include "rill/train/report.h"

#include <cairo.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string_view>
#include <utility>

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

namespace {

// Writes `text` to `path` through `path`.tmp and a rename; errors name the
// files.
absl::Status WriteTextFile(const std::string& path, std::string_view text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) return absl::ErrnoToStatus(errno, absl::StrCat("cannot write ", tmp));
    f << text;
    if (!f.flush()) return absl::DataLossError(absl::StrCat("writing ", tmp, " failed"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteCsv(const std::string& path, const std::vector<EpochRecord>& epochs) {
  std::string text =
      "epoch,train_loss,train_accuracy,test_loss,test_accuracy,seconds,images_per_second,"
      "partial\n";
  for (const EpochRecord& e : epochs) {
    absl::StrAppendFormat(&text, "%d,%.6f,%.6f,%.6f,%.6f,%.3f,%.1f,%d\n", e.epoch, e.train_loss,
                          e.train_accuracy, e.test_loss, e.test_accuracy, e.seconds,
                          e.images_per_second, e.partial ? 1 : 0);
  }
  return WriteTextFile(path, text);
}

absl::Status WriteStepCsv(const std::string& path, const std::vector<StepRecord>& steps) {
  std::string text = "step,epoch,loss\n";
  for (const StepRecord& s : steps) {
    absl::StrAppendFormat(&text, "%d,%d,%.6f\n", s.step, s.epoch, s.loss);
  }
  return WriteTextFile(path, text);
}

namespace {

// One curve of a panel: (x, y) points drawn as a line, as markers, or both.
// Non-finite points are skipped (they break the line).
struct Series {
  const char* name;
  double r, g, b;
  bool dashed = false;
  bool line = true;
  bool markers = true;
  std::vector<std::pair<double, double>> points;
};

bool Finite(const std::pair<double, double>& p) {
  return std::isfinite(p.first) && std::isfinite(p.second);
}

// A tick spacing of 1, 2 or 5 times a power of ten (at least 1: the x axes
// count epochs or steps) that puts at most about 10 ticks over `span`.
double TickStep(double span) {
  const double raw = std::max(1.0, span / 10);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * p >= raw) return m * p;
  }
  return 10 * p;
}

// One panel: axes with ticks, a grid, the series and a legend, inside the
// rectangle (x0, y0, w, h); "no data" when no series has a finite point.
void DrawPanel(cairo_t* cr, double x0, double y0, double w, double h, const char* title,
               const char* x_label, const std::vector<Series>& series, bool legend_top) {
  double x_lo = INFINITY, x_hi = -INFINITY, lo = INFINITY, hi = -INFINITY;
  for (const Series& s : series) {
    for (const auto& p : s.points) {
      if (!Finite(p)) continue;
      x_lo = std::min(x_lo, p.first);
      x_hi = std::max(x_hi, p.first);
      lo = std::min(lo, p.second);
      hi = std::max(hi, p.second);
    }
  }
  const bool empty = !(x_lo <= x_hi);
  if (empty) {
    x_lo = 0;
    x_hi = 1;
    lo = 0;
    hi = 1;
  }
  if (!(hi > lo)) {
    lo -= 0.5;
    hi += 0.5;
  }
  const double pad = (hi - lo) * 0.08;
  lo -= pad;
  hi += pad;
  x_hi = std::max(x_hi, x_lo + 1);
  const double left = x0 + 55, right = x0 + w - 10, top = y0 + 30, bottom = y0 + h - 40;
  auto X = [&](double x) { return left + (x - x_lo) / (x_hi - x_lo) * (right - left); };
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
    if (empty) continue;
    const std::string label = absl::StrFormat("%.3f", v);
    cairo_text_extents(cr, label.c_str(), &te);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    cairo_move_to(cr, left - te.width - 6, Y(v) + te.height / 2);
    cairo_show_text(cr, label.c_str());
  }
  cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
  if (!empty) {  // x ticks: whole multiples of the tick step
    const double step = TickStep(x_hi - x_lo);
    for (double x = std::ceil(x_lo / step) * step; x <= x_hi + 1e-9; x += step) {
      const std::string label = absl::StrFormat("%.0f", x);
      cairo_text_extents(cr, label.c_str(), &te);
      cairo_move_to(cr, X(x) - te.width / 2, bottom + 15);
      cairo_show_text(cr, label.c_str());
    }
  }
  cairo_text_extents(cr, x_label, &te);
  cairo_move_to(cr, (left + right - te.width) / 2, bottom + 32);
  cairo_show_text(cr, x_label);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_rectangle(cr, left, top, right - left, bottom - top);
  cairo_stroke(cr);
  if (empty) {
    const char* note = "no data";
    cairo_text_extents(cr, note, &te);
    cairo_move_to(cr, (left + right - te.width) / 2, (top + bottom) / 2);
    cairo_show_text(cr, note);
    return;
  }

  double legend_y = legend_top ? top + 16 : bottom - 16.0 * static_cast<double>(series.size()) + 4;
  for (const Series& s : series) {
    cairo_set_source_rgb(cr, s.r, s.g, s.b);
    const double dash[] = {6, 4};
    if (s.line) {
      cairo_set_line_width(cr, s.markers ? 2 : 1.5);
      cairo_set_dash(cr, dash, s.dashed ? 2 : 0, 0);
      bool pen_down = false;
      for (const auto& p : s.points) {
        if (!Finite(p)) {
          pen_down = false;
          continue;
        }
        if (pen_down) {
          cairo_line_to(cr, X(p.first), Y(p.second));
        } else {
          cairo_move_to(cr, X(p.first), Y(p.second));
        }
        pen_down = true;
      }
      cairo_stroke(cr);
      cairo_move_to(cr, right - 150, legend_y);
      cairo_line_to(cr, right - 125, legend_y);
      cairo_stroke(cr);
      cairo_set_dash(cr, nullptr, 0, 0);
    }
    if (s.markers) {
      for (const auto& p : s.points) {
        if (!Finite(p)) continue;
        cairo_arc(cr, X(p.first), Y(p.second), s.line ? 3 : 4, 0, 2 * M_PI);
        cairo_fill(cr);
      }
      if (!s.line) {
        cairo_arc(cr, right - 137.5, legend_y, 4, 0, 2 * M_PI);
        cairo_fill(cr);
      }
    }
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_move_to(cr, right - 120, legend_y + 4);
    cairo_show_text(cr, s.name);
    legend_y += 16;
  }
}

// (epoch, value) for every epoch record.
template <typename F>
std::vector<std::pair<double, double>> PerEpoch(const std::vector<EpochRecord>& epochs, F value) {
  std::vector<std::pair<double, double>> out;
  for (const EpochRecord& e : epochs) out.emplace_back(e.epoch, value(e));
  return out;
}

// The loss panel's series with steps: the per-step line, and each epoch's
// test loss at the last step recorded in that epoch.
std::vector<Series> StepLossSeries(const std::vector<EpochRecord>& epochs,
                                   const std::vector<StepRecord>& steps) {
  Series train{"train (per step)", 0.85, 0.2, 0.1, false, true, false, {}};
  for (const StepRecord& s : steps) train.points.emplace_back(s.step, s.loss);
  Series test{"test (epoch end)", 0.85, 0.2, 0.1, false, false, true, {}};
  for (const EpochRecord& e : epochs) {
    double end = -INFINITY;
    for (const StepRecord& s : steps) {
      if (s.epoch == e.epoch) end = std::max(end, static_cast<double>(s.step));
    }
    if (std::isfinite(end)) test.points.emplace_back(end, e.test_loss);
  }
  std::vector<Series> out{std::move(train)};
  if (!test.points.empty()) out.push_back(std::move(test));
  return out;
}

}  // namespace

absl::Status WriteCurvePng(const std::string& path, const std::vector<EpochRecord>& epochs,
                           const std::vector<StepRecord>& steps, const std::string& title) {
  if (epochs.empty() && steps.empty())
    return absl::FailedPreconditionError(absl::StrCat("no epochs or steps to draw into ", path));
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
  if (steps.empty()) {
    DrawPanel(cr, 0, 0, kW / 2.0, kH - 10, "loss", "epoch",
              {{"train", 0.85, 0.2, 0.1, false, true, true,
                PerEpoch(epochs, [](const EpochRecord& e) { return e.train_loss; })},
               {"test", 0.85, 0.2, 0.1, true, true, true,
                PerEpoch(epochs, [](const EpochRecord& e) { return e.test_loss; })}},
              /*legend_top=*/true);
  } else {
    DrawPanel(cr, 0, 0, kW / 2.0, kH - 10, "loss", "step", StepLossSeries(epochs, steps),
              /*legend_top=*/true);
  }
  DrawPanel(cr, kW / 2.0, 0, kW / 2.0, kH - 10, "accuracy", "epoch",
            {{"train", 0.1, 0.35, 0.8, false, true, true,
              PerEpoch(epochs, [](const EpochRecord& e) { return e.train_accuracy; })},
             {"test", 0.1, 0.35, 0.8, true, true, true,
              PerEpoch(epochs, [](const EpochRecord& e) { return e.test_accuracy; })}},
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

absl::Status WriteCurvePng(const std::string& path, const std::vector<EpochRecord>& epochs,
                           const std::string& title) {
  return WriteCurvePng(path, epochs, {}, title);
}

}  // namespace rill::train
