#include "rill/graph/onnx/onnx_export.h"

#include <onnx/onnx_pb.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rill/base/status_macros.h"
#include "rill/graph/executor.h"
#include "rill/graph/onnx/onnx_export_ops.h"
#include "rill/graph/onnx/onnx_import.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/testing/op_testing.h"

namespace rill::graph {
namespace {

using ops::testing::AllContexts;
using ops::testing::RandomData;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Tensors = absl::flat_hash_map<std::string, Tensor>;

// A tensor's elements as doubles, whatever its type.
absl::StatusOr<std::vector<double>> Values(const Tensor& t) {
  auto conv = [](auto v) -> absl::StatusOr<std::vector<double>> {
    if (!v.ok()) return v.status();
    return std::vector<double>(v->begin(), v->end());
  };
  switch (t.dtype()) {
    case DType::kF32:
      return conv(t.ToHost<float>());
    case DType::kF64:
      return conv(t.ToHost<double>());
    case DType::kI32:
      return conv(t.ToHost<int32_t>());
    case DType::kI64:
      return conv(t.ToHost<int64_t>());
    case DType::kU8:
    case DType::kBool:
      return conv(t.ToHost<uint8_t>());
    default:
      return absl::UnimplementedError(DTypeName(t.dtype()));
  }
}

struct Result {
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  std::vector<std::vector<double>> values;
};

// Executor::Bind and Forward(false), canary on; the outputs on the host.
absl::StatusOr<Result> RunGraph(const Graph& g, const Tensors& args, engine::Context ctx,
                                engine::Engine* engine) {
  BindOptions bo;
  bo.context = ctx;
  bo.engine = engine;
  bo.canary = true;
  RILL_ASSIGN_OR_RETURN(auto exec, Executor::Bind(g, args, {}, bo));
  RILL_RETURN_IF_ERROR(exec->Forward(/*is_train=*/false));
  Result r;
  for (const Tensor& t : exec->outputs()) {
    r.shapes.push_back(t.shape());
    r.dtypes.push_back(t.dtype());
    RILL_ASSIGN_OR_RETURN(std::vector<double> v, Values(t));
    r.values.push_back(std::move(v));
  }
  return r;
}

void ExpectSame(const Result& got, const Result& want, const std::string& what) {
  ASSERT_EQ(got.values.size(), want.values.size()) << what;
  for (size_t i = 0; i < want.values.size(); ++i) {
    EXPECT_EQ(got.shapes[i], want.shapes[i]) << what << " output " << i;
    EXPECT_EQ(got.dtypes[i], want.dtypes[i]) << what << " output " << i;
    ops::testing::ExpectNear(got.values[i], want.values[i], 1e-5,
                             absl::StrCat(what, " output ", i));
  }
}

onnx::ModelProto Parse(const std::string& bytes) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(bytes));
  return m;
}

std::vector<std::string> OpTypes(const onnx::ModelProto& m) {
  std::vector<std::string> v;
  for (const auto& n : m.graph().node()) v.push_back(n.op_type());
  return v;
}

std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/", name);
}

// Runs python3's full ONNX check on `paths`; false (skip) when python3
// cannot import onnx.
bool PythonHasOnnx() {
  static const bool has = std::system("/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1") == 0;
  return has;
}
int PythonCheck(const std::vector<std::string>& paths) {
  const std::string cmd = absl::StrCat(
      "/usr/bin/python3 -c \"import onnx,sys; [onnx.checker.check_model(onnx.load(p), "
      "full_check=True) "
      "for p in sys.argv[1:]]\" ",
      absl::StrJoin(paths, " "));
  return std::system(cmd.c_str());
}

// --- The Fashion-MNIST CNN's inference graph: conv with pad, per-channel
// bias added through a (1, C, 1, 1) reshape, relu, max pooling (twice),
// flatten, fully connected, relu, dropout, logits.

