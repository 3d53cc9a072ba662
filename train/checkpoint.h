#ifndef RILL_TRAIN_CHECKPOINT_H_
#define RILL_TRAIN_CHECKPOINT_H_

// Checkpoints of the convnet are ONNX models (Trainer::SaveCheckpoint): the
// inference graph with its weights as initializers, readable by any ONNX
// runtime and by Rill's importer. Loading one back checks it against the
// model it is meant to be.

#include <string>

#include "absl/status/statusor.h"
#include "rill/engine/engine.h"
#include "rill/graph/onnx/onnx_import.h"
#include "rill/io/dataset.h"
#include "rill/train/convnet.h"
#include "rill/train/trainer.h"

namespace rill::train {

// Imports `path` onto `ctx` and checks that its weights are exactly the
// parameters of `model` with their shapes: InvalidArgument naming the first
// parameter that is missing, extra or of another shape, and the file. A file
// that is not a valid ONNX model gets the importer's error (naming the file).
absl::StatusOr<graph::OnnxModel> LoadCheckpoint(const std::string& path,
                                                const ConvNetOptions& model, engine::Context ctx,
                                                engine::Engine* engine = nullptr);

// Loss and accuracy of the checkpoint at `path` over `data`, on `ctx`.
absl::StatusOr<Metrics> EvaluateCheckpoint(const std::string& path, const ConvNetOptions& model,
                                           const io::Dataset& data, engine::Context ctx,
                                           engine::Engine* engine = nullptr,
                                           int64_t eval_batch = 500);

}  // namespace rill::train

#endif  // RILL_TRAIN_CHECKPOINT_H_
