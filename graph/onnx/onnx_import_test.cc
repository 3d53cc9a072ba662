#include "rill/graph/onnx/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rill/graph/executor.h"
#include "rill/graph/onnx/onnx_lowering.h"
#include "rill/graph/testing/graph_testing.h"
#include "rill/ops/testing/op_testing.h"

namespace rill::graph {
namespace {

using ops::testing::AllContexts;
using ops::testing::RandomData;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// --- Building models with the protobuf API.

onnx::ModelProto NewModel(int64_t opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.set_producer_name("rill-test");
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

void AddValue(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
              const std::string& name, const std::vector<int64_t>& dims,
              int elem = onnx::TensorProto::FLOAT) {
  onnx::ValueInfoProto* v = list->Add();
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

// raw_data (as numpy_helper writes) or float_data (as helper.make_tensor).
void AddInitializer(onnx::ModelProto& m, const std::string& name, const std::vector<int64_t>& dims,
                    const std::vector<float>& v, bool raw = true) {
  onnx::TensorProto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  if (raw) {
    t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  } else {
    for (float x : v) t->add_float_data(x);
  }
}

onnx::NodeProto* AddNode(onnx::ModelProto& m, const std::string& op,
                         const std::vector<std::string>& in, const std::vector<std::string>& out,
                         const std::string& name) {
  onnx::NodeProto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& s : in) n->add_input(s);
  for (const auto& s : out) n->add_output(s);
  return n;
}

void IntsAttr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void IntAttr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void FloatAttr(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

std::string Bytes(const onnx::ModelProto& m) {
  std::string s;
  m.SerializeToString(&s);
  return s;
}

// x [2,3,6,6] -> Conv(4x3x3x3, pads 1, stride 2, bias) -> Relu -> Flatten ->
// Gemm(transB, alpha 0.5, beta 2) with 5 outputs.
struct Net {
  std::vector<float> w = RandomData<float>(4 * 3 * 3 * 3, 1), b = RandomData<float>(4, 2),
                     g = RandomData<float>(5 * 36, 3), c = RandomData<float>(5, 4);
  onnx::ModelProto Model() const {
    onnx::ModelProto m = NewModel();
    AddValue(m.mutable_graph()->mutable_input(), "x", {2, 3, 6, 6});
    AddValue(m.mutable_graph()->mutable_output(), "y", {2, 5});
    AddInitializer(m, "w", {4, 3, 3, 3}, w);
    AddInitializer(m, "b", {4}, b, /*raw=*/false);
    AddInitializer(m, "g", {5, 36}, g);
    AddInitializer(m, "c", {5}, c, /*raw=*/false);
    onnx::NodeProto* conv = AddNode(m, "Conv", {"x", "w", "b"}, {"h"}, "conv1");
    IntsAttr(conv, "pads", {1, 1, 1, 1});
    IntsAttr(conv, "strides", {2, 2});
    IntsAttr(conv, "kernel_shape", {3, 3});
    AddNode(m, "Relu", {"h"}, {"r"}, "relu1");
    AddNode(m, "Flatten", {"r"}, {"f"}, "flat");
    onnx::NodeProto* gemm = AddNode(m, "Gemm", {"f", "g", "c"}, {"y"}, "fc");
    IntAttr(gemm, "transB", 1);
    FloatAttr(gemm, "alpha", 0.5f);
    FloatAttr(gemm, "beta", 2.f);
    return m;
  }
  // The same with loops.
  std::vector<float> Reference(const std::vector<float>& x) const {
    std::vector<float> h(2 * 4 * 3 * 3);
    for (int n = 0; n < 2; ++n)
      for (int o = 0; o < 4; ++o)
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 3; ++j) {
            double s = b[o];
            for (int ci = 0; ci < 3; ++ci)
              for (int ki = 0; ki < 3; ++ki)
                for (int kj = 0; kj < 3; ++kj) {
                  const int yi = i * 2 - 1 + ki, xj = j * 2 - 1 + kj;
                  if (yi < 0 || yi >= 6 || xj < 0 || xj >= 6) continue;
                  s += x[((n * 3 + ci) * 6 + yi) * 6 + xj] * w[((o * 3 + ci) * 3 + ki) * 3 + kj];
                }
            h[((n * 4 + o) * 3 + i) * 3 + j] = static_cast<float>(std::max(s, 0.0));
          }
    std::vector<float> y(2 * 5);
    for (int n = 0; n < 2; ++n)
      for (int o = 0; o < 5; ++o) {
        double s = 0;
        for (int k = 0; k < 36; ++k) s += h[n * 36 + k] * g[o * 36 + k];
        y[n * 5 + o] = static_cast<float>(0.5 * s + 2 * c[o]);
      }
    return y;
  }
};

class OnnxImportTest : public ops::testing::OpTest {};

TEST_P(OnnxImportTest, ConvReluGemmMatchesLoops) {
  Net net;
  OnnxImportOptions opt;
  opt.context = ctx();
  opt.engine = engine_.get();
  absl::StatusOr<OnnxModel> m = ImportOnnxBytes(Bytes(net.Model()), opt);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->opset, 13);
  EXPECT_EQ(m->inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(m->outputs, std::vector<std::string>{"y"});
  EXPECT_EQ(m->initializers.size(), 4u);
  EXPECT_EQ(m->graph.Variables(VarKind::kParam).size(), 4u);
  const int x_id = m->graph.Find("x");
  ASSERT_GE(x_id, 0);
  EXPECT_EQ(m->graph.node(x_id).shape, (Shape{2, 3, 6, 6}));
  const std::vector<float> x = RandomData<float>(2 * 3 * 6 * 6, 5);
  absl::flat_hash_map<std::string, Tensor> args = m->initializers;
  args["x"] = Make(x, {2, 3, 6, 6});
  absl::StatusOr<std::vector<Tensor>> out =
      testing::EvaluateImperatively(m->graph, args, ctx(), engine_.get());
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].shape(), (Shape{2, 5}));
  ops::testing::ExpectNear(*(*out)[0].ToHost<float>(), net.Reference(x), 1e-4, "y");
  // The same through the executor.
  BindOptions bo;
  bo.context = ctx();
  bo.engine = engine_.get();
  absl::StatusOr<std::unique_ptr<Executor>> exec = Executor::Bind(m->graph, args, {}, bo);
  ASSERT_TRUE(exec.ok()) << exec.status();
  ASSERT_TRUE((*exec)->Forward(/*is_train=*/false).ok());
  ops::testing::ExpectNear(*(*exec)->outputs()[0].ToHost<float>(), net.Reference(x), 1e-4,
                           "y (executor)");
}

// An ONNX file trains: imported, composed under a loss built in C++, run
// forward and backward; the parameters' gradients match finite differences.
TEST_P(OnnxImportTest, ImportedModelRunsBackward) {
  Net net;
  const std::string path = ::testing::TempDir() + "/rill_onnx_backward.onnx";
  {
    std::ofstream f(path, std::ios::binary);
    f << Bytes(net.Model());
  }
  OnnxImportOptions opt;
  opt.context = ctx();
  opt.engine = engine_.get();
  absl::StatusOr<OnnxModel> m = ImportOnnxFile(path, opt);
  std::remove(path.c_str());
  ASSERT_TRUE(m.ok()) << m.status();
  Graph train;
  Entry x = train.Input("x");
  std::vector<Entry> y = train.Compose(m->graph, {{"x", x}}, "net_");
  ASSERT_EQ(y.size(), 1u);
  train.AddOutput(train.Op1("softmax_cross_entropy", {y[0], train.Input("labels")}, {}, "loss"));
  ASSERT_TRUE(train.status().ok()) << train.status();
  absl::flat_hash_map<std::string, Tensor> args, grads;
  for (const auto& [name, t] : m->initializers) {
    args["net_" + name] = t;
    grads["net_" + name] = Make(std::vector<float>(t.NumElements(), 0.f), t.shape());
  }
  args["x"] = Make(RandomData<float>(2 * 3 * 6 * 6, 5), {2, 3, 6, 6});
  args["labels"] = Make(std::vector<float>{1, 3}, {2});
  BindOptions bo;
  bo.context = ctx();
  bo.engine = engine_.get();
  bo.canary = true;
  absl::StatusOr<std::unique_ptr<Executor>> exec = Executor::Bind(train, args, grads, bo);
  ASSERT_TRUE(exec.ok()) << exec.status();
  ASSERT_TRUE((*exec)->Forward(true).ok());
  ASSERT_TRUE((*exec)->Backward().ok());
  auto loss_with = [&](const std::string& name, size_t i, float delta) {
    std::vector<float> v = *args.at(name).ToHost<float>();
    v[i] += delta;
    absl::flat_hash_map<std::string, Tensor> a = args;
    a[name] = Make(v, args.at(name).shape());
    auto e = Executor::Bind(train, a, {}, bo);
    EXPECT_TRUE(e.ok()) << e.status();
    EXPECT_TRUE((*e)->Forward(false).ok());
    return static_cast<double>((*(*e)->outputs()[0].ToHost<float>())[0]);
  };
  for (const auto& [name, g] : grads) {
    std::vector<float> got = *g.ToHost<float>();
    for (size_t i = 0; i < got.size(); i += std::max<size_t>(1, got.size() / 4)) {
      // A small step: a larger one can move a ReLU unit across its kink.
      const double want = (loss_with(name, i, 1e-3f) - loss_with(name, i, -1e-3f)) / 2e-3;
      EXPECT_NEAR(got[i], want, 2e-3 + 2e-2 * std::abs(want)) << name << "[" << i << "]";
    }
  }
}

// A Reshape's shape from an initializer and a Constant are folded: no
// variable for the shape; the Constant read by an op is an aux variable.
TEST_P(OnnxImportTest, ConstantsFoldOrBecomeAux) {
  onnx::ModelProto m = NewModel();
  AddValue(m.mutable_graph()->mutable_input(), "x", {2, 6});
  AddValue(m.mutable_graph()->mutable_output(), "y", {3, 4});
  onnx::TensorProto* s = m.mutable_graph()->add_initializer();
  s->set_name("shape");
  s->set_data_type(onnx::TensorProto::INT64);
  s->add_dims(2);
  s->add_int64_data(3);
  s->add_int64_data(-1);
  onnx::NodeProto* k = AddNode(m, "Constant", {}, {"k"}, "konst");
  auto* a = k->add_attribute();
  a->set_name("value_float");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(2.5f);
  AddNode(m, "Reshape", {"x", "shape"}, {"r"}, "reshape");
  AddNode(m, "Mul", {"r", "k"}, {"y"}, "mul");
  OnnxImportOptions opt;
  opt.context = ctx();
  opt.engine = engine_.get();
  absl::StatusOr<OnnxModel> im = ImportOnnxBytes(Bytes(m), opt);
  ASSERT_TRUE(im.ok()) << im.status();
  EXPECT_TRUE(im->graph.Variables(VarKind::kParam).empty()) << im->graph.ToString();
  ASSERT_EQ(im->graph.Variables(VarKind::kAux).size(), 1u);
  EXPECT_TRUE(im->initializers.contains("k"));
  EXPECT_FALSE(im->initializers.contains("shape"));
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i) x[i] = static_cast<float>(i);
  absl::flat_hash_map<std::string, Tensor> args = im->initializers;
  args["x"] = Make(x, {2, 6});
  auto out = testing::EvaluateImperatively(im->graph, args, ctx(), engine_.get());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{3, 4}));
  std::vector<float> want(12);
  for (int i = 0; i < 12; ++i) want[i] = 2.5f * static_cast<float>(i);
  ops::testing::ExpectNear(*(*out)[0].ToHost<float>(), want, 0, "y");
}

