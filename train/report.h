#ifndef RILL_TRAIN_REPORT_H_
#define RILL_TRAIN_REPORT_H_

// The end-of-training report: a table per epoch, the same numbers as CSV,
// the running training loss per step as CSV, and the training curve (loss
// per step and per epoch, accuracy per epoch) as a PNG drawn with cairo.

#include <cstdint>
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

// The running training loss at one step, recorded every N steps (the
// caller picks N).
struct StepRecord {
  int64_t step = 0;  // optimizer steps (batches) done since the start of training
  int epoch = 0;     // the epoch the step falls in, numbered as EpochRecord::epoch
  double loss = 0;   // the running (smoothed or since-last-record) training loss
};

// The table, one row per epoch, with a header.
void PrintTable(std::FILE* out, const std::vector<EpochRecord>& epochs);

// epoch,train_loss,train_accuracy,test_loss,test_accuracy,seconds,images_per_second,partial
// Written to `path` through a temporary file and a rename; an error names the path.
absl::Status WriteCsv(const std::string& path, const std::vector<EpochRecord>& epochs);

// step,epoch,loss (loss with 6 decimals), one row per record, in order.
// Written like WriteCsv; an error names the path.
absl::Status WriteStepCsv(const std::string& path, const std::vector<StepRecord>& steps);

// Two panels, 900x400 pixels. Without steps: loss (train, test) and accuracy
// (train, test) against the epoch. With steps: the loss panel draws the
// per-step training loss as a line against the step, and each epoch's test
// loss as a marker at that epoch's last recorded step (epochs without step
// records get none); the accuracy panel stays per epoch ("no data" when
// there are no epochs). Non-finite values are left out. FailedPrecondition when
// both `epochs` and `steps` are empty; otherwise an error names the path
// (and cairo's status).
absl::Status WriteCurvePng(const std::string& path, const std::vector<EpochRecord>& epochs,
                           const std::vector<StepRecord>& steps, const std::string& title);
// The same without steps.
absl::Status WriteCurvePng(const std::string& path, const std::vector<EpochRecord>& epochs,
                           const std::string& title);

}  // namespace rill::train

#endif  // RILL_TRAIN_REPORT_H_
