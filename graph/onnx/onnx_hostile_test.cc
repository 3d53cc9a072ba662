// Hostile ONNX model files: each is refused with a status that names the
// defect (and the file), never a crash, an abort or an exception. Before
// the fix most of these stopped the process: SIGFPE inside libonnx's shape
// inference, std::bad_alloc, a heap overflow in the Unsqueeze converter.

#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rill/base/untrusted_file.h"
#include "rill/graph/onnx/onnx_import.h"
#include "rill/graph/onnx/onnx_tensor.h"

namespace rill::graph {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

onnx::ModelProto NewModel(int64_t opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

void AddValue(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
              const std::string& name, const std::vector<int64_t>& dims) {
  onnx::ValueInfoProto* v = list->Add();
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& op,
                         const std::vector<std::string>& in, const std::vector<std::string>& out,
                         const std::string& name) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& s : in) n->add_input(s);
  for (const auto& s : out) n->add_output(s);
  return n;
}

void Ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void Int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void Str(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

void Int64Initializer(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> v) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) t->add_int64_data(x);
}

void FloatInitializer(onnx::GraphProto* g, const std::string& name,
                      const std::vector<int64_t>& dims, int64_t values) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t i = 0; i < values; ++i) t->add_float_data(0.5f);
}

std::string Bytes(const onnx::ModelProto& m) {
  std::string s;
  m.SerializeToString(&s);
  return s;
}

// x [1,2,8,8] -> `op` (a Conv with a 2x2x3x3 weight, or a pooling op) with
// kernel_shape 3x3 and the attributes `set` adds -> y.
onnx::ModelProto ConvPool(const std::string& op, const std::function<void(onnx::NodeProto*)>& set) {
  onnx::ModelProto m = NewModel();
  onnx::GraphProto* g = m.mutable_graph();
  AddValue(g->mutable_input(), "x", {1, 2, 8, 8});
  AddValue(g->mutable_output(), "y", {1, 2, 6, 6});
  std::vector<std::string> in = {"x"};
  if (op == "Conv" || op == "ConvTranspose") {
    FloatInitializer(g, "w", {2, 2, 3, 3}, 36);
    in.push_back("w");
  }
  onnx::NodeProto* n = AddNode(g, op, in, {"y"}, "victim");
  Ints(n, "kernel_shape", {3, 3});
  set(n);
  return m;
}

void ExpectRefused(const absl::StatusOr<OnnxModel>& r, absl::StatusCode code,
                   const std::vector<std::string>& substrings) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status();
  for (const std::string& s : substrings) EXPECT_THAT(r.status().message(), HasSubstr(s));
}

// --- Attributes libonnx's shape inference divides by (SIGFPE before).

class ConvPoolAttrTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ConvPoolAttrTest, AZeroStrideIsRefusedBeforeShapeInference) {
  for (const char* auto_pad : {"", "SAME_UPPER", "SAME_LOWER", "VALID"}) {
    SCOPED_TRACE(auto_pad);
    onnx::ModelProto m = ConvPool(GetParam(), [&](onnx::NodeProto* n) {
      Ints(n, "strides", {1, 0});
      if (*auto_pad != '\0') Str(n, "auto_pad", auto_pad);
    });
    ExpectRefused(ImportOnnxBytes(Bytes(m)), absl::StatusCode::kInvalidArgument,
                  {"'victim'", GetParam(), "'strides' = [1, 0]", "has 0 at index 1"});
  }
}