// Shape arithmetic as torch.onnx writes it (Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape) on a symbolic batch: refused while the batch is
// unknown, folded to one reshape once dim_params (or batch) fixes it.
TEST_P(OnnxImportTest, SymbolicBatchBoundAtImportFoldsShapeArithmetic) {
  onnx::ModelProto m = NewModel();
  AddValue(m.mutable_graph()->mutable_input(), "x", {-1, 2, 3});
  m.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param("N");
  AddValue(m.mutable_graph()->mutable_output(), "y", {-1, 6});
  m.mutable_graph()
      ->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param("N");
  auto int64s = [&](const std::string& name, std::vector<int64_t> v, bool scalar) {
    onnx::TensorProto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    if (!scalar) t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
  };
  int64s("zero", {0}, true);
  int64s("axes0", {0}, false);
  int64s("minus1", {-1}, false);
  AddNode(m, "Shape", {"x"}, {"s"}, "shape");
  AddNode(m, "Gather", {"s", "zero"}, {"n"}, "gather");
  AddNode(m, "Unsqueeze", {"n", "axes0"}, {"n1"}, "unsqueeze");
  IntAttr(AddNode(m, "Concat", {"n1", "minus1"}, {"shape2"}, "concat"), "axis", 0);
  AddNode(m, "Reshape", {"x", "shape2"}, {"y"}, "reshape");
  OnnxImportOptions opt;
  opt.context = ctx();
  opt.engine = engine_.get();
  absl::StatusOr<OnnxModel> refused = ImportOnnxBytes(Bytes(m), opt);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnimplemented) << refused.status();
  EXPECT_THAT(refused.status().message(), AllOf(HasSubstr("'shape'"), HasSubstr("static shape")));
  opt.dim_params = {{"N", 3}};
  absl::StatusOr<OnnxModel> im = ImportOnnxBytes(Bytes(m), opt);
  ASSERT_TRUE(im.ok()) << im.status();
  int ops = 0;
  for (int i = 0; i < im->graph.num_nodes(); ++i) ops += !im->graph.node(i).is_variable();
  EXPECT_EQ(ops, 1) << "shape arithmetic left in the graph:\n" << im->graph.ToString();
  std::vector<float> x(18);
  for (int i = 0; i < 18; ++i) x[i] = static_cast<float>(i) - 4.5f;
  absl::flat_hash_map<std::string, Tensor> args = im->initializers;
  args["x"] = Make(x, {3, 2, 3});
  auto out = testing::EvaluateImperatively(im->graph, args, ctx(), engine_.get());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{3, 6}));
  ops::testing::ExpectNear(*(*out)[0].ToHost<float>(), x, 0, "y");
  // The same through `batch`; bad bindings name the symbol.
  opt.dim_params.clear();
  opt.batch = 3;
  EXPECT_TRUE(ImportOnnxBytes(Bytes(m), opt).ok());
  opt.batch = 0;
  opt.dim_params = {{"M", 3}};
  EXPECT_EQ(ImportOnnxBytes(Bytes(m), opt).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ImportOnnxBytes(Bytes(m), opt).status().message(), HasSubstr("'M'"));
  opt.dim_params = {{"N", 0}};
  EXPECT_THAT(ImportOnnxBytes(Bytes(m), opt).status().message(),
              AllOf(HasSubstr("'N'"), HasSubstr("not positive")));
}

