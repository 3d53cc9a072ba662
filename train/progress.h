#ifndef RILL_TRAIN_PROGRESS_H_
#define RILL_TRAIN_PROGRESS_H_

// The live progress line of a training epoch: on a terminal one line
// rewritten in place ("\r"), elsewhere (a pipe, a log file) plain lines at
// most every `plain_seconds`, and always the last one:
//
//   epoch 1/3 [#######.............] 312/937 batches  1830 img/s  loss 0.6412  ETA 0:22
//
// With several ranks (MPI) it adds the world size and this rank's time in
// collectives: "  2 ranks, comm 1.3 s (9%)".

#include <cstdio>
#include <string>

#include "rill/train/trainer.h"

namespace rill::train {

class ProgressLine {
 public:
  // `terminal`: rewrite in place; by default, whether `out` is a terminal.
  explicit ProgressLine(std::FILE* out, int epochs, double plain_seconds = 10);
  ProgressLine(std::FILE* out, int epochs, bool terminal, double plain_seconds);

  void Update(const Progress& p);
  // The line for `p` (no newline), as it is printed.
  std::string Format(const Progress& p) const;
  bool terminal() const { return terminal_; }

 private:
  std::FILE* out_;
  int epochs_;
  bool terminal_;
  double plain_seconds_;
  double last_plain_ = -1;
  int last_epoch_ = -1;
};

}  // namespace rill::train

#endif  // RILL_TRAIN_PROGRESS_H_