TEST_P(ConvPoolAttrTest, OutOfRangeKernelDilationPadsAndGroupAreRefused) {
  struct Case {
    std::function<void(onnx::NodeProto*)> set;
    std::string want;
  };
  const int64_t huge = int64_t{1} << 40;
  std::vector<Case> cases = {
      {[](onnx::NodeProto* n) { n->mutable_attribute(0)->set_ints(0, 0); }, "'kernel_shape'"},
      {[&](onnx::NodeProto* n) { n->mutable_attribute(0)->set_ints(1, huge); }, "1099511627776"},
      {[](onnx::NodeProto* n) {
         Ints(n, "dilations", {0, 1});
       },
       "'dilations' = [0, 1]"},
      {[](onnx::NodeProto* n) {
         Ints(n, "pads", {0, -1, 0, 0});
       },
       "'pads' = [0, -1, 0, 0]"},
      {[](onnx::NodeProto* n) {
         Ints(n, "pads", {1, 1});
       },
       "'pads' has 2 values"},
      {[](onnx::NodeProto* n) {
         Ints(n, "strides", {1, 1, 1});
       },
       "'strides' has 3 values"},
      {[](onnx::NodeProto* n) { Str(n, "auto_pad", "SAME_MIDDLE"); }, "'SAME_MIDDLE'"},
  };
  if (GetParam() == "Conv" || GetParam() == "ConvTranspose") {
    cases.push_back({[](onnx::NodeProto* n) { Int(n, "group", 0); }, "'group' = 0"});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    ExpectRefused(ImportOnnxBytes(Bytes(ConvPool(GetParam(), c.set))),
                  absl::StatusCode::kInvalidArgument, {"'victim'", c.want});
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, ConvPoolAttrTest,
                         ::testing::Values("Conv", "ConvTranspose", "MaxPool", "AveragePool",
                                           "LpPool"));

TEST(OnnxHostileTest, AZeroStrideInsideAnIfBranchIsRefused) {
  onnx::ModelProto m = NewModel();
  onnx::GraphProto* g = m.mutable_graph();
  AddValue(g->mutable_input(), "x", {1, 2, 8, 8});
  onnx::ValueInfoProto* c = g->add_input();
  c->set_name("c");
  c->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  c->mutable_type()->mutable_tensor_type()->mutable_shape();
  AddValue(g->mutable_output(), "y", {1, 2, 6, 6});
  onnx::NodeProto* n = AddNode(g, "If", {"c"}, {"y"}, "if");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = n->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* b = a->mutable_g();
    b->set_name(branch);
    AddValue(b->mutable_output(), "p", {1, 2, 6, 6});
    Ints(AddNode(b, "MaxPool", {"x"}, {"p"}, "pool"), "kernel_shape", {3, 3});
    Ints(b->mutable_node(0), "strides", {0, 0});
  }
  ExpectRefused(ImportOnnxBytes(Bytes(m)), absl::StatusCode::kInvalidArgument,
                {"'pool'", "then_branch", "'strides' = [0, 0]"});
}

TEST(OnnxHostileTest, AHugeDepthToSpaceBlocksizeIsRefused) {
  onnx::ModelProto m = NewModel();
  onnx::GraphProto* g = m.mutable_graph();
  AddValue(g->mutable_input(), "x", {1, 4, 2, 2});
  AddValue(g->mutable_output(), "y", {1, 1, 4, 4});
  Int(AddNode(g, "DepthToSpace", {"x"}, {"y"}, "d2s"), "blocksize", int64_t{1} << 40);
  ExpectRefused(ImportOnnxBytes(Bytes(m)), absl::StatusCode::kInvalidArgument,
                {"'d2s'", "'blocksize' = 1099511627776"});
}

// --- Sizes a file claims (std::bad_alloc before).

TEST(OnnxHostileTest, AnInitializerClaimingMoreElementsThanItHoldsIsRefused) {
  onnx::ModelProto m = NewModel();
  onnx::GraphProto* g = m.mutable_graph();
  AddValue(g->mutable_input(), "x", {1});
  AddValue(g->mutable_output(), "y", {1});
  FloatInitializer(g, "w", {int64_t{1} << 40, 2}, 2);  // 8 TiB claimed, 8 bytes held.
  AddNode(g, "Add", {"x", "w"}, {"y"}, "add");
  ExpectRefused(ImportOnnxBytes(Bytes(m)), absl::StatusCode::kInvalidArgument,
                {"'w'", "needs 2199023255552 elements, has 2"});
  g->mutable_initializer(0)->clear_float_data();
  g->mutable_initializer(0)->set_raw_data(std::string(16, '\0'));
  ExpectRefused(ImportOnnxBytes(Bytes(m)), absl::StatusCode::kInvalidArgument,
                {"'w'", "needs 8796093022208 bytes of raw data, has 16"});
  g->mutable_initializer(0)->set_dims(0, int64_t{1} << 62);
  ExpectRefused(ImportOnnxBytes(Bytes(m)), absl::StatusCode::kInvalidArgument, {"'w'", "63 bits"});
}