INSTANTIATE_TEST_SUITE_P(Contexts, OnnxImportTest, ::testing::ValuesIn(AllContexts()),
                         ops::testing::ContextName);

// Folding is bounded: a Tile of a constant that would make 128 MiB stays an
// op of the graph instead of being computed at import.
TEST(OnnxImport, FoldingIsBounded) {
  onnx::ModelProto m = NewModel();
  AddValue(m.mutable_graph()->mutable_output(), "y", {16384, 1024}, onnx::TensorProto::INT64);
  onnx::NodeProto* k = AddNode(m, "Constant", {}, {"k"}, "konst");
  auto* a = k->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto* t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(2048);
  t->add_dims(1024);
  t->set_raw_data(std::string(2048 * 1024 * sizeof(int64_t), '\0'));
  // The repeats come from a Concat, so ONNX's inference cannot size y: only
  // the fold itself finds how large it would be.
  auto* shape =
      m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  for (int i = 0; i < shape->dim_size(); ++i) shape->mutable_dim(i)->set_dim_param("n");
  const std::vector<std::pair<std::string, int64_t>> parts = {{"r0", 8}, {"r1", 1}};
  for (const auto& [name, v] : parts) {
    onnx::NodeProto* c = AddNode(m, "Constant", {}, {name}, name + "_node");
    auto* va = c->add_attribute();
    va->set_name("value_ints");
    va->set_type(onnx::AttributeProto::INTS);
    va->add_ints(v);
  }
  IntAttr(AddNode(m, "Concat", {"r0", "r1"}, {"repeats"}, "concat"), "axis", 0);
  AddNode(m, "Tile", {"k", "repeats"}, {"y"}, "tile");
  absl::StatusOr<OnnxModel> im = ImportOnnxBytes(Bytes(m));
  ASSERT_TRUE(im.ok()) << im.status();
  int ops = 0;
  for (int i = 0; i < im->graph.num_nodes(); ++i) ops += !im->graph.node(i).is_variable();
  EXPECT_GE(ops, 1) << "the 128 MiB Tile was folded";
  EXPECT_TRUE(im->initializers.contains("k"));
}

