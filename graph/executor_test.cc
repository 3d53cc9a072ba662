// The graph executor against imperative execution of the same ops, on every
// context present; gradients against finite differences; memory planning,
// the canary mode, placement and errors.

#include "rill/graph/executor.h"

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rill/graph/passes.h"
#include "rill/graph/testing/graph_testing.h"
#include "rill/ops/invoke.h"
#include "rill/ops/testing/op_testing.h"

namespace rill::graph {
namespace {

using ::rill::ops::testing::AllContexts;
using ::rill::ops::testing::ContextName;
using ::rill::ops::testing::ExpectNear;
using ::rill::ops::testing::OpTest;
using ::rill::ops::testing::RandomData;
using ::testing::HasSubstr;

// The graph's outputs computed op by op with Invoke (the reference).
std::vector<Tensor> RunImperative(const Graph& g,
                                  const absl::flat_hash_map<std::string, Tensor>& args) {
  auto out =
      testing::EvaluateImperatively(g, args, engine::Context::Host(), nullptr, /*is_train=*/true);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *std::move(out) : std::vector<Tensor>(g.outputs().size());
}

// x[N,K] -> fc(H) -> relu -> fc(C) -> softmax cross-entropy with labels.
Graph Mlp(int hidden, int classes) {
  Graph g;
  Entry x = g.Input("x"), y = g.Input("y");
  Entry h = g.Op1("fully_connected", {x, g.Param("w1"), g.Param("b1")}, {}, "fc1");
  Entry a = g.Op1("relu", {h}, {}, "relu1");
  Entry o = g.Op1("fully_connected", {a, g.Param("w2"), g.Param("b2")}, {}, "fc2");
  g.AddOutput(g.Op1("softmax_cross_entropy", {o, y}, {}, "loss"));
  (void)hidden;
  (void)classes;
  return g;
}

class GraphTest : public OpTest {
 protected:
  template <typename T>
  absl::flat_hash_map<std::string, Tensor> MlpArgs(int n, int k, int h, int c, uint64_t seed) {
    std::vector<T> labels(n);
    for (int i = 0; i < n; ++i) labels[i] = static_cast<T>(i % c);
    return {{"x", Make<T>(RandomData<T>(n * k, seed), {n, k})},
            {"y", Make<T>(labels, {n})},
            {"w1", Make<T>(RandomData<T>(h * k, seed + 1), {h, k})},
            {"b1", Make<T>(RandomData<T>(h, seed + 2), {h})},
            {"w2", Make<T>(RandomData<T>(c * h, seed + 3), {c, h})},
            {"b2", Make<T>(RandomData<T>(c, seed + 4), {c})}};
  }
  Tensor Zeros(const Tensor& like) {
    std::vector<char> z(like.ByteSize(), 0);
    return *Tensor::FromHostBytes(z.data(), z.size(), like.shape(), like.dtype(), ctx(),
                                  engine_.get());
  }
  BindOptions Options(bool canary = true) {
    BindOptions o;
    o.context = ctx();
    o.engine = engine_.get();
    o.canary = canary;
    return o;
  }
};

TEST_P(GraphTest, MlpForwardEqualsImperative) {
  Graph g = Mlp(16, 5);
  ASSERT_TRUE(g.status().ok()) << g.status();
  auto args = MlpArgs<float>(8, 12, 16, 5, 1);
  for (int bulk : {1, 15}) {
    BindOptions o = Options();
    o.bulk_size = bulk;
    auto exec = Executor::Bind(g, args, {}, o);
    ASSERT_TRUE(exec.ok()) << exec.status();
    ASSERT_TRUE((*exec)->Forward(false).ok());
    auto got = (*exec)->outputs()[0].ToHost<float>();
    ASSERT_TRUE(got.ok()) << got.status();
    auto want = RunImperative(g, args)[0].ToHost<float>();
    ASSERT_TRUE(want.ok()) << want.status();
    ExpectNear(*got, *want, 1e-5, absl::StrCat("bulk ", bulk));
  }
}

// Gradients of the MLP's loss against central finite differences (f64).
TEST_P(GraphTest, MlpGradientsMatchFiniteDifferences) {
  Graph g = Mlp(6, 3);
  auto args = MlpArgs<double>(4, 5, 6, 3, 7);
  absl::flat_hash_map<std::string, Tensor> grads;
  for (const char* p : {"w1", "b1", "w2", "b2", "x"}) grads[p] = Zeros(args.at(p));
  auto exec = Executor::Bind(g, args, grads, Options());
  ASSERT_TRUE(exec.ok()) << exec.status();
  ASSERT_TRUE((*exec)->Forward(true).ok());
  ASSERT_TRUE((*exec)->Backward().ok());
  for (const char* p : {"w1", "b1", "w2", "b2", "x"}) {
    auto got = grads.at(p).ToHost<double>();
    ASSERT_TRUE(got.ok()) << p << ": " << got.status();
    std::vector<double> base = *args.at(p).ToHost<double>();
    std::vector<double> want(base.size());
    const double eps = 1e-6;
    for (size_t i = 0; i < base.size(); ++i) {
      auto loss_at = [&](double v) {
        std::vector<double> moved = base;
        moved[i] = v;
        auto a = args;
        a[p] = Make<double>(moved, args.at(p).shape());
        return (*RunImperative(g, a)[0].ToHost<double>())[0];
      };
      want[i] = (loss_at(base[i] + eps) - loss_at(base[i] - eps)) / (2 * eps);
    }
    ExpectNear(*got, want, 1e-5, p);
  }
}

// Every differentiable scalar form, chained, against finite differences.
TEST_P(GraphTest, ScalarOpGradientsMatchFiniteDifferences) {
  const std::vector<std::pair<const char*, const char*>> chain = {
      {"add_scalar", "0.5"},  {"mul_scalar", "1.5"}, {"sub_scalar", "-2"},
      {"div_scalar", "2"},    {"pow_scalar", "1.7"}, {"rdiv_scalar", "3"},
      {"rpow_scalar", "1.3"}, {"rsub_scalar", "4"},  {"maximum_scalar", "0.2"},
      {"minimum_scalar", "5"}};
  Graph g;
  Entry h = g.Param("x");
  for (const auto& [op, s] : chain) h = g.Op1(op, {h}, {{"scalar", s}});
  g.AddOutput(g.Op1("sum", {h}));
  std::vector<double> xv = RandomData<double>(5, 9, 0.5, 2);
  Tensor xt = Make<double>(xv, {5});
  Tensor dx = Zeros(xt);
  auto exec = Executor::Bind(g, {{"x", xt}}, {{"x", dx}}, Options());
  ASSERT_TRUE(exec.ok()) << exec.status();
  ASSERT_TRUE((*exec)->Forward().ok());
  ASSERT_TRUE((*exec)->Backward().ok());
  std::vector<double> want(5);
  for (int i = 0; i < 5; ++i) {
    auto f = [&](double v) {
      std::vector<double> m = xv;
      m[i] = v;
      return (*RunImperative(g, {{"x", Make<double>(m, {5})}})[0].ToHost<double>())[0];
    };
    want[i] = (f(xv[i] + 1e-6) - f(xv[i] - 1e-6)) / 2e-6;
  }
  ExpectNear(*dx.ToHost<double>(), want, 1e-5, "dx");
}

TEST_P(GraphTest, GradReqAddAccumulatesAndNullSkips) {
  Graph g = Mlp(6, 3);
  auto args = MlpArgs<double>(4, 5, 6, 3, 11);
  absl::flat_hash_map<std::string, Tensor> grads{{"w1", Zeros(args.at("w1"))},
                                                 {"w2", Zeros(args.at("w2"))}};
  BindOptions o = Options();
  o.grad_reqs = {{"w1", GradReq::kAdd}, {"w2", GradReq::kWrite}};
  auto exec = Executor::Bind(g, args, grads, o);
  ASSERT_TRUE(exec.ok()) << exec.status();
  ASSERT_TRUE((*exec)->Forward(true).ok());
  ASSERT_TRUE((*exec)->Backward().ok());
  std::vector<double> w1_once = *grads.at("w1").ToHost<double>();
  std::vector<double> w2_once = *grads.at("w2").ToHost<double>();
  ASSERT_TRUE((*exec)->Forward(true).ok());
  ASSERT_TRUE((*exec)->Backward().ok());
  std::vector<double> w1_twice = *grads.at("w1").ToHost<double>();
  for (auto& v : w1_once) v *= 2;
  ExpectNear(w1_twice, w1_once, 1e-12, "w1 (add)");
  ExpectNear(*grads.at("w2").ToHost<double>(), w2_once, 1e-12, "w2 (write)");
}

// A gradient no op makes for the sum alone (here the head gradient itself,
// passed through by add) is written by an identity op: with kWriteTo under
// grad_req write, so a second step replaces rather than accumulates.
TEST_P(GraphTest, UnfusedGradientPartsHonourTheRequest) {
  Graph g;
  g.AddOutput(g.Op1("add", {g.Param("a"), g.Param("b")}));
  Tensor a = Make<float>({1, 2, 3}, {3}), b = Make<float>({4, 5, 6}, {3});
  Tensor da = Zeros(a), db = Zeros(b);
  BindOptions o = Options();
  o.grad_reqs = {{"a", GradReq::kWrite}, {"b", GradReq::kAdd}};
  auto exec = Executor::Bind(g, {{"a", a}, {"b", b}}, {{"a", da}, {"b", db}}, o);
  ASSERT_TRUE(exec.ok()) << exec.status();
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE((*exec)->Forward().ok());
    ASSERT_TRUE((*exec)->Backward().ok());
  }
  ExpectNear(*da.ToHost<float>(), {1, 1, 1}, 0, "write");
  ExpectNear(*db.ToHost<float>(), {2, 2, 2}, 0, "add");
}

// One input used by several consumers: its gradient is a sum, which the
// planner writes with kAddTo.
TEST_P(GraphTest, FanOutGradientsSumWithAddTo) {
  Graph g;
  Entry x = g.Param("x");
  Entry a = g.Op1("exp", {x}), b = g.Op1("square", {x}), c = g.Op1("tanh", {x});
  Entry s = g.Op1("add", {g.Op1("add", {a, b}), c});
  g.AddOutput(g.Op1("sum", {s}));
  std::vector<double> xv = RandomData<double>(6, 3);
  Tensor xt = Make<double>(xv, {2, 3});
  Tensor dx = Zeros(xt);
  auto exec = Executor::Bind(g, {{"x", xt}}, {{"x", dx}}, Options());
  ASSERT_TRUE(exec.ok()) << exec.status();
  EXPECT_GE((*exec)->memory().addto, 2) << (*exec)->DebugString();
  ASSERT_TRUE((*exec)->Forward().ok());
  ASSERT_TRUE((*exec)->Backward().ok());
  std::vector<double> want(6);
  for (int i = 0; i < 6; ++i)
    want[i] = std::exp(xv[i]) + 2 * xv[i] + (1 - std::tanh(xv[i]) * std::tanh(xv[i]));
  ExpectNear(*dx.ToHost<double>(), want, 1e-12, "dx");
}

// Random graphs of elementwise ops: the executor (planned, canary on, bulk
// 1 and 4) equals imperative execution.
TEST_P(GraphTest, RandomGraphsEqualImperative) {
  const char* unary[] = {"relu", "tanh", "sigmoid", "neg", "square", "exp"};
  const char* binary[] = {"add", "sub", "mul", "maximum"};
  for (int trial = 0; trial < 6; ++trial) {
    std::mt19937 rng(100 + trial);
    Graph g;
    std::vector<Entry> pool{g.Input("a"), g.Input("b"), g.Input("c")};
    const int nodes = 6 + trial * 3;
    for (int i = 0; i < nodes; ++i) {
      std::uniform_int_distribution<int> pick(0, static_cast<int>(pool.size()) - 1);
      if (rng() % 2) {
        pool.push_back(g.Op1(unary[rng() % 6], {pool[pick(rng)]}));
      } else {
        pool.push_back(g.Op1(binary[rng() % 4], {pool[pick(rng)], pool[pick(rng)]}));
      }
    }
    g.AddOutput(pool.back());
    g.AddOutput(pool[pool.size() / 2 + 1]);
    ASSERT_TRUE(g.status().ok()) << g.status();
    absl::flat_hash_map<std::string, Tensor> args;
    for (const char* n : {"a", "b", "c"}) {
      args[n] = Make<float>(RandomData<float>(12, trial * 7 + n[0], -0.5, 0.5), {3, 4});
    }
    std::vector<Tensor> want = RunImperative(g, args);
    for (int bulk : {1, 4}) {
      BindOptions o = Options();
      o.bulk_size = bulk;
      auto exec = Executor::Bind(g, args, {}, o);
      ASSERT_TRUE(exec.ok()) << exec.status();
      ASSERT_TRUE((*exec)->Forward(false).ok());
      for (size_t i = 0; i < want.size(); ++i) {
        auto got = (*exec)->outputs()[i].ToHost<float>();
        ASSERT_TRUE(got.ok()) << got.status() << "\n" << (*exec)->DebugString();
        ExpectNear(*got, *want[i].ToHost<float>(), 1e-5,
                   absl::StrCat("trial ", trial, " output ", i, " bulk ", bulk, "\n", g.ToString(),
                                (*exec)->DebugString()));
      }
    }
  }
}

TEST_P(GraphTest, PlanningReusesMemoryOnAChain) {
  Graph g;
  Entry x = g.Input("x");
  for (int i = 0; i < 10; ++i)
    x = g.Op1(i % 2 ? "tanh" : "relu", {g.Op1("mul_scalar", {x}, {{"scalar", "0.5"}})});
  g.AddOutput(x);
  Tensor xt = Make<float>(RandomData<float>(1024, 5), {32, 32});
  auto exec = Executor::Bind(g, {{"x", xt}}, {}, Options());
  ASSERT_TRUE(exec.ok()) << exec.status();
  const MemoryReport& r = (*exec)->memory();
  EXPECT_EQ(r.naive_bytes, 20u * 4096u) << r.ToString();
  EXPECT_LE(r.planned_bytes, 2u * 4096u) << r.ToString();
  EXPECT_GT(r.inplace, 0) << r.ToString();
  ASSERT_TRUE((*exec)->Forward(false).ok());
  ExpectNear(*(*exec)->outputs()[0].ToHost<float>(),
             *RunImperative(g, {{"x", xt}})[0].ToHost<float>(), 1e-6, "chain");
}

TEST_P(GraphTest, ReshapeReplansForANewBatch) {
  Graph g = Mlp(8, 4);
  auto args = MlpArgs<float>(6, 5, 8, 4, 21);
  auto exec = Executor::Bind(g, args, {}, Options());
  ASSERT_TRUE(exec.ok()) << exec.status();
  auto bigger = MlpArgs<float>(10, 5, 8, 4, 21);
  ASSERT_TRUE((*exec)->Reshape({{"x", bigger.at("x")}, {"y", bigger.at("y")}}).ok());
  ASSERT_TRUE((*exec)->Forward(false).ok());
  auto a = args;
  a["x"] = bigger.at("x");
  a["y"] = bigger.at("y");
  ExpectNear(*(*exec)->outputs()[0].ToHost<float>(), *RunImperative(g, a)[0].ToHost<float>(), 1e-5,
             "reshaped");
  EXPECT_THAT((*exec)->Reshape({{"nope", bigger.at("x")}}).ToString(), HasSubstr("'nope'"));
}

TEST_P(GraphTest, AFailingNodeReachesTheOutputsAndIsNamed) {
  if (!ctx().is_host() && (*ExecutorFor(ctx()))->platform()->Name() != "host") {
    GTEST_SKIP() << "device kernels report a bad label as NaN, not as an error";
  }
  Graph g;
  Entry x = g.Input("x");
  // Out of range labels make softmax_cross_entropy fail while it runs.
  Entry l = g.Op1("softmax_cross_entropy", {x, g.Input("y")}, {}, "the_loss");
  g.AddOutput(g.Op1("mul_scalar", {l}, {{"scalar", "2"}}, "scaled"));
  Tensor xt = Make<float>(RandomData<float>(6, 1), {2, 3});
  Tensor yt = Make<float>({7, 9}, {2});
  auto exec = Executor::Bind(g, {{"x", xt}, {"y", yt}}, {}, Options(false));
  ASSERT_TRUE(exec.ok()) << exec.status();
  ASSERT_TRUE((*exec)->Forward(false).ok());
  absl::Status s = (*exec)->outputs()[0].WaitToRead();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.ToString(), HasSubstr("the_loss"));
}