TEST(OnnxHostileTest, InitializersPastTheFileBudgetAreResourceExhausted) {
  onnx::ModelProto m = NewModel();
  onnx::GraphProto* g = m.mutable_graph();
  AddValue(g->mutable_input(), "x", {256});
  AddValue(g->mutable_output(), "y", {256});
  FloatInitializer(g, "a", {256}, 256);
  FloatInitializer(g, "b", {256}, 256);
  AddNode(g, "Add", {"x", "a"}, {"s"}, "add1");
  AddNode(g, "Add", {"s", "b"}, {"y"}, "add2");
  SetFileAllocationCap(1536);  // One initializer (1 KiB) fits, two do not.
  absl::StatusOr<OnnxModel> r = ImportOnnxBytes(Bytes(m), {}, "'net.onnx'");
  SetFileAllocationCap(0);
  ExpectRefused(r, absl::StatusCode::kResourceExhausted,
                {"net.onnx", "tensor 'b'", "1536", "RILL_MAX_FILE_BYTES"});
  EXPECT_TRUE(ImportOnnxBytes(Bytes(m)).ok());
  // A Constant node's value counts too.
  g->mutable_initializer()->RemoveLast();
  onnx::NodeProto* c = AddNode(g, "Constant", {}, {"b"}, "const");
  auto* value = c->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value->mutable_t()->add_dims(256);
  for (int i = 0; i < 256; ++i) value->mutable_t()->add_float_data(1.0f);
  g->mutable_node()->SwapElements(1, 2);  // add1, const, add2.
  SetFileAllocationCap(1536);
  r = ImportOnnxBytes(Bytes(m), {}, "'net.onnx'");
  SetFileAllocationCap(0);
  ExpectRefused(r, absl::StatusCode::kResourceExhausted, {"net.onnx", "'const'", "1536"});
  EXPECT_TRUE(ImportOnnxBytes(Bytes(m)).ok()) << ImportOnnxBytes(Bytes(m)).status();
}

class OnnxFileTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) {
    return absl::StrCat(::testing::TempDir(), "/rill_onnx_hostile_", getpid(), "_", name);
  }
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string p = Path(name);
    std::ofstream(p, std::ios::binary) << bytes;
    files_.push_back(p);
    return p;
  }
  ~OnnxFileTest() override {
    for (const std::string& p : files_) std::remove(p.c_str());
  }
  std::vector<std::string> files_;
};

TEST_F(OnnxFileTest, DevZeroADirectoryAndAnEmptyFileAreInvalidArgument) {
  ExpectRefused(ImportOnnxFile("/dev/zero"), absl::StatusCode::kInvalidArgument, {"/dev/zero"});
  const std::string dir = Path("dir");
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  ExpectRefused(ImportOnnxFile(dir), absl::StatusCode::kInvalidArgument, {dir});
  rmdir(dir.c_str());
  const std::string empty = Write("empty.onnx", "");
  ExpectRefused(ImportOnnxFile(empty), absl::StatusCode::kInvalidArgument, {empty, "empty"});
  ExpectRefused(ImportOnnxBytes(""), absl::StatusCode::kInvalidArgument, {"empty"});
  ExpectRefused(ImportOnnxFile(Path("missing.onnx")), absl::StatusCode::kNotFound,
                {"missing.onnx"});
}

TEST_F(OnnxFileTest, AFileErrorNamesTheFileAndTheDefect) {
  onnx::ModelProto m = ConvPool("MaxPool", [](onnx::NodeProto* n) { Ints(n, "strides", {0, 0}); });
  const std::string p = Write("stride0.onnx", Bytes(m));
  ExpectRefused(ImportOnnxFile(p), absl::StatusCode::kInvalidArgument,
                {p, "'victim'", "'strides' = [0, 0]"});
}

// --- Malformed graphs that got the wrong code.

// No opset at all, or default-domain nodes without the default opset, is
// malformed; a model of another domain only is valid ONNX Rill lacks.
TEST(OnnxHostileTest, AModelWithoutTheDefaultOpsetIsInvalidArgument) {
  onnx::ModelProto m = NewModel();
  AddValue(m.mutable_graph()->mutable_input(), "x", {2});
  AddValue(m.mutable_graph()->mutable_output(), "y", {2});
  AddNode(m.mutable_graph(), "Relu", {"x"}, {"y"}, "relu");
  m.clear_opset_import();
  ExpectRefused(ImportOnnxBytes(Bytes(m)), absl::StatusCode::kInvalidArgument,
                {"imports no opset"});
  auto* o = m.add_opset_import();
  o->set_domain("com.example");
  o->set_version(1);
  ExpectRefused(ImportOnnxBytes(Bytes(m)), absl::StatusCode::kInvalidArgument,
                {"'relu'", "default domain (ai.onnx)", "'com.example'"});
  m.mutable_graph()->mutable_node(0)->set_domain("com.example");
  ExpectRefused(ImportOnnxBytes(Bytes(m)), absl::StatusCode::kUnimplemented,
                {"only 'com.example'"});
}

