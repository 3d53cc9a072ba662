// The inference optimizer: each rewrite fires where it should (counted in
// the report), not where it must not, and the optimized graph computes what
// the original computes (op by op through Invoke) within 1e-4, on every
// context.

#include "rill/graph/optimize.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rill/graph/executor.h"
#include "rill/graph/testing/graph_testing.h"
#include "rill/ops/testing/op_testing.h"

namespace rill::graph {
namespace {

using ::rill::ops::testing::ContextName;
using ::rill::ops::testing::ExpectNear;
using ::rill::ops::testing::OpTest;
using ::rill::ops::testing::RandomData;
using ::testing::HasSubstr;
using ::testing::Pair;

using Values = absl::flat_hash_map<std::string, Tensor>;

class OptimizeTest : public OpTest {
 protected:
  Tensor Random(const Shape& s, uint64_t seed, double lo = -1, double hi = 1) {
    return Make<float>(RandomData<float>(s.NumElements(), seed, lo, hi), s);
  }

  // Optimizes a copy of `g` at `o` and checks its outputs against `g`'s,
  // computed op by op. `inputs` are the graph inputs; `constants` the rest.
  OptimizeReport Check(const Graph& g, const Values& inputs, const Values& constants,
                       const OptimizeOptions& o) {
    Values all = constants;
    for (const auto& [k, v] : inputs) all[k] = v;
    auto want = testing::EvaluateImperatively(g, all, ctx(), engine_.get());
    EXPECT_TRUE(want.ok()) << want.status();
    Graph opt = g;
    Values consts = constants;
    OptimizeOptions here = o;
    here.context = ctx();
    here.engine = engine_.get();
    absl::StatusOr<OptimizeReport> r = OptimizeForInference(&opt, &consts, here);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || !want.ok()) return {};
    for (const auto& [k, v] : inputs) consts[k] = v;
    BindOptions bo;
    bo.context = ctx();
    bo.engine = engine_.get();
    auto exec = Executor::Bind(opt, consts, {}, bo);
    EXPECT_TRUE(exec.ok()) << exec.status() << "\n" << opt.ToString();
    if (!exec.ok()) return *r;
    EXPECT_TRUE((*exec)->Forward(false).ok());
    for (size_t i = 0; i < want->size(); ++i) {
      auto got = (*exec)->outputs()[i].ToHost<float>();
      auto ref = (*want)[i].ToHost<float>();
      EXPECT_TRUE(got.ok() && ref.ok()) << got.status() << ref.status();
      if (got.ok() && ref.ok()) ExpectNear(*got, *ref, 1e-4, absl::StrCat("output ", i));
    }
    return *r;
  }

  // fused_conv2d runs here (not on OpenCL: no DNN library there).
  bool Fuses() const { return ctx().ToString().rfind("opencl", 0) != 0; }