struct Cnn {
  Graph g;
  std::vector<std::pair<std::string, Shape>> params = {
      {"k1", {8, 1, 5, 5}},     {"c1", {8}},  {"k2", {16, 8, 5, 5}}, {"c2", {16}},
      {"w3", {32, 16 * 7 * 7}}, {"b3", {32}}, {"w4", {10, 32}},      {"b4", {10}}};
  Cnn() {
    const ops::Attrs pool{{"kernel", "(2, 2)"}, {"stride", "(2, 2)"}, {"pool_type", "max"}};
    auto conv = [&](Entry x, const std::string& k, const std::string& c, const std::string& id) {
      Entry y = g.Op1("conv2d", {x, g.Param(k)}, {{"pad", "(2, 2)"}}, "conv" + id);
      Entry b = g.Op1("reshape", {g.Param(c)}, {{"shape", "(1, -1, 1, 1)"}}, "bias" + id);
      y = g.Op1("relu", {g.Op1("add", {y, b}, {}, "add" + id)}, {}, "relu" + id);
      return g.Op1("pooling", {y}, pool, "pool" + id);
    };
    Entry h = conv(g.Input("x"), "k1", "c1", "1");
    h = conv(h, "k2", "c2", "2");
    h = g.Op1("flatten", {h}, {}, "flat");
    h = g.Op1("relu", {g.Op1("fully_connected", {h, g.Param("w3"), g.Param("b3")}, {}, "fc3")}, {},
              "relu3");
    h = g.Op1("dropout", {h}, {{"p", "0.5"}}, "drop3");
    g.AddOutput(g.Op1("fully_connected", {h, g.Param("w4"), g.Param("b4")}, {}, "fc4"), "logits");
  }
  Tensors Weights(engine::Context ctx, engine::Engine* engine) const {
    Tensors w;
    uint64_t seed = 1;
    for (const auto& [name, shape] : params) {
      w[name] = *Tensor::FromHost<float>(RandomData<float>(shape.NumElements(), seed++, -0.3, 0.3),
                                         shape, ctx, engine);
    }
    return w;
  }
};

class OnnxExportTest : public ops::testing::OpTest {
 protected:
  OnnxImportOptions ImportOpts() {
    OnnxImportOptions o;
    o.context = ctx();
    o.engine = engine_.get();
    return o;
  }
  // Runs `g` on `args` and the exported-then-imported model on the same
  // inputs (`args` less the initializers); expects the same outputs.
  void ExpectRoundTrip(const Graph& g, const Tensors& weights, const Tensors& inputs,
                       const std::string& bytes, const std::string& what) {
    Tensors args = weights;
    for (const auto& [k, v] : inputs) args[k] = v;
    absl::StatusOr<Result> want = RunGraph(g, args, ctx(), engine_.get());
    ASSERT_TRUE(want.ok()) << what << ": " << want.status();
    absl::StatusOr<OnnxModel> m = ImportOnnxBytes(bytes, ImportOpts(), what);
    ASSERT_TRUE(m.ok()) << m.status();
    Tensors margs = m->initializers;
    for (const auto& [k, v] : inputs) margs[k] = v;
    absl::StatusOr<Result> got = RunGraph(m->graph, margs, ctx(), engine_.get());
    ASSERT_TRUE(got.ok()) << what << ": " << got.status() << "\n" << m->graph.ToString();
    ExpectSame(*got, *want, what);
  }
};

