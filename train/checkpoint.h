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

// Imports `path` onto `ctx` and checks that it is a checkpoint of `model`:
// its weights are exactly the parameters of `model` with their shapes and
// float32, and its graph computes what the model's inference graph does
// (the same operations with the same attributes on the same inputs; node
// names may differ). InvalidArgument naming the file and the first
// difference: a parameter that is missing, extra or of another shape or
// type, or the first operation that differs ("its graph differs at
// operation #3: it has relu(#2), the model has tanh(#2)"). The file is
// untrusted (base/untrusted_file.h): InvalidArgument when it is not a
// regular file, ResourceExhausted past the allocation cap, NotFound when it
// is missing; a file that is not a valid ONNX model gets the importer's
// error (naming the file). Checkpoints written before the graph was checked
// load as before: the ONNX file has always held the graph.
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