TEST(OnnxHostileTest, AnOutputNoNodeProducesIsInvalidArgumentNamingIt) {
  onnx::ModelProto m = NewModel();
  onnx::GraphProto* g = m.mutable_graph();
  AddValue(g->mutable_input(), "x", {2});
  AddValue(g->mutable_output(), "y", {2});
  AddValue(g->mutable_output(), "ghost", {2});
  AddNode(g, "Relu", {"x"}, {"y"}, "relu");
  ExpectRefused(ImportOnnxBytes(Bytes(m)), absl::StatusCode::kInvalidArgument,
                {"graph output 'ghost'", "produced by no node"});
}

TEST(OnnxHostileTest, DuplicateUnsqueezeAndSqueezeAxesAreRefused) {
  for (int64_t opset : {11, 13}) {
    for (const char* op : {"Unsqueeze", "Squeeze"}) {
      SCOPED_TRACE(absl::StrCat(op, " opset ", opset));
      onnx::ModelProto m = NewModel(opset);
      onnx::GraphProto* g = m.mutable_graph();
      const bool squeeze = std::string(op) == "Squeeze";
      AddValue(g->mutable_input(), "x",
               squeeze ? std::vector<int64_t>{1, 3, 1} : std::vector<int64_t>{2, 3});
      AddValue(g->mutable_output(), "y",
               squeeze ? std::vector<int64_t>{3, 1} : std::vector<int64_t>{1, 2, 3, 1});
      const std::vector<int64_t> axes =
          squeeze ? std::vector<int64_t>{0, 0} : std::vector<int64_t>{0, 0, 3};
      onnx::NodeProto* n = AddNode(g, op, {"x"}, {"y"}, "dup");
      if (opset >= 13) {
        Int64Initializer(g, "axes", axes);
        n->add_input("axes");
      } else {
        Ints(n, "axes", axes);
      }
      ExpectRefused(ImportOnnxBytes(Bytes(m)), absl::StatusCode::kInvalidArgument,
                    {"'dup'", "name axis 0 twice"});
    }
  }
}

TEST(OnnxHostileTest, AGraphInputWithANegativeOrHugeDimensionIsRefused) {
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{2, -5}, std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 40}}) {
    onnx::ModelProto m = NewModel();
    onnx::GraphProto* g = m.mutable_graph();
    AddValue(g->mutable_input(), "x", dims);
    AddValue(g->mutable_output(), "y", {2, 5});
    AddNode(g, "Relu", {"x"}, {"y"}, "relu");
    ExpectRefused(ImportOnnxBytes(Bytes(m)), absl::StatusCode::kInvalidArgument,
                  {"graph input 'x'", dims[1] < 0 ? "dimension -5 at axis 1" : "63 bits"});
  }
}

// The fuzzer's seeds (tests/fuzz/corpus_onnx, from gen_onnx_fuzz_corpus.py):
// seed_* and regress_ok_* import, the other regress_* (inputs that crashed
// once) are refused with a status.
TEST(OnnxHostileTest, TheFuzzCorpusSeedsImportAndItsRegressionsAreRefused) {
  int seeds = 0, regressions = 0;
  for (const auto& e : std::filesystem::directory_iterator(RILL_ONNX_FUZZ_CORPUS_DIR)) {
    const std::string name = e.path().filename().string();
    SCOPED_TRACE(name);
    absl::StatusOr<OnnxModel> r = ImportOnnxFile(e.path().string());
    if (name.rfind("seed_", 0) == 0 || name.rfind("regress_ok_", 0) == 0) {
      ++seeds;
      EXPECT_TRUE(r.ok()) << r.status();
    } else if (name.rfind("regress_", 0) == 0) {
      ++regressions;
      EXPECT_FALSE(r.ok());
    }
  }
  EXPECT_GE(seeds, 5);
  EXPECT_GE(regressions, 5);
}