TEST_P(OnnxExportTest, CnnRoundTrips) {
  Cnn net;
  const Tensors w = net.Weights(ctx(), engine_.get());
  const Tensors in = {{"x", Make(RandomData<float>(2 * 28 * 28, 9), {2, 1, 28, 28})}};
  OnnxExportOptions opt;
  opt.input_shapes = {{"x", Shape{2, 1, 28, 28}}};
  absl::StatusOr<std::string> bytes = ExportOnnxBytes(net.g, w, opt);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const onnx::ModelProto m = Parse(*bytes);
  EXPECT_EQ(m.opset_import(0).version(), 13);
  EXPECT_EQ(m.producer_name(), "rill");
  EXPECT_EQ(m.graph().initializer_size(), 8 + 2);  // The weights and the two bias shapes.
  ASSERT_EQ(m.graph().input_size(), 1);
  EXPECT_EQ(m.graph().input(0).name(), "x");
  ASSERT_EQ(m.graph().output_size(), 1);
  EXPECT_EQ(m.graph().output(0).name(), "logits");
  EXPECT_THAT(OpTypes(m), ::testing::ElementsAre("Conv", "Reshape", "Add", "Relu", "MaxPool",
                                                 "Conv", "Reshape", "Add", "Relu", "MaxPool",
                                                 "Flatten", "Gemm", "Relu", "Identity", "Gemm"));
  ExpectRoundTrip(net.g, w, in, *bytes, "cnn");
  // The imported graph (Gemm as a transposed matmul and an add, declared
  // input shape, aux constants) exports again, to the same outputs.
  absl::StatusOr<OnnxModel> im = ImportOnnxBytes(*bytes, ImportOpts());
  ASSERT_TRUE(im.ok()) << im.status();
  absl::StatusOr<std::string> again = ExportOnnxBytes(im->graph, im->initializers);
  ASSERT_TRUE(again.ok()) << again.status();
  ExpectRoundTrip(im->graph, im->initializers, in, *again, "cnn re-exported");
}