// --- Bad input: never a crash, the most specific code, a message naming
// what is wrong.

std::string WriteTemp(const std::string& name, const std::string& bytes) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/", name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// A Reshape whose shape is a graph input imports once the input is fixed.
TEST(OnnxImport, ConstantInputsFoldLikeInitializers) {
  onnx::ModelProto m = NewModel();
  AddValue(m.mutable_graph()->mutable_input(), "x", {2, 6});
  AddValue(m.mutable_graph()->mutable_input(), "shape", {2}, onnx::TensorProto::INT64);
  AddValue(m.mutable_graph()->mutable_output(), "y", {3, 4});
  AddNode(m, "Reshape", {"x", "shape"}, {"y"}, "reshape_it");
  auto engine = ops::testing::MakeEngine();
  OnnxImportOptions opt;
  opt.engine = engine.get();
  absl::StatusOr<OnnxModel> refused = ImportOnnxBytes(Bytes(m), opt);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(refused.status().ToString(), HasSubstr("must be an initializer or a Constant"));
  opt.constant_inputs["shape"] =
      *Tensor::FromHost<int64_t>({3, 4}, {2}, engine::Context::Host(), engine.get());
  absl::StatusOr<OnnxModel> ok = ImportOnnxBytes(Bytes(m), opt);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->inputs, std::vector<std::string>{"x"});
  const Tensor shape = opt.constant_inputs.at("shape");  // A copy: inserting may rehash.
  opt.constant_inputs["nope"] = shape;
  EXPECT_THAT(ImportOnnxBytes(Bytes(m), opt).status().ToString(),
              HasSubstr("'nope' is no graph input"));
}

