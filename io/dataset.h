#ifndef RILL_IO_DATASET_H_
#define RILL_IO_DATASET_H_

// Image-classification datasets held in host memory: an images IDX file
// (count x rows x cols unsigned bytes) and a labels IDX file (count bytes),
// as MNIST and Fashion-MNIST ship them.
//
//   RILL_ASSIGN_OR_RETURN(io::Dataset train, io::LoadFashionMnist(io::kFashionMnistDir, "train"));
//   // train.size == 60000, train.rows == train.cols == 28

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace rill::io {

// Images and labels as unsigned bytes, in memory. Example i is
// images[i * rows * cols, (i + 1) * rows * cols) with label labels[i].
// A value type; thread-compatible.
struct Dataset {
  int64_t size = 0, rows = 0, cols = 0;
  std::vector<uint8_t> images;  // size * rows * cols
  std::vector<uint8_t> labels;  // size, each < num_classes
  int num_classes = 10;
};

// Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";

// Loads an images file and a labels file (gzip-compressed or not, see
// ReadIdx). The images file must have 3 dimensions and the labels file 1,
// with equal counts (the error names both files and both counts); every
// label must be below `num_classes` (the error names the labels file, the
// index and the value). `limit` > 0 keeps the first `limit` examples (all of
// them when there are fewer); 0 keeps all. Errors: ReadIdx's for either
// file; InvalidArgument for the checks above, a negative limit, or
// num_classes outside [1, 256].
absl::StatusOr<Dataset> LoadIdxDataset(const std::string& images_path,
                                       const std::string& labels_path, int64_t limit = 0,
                                       int num_classes = 10);

// The files of one Fashion-MNIST (or MNIST) split under `dir`:
// {train,t10k}-images-idx3-ubyte.gz and {train,t10k}-labels-idx1-ubyte.gz.
// `split` is "train" or "test" (InvalidArgument naming it otherwise).
absl::StatusOr<Dataset> LoadFashionMnist(const std::string& dir, const std::string& split,
                                         int64_t limit = 0);

}  // namespace rill::io

#endif  // RILL_IO_DATASET_H_