// Written to a file (atomically), read back with ImportOnnxFile.
TEST_P(OnnxExportTest, CnnFileRoundTrips) {
  Cnn net;
  const Tensors w = net.Weights(ctx(), engine_.get());
  std::string id = ctx().ToString();
  for (char& c : id) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  const std::string path = TempPath(absl::StrCat("rill_export_cnn_", id, ".onnx"));
  OnnxExportOptions opt;
  opt.input_shapes = {{"x", Shape{2, 1, 28, 28}}};
  opt.producer_name = "rill-test";
  ASSERT_TRUE(ExportOnnxFile(net.g, w, path, opt).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  absl::StatusOr<OnnxModel> m = ImportOnnxFile(path, ImportOpts());
  std::remove(path.c_str());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(m->outputs, std::vector<std::string>{"logits"});
  const Tensor x = Make(RandomData<float>(2 * 28 * 28, 4), {2, 1, 28, 28});
  Tensors args = w, margs = m->initializers;
  args["x"] = margs["x"] = x;
  absl::StatusOr<Result> want = RunGraph(net.g, args, ctx(), engine_.get());
  absl::StatusOr<Result> got = RunGraph(m->graph, margs, ctx(), engine_.get());
  ASSERT_TRUE(want.ok() && got.ok()) << want.status() << got.status();
  ExpectSame(*got, *want, "cnn file");
}

// With a symbolic batch the model runs at another batch size than the one
// the graph was exported with.
TEST_P(OnnxExportTest, DynamicBatch) {
  Cnn net;
  const Tensors w = net.Weights(ctx(), engine_.get());
  OnnxExportOptions opt;
  opt.input_shapes = {{"x", Shape{2, 1, 28, 28}}};
  opt.dynamic_batch = true;
  absl::StatusOr<std::string> bytes = ExportOnnxBytes(net.g, w, opt);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const onnx::ModelProto m = Parse(*bytes);
  EXPECT_EQ(m.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "N");
  EXPECT_EQ(m.graph().output(0).type().tensor_type().shape().dim(0).dim_param(), "N");
  ExpectRoundTrip(net.g, w, {{"x", Make(RandomData<float>(3 * 28 * 28, 5), {3, 1, 28, 28})}},
                  *bytes, "batch 3");
}

// --- Every exported op, one at a time.

struct Arg {
  std::string name;
  Shape shape;
  bool weight = false;  // An initializer; else a graph input with a declared shape.
  double lo = -1, hi = 1;
  bool integral = false;  // Whole numbers (so that equal sees equal values).
};
Arg In(std::string name, Shape s, double lo = -1, double hi = 1) {
  return {std::move(name), std::move(s), false, lo, hi};
}
Arg W(std::string name, Shape s) { return {std::move(name), std::move(s), true}; }
Arg Whole(std::string name, Shape s) { return {std::move(name), std::move(s), false, -2, 2, true}; }

struct OpCase {
  std::string label, op;
  ops::Attrs attrs;
  std::vector<Arg> args;
  std::string onnx_op;  // A node of this type must be in the model.
};

std::vector<OpCase> OpCases() {
  const Shape s4{2, 3, 4, 5};
  return {
      {"conv",
       "conv2d",
       {{"pad", "(1, 1)"}, {"stride", "(2, 2)"}},
       {In("x", {2, 3, 7, 7}), W("w", {4, 3, 3, 3})},
       "Conv"},
      {"conv_group",
       "conv2d",
       {{"pad", "2"}, {"stride", "(1, 2)"}, {"dilation", "2"}, {"num_group", "2"}},
       {In("x", {1, 4, 8, 8}), W("w", {6, 2, 3, 3})},
       "Conv"},
      {"fused_conv_residual_relu6",
       "fused_conv2d",
       {{"pad", "(1, 1)"}, {"act", "clipped_relu"}, {"clip", "0.5"}, {"residual", "true"}},
       {In("x", {2, 3, 5, 5}), W("w", {4, 3, 3, 3}), W("b", {4}), In("r", {2, 4, 5, 5})},
       "Clip"},
      {"layer_norm",
       "layer_norm",
       {{"axis", "-2"}, {"eps", "0.01"}},
       {In("x", {2, 3, 4, 5}), W("g", {4, 5}), W("b", {4, 5})},
       "ReduceMean"},
      {"fused_conv_sigmoid",
       "fused_conv2d",
       {{"stride", "(2, 2)"}, {"act", "sigmoid"}},
       {In("x", {1, 2, 6, 6}), W("w", {3, 2, 3, 3}), W("b", {3})},
       "Sigmoid"},
      {"add", "add", {}, {In("a", s4), In("b", {1, 3, 1, 1})}, "Add"},
      {"sub", "sub", {}, {In("a", s4), In("b", {5})}, "Sub"},
      {"mul", "mul", {}, {In("a", {3, 1}), In("b", {1, 4})}, "Mul"},
      {"div", "div", {}, {In("a", s4), In("b", s4, 0.5, 2)}, "Div"},
      {"maximum", "maximum", {}, {In("a", s4), In("b", s4)}, "Max"},
      {"minimum", "minimum", {}, {In("a", s4), In("b", {4, 1})}, "Min"},
      {"pow", "pow", {}, {In("a", s4, 0.5, 2), In("b", s4)}, "Pow"},
      {"relu", "relu", {}, {In("x", s4)}, "Relu"},
      {"sigmoid", "sigmoid", {}, {In("x", s4)}, "Sigmoid"},
      {"tanh", "tanh", {}, {In("x", s4)}, "Tanh"},
      {"erf", "erf", {}, {In("x", s4, -2, 2)}, "Erf"},
      {"floor", "floor", {}, {In("x", s4, -3, 3)}, "Floor"},
      {"prod",
       "prod",
       {{"axes", "(1, 3)"}, {"keepdims", "true"}},
       {In("x", s4, 0.5, 1.5)},
       "ReduceProd"},
      {"sin", "sin", {}, {In("x", s4, -3, 3)}, "Sin"},
      {"atanh", "atanh", {}, {In("x", s4, -0.9, 0.9)}, "Atanh"},
      {"mod", "mod", {{"fmod", "1"}}, {In("a", s4, -3, 3), In("b", {5}, 0.5, 2)}, "Mod"},
      {"cumsum",
       "cumsum",
       {{"axis", "-2"}, {"exclusive", "1"}, {"reverse", "1"}},
       {In("x", s4)},
       "CumSum"},
      {"where", "where", {}, {Whole("c", {3, 1, 5}), In("a", s4), In("b", {4, 1})}, "Where"},
      {"exp", "exp", {}, {In("x", s4)}, "Exp"},
      {"log", "log", {}, {In("x", s4, 0.1, 3)}, "Log"},
      {"neg", "neg", {}, {In("x", s4)}, "Neg"},
      {"abs", "abs", {}, {In("x", s4)}, "Abs"},
      {"sqrt", "sqrt", {}, {In("x", s4, 0.1, 3)}, "Sqrt"},
      {"square", "square", {}, {In("x", s4)}, "Mul"},
      {"identity", "identity", {}, {In("x", s4)}, "Identity"},
      {"activation", "activation", {{"act_type", "sigmoid"}}, {In("x", s4)}, "Sigmoid"},
      {"add_scalar", "add_scalar", {{"scalar", "0.25"}}, {In("x", s4)}, "Add"},
      {"rsub_scalar", "rsub_scalar", {{"scalar", "2"}}, {In("x", s4)}, "Sub"},
      {"mul_scalar", "mul_scalar", {{"scalar", "-3"}}, {In("x", s4)}, "Mul"},
      {"rdiv_scalar", "rdiv_scalar", {{"scalar", "1.5"}}, {In("x", s4, 0.5, 2)}, "Div"},
      {"pow_scalar", "pow_scalar", {{"scalar", "2"}}, {In("x", s4)}, "Pow"},
      {"maximum_scalar", "maximum_scalar", {{"scalar", "0.1"}}, {In("x", s4)}, "Max"},
      {"equal", "equal", {}, {Whole("a", s4), Whole("b", s4)}, "Equal"},
      {"greater_scalar", "greater_scalar", {{"scalar", "0.5"}}, {Whole("x", s4)}, "Greater"},
      {"max_pool",
       "pooling",
       {{"kernel", "(3, 3)"}, {"stride", "(2, 2)"}, {"pad", "(1, 1)"}, {"pool_type", "max"}},
       {In("x", {2, 3, 9, 8})},
       "MaxPool"},
      {"avg_pool_include_pad",
       "pooling",
       {{"kernel", "3"}, {"stride", "2"}, {"pad", "1"}, {"pool_type", "avg"}},
       {In("x", {2, 3, 9, 8})},
       "AveragePool"},
      {"avg_pool_exclude_pad",
       "pooling",
       {{"kernel", "(2, 3)"},
        {"pad", "(1, 1)"},
        {"pool_type", "avg"},
        {"count_include_pad", "false"}},
       {In("x", {2, 3, 6, 7})},
       "AveragePool"},
      {"flatten", "flatten", {}, {In("x", s4)}, "Flatten"},
      {"reshape", "reshape", {{"shape", "(0, -1, 2)"}}, {In("x", s4)}, "Reshape"},
      {"fully_connected",
       "fully_connected",
       {},
       {In("x", {4, 6}), W("w", {5, 6}), W("b", {5})},
       "Gemm"},
      {"fully_connected_no_bias",
       "fully_connected",
       {{"no_bias", "true"}},
       {In("x", {4, 6}), W("w", {5, 6})},
       "Gemm"},
      {"matmul", "matmul", {}, {In("a", {2, 3, 4}), In("b", {2, 4, 5})}, "MatMul"},
      {"matmul_2d_transposed",
       "matmul",
       {{"transpose_a", "true"}, {"transpose_b", "true"}},
       {In("a", {4, 3}), W("b", {5, 4})},
       "Gemm"},
      {"matmul_batched_transposed",
       "matmul",
       {{"transpose_b", "true"}},
       {In("a", {2, 3, 4}), In("b", {2, 5, 4})},
       "Transpose"},
      {"softmax", "softmax", {{"axis", "1"}}, {In("x", {2, 3, 4})}, "Softmax"},
      {"log_softmax", "log_softmax", {}, {In("x", {2, 3, 4})}, "LogSoftmax"},
      {"dropout", "dropout", {{"p", "0.3"}}, {In("x", s4)}, "Identity"},
      {"transpose", "transpose", {{"axes", "(2, 0, -2)"}}, {In("x", {2, 3, 4})}, "Transpose"},
      {"transpose_reversed", "transpose", {}, {In("x", s4)}, "Transpose"},
      {"concat",
       "concat",
       {{"axis", "1"}},
       {In("a", {2, 1, 3}), In("b", {2, 4, 3}), W("c", {2, 2, 3})},
       "Concat"},
      {"concat_last", "concat", {{"axis", "-1"}}, {In("a", {2, 3}), In("b", {2, 1})}, "Concat"},
      {"batch_norm",
       "batch_norm",
       {{"eps", "0.001"}},
       {In("x", {4, 3, 5, 5}), W("gamma", {3}), W("beta", {3})},
       "ReduceMean"},
      {"batch_norm_2d",
       "batch_norm",
       {},
       {In("x", {6, 3}), W("gamma", {3}), W("beta", {3})},
       "ReduceMean"},
      {"sum", "sum", {{"axes", "(1, -1)"}}, {In("x", s4)}, "ReduceSum"},
      {"sum_all", "sum", {}, {In("x", s4)}, "ReduceSum"},
      {"mean", "mean", {{"axes", "(2)"}, {"keepdims", "true"}}, {In("x", s4)}, "ReduceMean"},
      {"max", "max", {{"axes", "(0, 3)"}}, {In("x", s4)}, "ReduceMax"},
      {"argmax", "argmax", {{"axis", "1"}}, {In("x", s4)}, "ArgMax"},
      {"slice", "slice", {{"begin", "(1, -3)"}, {"end", "(2, -1)"}}, {In("x", s4)}, "Slice"},
      {"cast", "cast", {{"dtype", "float64"}}, {In("x", s4)}, "Cast"},
  };
}

// The one-op graph of `c` and its weights and inputs on `ctx`.
struct OneOp {
  Graph g;
  Tensors weights, inputs;
};
OneOp Build(const OpCase& c, engine::Context ctx, engine::Engine* engine) {
  OneOp o;
  std::vector<Entry> in;
  uint64_t seed = 100;
  for (const Arg& a : c.args) {
    std::vector<float> v = RandomData<float>(a.shape.NumElements(), seed++, a.lo, a.hi);
    if (a.integral) {
      for (float& x : v) x = std::round(x);
    }
    Tensor t = *Tensor::FromHost<float>(v, a.shape, ctx, engine);
    in.push_back(a.weight ? o.g.Param(a.name) : o.g.Input(a.name, a.shape, DType::kF32));
    (a.weight ? o.weights : o.inputs)[a.name] = t;
  }
  o.g.AddOutput(o.g.Op1(c.op, in, c.attrs, "node"), "y");
  return o;
}

TEST_P(OnnxExportTest, EveryOpRoundTrips) {
  for (const OpCase& c : OpCases()) {
    SCOPED_TRACE(c.label);
    // fused_conv2d (the optimizer's) runs where a DNN library is: not OpenCL.
    if (c.op == "fused_conv2d" && absl::StartsWith(ctx().ToString(), "opencl")) continue;
    OneOp o = Build(c, ctx(), engine_.get());
    absl::StatusOr<std::string> bytes = ExportOnnxBytes(o.g, o.weights);
    if (!bytes.ok()) {  // The other cases still run.
      ADD_FAILURE() << bytes.status();
      continue;
    }
    EXPECT_THAT(OpTypes(Parse(*bytes)), ::testing::Contains(c.onnx_op));
    ExpectRoundTrip(o.g, o.weights, o.inputs, *bytes, c.label);
  }
}

// Outputs: a graph input passed through and one entry under two names get
// Identity nodes; several outputs keep their order.
TEST_P(OnnxExportTest, OutputsKeepNamesAndOrder) {
  Graph g;
  Entry x = g.Input("x", Shape{3, 4});
  Entry r = g.Op1("relu", {x}, {}, "r");
  g.AddOutput(g.Op1("tanh", {r}, {}, "t"));
  g.AddOutput(r, "first");
  g.AddOutput(r, "second");
  g.AddOutput(x, "x_out");
  absl::StatusOr<std::string> bytes = ExportOnnxBytes(g, {});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const onnx::ModelProto m = Parse(*bytes);
  std::vector<std::string> outs;
  for (const auto& o : m.graph().output()) outs.push_back(o.name());
  EXPECT_EQ(outs, (std::vector<std::string>{"t", "first", "second", "x_out"}));
  ExpectRoundTrip(g, {}, {{"x", Make(RandomData<float>(12, 3), {3, 4})}}, *bytes, "outputs");
}

INSTANTIATE_TEST_SUITE_P(Contexts, OnnxExportTest, ::testing::ValuesIn(AllContexts()),
                         ops::testing::ContextName);

// --- Python's checker with full_check (ONNX shape inference) on the files.

TEST(OnnxExportPython, FullCheckAcceptsExportedModels) {
  if (!PythonHasOnnx()) GTEST_SKIP() << "/usr/bin/python3 cannot import onnx";
  auto engine = ops::testing::MakeEngine();
  Cnn net;
  OnnxExportOptions opt;
  opt.input_shapes = {{"x", Shape{2, 1, 28, 28}}};
  const std::string cnn = TempPath("rill_export_python_cnn.onnx");
  ASSERT_TRUE(
      ExportOnnxFile(net.g, net.Weights(engine::Context::Host(), engine.get()), cnn, opt).ok());
  const std::string one = absl::StrCat(
      "/usr/bin/python3 -c \"import onnx,sys; m=onnx.load(sys.argv[1]); "
      "onnx.checker.check_model(m, full_check=True)\" ",
      cnn);
  EXPECT_EQ(std::system(one.c_str()), 0) << cnn;
  std::remove(cnn.c_str());
  std::vector<std::string> paths;
  for (int opset : {13, 17}) {
    for (const OpCase& c : OpCases()) {
      OneOp o = Build(c, engine::Context::Host(), engine.get());
      OnnxExportOptions oo;
      oo.opset = opset;
      oo.dynamic_batch = opset == 17;
      paths.push_back(TempPath(absl::StrCat("rill_export_python_", c.label, "_", opset, ".onnx")));
      ASSERT_TRUE(ExportOnnxFile(o.g, o.weights, paths.back(), oo).ok()) << c.label;
    }
  }
  EXPECT_EQ(PythonCheck(paths), 0);
  for (const auto& p : paths) std::remove(p.c_str());
}

// --- Errors.

TEST(OnnxExportErrors, OpWithoutMappingIsUnimplementedNamingTheNode) {
  Cnn net;
  Graph train;
  std::vector<Entry> y = train.Compose(net.g, {}, "");
  train.AddOutput(
      train.Op1("softmax_cross_entropy", {y[0], train.Input("labels", Shape{2})}, {}, "the_loss"));
  OnnxExportOptions opt;
  opt.input_shapes = {{"x", Shape{2, 1, 28, 28}}};
  absl::Status s = ExportOnnxBytes(train, {}, opt).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), AllOf(HasSubstr("the_loss"), HasSubstr("softmax_cross_entropy")));
  Graph sgd;
  sgd.AddOutput(sgd.Op1("sgd_update", {sgd.Param("w", Shape{3}), sgd.Input("g", Shape{3})},
                        {{"lr", "0.1"}}, "step"));
  s = ExportOnnxBytes(sgd, {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), AllOf(HasSubstr("step"), HasSubstr("sgd_update")));
}

