#ifndef RILL_TRAIN_CONVNET_H_
#define RILL_TRAIN_CONVNET_H_

// The Fashion-MNIST convolutional network of the dataset's own benchmark
// (/usr/share/doc/dataset-fashion-mnist/benchmark/convnet.py):
//
//   conv 5x5x32 same -> relu -> maxpool 2 -> conv 5x5x64 same -> relu ->
//   maxpool 2 -> dense 1024 relu -> dropout 0.4 -> dense 10
//
// with softmax cross-entropy, as a Rill graph. Widths and the dropout rate
// are options so that tests can train a small copy quickly.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "rill/graph/graph.h"
#include "rill/tensor/tensor.h"

namespace rill::train {

struct ConvNetOptions {
  int64_t conv1 = 32;     // filters of the first convolution
  int64_t conv2 = 64;     // filters of the second
  int64_t hidden = 1024;  // units of the dense layer
  double dropout = 0.4;   // drop probability after the dense layer (0: none)
  int64_t rows = 28, cols = 28, classes = 10;

  std::string ToString() const;
};

struct ParamSpec {
  std::string name;  // "conv1_w", "conv1_b", ..., "fc2_b"
  Shape shape;
  int64_t fan_in;  // for the initialization bound 1/sqrt(fan_in)
};

// The parameters in a fixed order (the order of the KVStore keys and of the
// checkpoint's initializers). InvalidArgument for sizes that are not positive,
// rows/cols not divisible by 4, or dropout outside [0, 1).
absl::StatusOr<std::vector<ParamSpec>> ConvNetParams(const ConvNetOptions& options);

// The logits [n, classes] of images `x` [n, 1, rows, cols]; dropout only when
// `with_dropout` (it is the identity under Forward(is_train=false) anyway).
graph::Entry ConvNetLogits(graph::Graph& g, graph::Entry x, const ConvNetOptions& options,
                           bool with_dropout);

// The training graph: inputs "x" (float32 images) and "y" (int32 labels);
// outputs "loss" (mean softmax cross-entropy, float32 scalar) and "correct"
// (the number of rows whose argmax is the label, float32 scalar; no gradient
// flows through it).
graph::Graph ConvNetTrainGraph(const ConvNetOptions& options);

// The inference graph: input "x", output "logits" (what a checkpoint holds).
graph::Graph ConvNetInferenceGraph(const ConvNetOptions& options);

// Parameters drawn as PyTorch's Conv2d/Linear defaults do: weights and biases
// uniform in (-1/sqrt(fan_in), 1/sqrt(fan_in)], from the Philox generator of
// `ctx` seeded with `seed`, so the same seed gives the same model on every
// device.
absl::StatusOr<absl::flat_hash_map<std::string, Tensor>> InitConvNetParams(
    const ConvNetOptions& options, uint64_t seed, engine::Context ctx,
    engine::Engine* engine = nullptr);

}  // namespace rill::train

#endif  // RILL_TRAIN_CONVNET_H_