// libonnx's inference functions of these index an input's dimensions
// without checking its rank (SIGSEGV before): it no longer sees them.
TEST(OnnxHostileTest, NodesWhoseLibonnxInferenceReadsMissingDimsAreNotInferredByIt) {
  onnx::ModelProto rnn = NewModel(1);
  onnx::GraphProto* g = rnn.mutable_graph();
  AddValue(g->mutable_input(), "x", {});
  g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();  // A scalar.
  AddValue(g->mutable_input(), "w", {2, 3});
  AddValue(g->mutable_input(), "r", {2, 3});
  AddValue(g->mutable_output(), "y", {2, 2});
  Int(AddNode(g, "RNN", {"x", "w", "r"}, {"y"}, "rnn"), "hidden_size", int64_t{1} << 31);
  ExpectRefused(ImportOnnxBytes(Bytes(rnn)), absl::StatusCode::kUnimplemented,
                {"'rnn'", "opset 1"});

  onnx::ModelProto gemm = NewModel(6);
  g = gemm.mutable_graph();
  for (const char* name : {"a", "b", "c"}) {
    AddValue(g->mutable_input(), name, {});
    g->mutable_input()->rbegin()->mutable_type()->mutable_tensor_type()->mutable_shape();
  }
  AddValue(g->mutable_output(), "y", {1, 1});
  AddNode(g, "Gemm", {"a", "b", "c"}, {"y"}, "gemm");
  ExpectRefused(ImportOnnxBytes(Bytes(gemm)), absl::StatusCode::kUnimplemented,
                {"'gemm'", "opset 6"});

  onnx::ModelProto ct = NewModel();
  g = ct.mutable_graph();
  AddValue(g->mutable_input(), "x", {1, 4, 8, 8});
  AddValue(g->mutable_input(), "w", {2});
  AddValue(g->mutable_output(), "y", {1, 4, 8, 8});
  AddNode(g, "ConvTranspose", {"x", "w"}, {"y"}, "ct");
  absl::StatusOr<OnnxModel> r = ImportOnnxBytes(Bytes(ct));
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("'ct'"));
}

// Converters' arithmetic on hostile values (UBSan found signed overflows).
TEST(OnnxHostileTest, SplitSizesAndPadsThatWouldWrapAreRefused) {
  onnx::ModelProto m = NewModel();
  onnx::GraphProto* g = m.mutable_graph();
  AddValue(g->mutable_input(), "x", {4, 4});
  AddValue(g->mutable_output(), "a", {2, 4});
  AddValue(g->mutable_output(), "b", {2, 4});
  Int64Initializer(g, "split", {int64_t{1} << 62, int64_t{1} << 62});
  AddNode(g, "Split", {"x", "split"}, {"a", "b"}, "split");
  ExpectRefused(ImportOnnxBytes(Bytes(m)), absl::StatusCode::kInvalidArgument,
                {"'split'", "does not cover axis 0"});

  onnx::ModelProto p = NewModel();
  g = p.mutable_graph();
  AddValue(g->mutable_input(), "x", {2, 3});
  AddValue(g->mutable_output(), "y", {2, 3});
  Int64Initializer(g, "pads", std::vector<int64_t>(4, -(int64_t{1} << 62)));
  AddNode(g, "Pad", {"x", "pads"}, {"y"}, "pad");
  ExpectRefused(ImportOnnxBytes(Bytes(p)), absl::StatusCode::kInvalidArgument,
                {"'pad'", "pad -4611686018427387904 of axis 0 of size 2 is out of range"});
}