TEST(OnnxExportErrors, DropoutMaskIsUnimplemented) {
  Graph g;
  std::vector<Entry> d = g.Op("dropout", {g.Input("x", Shape{4})}, {}, "drop");
  g.AddOutput(d[1]);
  absl::Status s = ExportOnnxBytes(g, {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), AllOf(HasSubstr("drop"), HasSubstr("mask")));
}

TEST(OnnxExportErrors, VariableWithoutShapeIsInvalidArgumentNamingIt) {
  Cnn net;
  auto engine = ops::testing::MakeEngine();
  Tensors w = net.Weights(engine::Context::Host(), engine.get());
  // The input: no declared shape, none given.
  absl::Status s = ExportOnnxBytes(net.g, w).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("'x'"));
  // A weight missing from the initializers.
  w.erase("w3");
  OnnxExportOptions opt;
  opt.input_shapes = {{"x", Shape{2, 1, 28, 28}}};
  s = ExportOnnxBytes(net.g, w, opt).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("'w3'"));
}

TEST(OnnxExportErrors, BadInitializersAndShapesAreInvalidArgument) {
  auto engine = ops::testing::MakeEngine();
  const engine::Context host = engine::Context::Host();
  Graph g;
  g.AddOutput(g.Op1("fully_connected",
                    {g.Input("x", Shape{2, 3}), g.Param("w", Shape{4, 3}), g.Param("b")}, {},
                    "fc"));
  Tensors w = {{"w", *Tensor::FromHost<float>(std::vector<float>(12), {4, 3}, host, engine.get())},
               {"b", *Tensor::FromHost<float>(std::vector<float>(4), {4}, host, engine.get())}};
  ASSERT_TRUE(ExportOnnxBytes(g, w).ok());
  Tensors extra = w;
  extra["nope"] = w.at("b");
  absl::Status s = ExportOnnxBytes(g, extra).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("'nope'"));
  Tensors wrong = w;
  wrong["w"] = *Tensor::FromHost<float>(std::vector<float>(12), {3, 4}, host, engine.get());
  s = ExportOnnxBytes(g, wrong).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("'w'"));
  OnnxExportOptions opt;
  opt.input_shapes = {{"x", Shape{5, 3}}};  // Declared (2, 3).
  s = ExportOnnxBytes(g, w, opt).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("'x'"));
  opt.input_shapes = {{"ghost", Shape{1}}};
  s = ExportOnnxBytes(g, w, opt).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("'ghost'"));
  opt = {};
  opt.opset = 11;
  s = ExportOnnxBytes(g, w, opt).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("opset 11"));
}

