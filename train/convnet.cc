#include "rill/train/convnet.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/ops/invoke.h"
#include "rill/ops/op_names.h"
#include "rill/ops/params.h"

namespace rill::train {

using graph::Entry;
using graph::Graph;

std::string ConvNetOptions::ToString() const {
  return absl::StrCat("conv5x5x", conv1, " relu maxpool2, conv5x5x", conv2,
                      " relu maxpool2, dense ", hidden, " relu, dropout ", dropout, ", dense ",
                      classes);
}

absl::StatusOr<std::vector<ParamSpec>> ConvNetParams(const ConvNetOptions& o) {
  for (const auto& [name, v] : {std::pair<const char*, int64_t>{"conv1", o.conv1},
                                {"conv2", o.conv2},
                                {"hidden", o.hidden},
                                {"rows", o.rows},
                                {"cols", o.cols},
                                {"classes", o.classes}}) {
    if (v <= 0 || v > (int64_t{1} << 20)) {
      return absl::InvalidArgumentError(
          absl::StrCat("convnet: ", name, " = ", v, " is not in [1, 2^20]"));
    }
  }
  if (o.rows % 4 != 0 || o.cols % 4 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("convnet: images of ", o.rows, "x", o.cols,
                     " do not halve twice (rows and cols must be multiples of 4)"));
  }
  if (!(o.dropout >= 0 && o.dropout < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("convnet: dropout ", o.dropout, " is not in [0, 1)"));
  }
  const int64_t flat = o.conv2 * (o.rows / 4) * (o.cols / 4);
  return std::vector<ParamSpec>{
      {"conv1_w", Shape{o.conv1, 1, 5, 5}, 25},
      {"conv1_b", Shape{o.conv1}, 25},
      {"conv2_w", Shape{o.conv2, o.conv1, 5, 5}, o.conv1 * 25},
      {"conv2_b", Shape{o.conv2}, o.conv1 * 25},
      {"fc1_w", Shape{o.hidden, flat}, flat},
      {"fc1_b", Shape{o.hidden}, flat},
      {"fc2_w", Shape{o.classes, o.hidden}, o.hidden},
      {"fc2_b", Shape{o.classes}, o.hidden},
  };
}

namespace {

// conv 5x5 "same" with a bias broadcast over [1, C, 1, 1], then relu and a
// 2x2 max pooling.
Entry ConvBlock(Graph& g, Entry x, const std::string& name, int64_t channels) {
  Entry c = g.Op1(op_names::kConv2d, {x, g.Param(name + "_w")}, {{"pad", "(2, 2)"}}, name);
  Entry b = g.Op1(op_names::kReshape, {g.Param(name + "_b")},
                  {{"shape", absl::StrCat("(1, ", channels, ", 1, 1)")}}, name + "_bias_shape");
  Entry r = g.Op1(op_names::kRelu, {g.Op1(op_names::kAdd, {c, b}, {}, name + "_bias")}, {},
                  name + "_relu");
  return g.Op1(op_names::kPooling, {r},
               {{"kernel", "(2, 2)"}, {"stride", "(2, 2)"}, {"pool_type", "max"}}, name + "_pool");
}

}  // namespace

Entry ConvNetLogits(Graph& g, Entry x, const ConvNetOptions& o, bool with_dropout) {
  Entry h = ConvBlock(g, x, "conv1", o.conv1);
  h = ConvBlock(g, h, "conv2", o.conv2);
  h = g.Op1(op_names::kFlatten, {h}, {}, "flatten");
  h = g.Op1(op_names::kFullyConnected, {h, g.Param("fc1_w"), g.Param("fc1_b")}, {}, "fc1");
  h = g.Op1(op_names::kRelu, {h}, {}, "fc1_relu");
  if (with_dropout && o.dropout > 0)
    h = g.Op(op_names::kDropout, {h}, {{"p", absl::StrCat(o.dropout)}}, "dropout")[0];
  return g.Op1(op_names::kFullyConnected, {h, g.Param("fc2_w"), g.Param("fc2_b")}, {}, "fc2");
}

Graph ConvNetTrainGraph(const ConvNetOptions& o) {
  Graph g;
  Entry x = g.Input("x"), y = g.Input("y");
  Entry logits = ConvNetLogits(g, x, o, /*with_dropout=*/true);
  g.AddOutput(g.Op1(op_names::kSoftmaxCrossEntropy, {logits, y}, {}, "loss"), "loss");
  Entry pred =
      g.Op1(op_names::kCast, {g.Op1(op_names::kArgmax, {logits}, {{"axis", "1"}}, "argmax")},
            {{"dtype", "float32"}}, "pred");
  Entry label = g.Op1(op_names::kCast, {y}, {{"dtype", "float32"}}, "label");
  g.AddOutput(
      g.Op1(op_names::kSum, {g.Op1(op_names::kEqual, {pred, label}, {}, "hit")}, {}, "correct"),
      "correct");
  return g;
}

Graph ConvNetInferenceGraph(const ConvNetOptions& o) {
  Graph g;
  g.AddOutput(ConvNetLogits(g, g.Input("x"), o, /*with_dropout=*/false), "logits");
  return g;
}

absl::StatusOr<absl::flat_hash_map<std::string, Tensor>> InitConvNetParams(const ConvNetOptions& o,
                                                                           uint64_t seed,
                                                                           engine::Context ctx,
                                                                           engine::Engine* engine) {
  RILL_ASSIGN_OR_RETURN(std::vector<ParamSpec> specs, ConvNetParams(o));
  RILL_RETURN_IF_ERROR(ops::Seed(ctx, seed, engine));
  ops::InvokeOptions opt;
  opt.context = ctx;
  opt.engine = engine;
  absl::flat_hash_map<std::string, Tensor> params;
  for (const ParamSpec& p : specs) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(p.fan_in));
    RILL_ASSIGN_OR_RETURN(std::vector<Tensor> t,
                          ops::Invoke(op_names::kRandomUniform, {},
                                      {{"low", absl::StrCat(-bound)},
                                       {"high", absl::StrCat(bound)},
                                       {"shape", ops::FormatIntTuple(p.shape.span())},
                                       {"dtype", "float32"}},
                                      {}, opt));
    params.emplace(p.name, t[0]);
  }
  return params;
}

}  // namespace rill::train