TEST(OnnxImportErrors, TruncatedFileIsInvalidArgumentNamingTheFile) {
  const std::string bytes = Bytes(Net().Model());
  for (size_t keep : {bytes.size() / 2, bytes.size() - 3, size_t{7}}) {
    const std::string path = WriteTemp("truncated.onnx", bytes.substr(0, keep));
    absl::StatusOr<OnnxModel> m = ImportOnnxFile(path);
    ASSERT_FALSE(m.ok()) << keep;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << m.status();
    EXPECT_THAT(m.status().message(), HasSubstr(path));
  }
}

TEST(OnnxImportErrors, RandomBytesAreInvalidArgument) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::string bytes(1 + rng() % 300, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    absl::StatusOr<OnnxModel> m = ImportOnnxBytes(bytes, {}, "random.onnx");
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << m.status();
    EXPECT_THAT(m.status().message(), HasSubstr("random.onnx"));
  }
}

// Every one-byte change of a valid model imports or fails with a status.
TEST(OnnxImportErrors, MutatedModelsNeverCrash) {
  const std::string bytes = Bytes(Net().Model());
  std::mt19937 rng(11);
  int ok = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string b = bytes;
    b[rng() % b.size()] = static_cast<char>(rng());
    absl::StatusOr<OnnxModel> m = ImportOnnxBytes(b, {}, "mutated.onnx");
    ok += m.ok();
    if (!m.ok()) {
      EXPECT_THAT(m.status().message(), HasSubstr("mutated.onnx"));
    }
  }
  std::printf("%d of 400 mutated models imported\n", ok);
}