TEST_P(GraphTest, CanaryCatchesAReadAfterTheBlockWasReleased) {
  Graph g;
  Entry x = g.Input("x");
  Entry a = g.Op1("mul_scalar", {x}, {{"scalar", "2"}}, "double");
  Entry b = g.Op1("tanh", {a}, {}, "squash");
  g.AddOutput(g.Op1("add", {b, a}, {}, "late_reader"));
  Tensor xt = Make<float>(RandomData<float>(8, 3), {8});
  BindOptions o = Options();
  auto good = Executor::Bind(g, {{"x", xt}}, {}, o);
  ASSERT_TRUE(good.ok()) << good.status();
  ASSERT_TRUE((*good)->Forward(false).ok());
  EXPECT_TRUE((*good)->outputs()[0].WaitToRead().ok());
  o.canary_inject_early_release = true;
  auto bad = Executor::Bind(g, {{"x", xt}}, {}, o);
  ASSERT_TRUE(bad.ok()) << bad.status();
  ASSERT_TRUE((*bad)->Forward(false).ok());
  absl::Status s = (*bad)->outputs()[0].WaitToRead();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_THAT(s.ToString(), HasSubstr("canary"));
  EXPECT_THAT(s.ToString(), HasSubstr("late_reader"));
}

// LeNet-shaped: conv-relu-pool twice, fc-relu-fc, softmax cross-entropy.
Graph LeNet() {
  Graph g;
  Entry x = g.Input("x");
  Entry c1 = g.Op1("conv2d", {x, g.Param("k1")}, {{"pad", "(1, 1)"}}, "conv1");
  Entry p1 = g.Op1("pooling", {g.Op1("relu", {c1}, {}, "relu1")},
                   {{"kernel", "(2, 2)"}, {"stride", "(2, 2)"}, {"pool_type", "max"}}, "pool1");
  Entry c2 = g.Op1("conv2d", {p1, g.Param("k2")}, {{"pad", "(1, 1)"}}, "conv2");
  Entry p2 = g.Op1("pooling", {g.Op1("relu", {c2}, {}, "relu2")},
                   {{"kernel", "(2, 2)"}, {"stride", "(2, 2)"}, {"pool_type", "avg"}}, "pool2");
  Entry f = g.Op1("flatten", {p2}, {}, "flat");
  Entry h = g.Op1("relu", {g.Op1("fully_connected", {f, g.Param("w3"), g.Param("b3")}, {}, "fc3")},
                  {}, "relu3");
  Entry o = g.Op1("fully_connected", {h, g.Param("w4"), g.Param("b4")}, {}, "fc4");
  g.AddOutput(g.Op1("softmax_cross_entropy", {o, g.Input("y")}, {}, "loss"));
  return g;
}