// A float constant read as integers (an axis, a shape) saturates; the value
// out of range is then refused by the converter (UBSan found the undefined
// conversion of 5.3e233, a CumSum axis).
TEST(OnnxHostileTest, FloatConstantsReadAsIntegersSaturate) {
  const std::vector<double> v = {1e300, -1e300, std::nan(""), 3.9, -2.5};
  OnnxHostTensor t = OnnxHostTensor::FromDoubles(v, Shape{5}, DType::kF64);
  EXPECT_EQ(t.Int64s(), (std::vector<int64_t>{INT64_MAX, INT64_MIN, 0, 3, -2}));
  OnnxHostTensor i32 = OnnxHostTensor::FromDoubles(v, Shape{5}, DType::kI32);
  EXPECT_EQ(i32.Int64s(), (std::vector<int64_t>{INT32_MAX, INT32_MIN, 0, 3, -2}));
  OnnxHostTensor u8 = OnnxHostTensor::FromDoubles({300, -4, 7.5}, Shape{3}, DType::kU8);
  EXPECT_EQ(u8.Int64s(), (std::vector<int64_t>{255, 0, 7}));

  onnx::ModelProto m = NewModel();
  onnx::GraphProto* g = m.mutable_graph();
  AddValue(g->mutable_input(), "x", {2, 3});
  AddValue(g->mutable_output(), "y", {2, 3});
  onnx::TensorProto* axis = g->add_initializer();
  axis->set_name("axis");
  axis->set_data_type(onnx::TensorProto::DOUBLE);
  axis->add_double_data(5.3246e233);
  AddNode(g, "CumSum", {"x", "axis"}, {"y"}, "cumsum");
  ExpectRefused(ImportOnnxBytes(Bytes(m)), absl::StatusCode::kInvalidArgument,
                {"'cumsum'", "axis 9223372036854775807 is out of range"});
}

// UBSan found the conversion of dims x 8.5e18 to int64 undefined.
TEST(OnnxHostileTest, AResizeScaleWithNoInt64SizeIsRefused) {
  onnx::ModelProto m = NewModel();
  onnx::GraphProto* g = m.mutable_graph();
  AddValue(g->mutable_input(), "x", {1, 1, 2, 2});
  AddValue(g->mutable_output(), "y", {1, 1, 2, 2});
  onnx::TensorProto* roi = g->add_initializer();
  roi->set_name("roi");
  roi->set_data_type(onnx::TensorProto::FLOAT);
  roi->add_dims(0);
  onnx::TensorProto* scales = g->add_initializer();
  scales->set_name("scales");
  scales->set_data_type(onnx::TensorProto::FLOAT);
  scales->add_dims(4);
  for (float v : {1.0f, 1.0f, 8.5e18f, 1.0f}) scales->add_float_data(v);
  AddNode(g, "Resize", {"x", "roi", "scales"}, {"y"}, "resize");
  ExpectRefused(ImportOnnxBytes(Bytes(m)), absl::StatusCode::kInvalidArgument,
                {"'resize'", "of axis 2 of size 2", "at most 2^20"});
}

TEST(OnnxHostileTest, AnEyeLikeDiagonalFarPastTheMatrixIsAllZeros) {
  onnx::ModelProto m = NewModel();
  onnx::GraphProto* g = m.mutable_graph();
  AddValue(g->mutable_input(), "x", {2, 3});
  AddValue(g->mutable_output(), "y", {2, 3});
  Int(AddNode(g, "EyeLike", {"x"}, {"y"}, "eye"), "k", INT64_MAX);
  absl::StatusOr<OnnxModel> r = ImportOnnxBytes(Bytes(m));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->initializers.size(), 1u);  // The folded EyeLike.
  absl::StatusOr<std::vector<float>> eye = r->initializers.begin()->second.ToHost<float>();
  ASSERT_TRUE(eye.ok()) << eye.status();
  EXPECT_EQ(*eye, std::vector<float>(6, 0.0f));
}

// Random byte flips of a valid model: every one imports or is refused.
TEST(OnnxHostileTest, RandomByteMutationsOfAValidModelNeverCrash) {
  onnx::ModelProto m = ConvPool("Conv", [](onnx::NodeProto* n) {
    Ints(n, "strides", {1, 1});
    Ints(n, "pads", {0, 0, 0, 0});
    Ints(n, "dilations", {1, 1});
  });
  AddNode(m.mutable_graph(), "MaxPool", {"y"}, {"z"}, "pool");
  Ints(m.mutable_graph()->mutable_node(1), "kernel_shape", {2, 2});
  Ints(m.mutable_graph()->mutable_node(1), "strides", {2, 2});
  AddValue(m.mutable_graph()->mutable_output(), "z", {1, 2, 3, 3});
  const std::string valid = Bytes(m);
  ASSERT_TRUE(ImportOnnxBytes(valid).ok());
  std::mt19937 rng(39);
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = valid;
    for (int k = 0; k <= i % 3; ++k) {
      const size_t at = rng() % bytes.size();
      bytes[at] = static_cast<char>(i % 2 == 0 ? bytes[at] ^ (1 << (rng() % 8)) : rng() % 256);
    }
    (void)ImportOnnxBytes(bytes).status();
  }
}

}  // namespace
}  // namespace rill::graph