TEST(OnnxImportErrors, MissingFileIsNotFound) {
  EXPECT_EQ(ImportOnnxFile("/nonexistent/model.onnx").status().code(), absl::StatusCode::kNotFound);
}

TEST(OnnxImportErrors, InitializerSizeMismatchNamesIt) {
  for (bool raw : {true, false}) {
    onnx::ModelProto m = Net().Model();
    onnx::TensorProto* w =
        m.mutable_graph()->mutable_initializer(raw ? 0 : 1);  // "w" raw, "b" float_data.
    if (raw)
      w->mutable_raw_data()->resize(10);
    else
      w->add_float_data(1.f);
    absl::StatusOr<OnnxModel> im = ImportOnnxBytes(Bytes(m));
    ASSERT_FALSE(im.ok());
    EXPECT_EQ(im.status().code(), absl::StatusCode::kInvalidArgument) << im.status();
    EXPECT_THAT(im.status().message(), HasSubstr(raw ? "'w'" : "'b'"));
  }
}

TEST(OnnxImportErrors, ExternalDataIsUnimplemented) {
  onnx::ModelProto m = Net().Model();
  onnx::TensorProto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = w->add_external_data();
  e->set_key("location");
  e->set_value("w.bin");
  absl::StatusOr<OnnxModel> im = ImportOnnxBytes(Bytes(m));
  ASSERT_FALSE(im.ok());
  EXPECT_EQ(im.status().code(), absl::StatusCode::kUnimplemented) << im.status();
  EXPECT_THAT(im.status().message(), HasSubstr("'w'"));
}

TEST(OnnxImportErrors, UnsupportedOpNamesNodeOpAndOpset) {
  onnx::ModelProto m = NewModel(13);
  AddValue(m.mutable_graph()->mutable_input(), "x", {4, 4});
  AddValue(m.mutable_graph()->mutable_output(), "y", {});
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  AddNode(m, "Relu", {"x"}, {"r"}, "relu");
  AddNode(m, "Det", {"r"}, {"y"}, "my_det");
  absl::StatusOr<OnnxModel> im = ImportOnnxBytes(Bytes(m));
  ASSERT_FALSE(im.ok());
  EXPECT_EQ(im.status().code(), absl::StatusCode::kUnimplemented) << im.status();
  EXPECT_THAT(im.status().message(),
              AllOf(HasSubstr("my_det"), HasSubstr("Det"), HasSubstr("opset 13")));
}