  static OptimizeOptions Level(OptLevel l) {
    OptimizeOptions o;
    o.level = l;
    return o;
  }
};

// conv -> + bias (reshaped at run time) -> inference BatchNorm as sub, mul,
// add of per-channel constants -> + residual -> relu: one fused_conv2d.
TEST_P(OptimizeTest, ConvBiasBatchNormResidualReluBecomeOneFusedConvolution) {
  Graph g;
  Entry x = g.Input("x", Shape{2, 3, 5, 5}, DType::kF32),
        r = g.Input("r", Shape{2, 6, 5, 5}, DType::kF32);
  Entry y = g.Op1("conv2d", {x, g.Param("w")}, {{"pad", "(1, 1)"}}, "conv");
  y = g.Op1("add", {y, g.Op1("reshape", {g.Param("b")}, {{"shape", "(1, -1, 1, 1)"}})});
  y = g.Op1("sub", {y, g.Param("mean")});
  y = g.Op1("mul", {g.Param("k"), y});
  y = g.Op1("add", {y, g.Param("beta")});
  y = g.Op1("add", {r, y});
  g.AddOutput(g.Op1("relu", {y}));
  const Values consts = {{"w", Random({6, 3, 3, 3}, 1)},
                         {"b", Random({6}, 2)},
                         {"mean", Random({6, 1, 1}, 3)},
                         {"k", Random({1, 6, 1, 1}, 4, 0.5, 2)},
                         {"beta", Random({6, 1, 1}, 5)}};
  const Values in = {{"x", Random({2, 3, 5, 5}, 6)}, {"r", Random({2, 6, 5, 5}, 7)}};
  for (OptLevel l : {OptLevel::kNone, OptLevel::kBasic, OptLevel::kExtended, OptLevel::kAll}) {
    SCOPED_TRACE(OptLevelName(l));
    OptimizeReport rep = Check(g, in, consts, Level(l));
    if (l == OptLevel::kExtended && !Fuses()) {
      EXPECT_THAT(rep.applied, ::testing::ElementsAre(Pair("fold_constants", 1)));  // No fusions.
    } else if (l == OptLevel::kExtended) {
      EXPECT_EQ(rep.nodes_after, 1) << rep.ToString();
      EXPECT_THAT(rep.applied, ::testing::ElementsAre(
                                   Pair("fold_constants", 1), Pair("fold_conv_affine", 4),
                                   Pair("fuse_conv_residual", 1), Pair("fuse_conv_activation", 1)));
    }
    if (l == OptLevel::kAll && Fuses()) {
      EXPECT_THAT(rep.applied.back(), Pair("constant_filters", 1));  // Alone: no NHWC.
    }
    if (l == OptLevel::kNone) EXPECT_EQ(rep.nodes_after, rep.nodes_before);
  }
}

// Clip to [0, 6] as the importer writes it: clipped_relu(6). Division by a
// per-channel constant folds too; a scalar multiplier as well.
TEST_P(OptimizeTest, Relu6DivAndScalarMulFold) {
  Graph g;
  Entry x = g.Input("x", Shape{1, 4, 9, 9}, DType::kF32);
  Entry y = g.Op1("conv2d", {x, g.Param("w")}, {{"stride", "(2, 2)"}, {"num_group", "2"}});
  y = g.Op1("div", {y, g.Param("d")});
  y = g.Op1("mul", {y, g.Param("s")});
  y = g.Op1("maximum_scalar", {y}, {{"scalar", "0"}});
  g.AddOutput(g.Op1("minimum_scalar", {y}, {{"scalar", "0.5"}}));
  const Values consts = {{"w", Random({4, 2, 3, 3}, 1)},
                         {"d", Random({4, 1, 1}, 2, 0.5, 2)},
                         {"s", Random({}, 3, 1, 2)}};
  OptimizeReport rep =
      Check(g, {{"x", Random({1, 4, 9, 9}, 4)}}, consts, Level(OptLevel::kExtended));
  if (Fuses()) EXPECT_EQ(rep.nodes_after, 1) << rep.ToString();
}

// What must not fuse: a convolution read twice, an add of a broadcast
// (not the output's shape) tensor that is not constant, sub with the
// constant first.
TEST_P(OptimizeTest, NothingFusesIntoAConvolutionReadTwiceOrThroughNonChannelOps) {
  Graph g;
  Entry x = g.Input("x", Shape{1, 2, 3, 3}, DType::kF32),
        row = g.Input("row", Shape{1, 1, 1, 3}, DType::kF32);
  const Entry w = g.Param("w");
  Entry c = g.Op1("conv2d", {x, w}, {}, "conv");
  g.AddOutput(g.Op1("relu", {c}));
  g.AddOutput(g.Op1("sigmoid", {c}));
  Entry c2 = g.Op1("conv2d", {x, w}, {}, "conv2");
  g.AddOutput(g.Op1("add", {c2, row}));
  Entry c3 = g.Op1("conv2d", {x, w}, {}, "conv3");
  g.AddOutput(g.Op1("sub", {g.Param("k"), c3}));
  const Values consts = {{"w", Random({2, 2, 1, 1}, 1)}, {"k", Random({2, 1, 1}, 2)}};
  OptimizeOptions o = Level(OptLevel::kExtended);
  OptimizeReport rep =
      Check(g, {{"x", Random({1, 2, 3, 3}, 3)}, {"row", Random({1, 1, 1, 3}, 4)}}, consts, o);
  EXPECT_EQ(rep.nodes_after, rep.nodes_before) << rep.ToString();
}

// Convolutions in NHWC hand each other their tensors (conv1 -> conv2, also
// as its residual); transposes only where another op reads: into conv1,
// out of conv2 to the pooling, and conv1's output as a graph output. conv3,
// alone after the pooling, stays NCHW.
TEST_P(OptimizeTest, NhwcConvolutionsChainWithTransposesOnlyAtTheEdges) {
  Graph g;
  Entry x = g.Input("x", Shape{2, 3, 8, 8}, DType::kF32);
  Entry c1 = g.Op1("relu", {g.Op1("conv2d", {x, g.Param("w1")}, {{"pad", "(1, 1)"}}, "conv1")});
  Entry c2 = g.Op1("conv2d", {c1, g.Param("w2")}, {{"pad", "(1, 1)"}}, "conv2");
  Entry y = g.Op1("relu", {g.Op1("add", {c2, c1})});
  y = g.Op1("pooling", {y}, {{"kernel", "(2, 2)"}, {"stride", "(2, 2)"}});
  g.AddOutput(g.Op1("conv2d", {y, g.Param("w3")}, {{"stride", "(2, 2)"}}, "conv3"));
  g.AddOutput(c1, "c1");
  const Values consts = {{"w1", Random({4, 3, 3, 3}, 1)},
                         {"w2", Random({4, 4, 3, 3}, 2)},
                         {"w3", Random({5, 4, 1, 1}, 3)}};
  OptimizeReport rep = Check(g, {{"x", Random({2, 3, 8, 8}, 4)}}, consts, Level(OptLevel::kAll));
  if (!Fuses()) return;
  EXPECT_THAT(rep.applied, ::testing::Contains(Pair("nhwc_layout", 2)));
  EXPECT_EQ(rep.nodes_after, 3 + 3 + 1) << rep.ToString();  // Convolutions, transposes, pooling.
}

TEST_P(OptimizeTest, SigmoidAndTanhActivationsFuse) {
  for (const char* act : {"sigmoid", "tanh"}) {
    Graph g;
    Entry y = g.Op1("conv2d", {g.Input("x", Shape{1, 2, 4, 4}, DType::kF32), g.Param("w")});
    g.AddOutput(g.Op1("activation", {y}, {{"act_type", act}}));
    OptimizeReport rep = Check(g, {{"x", Random({1, 2, 4, 4}, 1)}},
                               {{"w", Random({3, 2, 3, 3}, 2)}}, Level(OptLevel::kAll));
    if (Fuses()) EXPECT_EQ(rep.nodes_after, 1) << act << ": " << rep.ToString();
  }
}

TEST_P(OptimizeTest, IdentitiesGoAndConstantsFold) {
  Graph g;
  Entry x = g.Input("x", Shape{2, 3}, DType::kF32);
  Entry y = g.Op1("identity", {x});
  y = g.Op1("dropout", {y}, {{"p", "0.5"}});
  y = g.Op1("reshape", {y}, {{"shape", "(2, 3)"}});
  Entry k = g.Op1("exp", {g.Op1("mul_scalar", {g.Param("c")}, {{"scalar", "2"}})});
  g.AddOutput(g.Op1("mul", {y, k}));
  OptimizeReport rep =
      Check(g, {{"x", Random({2, 3}, 1)}}, {{"c", Random({3}, 2)}}, Level(OptLevel::kBasic));
  EXPECT_THAT(rep.applied,
              ::testing::ElementsAre(Pair("fold_constants", 2), Pair("remove_identity", 3)));
  EXPECT_EQ(rep.nodes_after, 1);
}

// GELU as torch.onnx writes it: x * (1 + erf(x / sqrt2)) * 0.5.
TEST_P(OptimizeTest, GeluSubgraphBecomesGelu) {
  Graph g;
  Entry x = g.Op1("tanh", {g.Input("x", Shape{3, 7}, DType::kF32)});  // Read by the pattern twice.
  Entry d = g.Op1("div", {x, g.Param("sqrt2")});
  Entry e = g.Op1("add", {g.Op1("erf", {d}), g.Param("one")});
  g.AddOutput(g.Op1("mul", {g.Op1("mul", {x, e}), g.Param("half")}));
  const Values consts = {{"sqrt2", Make<float>({std::sqrt(2.f)}, Shape{})},
                         {"one", Make<float>({1.f}, Shape{1})},
                         {"half", Make<float>({0.5f}, Shape{})}};
  OptimizeReport rep =
      Check(g, {{"x", Random({3, 7}, 1, -3, 3)}}, consts, Level(OptLevel::kExtended));
  EXPECT_THAT(rep.applied, ::testing::ElementsAre(Pair("fuse_gelu", 1)));
  EXPECT_EQ(rep.nodes_after, 2);
}

// LayerNorm as torch.onnx writes it at opset 13 (pow, div) and as Rill
// lowers LayerNormalization (square, 1 / sqrt): one layer_norm each.
TEST_P(OptimizeTest, LayerNormChainsBecomeLayerNorm) {
  for (bool torch_form : {true, false}) {
    Graph g;
    Entry x = g.Input("x", Shape{2, 3, 8}, DType::kF32);
    const ops::Attrs last = {{"axes", "(-1)"}, {"keepdims", "true"}};
    Entry d = g.Op1("sub", {x, g.Op1("mean", {x}, last)});
    Entry sq = torch_form ? g.Op1("pow", {d, g.Param("two")}) : g.Op1("square", {d});
    Entry v = g.Op1("mean", {sq}, {{"axes", "(2)"}, {"keepdims", "true"}});
    Entry s = torch_form ? g.Op1("sqrt", {g.Op1("add", {v, g.Param("eps")})})
                         : g.Op1("sqrt", {g.Op1("add_scalar", {v}, {{"scalar", "0.001"}})});
    Entry n = torch_form ? g.Op1("div", {d, s})
                         : g.Op1("mul", {g.Op1("rdiv_scalar", {s}, {{"scalar", "1"}}), d});
    g.AddOutput(g.Op1("add", {g.Param("beta"), g.Op1("mul", {n, g.Param("gamma")})}));
    const Values consts = {{"two", Make<float>({2.f}, Shape{})},
                           {"eps", Make<float>({1e-3f}, Shape{1})},
                           {"gamma", Random({8}, 2)},
                           {"beta", Random({8}, 3)}};
    OptimizeReport rep =
        Check(g, {{"x", Random({2, 3, 8}, 1, -2, 4)}}, consts, Level(OptLevel::kExtended));
    EXPECT_THAT(rep.applied, ::testing::ElementsAre(Pair("fuse_layer_norm", 1)));
    EXPECT_EQ(rep.nodes_after, 1) << rep.ToString();
  }
}

TEST_P(OptimizeTest, DisabledRewritesStayOff) {
  Graph g;
  Entry y = g.Op1("conv2d", {g.Input("x", Shape{1, 1, 3, 3}, DType::kF32), g.Param("w")});
  g.AddOutput(g.Op1("relu", {y}));
  OptimizeOptions o = Level(OptLevel::kAll);
  o.disabled = {"fuse_conv_activation", "constant_filters"};
  OptimizeReport rep =
      Check(g, {{"x", Random({1, 1, 3, 3}, 1)}}, {{"w", Random({1, 1, 1, 1}, 2)}}, o);
  EXPECT_EQ(rep.nodes_after, 2) << rep.ToString();
  EXPECT_TRUE(rep.applied.empty()) << rep.ToString();
}

INSTANTIATE_TEST_SUITE_P(Contexts, OptimizeTest,
                         ::testing::ValuesIn(ops::testing::OpSuiteContexts()), ContextName);

TEST(Optimize, BadOptionsAreNamed) {
  EXPECT_THAT(ParseOptLevel("max").status().message(), HasSubstr("'max'"));
  EXPECT_EQ(*ParseOptLevel("2"), OptLevel::kExtended);
  Graph g;
  g.AddOutput(g.Op1("relu", {g.Input("x")}));
  Values c;
  OptimizeOptions o;
  o.disabled = {"fuse_everything"};
  absl::StatusOr<OptimizeReport> r = OptimizeForInference(&g, &c, o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("'fuse_everything'"));
}

}  // namespace
}  // namespace rill::graph