absl::flat_hash_map<std::string, std::vector<float>> LeNetValues(int n) {
  std::vector<float> y(n);
  for (int i = 0; i < n; ++i) y[i] = static_cast<float>(i % 4);
  return {{"x", RandomData<float>(n * 1 * 8 * 8, 1)},
          {"y", y},
          {"k1", RandomData<float>(4 * 1 * 3 * 3, 2, -0.5, 0.5)},
          {"k2", RandomData<float>(6 * 4 * 3 * 3, 3, -0.3, 0.3)},
          {"w3", RandomData<float>(10 * 24, 4, -0.3, 0.3)},
          {"b3", RandomData<float>(10, 5, -0.1, 0.1)},
          {"w4", RandomData<float>(4 * 10, 6, -0.3, 0.3)},
          {"b4", RandomData<float>(4, 7, -0.1, 0.1)}};
}

TEST_P(GraphTest, LeNetGradientsMatchFiniteDifferences) {
  const int n = 3;
  Graph g = LeNet();
  ASSERT_TRUE(g.status().ok()) << g.status();
  absl::flat_hash_map<std::string, Shape> shapes{
      {"x", {n, 1, 8, 8}}, {"y", {n}},   {"k1", {4, 1, 3, 3}}, {"k2", {6, 4, 3, 3}},
      {"w3", {10, 24}},    {"b3", {10}}, {"w4", {4, 10}},      {"b4", {4}}};
  auto values = LeNetValues(n);
  absl::flat_hash_map<std::string, Tensor> args, grads;
  for (const auto& [name, v] : values) args[name] = Make<float>(v, shapes.at(name));
  for (const char* p : {"k1", "k2", "w3", "b3", "w4", "b4"}) grads[p] = Zeros(args.at(p));
  auto exec = Executor::Bind(g, args, grads, Options());
  ASSERT_TRUE(exec.ok()) << exec.status();
  EXPECT_LT((*exec)->memory().ratio(), 0.8) << (*exec)->memory().ToString();
  ASSERT_TRUE((*exec)->Forward(true).ok());
  ASSERT_TRUE((*exec)->Backward().ok());
  ExpectNear(*(*exec)->outputs()[0].ToHost<float>(), *RunImperative(g, args)[0].ToHost<float>(),
             1e-5, "loss");
  for (const char* p : {"k1", "k2", "w3", "b3", "w4", "b4"}) {
    std::vector<float> got = *grads.at(p).ToHost<float>();
    std::vector<float> base = values.at(p);
    for (size_t i = 0; i < base.size(); i += std::max<size_t>(1, base.size() / 5)) {
      auto loss_at = [&](float v) {
        std::vector<float> moved = base;
        moved[i] = v;
        auto a = args;
        a[p] = Make<float>(moved, shapes.at(p));
        return static_cast<double>((*RunImperative(g, a)[0].ToHost<float>())[0]);
      };
      const double eps = 1e-2;
      const double want = (loss_at(base[i] + eps) - loss_at(base[i] - eps)) / (2 * eps);
      EXPECT_NEAR(got[i], want, 2e-3 + 2e-2 * std::abs(want)) << p << "[" << i << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllContexts, GraphTest, ::testing::ValuesIn(AllContexts()), ContextName);

// --- Placement: one graph over two contexts equals the same graph on one.

TEST(GraphPlacement, SplitOverTwoContextsMatchesOneContext) {
  std::vector<engine::Context> devices;
  for (const engine::Context& c : AllContexts()) {
    if (!c.is_host()) devices.push_back(c);
  }
  if (devices.size() < 2) GTEST_SKIP() << "needs two devices (RILL_HOST_DEVICES=2)";
  // Layer 1 in group "a", layer 2 and the loss in group "b".
  Graph g;
  Entry x = g.Input("x");
  Entry h =
      g.Op1("relu", {g.Op1("fully_connected", {x, g.Param("w1"), g.Param("b1")}, {}, "fc1", "a")},
            {}, "relu1", "a");
  Entry o = g.Op1("fully_connected", {h, g.Param("w2"), g.Param("b2")}, {}, "fc2", "b");
  g.AddOutput(g.Op1("softmax_cross_entropy", {o, g.Input("y")}, {}, "loss", "b"));
  const int n = 6, k = 5, hid = 7, c = 3;
  absl::flat_hash_map<std::string, std::pair<std::vector<float>, Shape>> v{
      {"x", {RandomData<float>(n * k, 1), {n, k}}},      {"y", {{0, 1, 2, 0, 1, 2}, {n}}},
      {"w1", {RandomData<float>(hid * k, 2), {hid, k}}}, {"b1", {RandomData<float>(hid, 3), {hid}}},
      {"w2", {RandomData<float>(c * hid, 4), {c, hid}}}, {"b2", {RandomData<float>(c, 5), {c}}}};
  const absl::flat_hash_map<std::string, std::string> group_of{
      {"x", "a"}, {"w1", "a"}, {"b1", "a"}, {"y", "b"}, {"w2", "b"}, {"b2", "b"}};
  auto engine = ops::testing::MakeEngine();
  auto run = [&](engine::Context ca, engine::Context cb) {
    absl::flat_hash_map<std::string, Tensor> args, grads;
    for (const auto& [name, d] : v) {
      const engine::Context cx = group_of.at(name) == "a" ? ca : cb;
      args[name] = *Tensor::FromHost<float>(d.first, d.second, cx, engine.get());
      if (name != "x" && name != "y") {
        grads[name] = *Tensor::FromHost<float>(std::vector<float>(d.first.size(), 0), d.second, cx,
                                               engine.get());
      }
    }
    BindOptions o;
    o.engine = engine.get();
    o.context = ca;
    o.group_contexts = {{"a", ca}, {"b", cb}};
    o.canary = true;
    auto exec = Executor::Bind(g, args, grads, o);
    EXPECT_TRUE(exec.ok()) << exec.status();
    std::vector<std::vector<float>> out;
    if (!exec.ok()) return out;
    EXPECT_TRUE((*exec)->Forward(true).ok());
    EXPECT_TRUE((*exec)->Backward().ok());
    out.push_back(*(*exec)->outputs()[0].ToHost<float>());
    for (const char* p : {"w1", "b1", "w2", "b2"}) out.push_back(*grads.at(p).ToHost<float>());
    if (ca != cb) {
      EXPECT_THAT((*exec)->DebugString(), HasSubstr("_copy"));
    }
    return out;
  };
  const auto one = run(devices[0], devices[0]);
  for (size_t i = 1; i < devices.size(); ++i) {
    const auto split = run(devices[0], devices[i]);
    ASSERT_EQ(split.size(), one.size());
    for (size_t j = 0; j < one.size(); ++j) {
      ExpectNear(split[j], one[j], 1e-4,
                 absl::StrCat(devices[0].ToString(), "+", devices[i].ToString(), " #", j));
    }
  }
}

// --- Bad graphs and bindings (context-independent).

TEST(GraphErrors, UnknownOpAndBadAttributesNameTheNode) {
  Graph g;
  Entry x = g.Input("x");
  g.Op1("no_such_op", {x}, {}, "mystery");
  EXPECT_EQ(g.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(g.status().ToString(), HasSubstr("mystery"));
  Graph h;
  h.Op1("sum", {h.Input("x")}, {{"axes", "banana"}}, "bad_sum");
  EXPECT_THAT(h.status().ToString(), HasSubstr("bad_sum"));
  Graph k;
  k.Op1("add", {k.Input("x")}, {}, "lonely_add");
  EXPECT_THAT(k.status().ToString(), HasSubstr("takes 2 input(s), got 1"));
}

TEST(GraphErrors, CyclesAndDanglingInputsAreReported) {
  Graph g;
  Entry x = g.Input("x");
  Entry a = g.Op1("relu", {x}, {}, "a");
  Entry b = g.Op1("tanh", {a}, {}, "b");
  g.AddOutput(b);
  g.SetInput(a.node, 0, b);
  auto order = TopoOrder(g);
  EXPECT_EQ(order.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(order.status().ToString(), HasSubstr("cycle"));
  Graph d;
  Entry y = d.Op1("relu", {d.Input("x")}, {}, "r");
  d.AddOutput(y);
  d.SetInput(y.node, 0, Entry{42, 0});
  EXPECT_THAT(TopoOrder(d).status().ToString(), HasSubstr("node 'r' (relu) input 0"));
}

TEST(GraphErrors, BindChecksArgumentsAndShapes) {
  auto engine = ops::testing::MakeEngine();
  auto host = [&](std::vector<float> v, Shape s) {
    return *Tensor::FromHost<float>(v, s, engine::Context::Host(), engine.get());
  };
  Graph g;
  g.AddOutput(g.Op1("add", {g.Input("a"), g.Input("b")}, {}, "sum_ab"));
  BindOptions o;
  o.engine = engine.get();
  auto unbound = Executor::Bind(g, {{"a", host({1, 2}, {2})}}, {}, o);
  EXPECT_THAT(unbound.status().ToString(), HasSubstr("input 'b' is not bound"));
  auto unknown = Executor::Bind(
      g, {{"a", host({1}, {1})}, {"b", host({1}, {1})}, {"c", host({1}, {1})}}, {}, o);
  EXPECT_THAT(unknown.status().ToString(), HasSubstr("no variable 'c'"));
  auto conflict = Executor::Bind(g, {{"a", host({1, 2}, {2})}, {"b", host({1, 2, 3}, {3})}}, {}, o);
  EXPECT_EQ(conflict.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(conflict.status().ToString(), HasSubstr("sum_ab"));
  EXPECT_THAT(conflict.status().ToString(), HasSubstr("[3]"));
  Graph declared;
  declared.AddOutput(declared.Op1("relu", {declared.Input("a", Shape{4})}));
  auto mismatch = Executor::Bind(declared, {{"a", host({1, 2}, {2})}}, {}, o);
  EXPECT_THAT(mismatch.status().ToString(), HasSubstr("declared [4]"));
  auto bad_grad = Executor::Bind(g, {{"a", host({1, 2}, {2})}, {"b", host({1, 2}, {2})}},
                                 {{"a", host({1, 2, 3}, {3})}}, o);
  EXPECT_THAT(bad_grad.status().ToString(), HasSubstr("gradient of 'a'"));
}

TEST(GraphCompose, SubGraphsInlineWithBoundVariables) {
  Graph block;
  block.AddOutput(
      block.Op1("relu",
                {block.Op1("fully_connected",
                           {block.Input("in"), block.Param("w"), block.Param("b")}, {}, "fc")},
                {}, "act"));
  Graph g;
  Entry x = g.Input("x");
  std::vector<Entry> h = g.Compose(block, {{"in", x}}, "l1_");
  std::vector<Entry> o = g.Compose(block, {{"in", h[0]}}, "l2_");
  g.AddOutput(o[0]);
  ASSERT_TRUE(g.status().ok()) << g.status();
  EXPECT_GE(g.Find("l1_w"), 0);
  EXPECT_GE(g.Find("l2_act"), 0);
  EXPECT_EQ(g.node(g.Find("l2_fc")).inputs[0].node, g.Find("l1_act"));
  Graph bad;
  bad.Compose(block, {{"nope", bad.Input("x")}}, "p_");
  EXPECT_THAT(bad.status().ToString(), HasSubstr("no variable 'nope'"));
}

}  // namespace
}  // namespace rill::graph