// A 2-D max pooling with dilations 2 (which Rill's pooling lacks).
onnx::NodeProto* DilatedMaxPool(onnx::ModelProto& m, const std::string& in, const std::string& out,
                                const std::string& name) {
  onnx::NodeProto* n = AddNode(m, "MaxPool", {in}, {out}, name);
  IntsAttr(n, "kernel_shape", {2, 2});
  IntsAttr(n, "dilations", {2, 2});
  return n;
}

// One error lists every node Rill cannot import, grouped by op type with
// counts; nodes that only depend on an unsupported one are not listed
// unless their op type is missing too.
TEST(OnnxImportErrors, EveryUnsupportedNodeInOneError) {
  onnx::ModelProto m = NewModel(13);
  AddValue(m.mutable_graph()->mutable_input(), "x", {4, 4});
  AddValue(m.mutable_graph()->mutable_input(), "img", {1, 1, 5, 5});
  for (const char* out : {"b", "c", "e"}) {
    AddValue(m.mutable_graph()->mutable_output(), out, {});
    m.mutable_graph()
        ->mutable_output()
        ->rbegin()
        ->mutable_type()
        ->mutable_tensor_type()
        ->mutable_shape();
  }
  AddNode(m, "Relu", {"x"}, {"r"}, "relu");
  AddNode(m, "NonZero", {"r"}, {"a"}, "nz1");
  AddNode(m, "NonZero", {"a"}, {"b"}, "nz2");
  DilatedMaxPool(m, "img", "c", "pool");
  AddNode(m, "Det", {"r"}, {"d"}, "det");
  AddNode(m, "Neg", {"d"}, {"e"}, "neg_after_det");
  absl::StatusOr<OnnxModel> im = ImportOnnxBytes(Bytes(m), {}, "net.onnx");
  ASSERT_FALSE(im.ok());
  EXPECT_EQ(im.status().code(), absl::StatusCode::kUnimplemented) << im.status();
  const std::string msg(im.status().message());
  EXPECT_THAT(msg, AllOf(HasSubstr("net.onnx"), HasSubstr("4 of 6 nodes (3 op types)"),
                         HasSubstr("NonZero x2"), HasSubstr("'nz1'"), HasSubstr("'nz2'"),
                         HasSubstr("MaxPool x1"), HasSubstr("dilations other than 1"),
                         HasSubstr("Det x1"), HasSubstr("op type not supported")))
      << msg;
  EXPECT_THAT(msg, Not(HasSubstr("neg_after_det"))) << msg;
  EXPECT_THAT(msg, Not(HasSubstr("'relu'"))) << msg;
}

TEST(OnnxImportErrors, UnsupportedAttributeValueNamesTheNode) {
  onnx::ModelProto m = NewModel(13);
  AddValue(m.mutable_graph()->mutable_input(), "x", {1, 1, 5, 5});
  AddValue(m.mutable_graph()->mutable_output(), "y", {1, 1, 3, 3});
  DilatedMaxPool(m, "x", "y", "pool1");
  absl::StatusOr<OnnxModel> im = ImportOnnxBytes(Bytes(m));
  ASSERT_FALSE(im.ok());
  EXPECT_EQ(im.status().code(), absl::StatusCode::kUnimplemented) << im.status();
  EXPECT_THAT(im.status().message(),
              AllOf(HasSubstr("pool1"), HasSubstr("MaxPool"), HasSubstr("dilations")));
}

TEST(OnnxImportErrors, UnsupportedElementTypeAndOpset) {
  onnx::ModelProto m = NewModel(13);
  AddValue(m.mutable_graph()->mutable_input(), "x", {4}, onnx::TensorProto::INT8);
  AddValue(m.mutable_graph()->mutable_output(), "y", {4}, onnx::TensorProto::INT8);
  AddNode(m, "Neg", {"x"}, {"y"}, "neg");
  absl::StatusOr<OnnxModel> im = ImportOnnxBytes(Bytes(m));
  EXPECT_EQ(im.status().code(), absl::StatusCode::kUnimplemented) << im.status();
  EXPECT_THAT(im.status().message(), HasSubstr("INT8"));
  onnx::ModelProto old = Net().Model();
  old.mutable_opset_import(0)->set_version(6);
  im = ImportOnnxBytes(Bytes(old));
  EXPECT_EQ(im.status().code(), absl::StatusCode::kUnimplemented) << im.status();
  EXPECT_THAT(im.status().message(), HasSubstr("opset 6"));
}

