#include "rill/io/dataset.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/status_macros.h"
#include "rill/io/idx_reader.h"

namespace rill::io {
namespace {

std::string DimsString(const std::vector<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}

}  // namespace

absl::StatusOr<Dataset> LoadIdxDataset(const std::string& images_path,
                                       const std::string& labels_path, int64_t limit,
                                       int num_classes) {
  if (limit < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("LoadIdxDataset: limit ", limit, " is negative"));
  }
  if (num_classes < 1 || num_classes > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("LoadIdxDataset: num_classes ", num_classes, " is not in [1, 256]"));
  }
  RILL_ASSIGN_OR_RETURN(IdxArray images, ReadIdx(images_path));
  if (images.dims.size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("images file '", images_path, "' has ", images.dims.size(), " dimensions ",
                     DimsString(images.dims), "; want 3 (count, rows, cols)"));
  }
  RILL_ASSIGN_OR_RETURN(IdxArray labels, ReadIdx(labels_path));
  if (labels.dims.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("labels file '", labels_path, "' has ",
                                                   labels.dims.size(), " dimensions ",
                                                   DimsString(labels.dims), "; want 1 (count)"));
  }
  if (images.dims[0] != labels.dims[0]) {
    return absl::InvalidArgumentError(absl::StrCat("images file '", images_path, "' has ",
                                                   images.dims[0], " examples but labels file '",
                                                   labels_path, "' has ", labels.dims[0]));
  }
  for (size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] >= num_classes) {
      return absl::InvalidArgumentError(
          absl::StrCat("labels file '", labels_path, "': label ", static_cast<int>(labels.data[i]),
                       " at index ", i, " is out of range (num_classes ", num_classes, ")"));
    }
  }
  Dataset out;
  out.size = images.dims[0];
  out.rows = images.dims[1];
  out.cols = images.dims[2];
  out.num_classes = num_classes;
  out.images = std::move(images.data);
  out.labels = std::move(labels.data);
  if (limit > 0 && limit < out.size) {
    // rows * cols * size fitted in 63 bits (ReadIdx), so this does too.
    out.images.resize(static_cast<size_t>(limit * out.rows * out.cols));
    out.images.shrink_to_fit();
    out.labels.resize(static_cast<size_t>(limit));
    out.labels.shrink_to_fit();
    out.size = limit;
  }
  return out;
}

absl::StatusOr<Dataset> LoadFashionMnist(const std::string& dir, const std::string& split,
                                         int64_t limit) {
  std::string prefix;
  if (split == "train") {
    prefix = "train";
  } else if (split == "test") {
    prefix = "t10k";
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("LoadFashionMnist: split '", split, "' is neither \"train\" nor \"test\""));
  }
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  return LoadIdxDataset(base + prefix + "-images-idx3-ubyte.gz",
                        base + prefix + "-labels-idx1-ubyte.gz", limit);
}

}  // namespace rill::io