TEST(OnnxExportErrors, UnwritablePathNamesIt) {
  Graph g;
  g.AddOutput(g.Op1("relu", {g.Input("x", Shape{2})}, {}, "r"));
  const std::string missing = "/nonexistent_rill_dir/model.onnx";
  absl::Status s = ExportOnnxFile(g, {}, missing);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr(missing));
  // A directory in the way: the temporary file is written, the rename fails
  // and the temporary file is removed.
  const std::string dir = TempPath("rill_export_dir.onnx");
  std::filesystem::create_directories(dir);
  s = ExportOnnxFile(g, {}, dir);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(dir));
  EXPECT_FALSE(std::filesystem::exists(dir + ".tmp"));
  std::filesystem::remove(dir);
}

TEST(OnnxExportErrors, OutputNamedAsVariableIsInvalidArgument) {
  Graph g;
  Entry x = g.Input("x", Shape{2});
  g.AddOutput(g.Op1("relu", {x}, {}, "r"), "x");
  absl::Status s = ExportOnnxBytes(g, {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("'x'"));
}

}  // namespace
}  // namespace rill::graph

namespace rill::graph {
namespace {

// Every built-in op has an ONNX exporter, or sits on this list with why.
// An op that gains an exporter must leave the list.
TEST(OnnxExportCoverage, EveryOpHasAnExporterOrAListedExemption) {
  const std::set<std::string> exempt = {
      // Framework-internal and gradient ops ("_" names) never reach an
      // inference graph.
      // Training steps, not inference.
      "adam_update", "sgd_update", "sgd_mom_update", "softmax_cross_entropy", "sum_to",
      // Not exported yet: creation ops (constants once shapes are fixed),
      // random ops, gelu (ONNX Gelu is opset 20; an Erf subgraph would do).
      "arange", "fill", "ones", "zeros", "random_normal", "random_uniform", "gelu"};
  for (const std::string& name : ops::OpRegistry::Global().OpNames()) {
    const bool has = FindExporter(name) != nullptr;
    if (name.rfind("_", 0) == 0) continue;
    if (exempt.contains(name)) {
      EXPECT_FALSE(has) << name << " has an exporter now: take it off the exemptions";
    } else {
      EXPECT_TRUE(has) << "op '" << name
                       << "' has no ONNX exporter (graph/onnx/onnx_export_ops.cc)";
    }
  }
}

}  // namespace
}  // namespace rill::graph