TEST(OnnxImportErrors, DanglingInputNamesNodeAndValue) {
  onnx::ModelProto m = NewModel();
  AddValue(m.mutable_graph()->mutable_input(), "x", {4});
  AddValue(m.mutable_graph()->mutable_output(), "y", {4});
  AddNode(m, "Add", {"x", "ghost"}, {"y"}, "adder");
  absl::StatusOr<OnnxModel> im = ImportOnnxBytes(Bytes(m));
  ASSERT_FALSE(im.ok());
  EXPECT_EQ(im.status().code(), absl::StatusCode::kInvalidArgument) << im.status();
  EXPECT_THAT(im.status().message(), AllOf(HasSubstr("adder"), HasSubstr("ghost")));
}

TEST(OnnxImportErrors, CycleNamesANode) {
  onnx::ModelProto m = NewModel();
  AddValue(m.mutable_graph()->mutable_input(), "x", {4});
  AddValue(m.mutable_graph()->mutable_output(), "y", {4});
  AddNode(m, "Add", {"x", "b"}, {"a"}, "first");
  AddNode(m, "Relu", {"a"}, {"b"}, "second");
  AddNode(m, "Relu", {"b"}, {"y"}, "third");
  absl::StatusOr<OnnxModel> im = ImportOnnxBytes(Bytes(m));
  ASSERT_FALSE(im.ok());
  EXPECT_EQ(im.status().code(), absl::StatusCode::kInvalidArgument) << im.status();
  EXPECT_THAT(im.status().message(), AllOf(HasSubstr("cycle"), HasSubstr("first")));
}

TEST(OnnxImportErrors, CheckerFailureIsInvalidArgument) {
  onnx::ModelProto m = NewModel();
  AddValue(m.mutable_graph()->mutable_input(), "x", {1, 1, 3, 3});
  AddValue(m.mutable_graph()->mutable_output(), "y", {1, 1, 3, 3});
  AddNode(m, "Conv", {}, {"y"}, "empty_conv");
  absl::StatusOr<OnnxModel> im = ImportOnnxBytes(Bytes(m));
  ASSERT_FALSE(im.ok());
  EXPECT_EQ(im.status().code(), absl::StatusCode::kInvalidArgument) << im.status();
  EXPECT_THAT(im.status().message(), HasSubstr("checker"));
}

TEST(OnnxImportErrors, SequenceInputIsUnimplemented) {
  onnx::ModelProto m = NewModel();
  onnx::ValueInfoProto* in = m.mutable_graph()->add_input();
  in->set_name("seq");
  in->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(onnx::TensorProto::FLOAT);
  AddValue(m.mutable_graph()->mutable_output(), "y", {});
  AddNode(m, "SequenceLength", {"seq"}, {"y"}, "len");
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::INT64);
  absl::StatusOr<OnnxModel> im = ImportOnnxBytes(Bytes(m));
  ASSERT_FALSE(im.ok());
  EXPECT_EQ(im.status().code(), absl::StatusCode::kUnimplemented) << im.status();
}

TEST(OnnxImport, SupportedOpsListed) {
  const std::vector<std::string> ops = SupportedOnnxOps();
  for (const char* op :
       {"Conv", "Gemm", "BatchNormalization", "Softmax", "Reshape", "ReduceSum", "Cast"}) {
    EXPECT_THAT(ops, ::testing::Contains(std::string(op)));
  }
}

}  // namespace
}  // namespace rill::graph
