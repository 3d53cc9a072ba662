#ifndef RILL_TRAIN_REPORT_H_
#define RILL_TRAIN_REPORT_H_

// The end-of-training report: a table per epoch, the same numbers as CSV,
// and the training curve (loss and accuracy per epoch) as a PNG drawn with
// cairo.

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace rill::train {

struct EpochRecord {
  int epoch = 0;  // from 1
  double train_loss = 0, train_accuracy = 0;
  double test_loss = 0, test_accuracy = 0;
  double seconds = 0, images_per_second = 0;
  bool partial = false;  // stopped before the end of the epoch
};

// The table, one row per epoch, with a header.
void PrintTable(std::FILE* out, const std::vector<EpochRecord>& epochs);

// epoch,train_loss,train_accuracy,test_loss,test_accuracy,seconds,images_per_second,partial
// Written to `path` through a temporary file and a rename; an error names the path.
absl::Status WriteCsv(const std::string& path, const std::vector<EpochRecord>& epochs);

// Two panels, loss (train, test) and accuracy (train, test) against the
// epoch, 900x400 pixels. An error names the path (and cairo's status).
absl::Status WriteCurvePng(const std::string& path, const std::vector<EpochRecord>& epochs,
                           const std::string& title);

}  // namespace rill::train

#endif  // RILL_TRAIN_REPORT_H_
