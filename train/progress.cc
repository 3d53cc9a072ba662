#include "rill/train/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace rill::train {

namespace {

std::string Clock(double seconds) {
  const int64_t s = static_cast<int64_t>(std::max(0.0, std::round(seconds)));
  return s >= 3600 ? absl::StrFormat("%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60)
                   : absl::StrFormat("%d:%02d", s / 60, s % 60);
}

}  // namespace

ProgressLine::ProgressLine(std::FILE* out, int epochs, double plain_seconds)
    : ProgressLine(out, epochs, isatty(fileno(out)) == 1, plain_seconds) {}

ProgressLine::ProgressLine(std::FILE* out, int epochs, bool terminal, double plain_seconds)
    : out_(out), epochs_(epochs), terminal_(terminal), plain_seconds_(plain_seconds) {}

std::string ProgressLine::Format(const Progress& p) const {
  constexpr int kWidth = 20;
  const double frac =
      p.batches > 0 ? std::min(1.0, static_cast<double>(p.batch) / static_cast<double>(p.batches))
                    : 1;
  const int filled = static_cast<int>(frac * kWidth);
  const double rate = p.seconds > 0 ? static_cast<double>(p.images) / p.seconds : 0;
  const double eta = p.batch > 0 ? p.seconds * static_cast<double>(p.batches - p.batch) /
                                       static_cast<double>(p.batch)
                                 : 0;
  std::string line = absl::StrFormat(
      "epoch %d/%d [%s%s] %d/%d batches %6.0f img/s  loss %.4f  %s %s", p.epoch + 1, epochs_,
      std::string(filled, '#'), std::string(kWidth - filled, '.'), p.batch, p.batches, rate, p.loss,
      p.done ? "time" : "ETA", Clock(p.done ? p.seconds : eta));
  if (p.world > 1) {
    // Images/s above are over every rank; communication is this rank's.
    absl::StrAppendFormat(&line, "  %d ranks, comm %.1f s (%.0f%%)", p.world, p.comm_seconds,
                          p.seconds > 0 ? 100 * p.comm_seconds / p.seconds : 0.0);
  }
  return line;
}

void ProgressLine::Update(const Progress& p) {
  if (p.epoch != last_epoch_) {
    last_epoch_ = p.epoch;
    last_plain_ = -1;
  }
  if (terminal_) {
    std::fprintf(out_, "\r%s\033[K%s", Format(p).c_str(), p.done ? "\n" : "");
  } else {
    if (!p.done && last_plain_ >= 0 && p.seconds - last_plain_ < plain_seconds_) return;
    if (!p.done && last_plain_ < 0 && p.seconds < plain_seconds_) return;
    last_plain_ = p.seconds;
    std::fprintf(out_, "%s\n", Format(p).c_str());
  }
  std::fflush(out_);
}

}  // namespace rill::train
